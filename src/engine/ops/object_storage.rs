//! Object-storage readiness, for one project's bucket (fleet-engine §6.9): a bucket is ready
//! only once the provider's read-back matches what the spec asks for, and a probe object has
//! gone through S3 with fleetbot's own credentials: written, read back byte-exact, deleted,
//! and its absence verified.
//!
//! The credentials are a project-scoped service account (`fleetbot-storage`, found by name or
//! created) and one access key of that account, found by listing the account's keys (it is
//! the one whose description is [`KEY_DESCRIPTION`]) or created when there is none. Its
//! secret is fetched with `GetSecret` on every deploy and lives only in an
//! [`AccessKeySecret`] until the S3 client takes it: it is never stored, in the inventory or
//! anywhere else, and never logged. Keeping the key (rather than one per probe) is what lets
//! a deploy that changes nothing make no IAM mutation either. There is no fallback to a
//! broader identity (the tenant's editors): without the account and its key, no probe.

use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload, RetryConfig};
use serde::Serialize;

use super::apply::Apply;
use super::error::ApplyError;
use super::progress::Event;
use crate::cloud::client::idempotency_key;
use crate::cloud::domain::{AccessKey, AccessKeySecret, Bucket, Cloud, State};
use crate::engine::desired::{DesiredBucket, DesiredProject};
use crate::store::InventoryStore;

/// The service account the probe signs as, in every project with object storage.
pub const SERVICE_ACCOUNT: &str = "fleetbot-storage";
/// The description of fleetbot's access key, by which it is found among the account's keys.
pub const KEY_DESCRIPTION: &str = "fleetbot object-storage readiness probe";
/// Where probe objects go; each is a fresh random key under it.
pub const PROBE_PREFIX: &str = "fleetbot-probe/";

const GIB: i64 = 1024 * 1024 * 1024;

/// A project's object storage, once ready (§6.9's result entry, attached to each of its
/// clusters' results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectStorageResult {
    pub enabled: bool,
    pub status: String,
    pub storage_class: String,
    pub size_gibibytes: i64,
    pub writable: bool,
    pub retained_on_destroy: bool,
}

/// What the bucket's read-back must show.
pub struct Expected<'a> {
    pub project_id: &'a str,
    pub name: &'a str,
    pub region: &'a str,
    pub bucket: &'a DesiredBucket,
}

/// The first field of the read-back that differs from what was asked, named; `None` when
/// the bucket is what the spec asks for and usable.
pub fn read_back_mismatch(b: &Bucket, want: &Expected<'_>) -> Option<String> {
    let differs = |field: &str, got: &str, asked: &str| {
        Some(format!(
            "object-storage bucket read-back: {field} is {}, the spec asks for {asked}",
            if got.is_empty() { "(empty)" } else { got }
        ))
    };
    if b.id.is_empty() {
        return Some("object-storage bucket read-back: the bucket has no ID".into());
    }
    if b.project_id != want.project_id {
        return differs("project", &b.project_id, want.project_id);
    }
    if b.name != want.name {
        return differs("name", &b.name, want.name);
    }
    if !want.region.is_empty() && b.region != want.region {
        return differs("region", &b.region, want.region);
    }
    if b.scheduled_for_deletion {
        return Some(format!(
            "object-storage bucket read-back: {}",
            crate::engine::live::SCHEDULED_BUCKET_ADVICE
        ));
    }
    if b.state == State::Suspended {
        return Some("object-storage bucket read-back: the bucket is suspended".into());
    }
    if b.state != State::Ready {
        return Some(format!(
            "object-storage bucket read-back: state is {:?}, not active",
            b.state
        ));
    }
    if b.storage_class != want.bucket.storage_class {
        return differs(
            "storage class",
            &b.storage_class,
            &want.bucket.storage_class,
        );
    }
    if b.max_size_bytes != want.bucket.max_size_bytes {
        return differs(
            "size cap (bytes)",
            &b.max_size_bytes.to_string(),
            &want.bucket.max_size_bytes.to_string(),
        );
    }
    if b.domain_name.is_empty() {
        return Some(
            "object-storage bucket read-back: the bucket reports no S3 domain name".into(),
        );
    }
    None
}

fn not_ready(message: String) -> ApplyError {
    ApplyError::Readiness(message)
}

fn probe_failed(step: &str) -> ApplyError {
    not_ready(format!(
        "object-storage write/read/delete probe did not pass: {step}"
    ))
}

/// Put, get back byte-exact, delete, and see it gone, through S3 at the bucket's endpoint.
async fn probe(
    bucket: &Bucket,
    aws_access_key_id: &str,
    secret: &AccessKeySecret,
) -> Result<(), ApplyError> {
    // reqwest is built without a default TLS provider; fleetbot's is ring everywhere.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store = AmazonS3Builder::new()
        .with_endpoint(bucket.s3_endpoint())
        .with_allow_http(bucket.s3_endpoint().starts_with("http://"))
        .with_virtual_hosted_style_request(false)
        .with_region(&bucket.region)
        .with_bucket_name(&bucket.name)
        .with_access_key_id(aws_access_key_id)
        .with_secret_access_key(secret.expose())
        .with_retry(RetryConfig {
            max_retries: 2,
            retry_timeout: std::time::Duration::from_secs(30),
            ..RetryConfig::default()
        })
        .build()
        .map_err(|e| probe_failed(&format!("the S3 client could not be set up: {e}")))?;
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    let path = Path::from(format!("{PROBE_PREFIX}{nonce}"));
    let payload = format!("fleetbot object-storage probe {nonce}\n").into_bytes();
    store
        .put(&path, PutPayload::from(payload.clone()))
        .await
        .map_err(|e| probe_failed(&format!("write: {e}")))?;
    let read = async { store.get(&path).await?.bytes().await };
    let got = read.await.map_err(|e| probe_failed(&format!("read: {e}")));
    let read_ok = match got {
        Ok(bytes) if bytes.as_ref() == payload.as_slice() => Ok(()),
        Ok(bytes) => Err(probe_failed(&format!(
            "read: {} bytes came back that differ from the {} written",
            bytes.len(),
            payload.len()
        ))),
        Err(e) => Err(e),
    };
    // Delete even when the read failed, so no probe object is left behind.
    let deleted = store
        .delete(&path)
        .await
        .map_err(|e| probe_failed(&format!("delete: {e}")));
    read_ok?;
    deleted?;
    match store.head(&path).await {
        Err(object_store::Error::NotFound { .. }) => Ok(()),
        Ok(_) => Err(probe_failed(
            "delete: the probe object is still there after its deletion",
        )),
        Err(e) => Err(probe_failed(&format!("verifying the deletion: {e}"))),
    }
}

impl<C: Cloud, S: InventoryStore> Apply<'_, C, S> {
    /// Verifies the bucket and proves it writable; the result for the project's clusters.
    pub(super) async fn bucket_ready(
        &self,
        desired: &DesiredProject,
        bucket: &DesiredBucket,
        bucket_id: &str,
        expected: Expected<'_>,
    ) -> Result<ObjectStorageResult, ApplyError> {
        let b = self.cloud.get_bucket(bucket_id).await?;
        if let Some(mismatch) = read_back_mismatch(&b, &expected) {
            return Err(not_ready(mismatch));
        }
        let account = self.storage_account(desired, expected.project_id).await?;
        let key = self
            .storage_key(desired, expected.project_id, &account)
            .await?;
        (self.progress)(&Event::note(format!(
            "probing the bucket of project {} through S3",
            desired.key
        )));
        let secret = self.cloud.get_access_key_secret(&key.id).await?;
        probe(&b, &key.aws_access_key_id, &secret).await?;
        Ok(ObjectStorageResult {
            enabled: true,
            status: "ready".into(),
            storage_class: bucket.storage_class.clone(),
            size_gibibytes: bucket.max_size_bytes / GIB,
            writable: true,
            retained_on_destroy: true,
        })
    }

    /// The project's `fleetbot-storage` service account, created when missing; its ID.
    async fn storage_account(
        &self,
        desired: &DesiredProject,
        project_id: &str,
    ) -> Result<String, ApplyError> {
        let account = match self
            .cloud
            .find_service_account(project_id, SERVICE_ACCOUNT)
            .await?
        {
            Some(account) => account,
            None => {
                (self.progress)(&Event::note(format!(
                    "creating service account {SERVICE_ACCOUNT} in project {}",
                    desired.key
                )));
                let key = idempotency_key(&[
                    self.fleet,
                    &desired.key,
                    "service-account",
                    "create",
                    SERVICE_ACCOUNT,
                ]);
                self.cloud
                    .create_service_account(
                        project_id,
                        SERVICE_ACCOUNT,
                        "fleetbot's object-storage readiness probe",
                        &desired.labels,
                        &key,
                    )
                    .await?
            }
        };
        if !account.active {
            return Err(not_ready(format!(
                "object-storage: service account {SERVICE_ACCOUNT} is not active"
            )));
        }
        Ok(account.id)
    }

    /// The account's fleetbot key: the first `ACTIVE` one, others of fleetbot's deleted (a
    /// second one is left only by a create whose reply was lost), or a new one.
    async fn storage_key(
        &self,
        desired: &DesiredProject,
        project_id: &str,
        account: &str,
    ) -> Result<AccessKey, ApplyError> {
        let mut keep = None;
        for key in self.cloud.list_access_keys(account).await? {
            if key.description != KEY_DESCRIPTION || key.state == "DELETING" {
                continue;
            }
            if keep.is_none() && key.state == "ACTIVE" {
                keep = Some(key);
                continue;
            }
            let delete =
                idempotency_key(&[self.fleet, &desired.key, "access-key", "delete", &key.id]);
            self.cloud.delete_access_key(&key.id, &delete).await?;
        }
        if let Some(key) = keep {
            return Ok(key);
        }
        (self.progress)(&Event::note(format!(
            "creating an access key for {SERVICE_ACCOUNT} in project {}",
            desired.key
        )));
        // Keys are unnamed, so nothing in the request tells a new key from one made earlier and
        // deleted since: the idempotency key names this attempt, and a retry of it (a lost
        // reply) carries the same one. A key a crash left is found by the listing above.
        let attempt = uuid::Uuid::new_v4().simple().to_string();
        let create = idempotency_key(&[
            self.fleet,
            &desired.key,
            "access-key",
            "create",
            account,
            &attempt,
        ]);
        Ok(self
            .cloud
            .create_access_key(project_id, account, KEY_DESCRIPTION, &create)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket() -> Bucket {
        Bucket {
            id: "storagebucket-e00x".into(),
            resource_version: 1,
            project_id: "project-e00p".into(),
            name: "b".into(),
            storage_class: "standard".into(),
            max_size_bytes: 10 * GIB,
            region: "eu-north1".into(),
            state: State::Ready,
            scheduled_for_deletion: false,
            domain_name: "storage.eu-north1.nebius.cloud".into(),
            labels: Default::default(),
        }
    }

    fn check(b: &Bucket, class: &str) -> Option<String> {
        let desired = DesiredBucket {
            explicit_name: String::new(),
            storage_class: class.into(),
            max_size_bytes: 10 * GIB,
        };
        read_back_mismatch(
            b,
            &Expected {
                project_id: "project-e00p",
                name: "b",
                region: "eu-north1",
                bucket: &desired,
            },
        )
    }

    #[test]
    fn a_matching_bucket_passes_and_each_mismatch_is_named() {
        assert_eq!(check(&bucket(), "standard"), None);
        assert_eq!(
            check(&bucket(), "enhanced_throughput").as_deref(),
            Some(
                "object-storage bucket read-back: storage class is standard, the spec asks for enhanced_throughput"
            )
        );
        let mut b = bucket();
        b.state = State::Suspended;
        assert!(check(&b, "standard").unwrap().contains("suspended"));
        let mut b = bucket();
        b.region = "us-central1".into();
        assert!(
            check(&b, "standard")
                .unwrap()
                .contains("region is us-central1")
        );
        let mut b = bucket();
        b.max_size_bytes = GIB;
        assert!(check(&b, "standard").unwrap().contains("size cap"));
        let mut b = bucket();
        b.project_id = "project-e00q".into();
        assert!(check(&b, "standard").unwrap().contains("project is"));
        let mut b = bucket();
        b.scheduled_for_deletion = true;
        assert!(
            check(&b, "standard")
                .unwrap()
                .contains("scheduled for deletion")
        );
    }

    #[test]
    fn the_endpoint_is_https_except_on_loopback() {
        let mut b = bucket();
        assert_eq!(b.s3_endpoint(), "https://storage.eu-north1.nebius.cloud");
        b.domain_name = "127.0.0.1:9000".into();
        assert_eq!(b.s3_endpoint(), "http://127.0.0.1:9000");
    }

    #[test]
    fn the_secret_never_shows_in_debug_output() {
        let secret = AccessKeySecret::new("very-secret-value".into());
        assert_eq!(format!("{secret:?}"), "AccessKeySecret(<redacted>)");
    }
}
