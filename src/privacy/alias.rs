//! Keyed aliases: let reviewers see that two findings are the same value without seeing it.
//!
//! The alias is a truncated HMAC-SHA256 of the value under a per-installation key. Without
//! the key, an alias cannot be tested against guesses, which matters for short values such
//! as bucket names; with it, aliases are stable across runs, files and pull requests.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Key used when neither `--key-file` nor `FLEETBOT_PRIVACY_KEY` is given.
///
/// It is public, so local aliases are only comparable between local runs and offer no
/// protection against guessing; the GitHub App always passes its own per-installation key.
pub const DEFAULT_LOCAL_KEY: &[u8] = b"fleetbot-privacy-local-default-key/v1";

/// Hex characters kept from the MAC: 64 bits, plenty to tell values in one repository apart.
const ALIAS_HEX_LEN: usize = 16;

/// The alias of `value` under `key`.
pub(crate) fn alias(key: &[u8], value: &[u8]) -> String {
    // HMAC accepts keys of any length, so this cannot fail; the scanner rejects empty keys.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(value);
    let digest = mac.finalize().into_bytes();
    let mut out = hex::encode(digest);
    out.truncate(ALIAS_HEX_LEN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_matches_rfc4231_case_2_prefix() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            alias(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e"
        );
    }

    #[test]
    fn alias_depends_on_key_and_value() {
        assert_eq!(alias(b"k1", b"v"), alias(b"k1", b"v"));
        assert_ne!(alias(b"k1", b"v"), alias(b"k2", b"v"));
        assert_ne!(alias(b"k1", b"v"), alias(b"k1", b"w"));
        assert_eq!(alias(b"k1", b"v").len(), ALIAS_HEX_LEN);
    }
}
