//! The simulator's S3 endpoint: one plain-HTTP listener on loopback for every region, with
//! path-style addressing (`http://127.0.0.1:<port>/<bucket>/<key>`); each bucket's status
//! reports it as its `domain_name`. The region a request is for is the one its SigV4
//! credential scope names, and it must be the bucket's.
//!
//! Implemented: PutObject, GetObject, HeadObject, DeleteObject, DeleteObjects (`?delete`),
//! ListObjectsV2 and HeadBucket,
//! each authenticated with SigV4 against the simulator's `ACTIVE` access keys, whose service
//! account must belong to the bucket's project; the bucket's cap (`max_size_bytes`) on PUT.
//! Not implemented (501 NotImplemented): multipart uploads, aws-chunked bodies, ranges,
//! versioning, ACLs, presigned URLs, virtual-hosted addressing, anything else.

pub mod sigv4;

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use self::sigv4::Refusal;
use super::core::{Core, now_ms};
use super::resources::Resource;
use super::services::SimService;
use crate::cloud::proto::fleetbot::sim::v1::StoredObject;
use crate::cloud::proto::nebius::iam::v1 as iam;
use crate::cloud::proto::nebius::iam::v2 as iam2;
use crate::cloud::proto::nebius::storage::v1 as storage;

/// The largest body the endpoint reads (a single PUT; multipart is not simulated).
const MAX_BODY: usize = 64 * 1024 * 1024;

type Reply = http::Response<Full<Bytes>>;

/// An S3 error: status, code and message, rendered as S3's XML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

fn error(status: StatusCode, code: &'static str, message: impl Into<String>) -> S3Error {
    S3Error {
        status,
        code,
        message: message.into(),
    }
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl S3Error {
    fn reply(&self, resource: &str, head: bool) -> Reply {
        let body = if head {
            Bytes::new()
        } else {
            Bytes::from(format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message><Resource>{}</Resource><RequestId>sim</RequestId></Error>",
                self.code,
                xml_escape(&self.message),
                xml_escape(resource)
            ))
        };
        http::Response::builder()
            .status(self.status)
            .header("content-type", "application/xml")
            .header("x-amz-request-id", "sim")
            .body(Full::new(body))
            .expect("static response parts")
    }
}

impl From<Refusal> for S3Error {
    fn from(refusal: Refusal) -> S3Error {
        match refusal {
            Refusal::Missing => error(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                "anonymous access is not allowed; sign the request with SigV4",
            ),
            Refusal::Malformed(why) => {
                error(StatusCode::BAD_REQUEST, "AuthorizationHeaderMalformed", why)
            }
            Refusal::Unsupported(why) => error(StatusCode::NOT_IMPLEMENTED, "NotImplemented", why),
            Refusal::ContentMismatch => error(
                StatusCode::BAD_REQUEST,
                "XAmzContentSHA256Mismatch",
                "the provided x-amz-content-sha256 does not match what was computed",
            ),
            Refusal::SignatureMismatch => error(
                StatusCode::FORBIDDEN,
                "SignatureDoesNotMatch",
                "the request signature we calculated does not match the signature you provided",
            ),
        }
    }
}

/// A running S3 endpoint.
pub struct S3Api {
    /// `127.0.0.1:<port>`: what bucket statuses report as `domain_name`.
    pub address: String,
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for S3Api {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl S3Api {
    pub async fn start(service: SimService, listener: TcpListener) -> Result<S3Api, String> {
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let serving = service.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let service = serving.clone();
                tokio::spawn(async move {
                    let handler = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let service = service.clone();
                            async move {
                                let (parts, body) = request.into_parts();
                                let head = parts.method == Method::HEAD;
                                let reply = match Limited::new(body, MAX_BODY).collect().await {
                                    Ok(body) => handle(
                                        &service,
                                        &parts.method,
                                        &parts.uri,
                                        &parts.headers,
                                        &body.to_bytes(),
                                    ),
                                    Err(_) => error(
                                        StatusCode::BAD_REQUEST,
                                        "EntityTooLarge",
                                        "the simulated endpoint reads bodies up to 64 MiB",
                                    )
                                    .reply(parts.uri.path(), head),
                                };
                                Ok::<_, Infallible>(reply)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), handler)
                        .await;
                });
            }
        });
        service.set_s3_api(addr.to_string());
        Ok(S3Api {
            address: addr.to_string(),
            base_url: format!("http://{addr}"),
            task,
        })
    }
}

/// Who signed a request: the key's service account and its project.
struct Caller {
    project_id: String,
}

/// Finds the access key and checks the signature with its secret.
fn authenticate(
    core: &Core,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(Caller, String), S3Error> {
    let auth = sigv4::parse_authorization(headers)?;
    let unknown = || {
        error(
            StatusCode::FORBIDDEN,
            "InvalidAccessKeyId",
            "the AWS access key ID you provided does not exist in our records",
        )
    };
    let key = core
        .state
        .access_keys
        .iter()
        .find(|k| {
            k.status
                .as_ref()
                .is_some_and(|s| s.aws_access_key_id == auth.access_key_id)
        })
        .ok_or_else(unknown)?;
    let status = key.status.clone().unwrap_or_default();
    if status.state != iam2::access_key_status::State::Active as i32 {
        return Err(unknown());
    }
    let account_id = match key
        .spec
        .as_ref()
        .and_then(|s| s.account.as_ref())
        .and_then(|a| a.r#type.as_ref())
    {
        Some(iam::account::Type::ServiceAccount(sa)) => sa.id.clone(),
        _ => return Err(unknown()),
    };
    let account: iam::ServiceAccount = core.get(&account_id).map_err(|_| unknown())?;
    if !account.status.as_ref().is_some_and(|s| s.active) {
        return Err(unknown());
    }
    sigv4::verify(method, uri, headers, body, &auth, &status.secret)?;
    Ok((
        Caller {
            project_id: account.parent_id().to_string(),
        },
        auth.region,
    ))
}

/// The bucket a request names, if the caller may use it from the region it signed for.
fn bucket_for(
    core: &Core,
    name: &str,
    caller: &Caller,
    region: &str,
) -> Result<storage::Bucket, S3Error> {
    let no_such = || {
        error(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "the specified bucket does not exist",
        )
    };
    let bucket = core
        .state
        .buckets
        .iter()
        .filter(|b| b.name() == name)
        .find(|b| b.parent_id() == caller.project_id)
        .or_else(|| core.state.buckets.iter().find(|b| b.name() == name))
        .cloned()
        .ok_or_else(no_such)?;
    let status = bucket.status.clone().unwrap_or_default();
    if status.region != region {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "AuthorizationHeaderMalformed",
            format!(
                "the authorization header is malformed; the region '{region}' is wrong; expecting '{}'",
                status.region
            ),
        ));
    }
    if bucket.parent_id() != caller.project_id {
        return Err(error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "access denied",
        ));
    }
    if status.state != storage::bucket_status::State::Active as i32
        || status.suspension_state == storage::bucket_status::SuspensionState::Suspended as i32
    {
        return Err(error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "the bucket is not active or is suspended",
        ));
    }
    Ok(bucket)
}

/// Answers one request.
fn handle(
    service: &SimService,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Reply {
    let head = method == Method::HEAD;
    let path = uri.path().to_string();
    let mut core = service.lock();
    match route(&mut core, method, uri, headers, body) {
        Ok(reply) => reply,
        Err(e) => e.reply(&path, head),
    }
}

fn route(
    core: &mut Core,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Reply, S3Error> {
    let (caller, region) = authenticate(core, method, uri, headers, body)?;
    let path = sigv4::percent_decode(uri.path().trim_start_matches('/'));
    let (bucket_name, key) = path.split_once('/').unwrap_or((&path, ""));
    if bucket_name.is_empty() {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "ListBuckets is not simulated",
        ));
    }
    let bucket = bucket_for(core, bucket_name, &caller, &region)?;
    let query = uri.query().unwrap_or("");
    if query.split('&').any(|p| {
        let name = p.split('=').next().unwrap_or("");
        matches!(
            name,
            "uploads" | "uploadId" | "partNumber" | "versionId" | "acl" | "tagging"
        )
    }) {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "this operation is not simulated",
        ));
    }
    match (method.clone(), key.is_empty()) {
        (Method::HEAD, true) => Ok(empty(StatusCode::OK)),
        (Method::POST, true) if query.split('&').any(|p| p == "delete" || p == "delete=") => {
            delete_objects(core, &bucket, body)
        }
        (Method::GET, true) => list_objects(core, &bucket, query),
        (Method::PUT, false) => put_object(core, &bucket, key, headers, body),
        (Method::GET, false) | (Method::HEAD, false) => {
            get_object(core, &bucket, key, method == Method::HEAD)
        }
        (Method::DELETE, false) => {
            delete_object(core, &bucket, key);
            Ok(empty(StatusCode::NO_CONTENT))
        }
        _ => Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "this operation is not simulated",
        )),
    }
}

/// Deletes one object (absent is fine, as in S3), unless the world scripts deletes to no-op.
fn delete_object(core: &mut Core, bucket: &storage::Bucket, key: &str) {
    if core.world.object_storage.ignore_deletes {
        return;
    }
    core.state
        .objects
        .retain(|o| !(o.bucket_id == bucket.id() && o.key == key));
    let _ = core.persist();
}

fn xml_unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// DeleteObjects (`POST /<bucket>?delete`): each `<Key>` of the body, reported deleted.
fn delete_objects(
    core: &mut Core,
    bucket: &storage::Bucket,
    body: &[u8],
) -> Result<Reply, S3Error> {
    let text = std::str::from_utf8(body).map_err(|_| {
        error(
            StatusCode::BAD_REQUEST,
            "MalformedXML",
            "the body is not UTF-8",
        )
    })?;
    let mut deleted = String::new();
    for chunk in text.split("<Key>").skip(1) {
        let Some((key, _)) = chunk.split_once("</Key>") else {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "MalformedXML",
                "an unclosed <Key>",
            ));
        };
        let key = xml_unescape(key);
        delete_object(core, bucket, &key);
        deleted.push_str(&format!(
            "<Deleted><Key>{}</Key></Deleted>",
            xml_escape(&key)
        ));
    }
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{deleted}</DeleteResult>"
    );
    Ok(http::Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/xml")
        .header("x-amz-request-id", "sim")
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts"))
}

fn empty(status: StatusCode) -> Reply {
    http::Response::builder()
        .status(status)
        .header("x-amz-request-id", "sim")
        .body(Full::new(Bytes::new()))
        .expect("static response parts")
}

fn etag(data: &[u8]) -> String {
    // Real S3 uses MD5; no client here checks it, and SHA-256 is what the simulator has.
    format!("\"{}\"", hex::encode(&Sha256::digest(data)[..16]))
}

fn http_date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string())
        .unwrap_or_default()
}

fn iso_date(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%S.%3fZ").to_string())
        .unwrap_or_default()
}

fn put_object(
    core: &mut Core,
    bucket: &storage::Bucket,
    key: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Reply, S3Error> {
    let cap = bucket.spec.as_ref().map_or(0, |s| s.max_size_bytes);
    if cap > 0 {
        let others: usize = core
            .state
            .objects
            .iter()
            .filter(|o| o.bucket_id == bucket.id() && o.key != key)
            .map(|o| o.data.len())
            .sum();
        if body.len() as i64 > cap {
            return Err(error(
                StatusCode::BAD_REQUEST,
                "EntityTooLarge",
                format!("the object is larger than the bucket's cap of {cap} bytes"),
            ));
        }
        if (others + body.len()) as i64 > cap {
            return Err(error(
                StatusCode::FORBIDDEN,
                "QuotaExceeded",
                format!("the bucket's cap of {cap} bytes would be exceeded"),
            ));
        }
    }
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("binary/octet-stream")
        .to_string();
    core.state
        .objects
        .retain(|o| !(o.bucket_id == bucket.id() && o.key == key));
    core.state.objects.push(StoredObject {
        bucket_id: bucket.id().to_string(),
        key: key.to_string(),
        data: body.to_vec(),
        content_type,
        last_modified_unix_ms: now_ms(),
    });
    core.persist().map_err(|e| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            e.message(),
        )
    })?;
    Ok(http::Response::builder()
        .status(StatusCode::OK)
        .header("etag", etag(body))
        .header("x-amz-request-id", "sim")
        .body(Full::new(Bytes::new()))
        .expect("static response parts"))
}

fn get_object(
    core: &Core,
    bucket: &storage::Bucket,
    key: &str,
    head: bool,
) -> Result<Reply, S3Error> {
    let object = core
        .state
        .objects
        .iter()
        .find(|o| o.bucket_id == bucket.id() && o.key == key)
        .ok_or_else(|| {
            error(
                StatusCode::NOT_FOUND,
                "NoSuchKey",
                "the specified key does not exist",
            )
        })?;
    let mut data = object.data.clone();
    if core.world.object_storage.corrupt_reads {
        for b in &mut data {
            *b ^= 0x20;
        }
        data.push(b'!');
    }
    let builder = http::Response::builder()
        .status(StatusCode::OK)
        .header("etag", etag(&object.data))
        .header("last-modified", http_date(object.last_modified_unix_ms))
        .header("content-type", object.content_type.clone())
        .header("content-length", data.len())
        .header("accept-ranges", "bytes")
        .header("x-amz-request-id", "sim");
    let body = if head {
        Bytes::new()
    } else {
        Bytes::from(data)
    };
    Ok(builder
        .body(Full::new(body))
        .expect("static response parts"))
}

/// ListObjectsV2 (`list-type=2`): prefix, start-after, continuation-token, max-keys and a
/// delimiter for common prefixes.
fn list_objects(core: &Core, bucket: &storage::Bucket, query: &str) -> Result<Reply, S3Error> {
    let param = |name: &str| {
        query.split('&').find_map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (sigv4::percent_decode(k) == name).then(|| sigv4::percent_decode(v))
        })
    };
    if param("list-type").as_deref() != Some("2") {
        return Err(error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "only ListObjectsV2 (list-type=2) is simulated",
        ));
    }
    let prefix = param("prefix").unwrap_or_default();
    let delimiter = param("delimiter").unwrap_or_default();
    let max_keys: usize = param("max-keys")
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000)
        .min(1000);
    let after = param("continuation-token")
        .or_else(|| param("start-after"))
        .unwrap_or_default();
    let mut objects: Vec<&StoredObject> = core
        .state
        .objects
        .iter()
        .filter(|o| o.bucket_id == bucket.id() && o.key.starts_with(&prefix) && o.key > after)
        .collect();
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    let mut contents = String::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut count = 0;
    let mut last = String::new();
    let mut truncated = false;
    for o in objects {
        if count == max_keys {
            truncated = true;
            break;
        }
        let rest = &o.key[prefix.len()..];
        if !delimiter.is_empty()
            && let Some(i) = rest.find(&delimiter)
        {
            let common = format!("{prefix}{}", &rest[..i + delimiter.len()]);
            if !prefixes.contains(&common) {
                prefixes.push(common);
                count += 1;
            }
            last = o.key.clone();
            continue;
        }
        contents.push_str(&format!(
            "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            xml_escape(&o.key),
            iso_date(o.last_modified_unix_ms),
            xml_escape(&etag(&o.data)),
            o.data.len()
        ));
        count += 1;
        last = o.key.clone();
    }
    let common: String = prefixes
        .iter()
        .map(|p| {
            format!(
                "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                xml_escape(p)
            )
        })
        .collect();
    let next = if truncated {
        format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            xml_escape(&last)
        )
    } else {
        String::new()
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>{}</Name><Prefix>{}</Prefix><KeyCount>{count}</KeyCount><MaxKeys>{max_keys}</MaxKeys><Delimiter>{}</Delimiter><IsTruncated>{truncated}</IsTruncated>{next}{contents}{common}</ListBucketResult>",
        xml_escape(bucket.name()),
        xml_escape(&prefix),
        xml_escape(&delimiter),
    );
    Ok(http::Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/xml")
        .header("x-amz-request-id", "sim")
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts"))
}
