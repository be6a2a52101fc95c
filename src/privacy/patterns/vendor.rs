//! Other vendors' credentials, as data: each rule's literal prefixes and the shape of the body
//! after them, written from each format's published description. One pass over the text finds
//! them all (the regex engine skips to the prefixes); the row that matched names the rule.
//!
//! The formats are those of gitleaks' default rule set that can leak from a spec repository
//! (cloud, CI, package-registry, observability and chat tokens), each written here from the
//! vendor's own description of its token (docs/privacy.md names the source of each). A format
//! is left out when its published shape has no fixed part narrow enough to keep prose, hashes
//! and identifiers from matching (docs/privacy.md lists those too).

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::is_stand_in;
use crate::privacy::Candidate;
use crate::privacy::rules::RuleId;

/// `(rule, prefixes, body)`: a match is a prefix followed by `body` (a regex), on a word
/// boundary. Bodies are as narrow as the format allows, so prose never matches. A rule may
/// have several rows (one body per family of prefixes). Where two rows match the same text
/// (`sk-ant-…` could only be Anthropic's, but `sk-` is OpenAI's prefix too), the scanner
/// keeps the outermost match, and at equal spans the rule earlier in `RuleId::ALL`.
pub(super) const VENDOR_RULES: &[(RuleId, &[&str], &str)] = &[
    // AWS: 4-letter kind prefix and 16 characters of base32.
    (
        RuleId::AwsAccessKeyId,
        &["AKIA", "ASIA", "ABIA", "ACCA"],
        r"[A-Z2-7]{16}\b",
    ),
    // Slack: bot, user, app, refresh and config tokens.
    (
        RuleId::SlackToken,
        &["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-"],
        r"[0-9A-Za-z][0-9A-Za-z-]{9,250}",
    ),
    (
        RuleId::SlackWebhookUrl,
        &["https://hooks.slack.com/services/"],
        r"T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,40}",
    ),
    // Stripe: live secret and restricted keys (test keys are not secrets).
    (
        RuleId::StripeSecretKey,
        &["sk_live_", "rk_live_"],
        r"[0-9A-Za-z]{24,247}",
    ),
    (RuleId::GoogleApiKey, &["AIza"], r"[0-9A-Za-z_-]{35}"),
    // GitLab's token prefixes (its "token prefixes" table): personal, pipeline trigger,
    // deploy, runner authentication, feed, CI/CD job, OAuth application secrets.
    (
        RuleId::GitlabToken,
        &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glft-", "glcbt-", "gloas-", "glsoat-",
        ],
        r"[0-9A-Za-z_-]{20,}",
    ),
    (RuleId::NpmToken, &["npm_"], r"[A-Za-z0-9]{36}\b"),
    (
        RuleId::SendgridApiKey,
        &["SG."],
        r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    ),
    // Anthropic: `sk-ant-` + key kind and version, then a long base64url secret. Before
    // OpenAI's rows, whose `sk-` it extends.
    (
        RuleId::AnthropicApiKey,
        &["sk-ant-api03-", "sk-ant-admin01-"],
        r"[A-Za-z0-9_-]{80,200}",
    ),
    // OpenAI: every key form (`sk-proj-`, service-account, admin and the legacy `sk-`) holds
    // `T3BlbkFJ`, base64 of "OpenAI", between two random parts; without it `sk-…` is prose.
    (
        RuleId::OpenaiApiKey,
        &["sk-proj-", "sk-svcacct-", "sk-admin-", "sk-"],
        r"[A-Za-z0-9_-]{20,200}T3BlbkFJ[A-Za-z0-9_-]{20,200}",
    ),
    // Hugging Face user access tokens (`hf_`) and organisation API tokens: 34 letters.
    (
        RuleId::HuggingfaceToken,
        &["hf_", "api_org_"],
        r"[A-Za-z0-9]{34}\b",
    ),
    // Twilio API key SIDs: `SK` and 32 lower-case hex digits (Twilio's SID format).
    (RuleId::TwilioApiKey, &["SK"], r"[0-9a-f]{32}\b"),
    // Shopify admin API access tokens, shared secrets, custom-app and partner tokens.
    (
        RuleId::ShopifyToken,
        &["shpat_", "shpss_", "shpca_", "shppa_"],
        r"[0-9a-fA-F]{32}\b",
    ),
    // DigitalOcean personal, OAuth and refresh tokens: kind, `_v1_`, 64 hex digits.
    (
        RuleId::DigitaloceanToken,
        &["dop_v1_", "doo_v1_", "dor_v1_"],
        r"[0-9a-f]{64}\b",
    ),
    // HashiCorp Vault service, batch and recovery tokens (the 1.10 format: type prefix,
    // then at least 90 base64url characters).
    (
        RuleId::VaultToken,
        &["hvs.", "hvb.", "hvr."],
        r"[A-Za-z0-9_-]{90,}",
    ),
    // PyPI API tokens are macaroons whose location is base64 of `pypi.org` (or
    // `test.pypi.org`), so every one opens with the same characters.
    (
        RuleId::PypiToken,
        &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
        r"[A-Za-z0-9_-]{50,}",
    ),
    // Databricks personal access tokens: `dapi`, 32 hex digits, an optional `-<n>`.
    (
        RuleId::DatabricksToken,
        &["dapi"],
        r"[0-9a-f]{32}(?:-[0-9])?\b",
    ),
    // Doppler personal, CLI, service (optionally naming an environment), service-account,
    // SCIM and audit tokens.
    (
        RuleId::DopplerToken,
        &[
            "dp.pt.",
            "dp.ct.",
            "dp.st.",
            "dp.sa.",
            "dp.scim.",
            "dp.audit.",
        ],
        r"(?:[a-z0-9_-]{1,35}\.)?[A-Za-z0-9]{40,44}\b",
    ),
    (RuleId::LinearApiKey, &["lin_api_"], r"[A-Za-z0-9]{40}\b"),
    // Postman API keys: `PMAK-`, 24 hex digits, `-`, 34 hex digits.
    (
        RuleId::PostmanApiKey,
        &["PMAK-"],
        r"[0-9a-f]{24}-[0-9a-f]{34}\b",
    ),
    // Grafana Cloud access policy tokens (base64 of a JSON document) and service-account
    // tokens (32 characters, `_`, an 8-hex-digit checksum).
    (
        RuleId::GrafanaToken,
        &["glc_"],
        r"eyJ[A-Za-z0-9+/]{29,400}={0,2}",
    ),
    (
        RuleId::GrafanaToken,
        &["glsa_"],
        r"[A-Za-z0-9]{32}_[0-9a-fA-F]{8}\b",
    ),
    // New Relic user API keys: `NRAK-` and 27 upper-case letters and digits.
    (RuleId::NewrelicApiKey, &["NRAK-"], r"[A-Z0-9]{27}\b"),
    // Sentry organisation tokens (`sntrys_` + base64 of a JSON document, `_`, a secret) and
    // user tokens (`sntryu_` + 64 hex digits).
    (
        RuleId::SentryToken,
        &["sntrys_"],
        r"eyJ[A-Za-z0-9+/=]{30,1000}_[A-Za-z0-9+/]{20,}",
    ),
    (RuleId::SentryToken, &["sntryu_"], r"[0-9a-f]{64}\b"),
    // age X25519 identities: Bech32 with the upper-case `AGE-SECRET-KEY-` part and the `1`
    // separator, then 58 characters of the Bech32 alphabet.
    (
        RuleId::AgeSecretKey,
        &["AGE-SECRET-KEY-1"],
        r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",
    ),
    // Square access tokens and OAuth application secrets.
    (RuleId::SquareToken, &["sq0atp-"], r"[A-Za-z0-9_-]{22}\b"),
    (RuleId::SquareToken, &["sq0csp-"], r"[A-Za-z0-9_-]{43}\b"),
    // Atlassian API tokens (since 2023): `ATATT`, a version digit and a long base64url body
    // ending in `=` and an 8-hex-digit checksum.
    (
        RuleId::AtlassianApiToken,
        &["ATATT3"],
        r"[A-Za-z0-9_=-]{150,250}=[0-9A-Fa-f]{8}\b",
    ),
    // An Azure storage account key in a connection string: 64 random bytes in base64.
    (
        RuleId::AzureStorageAccountKey,
        &["AccountKey="],
        r"[A-Za-z0-9+/]{86}==",
    ),
    // Alibaba Cloud AccessKey IDs: `LTAI` and 20 letters and digits.
    (RuleId::AlibabaAccessKeyId, &["LTAI"], r"[A-Za-z0-9]{20}\b"),
    // Pulumi access tokens: `pul-` and 40 hex digits.
    (RuleId::PulumiToken, &["pul-"], r"[0-9a-f]{40}\b"),
    // Dynatrace API tokens: `dt0c01.`, a 24-character public part, `.`, a 64-character secret.
    (
        RuleId::DynatraceToken,
        &["dt0c01."],
        r"[A-Z0-9]{24}\.[A-Z0-9]{64}\b",
    ),
    // PlanetScale service tokens, passwords and OAuth tokens.
    (
        RuleId::PlanetscaleToken,
        &["pscale_tkn_", "pscale_pw_", "pscale_oauth_"],
        r"[A-Za-z0-9_.-]{32,64}\b",
    ),
];

/// Formats whose fixed part sits inside the token, after a variable-length start: the
/// literal the scan looks for, and the whole token's shape around it. Each is checked only
/// where its literal occurs, so the prefix scan above keeps its speed.
struct InnerRule {
    rule: RuleId,
    literal: &'static str,
    /// The bytes the token may hold before the literal, and at most how many.
    before: fn(&u8) -> bool,
    max_before: usize,
    min_before: usize,
    /// The token from its start, anchored (`^…`) and ending on a boundary.
    shape: &'static str,
}

const INNER_RULES: &[InnerRule] = &[
    // Terraform Cloud / Enterprise user and team tokens: 14 characters, `.atlasv1.`, then
    // the secret.
    InnerRule {
        rule: RuleId::TerraformCloudToken,
        literal: ".atlasv1.",
        before: u8::is_ascii_alphanumeric,
        min_before: 14,
        max_before: 14,
        shape: r"^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70}\b",
    },
    // Telegram bot tokens: the bot's numeric ID, `:`, and 35 characters of secret, which
    // BotFather's current tokens begin with `AA`.
    InnerRule {
        rule: RuleId::TelegramBotToken,
        literal: ":AA",
        before: u8::is_ascii_digit,
        min_before: 8,
        max_before: 10,
        shape: r"^[0-9]{8,10}:AA[A-Za-z0-9_-]{33}\b",
    },
];

/// Most prefixes one regex of the prefix scan holds. The engine skips to the prefixes with a
/// vectorised multi-literal search that is fast for a few dozen short literals and falls to a
/// general automaton past 64; measured on 100 MB of source text, all 70 prefixes in one regex
/// scan at about 550 MB/s, against about 9 GB/s for the eight formats before issue 22 and
/// about 3 GB/s for groups of 20 scanned one after the other.
const MAX_PREFIXES_PER_SCAN: usize = 20;

/// The prefix rules as a few regexes, each with one capture group per row of
/// [`VENDOR_RULES`] it holds (the row indexes beside it). Rows stay in table order, so rows
/// that share a group keep their precedence; a prefix shorter than three bytes (Twilio's
/// `SK`) makes the multi-literal search of its group match everywhere, so it is scanned alone.
static VENDOR: LazyLock<Vec<(Regex, Vec<usize>)>> = LazyLock::new(|| {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut prefixes_in_last = 0;
    for (row, (_, prefixes, _)) in VENDOR_RULES.iter().enumerate() {
        let short = prefixes.iter().any(|p| p.len() < 3);
        let last_is_short = groups.last().is_some_and(|g| {
            g.iter()
                .any(|&r| VENDOR_RULES[r].1.iter().any(|p| p.len() < 3))
        });
        if groups.is_empty()
            || short
            || last_is_short
            || prefixes_in_last + prefixes.len() > MAX_PREFIXES_PER_SCAN
        {
            groups.push(Vec::new());
            prefixes_in_last = 0;
        }
        groups.last_mut().expect("a group").push(row);
        prefixes_in_last += prefixes.len();
    }
    groups
        .into_iter()
        .map(|rows| {
            let alternatives: Vec<String> = rows
                .iter()
                .map(|&row| {
                    let (_, prefixes, body) = VENDOR_RULES[row];
                    let prefixes: Vec<String> = prefixes.iter().map(|p| regex::escape(p)).collect();
                    format!(r"((?:{})(?:{body}))", prefixes.join("|"))
                })
                .collect();
            let re = Regex::new(&format!(r"(?-u)\b(?:{})", alternatives.join("|")))
                .expect("vendor token regex");
            (re, rows)
        })
        .collect()
});

static INNER_LITERALS: LazyLock<Regex> = LazyLock::new(|| {
    let literals: Vec<String> = INNER_RULES
        .iter()
        .map(|r| regex::escape(r.literal))
        .collect();
    Regex::new(&format!("(?-u){}", literals.join("|"))).expect("inner literal regex")
});

static INNER_SHAPES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    INNER_RULES
        .iter()
        .map(|r| Regex::new(&format!("(?-u){}", r.shape)).expect("inner shape regex"))
        .collect()
});

pub(super) fn vendor_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    for (re, rows) in VENDOR.iter() {
        prefix_tokens(text, re, rows, out);
    }
    inner_tokens(text, out);
}

fn prefix_tokens(text: &[u8], re: &Regex, rows: &[usize], out: &mut Vec<Candidate>) {
    for caps in re.captures_iter(text) {
        let Some((i, m)) = caps
            .iter()
            .skip(1)
            .enumerate()
            .find_map(|(i, g)| g.map(|g| (i, g)))
        else {
            continue;
        };
        let (rule, prefixes, _) = VENDOR_RULES[rows[i]];
        let value = m.as_bytes();
        let prefix = prefixes
            .iter()
            .filter(|p| value.starts_with(p.as_bytes()))
            .map(|p| p.len())
            .max()
            .unwrap_or(0);
        if is_stand_in(without_padding(&value[prefix..])) {
            continue;
        }
        out.push(Candidate::new(m.start(), m.end(), rule, value.to_vec()));
    }
}

/// The [`INNER_RULES`]: at each literal, back up over the bytes that may start the token, and
/// match its shape from there.
fn inner_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    let mut next_free = 0;
    for hit in INNER_LITERALS.find_iter(text) {
        let Some(i) = INNER_RULES
            .iter()
            .position(|r| text[hit.start()..].starts_with(r.literal.as_bytes()))
        else {
            continue;
        };
        let rule = &INNER_RULES[i];
        let mut start = hit.start();
        while start > 0 && hit.start() - start <= rule.max_before && (rule.before)(&text[start - 1])
        {
            start -= 1;
        }
        let before = hit.start() - start;
        let word_before =
            start > 0 && (text[start - 1].is_ascii_alphanumeric() || text[start - 1] == b'_');
        if before < rule.min_before || before > rule.max_before || word_before || start < next_free
        {
            continue;
        }
        // Real tokens are under 100 bytes; a window one past that keeps the shape's final
        // boundary inside it, and each literal costs a bounded check.
        let end = (start + 128).min(text.len());
        let Some(m) = INNER_SHAPES[i].find(&text[start..end]) else {
            continue;
        };
        let value = &text[start..start + m.end()];
        if is_stand_in(&value[before + rule.literal.len()..]) {
            continue;
        }
        next_free = start + m.end();
        out.push(Candidate::new(
            start,
            start + m.end(),
            rule.rule,
            value.to_vec(),
        ));
    }
}

/// A body less its base64 padding, so `xxxx…==` reads as the filler it is.
fn without_padding(body: &[u8]) -> &[u8] {
    let end = body.iter().rposition(|&b| b != b'=').map_or(0, |i| i + 1);
    &body[..end]
}
