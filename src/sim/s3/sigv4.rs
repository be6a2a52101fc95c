//! Server-side verification of AWS Signature Version 4 (header form), as S3 checks it: the
//! canonical request, the string to sign, the derived signing key, and the payload hash the
//! client declares in `x-amz-content-sha256`.
//!
//! This is the simulator playing S3. fleetbot's own S3 calls are signed by `object_store`.

use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, Method};
use sha2::{Digest, Sha256};

pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// The parts of an `Authorization: AWS4-HMAC-SHA256 …` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    pub access_key_id: String,
    /// `YYYYMMDD`.
    pub date: String,
    pub region: String,
    pub service: String,
    /// Lower-case header names, in the order given (S3 requires them sorted).
    pub signed_headers: Vec<String>,
    pub signature: String,
}

/// Why a request's authentication is refused, as S3's error codes name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No `Authorization` header (anonymous access is never granted here).
    Missing,
    /// Unparseable or incomplete header, or a scope that is not `…/s3/aws4_request`.
    Malformed(String),
    /// Streaming (`aws-chunked`) uploads and the like.
    Unsupported(String),
    /// The body does not hash to `x-amz-content-sha256`.
    ContentMismatch,
    /// The signature does not match the one computed with the key's secret.
    SignatureMismatch,
}

/// Parses the header; `Missing` when there is none.
pub fn parse_authorization(headers: &HeaderMap) -> Result<Authorization, Refusal> {
    let value = headers
        .get(http::header::AUTHORIZATION)
        .ok_or(Refusal::Missing)?
        .to_str()
        .map_err(|_| Refusal::Malformed("the Authorization header is not ASCII".into()))?;
    let rest = value
        .strip_prefix(ALGORITHM)
        .ok_or_else(|| Refusal::Malformed(format!("only {ALGORITHM} is supported")))?;
    let mut credential = None;
    let mut signed = None;
    let mut signature = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("Credential=") {
            credential = Some(v);
        } else if let Some(v) = part.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = part.strip_prefix("Signature=") {
            signature = Some(v);
        }
    }
    let (Some(credential), Some(signed), Some(signature)) = (credential, signed, signature) else {
        return Err(Refusal::Malformed(
            "the Authorization header needs Credential, SignedHeaders and Signature".into(),
        ));
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let [key, date, region, service, terminator] = scope[..] else {
        return Err(Refusal::Malformed(format!(
            "the credential {credential:?} is not KEY/DATE/REGION/SERVICE/aws4_request"
        )));
    };
    if terminator != "aws4_request" || service != "s3" {
        return Err(Refusal::Malformed(format!(
            "the credential scope must end in s3/aws4_request, not {service}/{terminator}"
        )));
    }
    Ok(Authorization {
        access_key_id: key.to_string(),
        date: date.to_string(),
        region: region.to_string(),
        service: service.to_string(),
        signed_headers: signed.split(';').map(str::to_ascii_lowercase).collect(),
        signature: signature.to_string(),
    })
}

/// `%XX` decoding; invalid escapes are kept as they are.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = (bytes[i] == b'%' && i + 3 <= bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escape {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// SigV4's URI encoding: unreserved characters as they are, everything else `%XX`
/// (upper-case); `/` too unless `keep_slash`.
pub fn uri_encode(text: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// S3's canonical URI: the decoded path encoded once (S3 does not encode twice).
fn canonical_uri(path: &str) -> String {
    let encoded = uri_encode(&percent_decode(path), true);
    if encoded.is_empty() {
        "/".into()
    } else {
        encoded
    }
}

/// Parameters sorted by name then value, each encoded; a bare `name` is `name=`.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                uri_encode(&percent_decode(k), false),
                uri_encode(&percent_decode(v), false),
            )
        })
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// `name:value\n` for each signed header: values trimmed, inner runs of spaces collapsed,
/// repeated headers joined with commas.
fn canonical_headers(headers: &HeaderMap, signed: &[String]) -> Result<String, Refusal> {
    let mut out = String::new();
    for name in signed {
        let values: Vec<String> = headers
            .get_all(name.as_str())
            .iter()
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        if values.is_empty() {
            return Err(Refusal::Malformed(format!(
                "the signed header {name} is not in the request"
            )));
        }
        out.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(out)
}

/// The canonical request, for a request whose payload hash is `payload_hash`.
pub fn canonical_request(
    method: &Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    auth: &Authorization,
    payload_hash: &str,
) -> Result<String, Refusal> {
    Ok(format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        method.as_str(),
        canonical_uri(path),
        canonical_query(query),
        canonical_headers(headers, &auth.signed_headers)?,
        auth.signed_headers.join(";"),
        payload_hash
    ))
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The signature of `canonical` under `secret`, for the header's scope at `amz_date`.
pub fn signature(secret: &str, auth: &Authorization, amz_date: &str, canonical: &str) -> String {
    let scope = format!(
        "{}/{}/{}/aws4_request",
        auth.date, auth.region, auth.service
    );
    let string_to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let key = hmac(format!("AWS4{secret}").as_bytes(), &auth.date);
    let key = hmac(&key, &auth.region);
    let key = hmac(&key, &auth.service);
    let key = hmac(&key, "aws4_request");
    hex::encode(hmac(&key, &string_to_sign))
}

/// The header's value, or `""`.
fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Verifies a parsed request against the access key's `secret`: the declared payload hash
/// (and the body against it), the date, then the signature.
pub fn verify(
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: &[u8],
    auth: &Authorization,
    secret: &str,
) -> Result<(), Refusal> {
    let payload_hash = header(headers, "x-amz-content-sha256");
    if payload_hash.is_empty() {
        return Err(Refusal::Malformed(
            "x-amz-content-sha256 is required".into(),
        ));
    }
    if payload_hash.starts_with("STREAMING-") {
        return Err(Refusal::Unsupported(format!(
            "{payload_hash} (aws-chunked uploads) is not simulated; send the body whole"
        )));
    }
    if payload_hash != UNSIGNED_PAYLOAD && payload_hash != hex::encode(Sha256::digest(body)) {
        return Err(Refusal::ContentMismatch);
    }
    let amz_date = header(headers, "x-amz-date");
    if !amz_date.starts_with(&auth.date) || amz_date.len() != 16 {
        return Err(Refusal::Malformed(format!(
            "x-amz-date {amz_date:?} does not fall on the credential's date {}",
            auth.date
        )));
    }
    for required in ["host", "x-amz-content-sha256", "x-amz-date"] {
        if !auth.signed_headers.iter().any(|h| h == required) {
            return Err(Refusal::Malformed(format!("{required} must be signed")));
        }
    }
    let canonical = canonical_request(
        method,
        uri.path(),
        uri.query().unwrap_or(""),
        headers,
        auth,
        payload_hash,
    )?;
    let expected = signature(secret, auth, amz_date, &canonical);
    // Not constant-time: the simulator's secrets guard nothing of value.
    if expected != auth.signature {
        return Err(Refusal::SignatureMismatch);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const EMPTY_SHA: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    /// The "GET Object" example of AWS's S3 SigV4 documentation (header-based auth).
    #[test]
    fn the_published_get_object_example_verifies() {
        let signature = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature={signature}"
        );
        let h = headers(&[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA),
            ("x-amz-date", "20130524T000000Z"),
            ("authorization", &auth),
        ]);
        let parsed = parse_authorization(&h).unwrap();
        assert_eq!(parsed.access_key_id, "AKIAIOSFODNN7EXAMPLE");
        assert_eq!(parsed.region, "us-east-1");
        let uri: http::Uri = "/test.txt".parse().unwrap();
        let canonical =
            canonical_request(&Method::GET, "/test.txt", "", &h, &parsed, EMPTY_SHA).unwrap();
        assert_eq!(
            canonical,
            format!(
                "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:{EMPTY_SHA}\nx-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n{EMPTY_SHA}"
            )
        );
        assert_eq!(verify(&Method::GET, &uri, &h, b"", &parsed, SECRET), Ok(()));
        assert_eq!(
            verify(&Method::GET, &uri, &h, b"", &parsed, "not-the-secret"),
            Err(Refusal::SignatureMismatch)
        );
    }

    /// The "GET Bucket (List Objects)" example: query parameters are sorted and encoded.
    #[test]
    fn the_published_list_objects_example_verifies() {
        let signature = "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7";
        let auth = format!(
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature={signature}"
        );
        let h = headers(&[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-content-sha256", EMPTY_SHA),
            ("x-amz-date", "20130524T000000Z"),
            ("authorization", &auth),
        ]);
        let parsed = parse_authorization(&h).unwrap();
        let uri: http::Uri = "/?prefix=J&max-keys=2".parse().unwrap();
        assert_eq!(verify(&Method::GET, &uri, &h, b"", &parsed, SECRET), Ok(()));
    }

    #[test]
    fn a_body_that_does_not_hash_to_its_declared_sha_is_refused() {
        let h = headers(&[
            ("host", "h"),
            ("x-amz-content-sha256", EMPTY_SHA),
            ("x-amz-date", "20130524T000000Z"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=K/20130524/r/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=00",
            ),
        ]);
        let parsed = parse_authorization(&h).unwrap();
        let uri: http::Uri = "/b/k".parse().unwrap();
        assert_eq!(
            verify(&Method::PUT, &uri, &h, b"body", &parsed, SECRET),
            Err(Refusal::ContentMismatch)
        );
    }

    #[test]
    fn streaming_uploads_and_foreign_scopes_are_refused() {
        let mut h = headers(&[
            ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
            (
                "authorization",
                "AWS4-HMAC-SHA256 Credential=K/20130524/r/s3/aws4_request,SignedHeaders=host,Signature=00",
            ),
        ]);
        let parsed = parse_authorization(&h).unwrap();
        let uri: http::Uri = "/b/k".parse().unwrap();
        assert!(matches!(
            verify(&Method::PUT, &uri, &h, b"", &parsed, SECRET),
            Err(Refusal::Unsupported(_))
        ));
        h.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=K/20130524/r/iam/aws4_request,SignedHeaders=host,Signature=00"
                .parse()
                .unwrap(),
        );
        assert!(matches!(
            parse_authorization(&h),
            Err(Refusal::Malformed(_))
        ));
        assert_eq!(
            parse_authorization(&HeaderMap::new()),
            Err(Refusal::Missing)
        );
    }

    #[test]
    fn paths_and_queries_are_encoded_once() {
        assert_eq!(canonical_uri("/b/a%20b/c~d"), "/b/a%20b/c~d");
        assert_eq!(canonical_uri("/b/x$y"), "/b/x%24y");
        assert_eq!(
            canonical_query("prefix=fleetbot-probe%2F&list-type=2"),
            "list-type=2&prefix=fleetbot-probe%2F"
        );
        assert_eq!(canonical_query("uploads"), "uploads=");
    }
}
