//! Synthetic look-alike values for tests, built at run time.
//!
//! Test sources must not hold an ID, key or token in clear (the repository scans itself),
//! so tests assemble them here from parts. Everything is deterministic and invented: the
//! keys are random base64, not key material, and the tokens fail GitHub's checksum.

/// A small deterministic generator (xorshift64*), enough for varied synthetic text.
#[derive(Debug, Clone)]
pub struct Synth(u64);

impl Synth {
    /// A generator for `seed` (any value; zero is remapped).
    pub fn new(seed: u64) -> Self {
        Synth(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A uniform index below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// `len` characters drawn from `alphabet`.
    pub fn string(&mut self, alphabet: &[u8], len: usize) -> String {
        (0..len)
            .map(|_| alphabet[self.below(alphabet.len())] as char)
            .collect()
    }
}

const BASE36: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Routing code plus a weak id of `len` base36 characters that mixes letters and digits
/// (so it is never all hex and never filler).
pub fn nid_tail(routing: &str, len: usize) -> String {
    nid_tail_seeded(routing, len, len as u64 * 31 + routing.len() as u64)
}

/// [`nid_tail`] with an explicit seed.
pub fn nid_tail_seeded(routing: &str, len: usize, seed: u64) -> String {
    let mut rng = Synth::new(seed);
    let mut weak = rng.string(BASE36, len.saturating_sub(2));
    // A letter beyond `f` and a digit keep the tail from looking like hex or filler.
    weak.push('q');
    weak.push('7');
    format!("{routing}{weak}")
}

/// A Nebius ID of `kind` with the given routing code and weak-id length.
pub fn nid(kind: &str, routing: &str, len: usize) -> String {
    format!("{kind}-{}", nid_tail(routing, len))
}

/// [`nid`] with an explicit seed.
pub fn nid_seeded(kind: &str, routing: &str, len: usize, seed: u64) -> String {
    format!("{kind}-{}", nid_tail_seeded(routing, len, seed))
}

/// `len` random standard base64 characters.
pub fn base64(len: usize, seed: u64) -> String {
    Synth::new(seed).string(BASE64, len)
}

/// The BEGIN line of a private key block; `kind` is e.g. `"RSA "`, `"OPENSSH "` or `""`.
pub fn pem_begin(kind: &str) -> String {
    format!("-----BEGIN {kind}PRIVATE KEY-----")
}

/// A private key block with `lines` lines of 64 random base64 characters.
pub fn pem_key(kind: &str, lines: usize) -> String {
    pem_key_seeded(kind, lines, 11)
}

/// [`pem_key`] with an explicit seed.
pub fn pem_key_seeded(kind: &str, lines: usize, seed: u64) -> String {
    let body = base64(64 * lines, seed);
    let mut out = pem_begin(kind);
    out.push('\n');
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).expect("ascii"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {kind}PRIVATE KEY-----\n"));
    out
}

/// A GitHub-style token: `prefix` followed by `len` alphanumerics.
pub fn github(prefix: &str, len: usize) -> String {
    github_seeded(prefix, len, len as u64)
}

/// [`github`] with an explicit seed.
pub fn github_seeded(prefix: &str, len: usize, seed: u64) -> String {
    format!("{prefix}{}", Synth::new(seed).string(ALNUM, len))
}

/// A three-part JWT-shaped string.
pub fn jwt(seed: u64) -> String {
    let mut rng = Synth::new(seed);
    format!(
        "eyJ{}.eyJ{}.{}",
        rng.string(BASE64URL, 30),
        rng.string(BASE64URL, 60),
        rng.string(BASE64URL, 43)
    )
}

/// A Nebius IAM token shape (`ne1…`).
pub fn iam_token(seed: u64) -> String {
    let mut rng = Synth::new(seed);
    format!(
        "ne1{}.{}",
        rng.string(BASE64URL, 40),
        rng.string(BASE64URL, 86)
    )
}

/// An SSH public key line without comment, e.g. `kind` = `"ssh-ed25519"`.
pub fn ssh_public(kind: &str, seed: u64) -> String {
    format!("{kind} AAAAC3{}", base64(64, seed))
}

/// A Nebius service-account credentials document.
pub fn sa_credentials() -> String {
    let key = pem_key("", 6).replace('\n', "\\n");
    // The key name is split so this source file does not look like a credentials file.
    let name = ["subject", "credentials"].join("-");
    format!(
        "{{\n  \"{name}\": {{\n    \"alg\": \"RS256\",\n    \"private-key\": \"{key}\",\n    \"kid\": \"{}\",\n    \"iss\": \"{}\",\n    \"sub\": \"{}\"\n  }}\n}}\n",
        nid("publickey", "e00", 15),
        nid("serviceaccount", "e00", 15),
        nid("serviceaccount", "e00", 15),
    )
}

/// Every planted value kind the property tests use, with the rule that must find it.
pub fn planted(kind: usize, seed: u64) -> (String, crate::privacy::RuleId) {
    use crate::privacy::RuleId;
    let mut rng = Synth::new(seed);
    match kind % 8 {
        0 => (
            nid_seeded("project", "e00", 15 + rng.below(8), seed),
            RuleId::NebiusId,
        ),
        1 => (
            nid_seeded("widgetpool", "u00", 15, seed),
            RuleId::NebiusGenericId,
        ),
        2 => (github_seeded("ghp_", 36, seed), RuleId::GithubToken),
        3 => (github_seeded("github_pat_", 82, seed), RuleId::GithubToken),
        4 => (jwt(seed), RuleId::Jwt),
        5 => (iam_token(seed), RuleId::NebiusIamToken),
        6 => (ssh_public("ssh-ed25519", seed), RuleId::SshPublicKey),
        _ => (
            format!(
                "s3://runs-{}",
                Synth::new(seed).string(b"0123456789abcdef", 10)
            ),
            RuleId::PrivateBucketLocation,
        ),
    }
}
