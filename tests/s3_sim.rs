//! The simulator's S3 endpoint held to boto3 (PyPI, installed by scripts/fetch-boto3.sh): a
//! bucket, a service account and an access key made through the cloud API, then boto3's
//! put/get/list/head/delete round trip; a wrong secret gets SignatureDoesNotMatch, an unknown
//! key InvalidAccessKeyId, and a PUT over the bucket's cap is refused.

use crate::support;

use std::path::{Path, PathBuf};

use fleetbot::cloud::Cloud;
use fleetbot::cloud::client::idempotency_key;
use fleetbot::cloud::domain::Labels;
use support::{client, simulator};

/// The python with boto3: `FLEETBOT_BOTO3_PYTHON`, else the one scripts/fetch-boto3.sh
/// installs. CI must have it; elsewhere the test says how to get it and passes without running.
fn boto3_python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("FLEETBOT_BOTO3_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let installed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/boto3-1.44.8/bin/python");
    if installed.is_file() {
        return Some(installed);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "boto3 is missing in CI: scripts/test.sh runs scripts/fetch-boto3.sh first"
    );
    eprintln!("skipped: no boto3; run scripts/fetch-boto3.sh (or set FLEETBOT_BOTO3_PYTHON)");
    None
}

const CAP: i64 = 4096;

#[tokio::test]
async fn boto3_round_trips_and_is_refused_a_wrong_secret_an_unknown_key_and_the_cap() {
    let Some(python) = boto3_python() else {
        return;
    };
    let world = crate::support::quick_default_world();
    let sim = simulator(&world).await;
    let cloud = client(&sim);
    let key = |parts: &[&str]| idempotency_key(parts);
    let project = cloud
        .create_project(
            &sim.tenant_id(),
            "s3",
            "eu-north1",
            &Labels::new(),
            &key(&["p"]),
        )
        .await
        .unwrap();
    let bucket = cloud
        .create_bucket(
            &project.id,
            "boto-bucket",
            "standard",
            CAP,
            &Labels::new(),
            &key(&["b"]),
        )
        .await
        .unwrap();
    let bucket = cloud.get_bucket(&bucket.id).await.unwrap();
    assert_eq!(bucket.domain_name, sim.s3.address);
    let account = cloud
        .create_service_account(&project.id, "boto", "", &Labels::new(), &key(&["sa"]))
        .await
        .unwrap();
    let access = cloud
        .create_access_key(&project.id, &account.id, "boto3 test", &key(&["ak"]))
        .await
        .unwrap();
    let secret = cloud.get_access_key_secret(&access.id).await.unwrap();

    let output = tokio::process::Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3_boto3.py"))
        .env("S3_ENDPOINT", bucket.s3_endpoint())
        .env("S3_REGION", &bucket.region)
        .env("S3_BUCKET", &bucket.name)
        .env("S3_KEY_ID", &access.aws_access_key_id)
        .env("S3_SECRET", secret.expose())
        .env("S3_CAP", CAP.to_string())
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "boto3 failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(out["get_matches"], true, "{out}");
    assert_eq!(out["content_type"], "text/plain", "{out}");
    assert_eq!(
        out["listed"],
        serde_json::json!(["dir/a b.txt", "dir/c.bin"]),
        "{out}"
    );
    assert_eq!(out["listed_sizes"], serde_json::json!([19, 1]), "{out}");
    assert_eq!(out["head_length"], 1, "{out}");
    assert_eq!(out["after_delete"], "404", "{out}");
    assert_eq!(out["get_missing"], "NoSuchKey", "{out}");
    assert_eq!(
        out["listed_after_delete"],
        serde_json::json!(["dir/c.bin"]),
        "{out}"
    );
    assert_eq!(out["wrong_secret"], "SignatureDoesNotMatch", "{out}");
    assert_eq!(out["unknown_key"], "InvalidAccessKeyId", "{out}");
    assert_eq!(out["over_cap"], "EntityTooLarge", "{out}");
    assert_eq!(out["no_such_bucket"], "NoSuchBucket", "{out}");
    // The round trip left nothing behind.
    assert!(sim.service.with_core(|c| c.state.objects.is_empty()));

    // A deleted key is refused like an unknown one.
    cloud
        .delete_access_key(&access.id, &key(&["ak-del"]))
        .await
        .unwrap();
    let output = tokio::process::Command::new(&python)
        .arg("-c")
        .arg(
            "import boto3, os\nfrom botocore.config import Config\nfrom botocore.exceptions import ClientError\n\
             s3 = boto3.client('s3', endpoint_url=os.environ['S3_ENDPOINT'], region_name=os.environ['S3_REGION'], aws_access_key_id=os.environ['S3_KEY_ID'], aws_secret_access_key=os.environ['S3_SECRET'], config=Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1}))\n\
             try:\n    s3.list_objects_v2(Bucket=os.environ['S3_BUCKET'])\n    print('listed')\nexcept ClientError as e:\n    print(e.response['Error']['Code'])\n",
        )
        .env("S3_ENDPOINT", bucket.s3_endpoint())
        .env("S3_REGION", &bucket.region)
        .env("S3_BUCKET", &bucket.name)
        .env("S3_KEY_ID", &access.aws_access_key_id)
        .env("S3_SECRET", secret.expose())
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "InvalidAccessKeyId",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
