//! Other vendors' credentials, as data: each rule's literal prefixes and the shape of the body
//! after them, written from each format's published description. One pass over the text finds
//! them all (the regex engine skips to the prefixes); the prefix names the rule.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::is_stand_in;
use crate::privacy::Candidate;
use crate::privacy::rules::RuleId;

/// `(rule, prefixes, body)`: a match is a prefix followed by `body` (a regex), on a word
/// boundary. Bodies are as narrow as the format allows, so prose never matches.
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
    (RuleId::GitlabToken, &["glpat-"], r"[0-9A-Za-z_-]{20,}"),
    (RuleId::NpmToken, &["npm_"], r"[A-Za-z0-9]{36}\b"),
    (
        RuleId::SendgridApiKey,
        &["SG."],
        r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    ),
];

static VENDOR: LazyLock<Regex> = LazyLock::new(|| {
    let alternatives: Vec<String> = VENDOR_RULES
        .iter()
        .map(|(_, prefixes, body)| {
            let prefixes: Vec<String> = prefixes.iter().map(|p| regex::escape(p)).collect();
            format!(r"(?:{})(?:{body})", prefixes.join("|"))
        })
        .collect();
    Regex::new(&format!(r"(?-u)\b(?:{})", alternatives.join("|"))).expect("vendor token regex")
});

pub(super) fn vendor_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    for m in VENDOR.find_iter(text) {
        let value = m.as_bytes();
        let Some((rule, prefix)) = VENDOR_RULES.iter().find_map(|(rule, prefixes, _)| {
            prefixes
                .iter()
                .find(|p| value.starts_with(p.as_bytes()))
                .map(|p| (*rule, p.len()))
        }) else {
            continue;
        };
        if is_stand_in(&value[prefix..]) {
            continue;
        }
        out.push(Candidate::new(m.start(), m.end(), rule, value.to_vec()));
    }
}
