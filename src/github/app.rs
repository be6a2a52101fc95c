//! GitHub App authentication: the RS256 App JWT and the installation-token cache.
//!
//! The JWT is backdated 60 s (GitHub's advice for clock drift) and lives 9 minutes from now,
//! so `exp − iat` stays within GitHub's 10-minute ceiling even with the backdating. Installation
//! tokens last an hour; they are reused until [`TOKEN_REFRESH_MARGIN`] before expiry, so a
//! request never starts with a token about to lapse. Tokens are held in memory only and never
//! validated by length (the `ghs_APPID_JWT` format is not 40 characters).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use super::SecretString;

/// How far `iat` is set in the past, for clock drift between us and GitHub.
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// How far `exp` is set in the future; with the backdating the JWT spans exactly 10 minutes.
pub const JWT_LIFETIME: Duration = Duration::from_secs(9 * 60);
/// A cached installation token is replaced when it has less than this left.
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Why App authentication failed. No variant holds key material.
#[derive(Debug, thiserror::Error)]
pub enum AppAuthError {
    /// The App ID is empty.
    #[error("the GitHub App ID is empty: set FLEETBOT_APP_ID")]
    MissingAppId,
    /// The private key file could not be read.
    #[error("cannot read the GitHub App private key {path}: {kind}")]
    ReadKey {
        /// Where it was looked for.
        path: String,
        /// The IO error kind (the message could quote nothing secret, but stay terse).
        kind: std::io::ErrorKind,
    },
    /// The key is not an RSA private key in PEM.
    #[error("the GitHub App private key is not an RSA private key in PEM format")]
    BadKey,
    /// Signing failed.
    #[error("cannot sign the GitHub App JWT")]
    Sign,
}

/// The App's identity: its ID (or client ID) and private key.
pub struct AppCredentials {
    app_id: String,
    key: EncodingKey,
    /// Kept to derive per-installation keys (privacy aliases); never shown.
    key_digest: [u8; 32],
}

impl fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .field("key", &"<redacted>")
            .finish()
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iat: u64,
    exp: u64,
    iss: Issuer<'a>,
}

/// `iss` as GitHub's own libraries send it: a number for a numeric App ID, else the client ID.
#[derive(Serialize)]
#[serde(untagged)]
enum Issuer<'a> {
    Id(u64),
    ClientId(&'a str),
}

impl AppCredentials {
    /// Credentials from an App ID (numeric, or the client ID `Iv1.…`) and a PEM RSA key.
    pub fn from_pem(app_id: &str, pem: &[u8]) -> Result<Self, AppAuthError> {
        let app_id = app_id.trim();
        if app_id.is_empty() {
            return Err(AppAuthError::MissingAppId);
        }
        let key = EncodingKey::from_rsa_pem(pem).map_err(|_| AppAuthError::BadKey)?;
        use sha2::Digest;
        let key_digest: [u8; 32] = sha2::Sha256::digest(pem).into();
        Ok(AppCredentials {
            app_id: app_id.to_string(),
            key,
            key_digest,
        })
    }

    /// Reads the key from `path`.
    pub fn from_pem_file(app_id: &str, path: &std::path::Path) -> Result<Self, AppAuthError> {
        let pem = std::fs::read(path).map_err(|e| AppAuthError::ReadKey {
            path: path.display().to_string(),
            kind: e.kind(),
        })?;
        Self::from_pem(app_id, &pem)
    }

    /// The App ID as configured.
    pub fn app_id(&self) -> &str {
        &self.app_id
    }

    /// A fresh App JWT for `now`.
    pub fn jwt(&self, now: SystemTime) -> Result<SecretString, AppAuthError> {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        let claims = Claims {
            iat: (now.saturating_sub(JWT_BACKDATE)).as_secs(),
            exp: (now + JWT_LIFETIME).as_secs(),
            iss: match self.app_id.parse::<u64>() {
                Ok(id) => Issuer::Id(id),
                Err(_) => Issuer::ClientId(&self.app_id),
            },
        };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
            .map(SecretString::new)
            .map_err(|_| AppAuthError::Sign)
    }

    /// A key for one installation derived from the App key: used for privacy aliases, so equal
    /// values get equal aliases within an installation and unrelated ones elsewhere.
    pub fn installation_key(&self, installation_id: u64) -> Vec<u8> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(b"fleetbot/privacy-alias/v1\0");
        h.update(self.key_digest);
        h.update(installation_id.to_be_bytes());
        h.finalize().to_vec()
    }
}

/// An installation access token and when it expires.
#[derive(Debug, Clone)]
pub struct InstallationToken {
    /// The token (`ghs_…`); redacted in `Debug`.
    pub token: SecretString,
    /// GitHub's `expires_at`.
    pub expires_at: SystemTime,
}

impl InstallationToken {
    /// Whether the token can still be used at `now` with the refresh margin to spare.
    pub fn fresh_at(&self, now: SystemTime) -> bool {
        now + TOKEN_REFRESH_MARGIN < self.expires_at
    }
}

/// Installation tokens by installation ID.
#[derive(Debug, Default)]
pub struct TokenCache {
    tokens: Mutex<HashMap<u64, InstallationToken>>,
}

impl TokenCache {
    /// A cached token that is still fresh at `now`.
    pub fn get(&self, installation_id: u64, now: SystemTime) -> Option<InstallationToken> {
        let tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens
            .get(&installation_id)
            .filter(|t| t.fresh_at(now))
            .cloned()
    }

    /// Stores a token.
    pub fn put(&self, installation_id: u64, token: InstallationToken) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens.insert(installation_id, token);
    }

    /// Drops a token GitHub refused (revoked, or expired early).
    pub fn invalidate(&self, installation_id: u64) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        tokens.remove(&installation_id);
    }
}

/// Parses GitHub's `expires_at` (`2016-07-11T22:14:10Z`, RFC 3339 in UTC).
pub fn parse_github_time(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !text.ends_with('Z') || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y as i64, mo as i64, d as i64);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + mi * 60 + s;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Formats a time as GitHub's ISO 8601 (`YYYY-MM-DDTHH:MM:SSZ`).
pub fn format_github_time(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation, decode};

    use crate::github::test_key::test_key;

    #[derive(serde::Deserialize)]
    struct Decoded {
        iat: u64,
        exp: u64,
        iss: serde_json::Value,
    }

    #[test]
    fn jwt_round_trips_with_backdated_iat_and_short_exp() {
        let creds = AppCredentials::from_pem("12345", test_key().private_pem.as_bytes()).unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let jwt = creds.jwt(now).unwrap();
        let mut validation = Validation::new(Algorithm::RS256);
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["iat", "exp"]);
        let token = decode::<Decoded>(
            jwt.expose(),
            &DecodingKey::from_rsa_pem(test_key().public_pem.as_bytes()).unwrap(),
            &validation,
        )
        .unwrap();
        assert_eq!(token.claims.iat, 1_700_000_000 - 60);
        assert_eq!(token.claims.exp, 1_700_000_000 + 540);
        assert!(token.claims.exp - token.claims.iat <= 600);
        assert_eq!(token.claims.iss, serde_json::json!(12345));
        let by_client_id =
            AppCredentials::from_pem("Iv1.abc", test_key().private_pem.as_bytes()).unwrap();
        let jwt = by_client_id.jwt(now).unwrap();
        let token = decode::<Decoded>(
            jwt.expose(),
            &DecodingKey::from_rsa_pem(test_key().public_pem.as_bytes()).unwrap(),
            &validation,
        )
        .unwrap();
        assert_eq!(token.claims.iss, serde_json::json!("Iv1.abc"));
    }

    #[test]
    fn bad_keys_and_ids_are_clear_errors_and_debug_redacts() {
        assert!(matches!(
            AppCredentials::from_pem("1", b"not a key"),
            Err(AppAuthError::BadKey)
        ));
        assert!(matches!(
            AppCredentials::from_pem(" ", test_key().private_pem.as_bytes()),
            Err(AppAuthError::MissingAppId)
        ));
        let creds = AppCredentials::from_pem("1", test_key().private_pem.as_bytes()).unwrap();
        let shown = format!("{creds:?}");
        assert!(shown.contains("redacted") && !shown.contains("PRIVATE"));
        assert_ne!(creds.installation_key(1), creds.installation_key(2));
    }

    #[test]
    fn token_cache_refreshes_before_expiry() {
        let cache = TokenCache::default();
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        cache.put(
            7,
            InstallationToken {
                token: SecretString::new("ghs_x"),
                expires_at: t0 + Duration::from_secs(3600),
            },
        );
        assert!(cache.get(7, t0).is_some());
        assert!(cache.get(7, t0 + Duration::from_secs(3600 - 301)).is_some());
        assert!(cache.get(7, t0 + Duration::from_secs(3600 - 300)).is_none());
        assert!(cache.get(8, t0).is_none());
        cache.invalidate(7);
        assert!(cache.get(7, t0).is_none());
    }

    #[test]
    fn github_times_round_trip() {
        let t = parse_github_time("2016-07-11T22:14:10Z").unwrap();
        assert_eq!(
            t.duration_since(UNIX_EPOCH).unwrap().as_secs(),
            1_468_275_250
        );
        assert_eq!(format_github_time(t), "2016-07-11T22:14:10Z");
        assert_eq!(format_github_time(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert!(parse_github_time("2016-07-11 22:14:10").is_none());
        assert!(parse_github_time("2016-13-11T22:14:10Z").is_none());
        let leap = parse_github_time("2024-02-29T00:00:00Z").unwrap();
        assert_eq!(format_github_time(leap), "2024-02-29T00:00:00Z");
    }
}
