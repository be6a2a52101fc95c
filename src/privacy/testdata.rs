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

/// The NID types the scanner knows, for tests that plant one of each.
pub fn nid_types() -> &'static [&'static str] {
    &crate::privacy::patterns::KNOWN_TYPES
}

/// The base64 body of a key block from [`pem_key`]: the value its finding is aliased by.
pub fn pem_body(key: &str) -> String {
    key.lines().filter(|l| !l.starts_with("-----")).collect()
}

/// The ways [`quote_key`] writes a key block into a file.
pub const KEY_QUOTINGS: [&str; 22] = [
    "plain",
    "yaml-literal",
    "yaml-folded",
    "yaml-single-quoted",
    "yaml-double-quoted",
    "yaml-double-continued",
    "yaml-flow",
    "yaml-split-marker",
    "json",
    "json-in-json-string",
    "json-escaped-slashes",
    "json-unicode-escapes",
    "env-double-quoted",
    "env-single-quoted",
    "env-bare",
    "env-crlf-escapes",
    "commented-out",
    "markdown-quote",
    "xml-entities",
    "url-encoded",
    "base64",
    "js-concatenation",
];

/// A key block written into a file in one of [`KEY_QUOTINGS`].
#[derive(Debug, Clone)]
pub struct QuotedKey {
    /// The lines to insert into the file (without line ends).
    pub lines: Vec<String>,
    /// Which of them holds the key's first line (0-based).
    pub line: usize,
    /// The 1-based character column where the key starts on that line.
    pub column: usize,
}

/// Writes `key` (from [`pem_key`], `\n` line ends) as the value of a setting in `style`.
pub fn quote_key(style: &str, key: &str) -> QuotedKey {
    let rows: Vec<&str> = key.lines().collect();
    let escaped = |eol: &str| rows.iter().map(|r| format!("{r}{eol}")).collect::<String>();
    let one = |prefix: &str, value: String, suffix: &str| QuotedKey {
        lines: vec![format!("{prefix}{value}{suffix}")],
        line: 0,
        column: prefix.chars().count() + 1,
    };
    let block = |head: &str, indent: &str| {
        let mut lines = vec![head.to_string()];
        lines.extend(rows.iter().map(|r| format!("{indent}{r}")));
        QuotedKey {
            lines,
            line: 1,
            column: indent.len() + 1,
        }
    };
    match style {
        "plain" => block("key file:", ""),
        "yaml-literal" => block("key: |", "  "),
        "yaml-folded" => block("key: >-", "    "),
        "yaml-single-quoted" => {
            let mut lines = vec![format!("key: '{}", rows[0]), String::new()];
            lines.extend(rows[1..].iter().map(|r| format!("  {r}")));
            let last = lines.len() - 1;
            lines[last].push('\'');
            QuotedKey {
                lines,
                line: 0,
                column: 7,
            }
        }
        "yaml-double-quoted" => one("key: \"", escaped("\\n"), "\""),
        "yaml-double-continued" => {
            let mut lines = vec![format!("key: \"{}\\n\\", rows[0])];
            lines.extend(rows[1..].iter().map(|r| format!("  {r}\\n\\")));
            lines.push("  \"".to_string());
            QuotedKey {
                lines,
                line: 0,
                column: 7,
            }
        }
        "yaml-flow" => one("tls: {name: web, key: '", escaped("\\n"), "'}"),
        "yaml-split-marker" => {
            // A folding editor wrapped the BEGIN line itself.
            let (head, tail) = rows[0].split_at(rows[0].find(" KEY").expect("marker"));
            let rest: String = rows[1..].iter().map(|r| format!("{r}\\n")).collect();
            let lines = vec![
                format!("key: \"{head}"),
                format!("  {}\\n{rest}\"", tail.trim_start()),
            ];
            QuotedKey {
                lines,
                line: 0,
                column: 7,
            }
        }
        "json" => one(
            "{\"private_key\": \"",
            escaped("\\n"),
            "\", \"client\": \"svc\"}",
        ),
        "json-in-json-string" => one(
            "{\"config\": \"{\\\"private_key\\\": \\\"",
            escaped("\\\\n"),
            "\\\"}\"}",
        ),
        "json-escaped-slashes" => one(
            "{\"private_key\":\"",
            escaped("\\n").replace('/', "\\/"),
            "\"}",
        ),
        "json-unicode-escapes" => one(
            "{\"private_key\": \"",
            escaped("\\u000a")
                .replace('+', "\\u002b")
                .replace('/', "\\u002F"),
            "\"}",
        ),
        "env-double-quoted" => one("TLS_KEY=\"", escaped("\\n"), "\""),
        "env-single-quoted" => one("export TLS_KEY='", escaped("\\n"), "'"),
        "env-bare" => one("TLS_KEY=", escaped("\\n"), ""),
        "env-crlf-escapes" => one("TLS_KEY=\"", escaped("\\r\\n"), "\""),
        "commented-out" => block("# key: |", "#   "),
        "markdown-quote" => block("> the key:", "> "),
        "xml-entities" => one("<key>", escaped("&#10;"), "</key>"),
        "url-encoded" => one(
            "key=",
            escaped("%0A")
                .replace(' ', "%20")
                .replace('+', "%2B")
                .replace('/', "%2F")
                .replace('=', "%3D"),
            "&next=1",
        ),
        "base64" => one("  tls.key: ", encode_base64(key.as_bytes()), ""),
        "js-concatenation" => {
            let mut lines: Vec<String> = rows.iter().map(|r| format!("  \"{r}\\n\" +")).collect();
            lines[0] = format!("const key = \"{}\\n\" +", rows[0]);
            let last = lines.len() - 1;
            lines[last] = format!("  \"{}\\n\";", rows[last]);
            QuotedKey {
                lines,
                line: 0,
                column: 14,
            }
        }
        other => panic!("unknown key quoting {other:?}"),
    }
}

/// Standard padded base64.
pub fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A service-account credentials document in one of [`CREDENTIALS_STYLES`] with the lines and 1-based columns where its key, private key,
/// `kid`, `iss` and `sub` start, and the ID values.
pub fn sa_credentials_styled(style: &str, seed: u64) -> CredentialsFile {
    let key = pem_key_seeded("", 12, seed);
    let kid = nid_seeded("publickey", "e00", 15, seed);
    let account = nid_seeded("serviceaccount", "e00", 15, seed ^ 0x5a5a);
    // The key name is split so this source file does not look like a credentials file.
    let name = ["subject", "credentials"].join("-");
    let fields = [
        ("alg", "RS256".to_string()),
        ("private-key", key.clone()),
        ("kid", kid.clone()),
        ("iss", account.clone()),
        ("sub", account.clone()),
    ];
    let text = match style {
        "json" => {
            let mut t = format!("{{\n  \"{name}\": {{\n");
            for (i, (k, v)) in fields.iter().enumerate() {
                let comma = if i + 1 < fields.len() { "," } else { "" };
                t.push_str(&format!(
                    "    \"{k}\": \"{}\"{comma}\n",
                    v.replace('\n', "\\n")
                ));
            }
            t + "  }\n}"
        }
        "json-compact" => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("\"{k}\": \"{}\"", v.replace('\n', "\\n")))
                .collect();
            format!("{{\"{name}\": {{{}}}}}", inner.join(", "))
        }
        "yaml" => {
            let mut t = format!("{name}:\n");
            for (k, v) in &fields {
                if v.contains('\n') {
                    t.push_str(&format!("  {k}: |\n"));
                    for row in v.lines() {
                        t.push_str(&format!("    {row}\n"));
                    }
                } else {
                    t.push_str(&format!("  {k}: {v}\n"));
                }
            }
            t.trim_end().to_string()
        }
        "yaml-flow" => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| {
                    if v.contains('\n') {
                        format!("{k}: \"{}\"", v.replace('\n', "\\n"))
                    } else {
                        format!("{k}: {v}")
                    }
                })
                .collect();
            format!("accounts:\n  - {{{name}: {{{}}}}}", inner.join(", "))
        }
        "json-in-yaml-string" => {
            let inner: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("\\\"{k}\\\": \\\"{}\\\"", v.replace('\n', "\\\\n")))
                .collect();
            format!(
                "credentials.json: \"{{\\\"{name}\\\": {{{}}}}}\"",
                inner.join(", ")
            )
        }
        other => panic!("unknown credentials style {other:?}"),
    };
    let locate = |needle: &str, nth: usize| {
        let at = text.match_indices(needle).nth(nth).expect("planted").0;
        let line = text[..at].matches('\n').count();
        let line_start = text[..at].rfind('\n').map_or(0, |p| p + 1);
        (line, text[line_start..at].chars().count() + 1)
    };
    let name_at = match style {
        "json" | "json-compact" => locate(&format!("\"{name}\""), 0),
        "json-in-yaml-string" => locate(&format!("\\\"{name}"), 0),
        _ => locate(&name, 0),
    };
    CredentialsFile {
        lines: text.lines().map(str::to_string).collect(),
        credentials: name_at,
        private_key: locate(&pem_begin(""), 0),
        kid: locate(&kid, 0),
        iss: locate(&account, 0),
        sub: locate(&account, 1),
        key_body: pem_body(&key),
        kid_value: kid,
        account_value: account,
    }
}

/// What [`sa_credentials_styled`] planted, and where (0-based line, 1-based column).
#[derive(Debug, Clone)]
pub struct CredentialsFile {
    /// The document's lines.
    pub lines: Vec<String>,
    /// The `subject-credentials` key.
    pub credentials: (usize, usize),
    /// The private key's BEGIN marker.
    pub private_key: (usize, usize),
    /// The public key ID.
    pub kid: (usize, usize),
    /// The issuer (the service account).
    pub iss: (usize, usize),
    /// The subject (the same service account).
    pub sub: (usize, usize),
    /// The private key's base64 body.
    pub key_body: String,
    /// The public key ID.
    pub kid_value: String,
    /// The service account ID.
    pub account_value: String,
}

/// The styles [`sa_credentials_styled`] writes.
pub const CREDENTIALS_STYLES: [&str; 5] = [
    "json",
    "json-compact",
    "yaml",
    "yaml-flow",
    "json-in-yaml-string",
];

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
