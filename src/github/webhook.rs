//! Webhook signature verification: `X-Hub-Signature-256` over the raw body bytes.
//!
//! GitHub signs the exact bytes it sends with HMAC-SHA256 under the webhook secret. The check
//! runs before any parsing, compares in constant time, and accepts any of several secrets so a
//! secret can be rotated without refusing deliveries signed with the previous one. The legacy
//! SHA-1 `X-Hub-Signature` header is never consulted.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The header GitHub puts the signature in.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// The webhook secrets in force: the current one and, during a rotation, the previous ones.
#[derive(Clone)]
pub struct WebhookSecrets(Vec<Vec<u8>>);

impl fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WebhookSecrets(<{} redacted>)", self.0.len())
    }
}

/// Why the secrets could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretsError {
    /// No secret was given, or only empty ones.
    #[error("no webhook secret is set: set FLEETBOT_WEBHOOK_SECRET (comma-separated to rotate)")]
    Empty,
}

/// Why a delivery's signature was refused. None of the variants carries the received value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `X-Hub-Signature-256` header.
    #[error("the X-Hub-Signature-256 header is missing")]
    Missing,
    /// The header is not `sha256=` followed by 64 hex digits.
    #[error("the X-Hub-Signature-256 header is malformed")]
    Malformed,
    /// No configured secret produces this signature.
    #[error("the X-Hub-Signature-256 signature does not match")]
    Mismatch,
}

/// The signature a header carries, checked for form only: a request without one is refused
/// before its body is read.
pub fn parse_signature(header: Option<&[u8]>) -> Result<[u8; 32], SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let hex_digits = header
        .strip_prefix(b"sha256=")
        .ok_or(SignatureError::Malformed)?;
    let mut expected = [0u8; 32];
    if hex_digits.len() != 64 || hex::decode_to_slice(hex_digits, &mut expected).is_err() {
        return Err(SignatureError::Malformed);
    }
    Ok(expected)
}

impl WebhookSecrets {
    /// Secrets from a comma-separated list; blanks around and between entries are dropped.
    pub fn from_comma_separated(list: &str) -> Result<Self, SecretsError> {
        Self::new(list.split(',').map(str::trim).filter(|s| !s.is_empty()))
    }

    /// Secrets from a list; fails when none is left after dropping empty ones.
    pub fn new<I, S>(secrets: I) -> Result<Self, SecretsError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let secrets: Vec<Vec<u8>> = secrets
            .into_iter()
            .map(|s| s.as_ref().to_vec())
            .filter(|s| !s.is_empty())
            .collect();
        if secrets.is_empty() {
            return Err(SecretsError::Empty);
        }
        Ok(WebhookSecrets(secrets))
    }

    /// How many secrets are in force.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: construction refuses an empty list.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks `header` (the `X-Hub-Signature-256` value) against `body`, the raw bytes received
    /// (see [`Verifier::finish`] for how the secrets are compared).
    pub fn verify(&self, body: &[u8], header: Option<&[u8]>) -> Result<(), SignatureError> {
        let mut verifier = self.verifier(header)?;
        verifier.update(body);
        verifier.finish()
    }

    /// A verifier fed the body piece by piece as it arrives, so a body is checked without a
    /// second pass over it (and without it being contiguous).
    pub fn verifier(&self, header: Option<&[u8]>) -> Result<Verifier, SignatureError> {
        let expected = parse_signature(header)?;
        let macs = self
            .0
            .iter()
            .map(|secret| {
                HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length")
            })
            .collect();
        Ok(Verifier { expected, macs })
    }
}

/// [`WebhookSecrets::verify`] over a body that arrives in pieces: one HMAC per secret.
pub struct Verifier {
    expected: [u8; 32],
    macs: Vec<HmacSha256>,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Verifier(<{} secrets>)", self.macs.len())
    }
}

impl Verifier {
    /// Adds the next bytes of the body.
    pub fn update(&mut self, bytes: &[u8]) {
        for mac in &mut self.macs {
            mac.update(bytes);
        }
    }

    /// Whether any secret signed the body. Every secret is compared, even after a match, so
    /// the time taken does not tell which secret (or whether any) matched; each comparison is
    /// constant-time (`Mac::verify_slice`).
    pub fn finish(self) -> Result<(), SignatureError> {
        let mut matched = false;
        for mac in self.macs {
            matched |= mac.verify_slice(&self.expected).is_ok();
        }
        if matched {
            Ok(())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

/// The `X-Hub-Signature-256` value GitHub would send for `body` under `secret`
/// (`sha256=` and lowercase hex). Used by tests and the load script to sign deliveries.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub's published test vector (docs: "Validating webhook deliveries").
    const GITHUB_SECRET: &str = "It's a Secret to Everybody";
    const GITHUB_BODY: &[u8] = b"Hello, World!";
    const GITHUB_SIGNATURE: &str =
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn matches_githubs_test_vector() {
        assert_eq!(
            sign(GITHUB_SECRET.as_bytes(), GITHUB_BODY),
            GITHUB_SIGNATURE
        );
        let secrets = WebhookSecrets::from_comma_separated(GITHUB_SECRET).unwrap();
        assert_eq!(
            secrets.verify(GITHUB_BODY, Some(GITHUB_SIGNATURE.as_bytes())),
            Ok(())
        );
    }

    #[test]
    fn rotation_accepts_either_secret() {
        let secrets = WebhookSecrets::from_comma_separated(" new-secret , old-secret ,").unwrap();
        assert_eq!(secrets.len(), 2);
        for secret in ["new-secret", "old-secret"] {
            let sig = sign(secret.as_bytes(), b"{}");
            assert_eq!(secrets.verify(b"{}", Some(sig.as_bytes())), Ok(()));
        }
        let other = sign(b"other", b"{}");
        assert_eq!(
            secrets.verify(b"{}", Some(other.as_bytes())),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn refuses_missing_malformed_and_tampered() {
        let secrets = WebhookSecrets::from_comma_separated("s").unwrap();
        let good = sign(b"s", b"body");
        assert_eq!(secrets.verify(b"body", None), Err(SignatureError::Missing));
        for bad in [
            "".to_string(),
            "sha1=abc".to_string(),
            good.to_uppercase(),
            good[..good.len() - 2].to_string(),
            format!("{good}00"),
            good.replace("sha256=", "sha256 ="),
        ] {
            assert_eq!(
                secrets.verify(b"body", Some(bad.as_bytes())),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            secrets.verify(b"body!", Some(good.as_bytes())),
            Err(SignatureError::Mismatch)
        );
        // Upper-case hex digits are hex all the same; only the prefix is case-sensitive.
        let upper_hex = format!("sha256={}", good[7..].to_uppercase());
        assert_eq!(secrets.verify(b"body", Some(upper_hex.as_bytes())), Ok(()));
    }

    #[test]
    fn a_body_verified_in_pieces_is_verified_as_a_whole() {
        let secrets = WebhookSecrets::from_comma_separated("new,old").unwrap();
        let sig = sign(b"old", GITHUB_BODY);
        let mut v = secrets.verifier(Some(sig.as_bytes())).unwrap();
        for piece in GITHUB_BODY.chunks(3) {
            v.update(piece);
        }
        assert_eq!(v.finish(), Ok(()));
        let mut short = secrets.verifier(Some(sig.as_bytes())).unwrap();
        short.update(&GITHUB_BODY[..5]);
        assert_eq!(short.finish(), Err(SignatureError::Mismatch));
        assert_eq!(
            secrets.verifier(Some(b"sha256=zz")).unwrap_err(),
            SignatureError::Malformed
        );
    }

    #[test]
    fn empty_secret_lists_are_refused_and_debug_redacts() {
        assert_eq!(
            WebhookSecrets::from_comma_separated(" , ").unwrap_err(),
            SecretsError::Empty
        );
        let secrets = WebhookSecrets::from_comma_separated("hunter2").unwrap();
        assert!(!format!("{secrets:?}").contains("hunter2"));
    }
}
