//! Shape rules: IDs, tokens, keys and private locations found anywhere in a text.
//!
//! Each rule runs once over the whole file (not line by line), so a 100 MB file costs a few
//! linear passes whose literal prefixes the regex engine skips to with vectorised search.
//! Matches become [`Candidate`]s holding the normalised value only long enough to alias it.
//!
//! One module per family of rules: [`keys`] (with [`key_body`], which follows a key through
//! its quoting), [`credentials`], [`tokens`], [`nid`] and [`locations`].

mod credentials;
mod key_body;
mod keys;
mod locations;
mod nid;
mod text;
mod tokens;
mod vendor;

#[cfg(test)]
mod tests;

use super::Candidate;
use super::noise::{is_filler, mentions_example};

pub(crate) use nid::KNOWN_TYPES;

/// How far past a BEGIN line a key body is followed, so one marker cannot make a scan quadratic.
const MAX_BLOCK_BYTES: usize = 64 * 1024;

/// How far a credentials object or a PuTTY key is followed (real ones are a few kB).
const MAX_DOCUMENT_BYTES: usize = 16 * 1024;

/// Bytes after a marker that stand in for its value when there is no document to follow.
const MAX_VALUE_BYTES: usize = 256;

/// Markers per file whose document is followed at all; past this a file is hostile or
/// generated, each marker is still reported, and the scan stays linear.
const MAX_DOCUMENTS: usize = 64;

/// Runs every shape rule over `text` (valid UTF-8) and appends what it finds.
pub(crate) fn detect(text: &[u8], out: &mut Vec<Candidate>) {
    keys::private_keys(text, out);
    keys::encoded_private_keys(text, out);
    keys::putty_keys(text, out);
    credentials::service_account_credentials(text, out);
    credentials::aws_secret_access_keys(text, out);
    tokens::github_tokens(text, out);
    vendor::vendor_tokens(text, out);
    tokens::iam_tokens(text, out);
    tokens::jwts(text, out);
    tokens::ssh_public_keys(text, out);
    locations::registry_locations(text, out);
    locations::bucket_locations(text, out);
    nid::nebius_ids(text, out);
}

fn body_is_filler(body: &[u8]) -> bool {
    std::str::from_utf8(body).is_ok_and(is_filler)
}

/// A body that only stands in for a secret: filler, or marked as an example.
fn is_stand_in(body: &[u8]) -> bool {
    body_is_filler(body) || mentions_example(body)
}
