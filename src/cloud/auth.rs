//! Credentials for the Nebius API: a static IAM token, or a service account whose RS256 JWT is
//! exchanged for an access token (cached until shortly before it expires).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

use super::error::{CloudError, ErrorKind};
use super::proto::nebius::iam::v1 as iam;

pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
pub const JWT_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:jwt";
/// The audience gosdk puts in service-account JWTs.
pub const JWT_AUDIENCE: &str = "token-service.iam.new.nebiuscloud.net";

/// A service account's signing identity. The private key never appears in `Debug` output.
#[derive(Clone)]
pub struct ServiceAccountKey {
    pub service_account_id: String,
    pub public_key_id: String,
    pub private_key_pem: String,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("service_account_id", &"<redacted>")
            .field("public_key_id", &"<redacted>")
            .field("private_key_pem", &"<redacted>")
            .finish()
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

impl ServiceAccountKey {
    /// A short-lived JWT signed with the account's key (one minute, as gosdk does).
    pub fn sign_jwt(&self, now_unix: i64) -> Result<String, CloudError> {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.public_key_id.clone());
        let key = EncodingKey::from_rsa_pem(self.private_key_pem.as_bytes()).map_err(|_| {
            CloudError::new(
                tonic::Code::Unauthenticated,
                "the service account private key is not a valid PEM RSA key",
                ErrorKind::Unauthenticated,
            )
        })?;
        let claims = Claims {
            iss: &self.service_account_id,
            sub: &self.service_account_id,
            aud: JWT_AUDIENCE,
            iat: now_unix,
            exp: now_unix + 60,
        };
        jsonwebtoken::encode(&header, &claims, &key).map_err(|_| {
            CloudError::new(
                tonic::Code::Unauthenticated,
                "could not sign the service account JWT",
                ErrorKind::Unauthenticated,
            )
        })
    }

    /// The token exchange request for a signed JWT.
    pub fn exchange_request(jwt: String) -> iam::ExchangeTokenRequest {
        iam::ExchangeTokenRequest {
            grant_type: GRANT_TYPE.into(),
            requested_token_type: ACCESS_TOKEN_TYPE.into(),
            subject_token: jwt,
            subject_token_type: JWT_TOKEN_TYPE.into(),
            ..Default::default()
        }
    }
}

/// The JSON credentials file the Nebius CLI and SDKs read.
#[derive(Debug, Deserialize)]
struct CredentialsFile {
    #[serde(rename = "subject-credentials")]
    subject_credentials: SubjectCredentials,
}

#[derive(Deserialize)]
struct SubjectCredentials {
    alg: String,
    #[serde(rename = "private-key")]
    private_key: String,
    kid: String,
    iss: String,
    sub: String,
}

impl std::fmt::Debug for SubjectCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectCredentials { <redacted> }")
    }
}

/// Why a service account's credentials file is refused; never quotes the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsFileError {
    /// Not JSON, or not the shape the Nebius CLI writes.
    #[error("the service account credentials file is not valid JSON of the expected shape")]
    Shape,
    /// A key algorithm other than the one Nebius signs with.
    #[error("the service account credentials must use alg RS256")]
    Algorithm,
    /// Issuer and subject differ: not a service account's own key.
    #[error("the service account credentials must have iss equal to sub")]
    Subject,
}

/// Reads a credentials file; errors never quote the file.
pub fn parse_credentials_file(text: &str) -> Result<ServiceAccountKey, CredentialsFileError> {
    let file: CredentialsFile =
        serde_json::from_str(text).map_err(|_| CredentialsFileError::Shape)?;
    let c = file.subject_credentials;
    if c.alg != "RS256" {
        return Err(CredentialsFileError::Algorithm);
    }
    if c.iss != c.sub {
        return Err(CredentialsFileError::Subject);
    }
    Ok(ServiceAccountKey {
        service_account_id: c.iss,
        public_key_id: c.kid,
        private_key_pem: c.private_key,
    })
}

/// Where bearer tokens come from.
#[derive(Debug)]
pub enum Credentials {
    /// `NEBIUS_IAM_TOKEN`, or the simulator's session token.
    Static(String),
    /// A service account; tokens are exchanged and cached.
    ServiceAccount {
        key: ServiceAccountKey,
        cache: Mutex<Option<CachedToken>>,
    },
}

/// An exchanged token and when to stop using it.
#[derive(Clone)]
pub struct CachedToken {
    pub token: String,
    /// Renew after 90% of the token's lifetime, as gosdk does.
    pub renew_at: Instant,
}

impl std::fmt::Debug for CachedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedToken")
            .field("renew_at", &self.renew_at)
            .finish()
    }
}

impl Credentials {
    pub fn service_account(key: ServiceAccountKey) -> Credentials {
        Credentials::ServiceAccount {
            key,
            cache: Mutex::new(None),
        }
    }

    /// A cached token that is still fresh.
    pub fn cached(&self) -> Option<String> {
        match self {
            Credentials::Static(token) => Some(token.clone()),
            Credentials::ServiceAccount { cache, .. } => {
                let guard = cache.lock().unwrap_or_else(|p| p.into_inner());
                guard
                    .as_ref()
                    .filter(|c| Instant::now() < c.renew_at)
                    .map(|c| c.token.clone())
            }
        }
    }

    /// Stores an exchanged token valid for `expires_in` seconds.
    pub fn store(&self, token: String, expires_in: i64) {
        if let Credentials::ServiceAccount { cache, .. } = self {
            let lifetime = Duration::from_secs(expires_in.max(0) as u64);
            let renew_at = Instant::now() + lifetime.mul_f64(0.9);
            *cache.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(CachedToken { token, renew_at });
        }
    }

    /// Forgets the cached token (after `UNAUTHENTICATED`).
    pub fn invalidate(&self) {
        if let Credentials::ServiceAccount { cache, .. } = self {
            *cache.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_file_parses_and_never_leaks_in_debug() {
        let json = r#"{"subject-credentials": {"type": "JWT", "alg": "RS256", "private-key": "PEMDATA", "kid": "publickey-x", "iss": "serviceaccount-x", "sub": "serviceaccount-x"}}"#;
        let key = parse_credentials_file(json).unwrap();
        assert_eq!(key.public_key_id, "publickey-x");
        let shown = format!("{key:?}");
        assert!(!shown.contains("PEMDATA") && !shown.contains("serviceaccount-x"));
        assert!(
            parse_credentials_file(
                &json.replace("\"sub\": \"serviceaccount-x\"", "\"sub\": \"other\"")
            )
            .is_err()
        );
        assert_eq!(
            parse_credentials_file(&json.replace("RS256", "HS256")).unwrap_err(),
            CredentialsFileError::Algorithm
        );
        let err = parse_credentials_file("{\"secret\": 1").unwrap_err();
        assert_eq!(err, CredentialsFileError::Shape);
        assert!(!err.to_string().contains("secret"));
    }

    #[test]
    fn cached_token_expires() {
        let creds = Credentials::service_account(ServiceAccountKey {
            service_account_id: "a".into(),
            public_key_id: "k".into(),
            private_key_pem: String::new(),
        });
        assert!(creds.cached().is_none());
        creds.store("t".into(), 3600);
        assert_eq!(creds.cached().as_deref(), Some("t"));
        creds.store("t".into(), 0);
        assert!(creds.cached().is_none());
        creds.store("t".into(), 3600);
        creds.invalidate();
        assert!(creds.cached().is_none());
    }
}
