//! Every reply carries `x-request-id` and `x-trace-id`, and fleetbot's cloud errors keep them
//! and print them.

use fleetbot::cloud::Cloud;
use fleetbot::cloud::proto::nebius::storage::v1 as storage;

use super::{channel, request};
use crate::support::{client, roomy_world, simulator};

#[tokio::test]
async fn replies_carry_request_ids_and_errors_keep_them() {
    let sim = simulator(&roomy_world("")).await;
    let mut raw = storage::bucket_service_client::BucketServiceClient::new(channel(&sim).await);
    let listed = raw
        .list(request(
            storage::ListBucketsRequest {
                parent_id: "project-u00aaaaaaaaaaaaaaa".into(),
                ..Default::default()
            },
            &[],
        ))
        .await
        .unwrap();
    for header in ["x-request-id", "x-trace-id"] {
        assert!(listed.metadata().get(header).is_some(), "{header}");
    }
    let missing = raw
        .get(request(
            storage::GetBucketRequest {
                id: "storagebucket-u00nothere".into(),
            },
            &[],
        ))
        .await
        .unwrap_err();
    let id = missing
        .metadata()
        .get("x-request-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(missing.metadata().get("x-trace-id").is_some());
    // Two replies, two IDs.
    assert_ne!(
        Some(id.as_str()),
        listed
            .metadata()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
    );

    let cloud = client(&sim);
    let error = cloud
        .get_bucket("storagebucket-u00nothere")
        .await
        .unwrap_err();
    let request_id = error
        .request_id
        .clone()
        .expect("the error keeps its request ID");
    assert!(error.trace_id.is_some());
    let shown = error.to_string();
    assert!(
        shown.contains(&format!("request_id: {request_id}")),
        "{shown}"
    );
}
