//! Bearer tokens and public keys: Nebius IAM tokens, JWTs, GitHub tokens, and the blob of
//! an SSH public key.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::is_stand_in;
use crate::privacy::Candidate;
use crate::privacy::noise::mentions_example;
use crate::privacy::rules::RuleId;

/// Nebius IAM access tokens (gosdk token sanitizer shapes).
static IAM_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b(?:ne1|nd1|v1\.)[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")
        .expect("IAM token regex")
});

static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")
        .expect("JWT regex")
});

/// Classic 40-character tokens, the longer stateless `ghs_<app id>_<JWT>` form (dots and
/// underscores, about 520 characters) and fine-grained personal access tokens.
static GITHUB: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)\b(?:gh[pousr]_[A-Za-z0-9_.-]{36,}|github_pat_[A-Za-z0-9_]{22,})")
        .expect("GitHub token regex")
});

static SSH_PUBLIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)\b(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519|sk-ecdsa-sha2-nistp256)(?:@openssh\.com)?(?:-cert-v01@openssh\.com)?[ \t]+(AAAA[A-Za-z0-9+/]{40,}={0,3})",
    )
    .expect("SSH public key regex")
});

pub(super) fn iam_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    simple(text, &IAM_TOKEN, RuleId::NebiusIamToken, 3, out);
}

pub(super) fn jwts(text: &[u8], out: &mut Vec<Candidate>) {
    simple(text, &JWT, RuleId::Jwt, 3, out);
}

fn simple(text: &[u8], re: &Regex, rule: RuleId, prefix: usize, out: &mut Vec<Candidate>) {
    for m in re.find_iter(text) {
        let value = m.as_bytes();
        if is_stand_in(&value[prefix..]) {
            continue;
        }
        out.push(Candidate::new(m.start(), m.end(), rule, value.to_vec()));
    }
}

pub(super) fn github_tokens(text: &[u8], out: &mut Vec<Candidate>) {
    for m in GITHUB.find_iter(text) {
        let mut value = m.as_bytes();
        // Sentence punctuation after a token is not part of it.
        while let Some((last, rest)) = value.split_last() {
            if matches!(last, b'.' | b'-') {
                value = rest;
            } else {
                break;
            }
        }
        let body_at = if value.starts_with(b"github_pat_") {
            11
        } else {
            4
        };
        let min_body = if body_at == 11 { 22 } else { 36 };
        if value.len() < body_at + min_body || is_stand_in(&value[body_at..]) {
            continue;
        }
        let end = m.start() + value.len();
        out.push(Candidate::new(
            m.start(),
            end,
            RuleId::GithubToken,
            value.to_vec(),
        ));
    }
}

pub(super) fn ssh_public_keys(text: &[u8], out: &mut Vec<Candidate>) {
    for caps in SSH_PUBLIC.captures_iter(text) {
        let all = caps.get(0).expect("match");
        let blob = caps.get(1).expect("blob group");
        if mentions_example(blob.as_bytes()) {
            continue;
        }
        // The blob identifies the key; the comment after it does not.
        out.push(Candidate::new(
            all.start(),
            blob.end(),
            RuleId::SshPublicKey,
            blob.as_bytes().to_vec(),
        ));
    }
}
