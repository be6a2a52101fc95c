//! The shape rules on small texts built by `testdata`, so no real-looking value is checked in.

use super::*;
use crate::privacy::rules::RuleId;
use crate::privacy::testdata;

fn rules(text: &str) -> Vec<(usize, RuleId)> {
    let mut out = Vec::new();
    detect(text.as_bytes(), &mut out);
    out.sort_by_key(|c| (c.start, c.rule));
    out.iter().map(|c| (c.start, c.rule)).collect()
}

#[test]
fn known_type_and_generic_ids() {
    let tenant = testdata::nid("tenant", "e00", 15);
    let odd = testdata::nid("widget", "u00", 15);
    let legacy = testdata::nid("project", "e0t", 19);
    let text = format!("a: {tenant}\nb: {odd}\nc: {legacy}\n");
    assert_eq!(
        rules(&text),
        vec![
            (3, RuleId::NebiusId),
            (4 + tenant.len() + 3, RuleId::NebiusGenericId),
            (4 + tenant.len() + 4 + odd.len() + 3, RuleId::NebiusId),
        ]
    );
}

#[test]
fn id_look_alikes_are_ignored() {
    let sha1 = "e0".to_string() + &"ab12".repeat(9) + "cd";
    let text = format!(
        "project-management-tools\nbuild-{sha1}\nregistry-{sha1}\n\
         trace-e0123456-89ab-cdef-0123-456789abcdef\nwidget-a1b{}\n\
         tenant-e00xxxxxxxxxxxxxxx\nproject-u00000000000000000\nproject-e0286\n",
        "q".repeat(14)
    );
    assert_eq!(rules(&text), vec![]);
}

#[test]
fn ids_inside_longer_tokens_are_ignored() {
    let tenant = testdata::nid("tenant", "e00", 15);
    assert_eq!(rules(&format!("X{tenant}")), vec![]);
    assert_eq!(rules(&format!("{tenant}Z")), vec![]);
    assert_eq!(rules(&format!("_{tenant}_")).len(), 1);
}

#[test]
fn pem_needs_a_body() {
    let header = testdata::pem_begin("RSA ");
    assert_eq!(rules(&format!("{header}\n...\n")), vec![]);
    let key = testdata::pem_key("OPENSSH ", 5);
    assert_eq!(rules(&key), vec![(0, RuleId::PrivateKey)]);
}

#[test]
fn pem_in_json_string_is_one_key() {
    let key = testdata::pem_key("", 4).replace('\n', "\\n");
    let text = format!("{{\"k\": \"{key}\"}}");
    assert_eq!(rules(&text), vec![(7, RuleId::PrivateKey)]);
}

#[test]
fn encrypted_pem_with_headers() {
    let begin = testdata::pem_begin("RSA ");
    let body = testdata::base64(64 * 4, 7);
    let text = format!(
        "{begin}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0011\n\n{}\n{}\n-----END RSA PRIVATE KEY-----\n",
        &body[..128],
        &body[128..]
    );
    assert_eq!(rules(&text), vec![(0, RuleId::PrivateKey)]);
}

#[test]
fn github_tokens_old_and_new_forms() {
    let classic = testdata::github("ghp_", 36);
    let stateless = format!("ghs_12345_{}", testdata::jwt(9));
    let pat = testdata::github("github_pat_", 82);
    let text = format!("{classic}.\n{stateless}\n{pat}\n");
    let found = rules(&text);
    // `_eyJ` has no word boundary, so the JWT inside the ghs_ token is not found twice.
    assert_eq!(found.len(), 3);
    assert!(found.contains(&(0, RuleId::GithubToken)));
    assert!(found.contains(&(classic.len() + 2, RuleId::GithubToken)));
    assert!(rules("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx").is_empty());
}

#[test]
fn locations() {
    let reg = format!(
        "cr.eu-north1.nebius.cloud/{}",
        testdata::nid_tail("e00", 15)
    );
    let dated = &format!("s3://training-runs-{}{}/ckpt", "2026", "0115");
    let random = &format!("s3://datasets-{}{}/x", "9f3a6", "c2e1b");
    let fine = "s3://public-datasets/x cr.eu-north1.nebius.cloud/team-images/x";
    assert_eq!(rules(&reg), vec![(0, RuleId::PrivateRegistryLocation)]);
    assert_eq!(rules(dated), vec![(0, RuleId::PrivateBucketLocation)]);
    assert_eq!(rules(random), vec![(0, RuleId::PrivateBucketLocation)]);
    assert_eq!(rules(fine), vec![]);
    assert_eq!(rules("s3://bucket-00000000"), vec![]);
}

#[test]
fn ssh_public_key_value_is_the_blob() {
    let key = testdata::ssh_public("ssh-ed25519", 1);
    let mut out = Vec::new();
    detect(format!("{key} me@host").as_bytes(), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].rule, RuleId::SshPublicKey);
    assert!(out[0].value.starts_with(b"AAAA"));
}

#[test]
fn example_marked_and_stub_values_are_ignored() {
    let ssh = format!(
        "ssh-ed25519 AAAAC3{}ExampleKeyForTests",
        testdata::base64(40, 3)
    );
    let token = format!(
        "ghp_{}EXAMPLE",
        testdata::base64(30, 4).replace(['+', '/'], "x")
    );
    let name = ["subject", "credentials"].join("-");
    let stub = format!("{{\"{name}\": {{\"private-key\": \"PEMDATA\", \"kid\": \"k\"}}}}");
    for text in [ssh, token, stub] {
        assert_eq!(rules(&text), vec![]);
    }
}

#[test]
fn credentials_nested_in_a_json_string() {
    let name = ["subject", "credentials"].join("-");
    let key = testdata::pem_key("", 4).replace('\n', "\\\\n");
    let text =
        format!("{{\"config\": \"{{\\\"{name}\\\": {{\\\"private-key\\\": \\\"{key}\\\"}}}}\"}}");
    let found = rules(&text);
    assert_eq!(
        found.len(),
        2,
        "credentials and the key inside (not deduplicated here)"
    );
    assert_eq!(found[0].1, RuleId::ServiceAccountCredentials);
}

#[test]
fn service_account_credentials_report_the_key_and_each_id() {
    let text = testdata::sa_credentials();
    let found = rules(&text);
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let lines: Vec<_> = found
        .iter()
        .map(|&(at, rule)| (line_of(at), rule))
        .collect();
    assert_eq!(
        lines,
        vec![
            (2, RuleId::ServiceAccountCredentials),
            (4, RuleId::PrivateKey),
            (5, RuleId::NebiusId),
            (6, RuleId::NebiusId),
            (7, RuleId::NebiusId),
        ]
    );
}

#[test]
fn ids_after_glued_escapes_start_after_the_escape() {
    let id = testdata::nid("tenant", "e00", 15);
    for open in [
        "\"a\\n", "\\\\n", "\\t", "\\u0022", "\\x22", "%22", "%2f", "%2F", "\\u002F",
    ] {
        let text = format!("{open}{id}\"");
        assert_eq!(rules(&text), vec![(open.len(), RuleId::NebiusId)], "{open}");
    }
    let odd = testdata::nid("widgetpool", "u00", 15);
    assert_eq!(
        rules(&format!("\\n{odd}")),
        vec![(2, RuleId::NebiusGenericId)]
    );
    assert_eq!(
        rules("\\nproject-management-tools %2Fproject-e0286"),
        vec![]
    );
}

#[test]
fn guard_prefixes_shorter_than_the_grammar_are_known() {
    let cr = format!("cr-{}", testdata::nid_tail("e00", 15));
    assert_eq!(rules(&cr), vec![(0, RuleId::NebiusId)]);
    assert_eq!(
        rules(&testdata::nid("network", "e0t", 15)),
        vec![(0, RuleId::NebiusId)]
    );
}

#[test]
fn escaped_key_bodies_alias_as_the_plain_key() {
    let key = testdata::pem_key("RSA ", 4);
    let mut plain = Vec::new();
    detect(key.as_bytes(), &mut plain);
    for style in testdata::KEY_QUOTINGS {
        let quoted = testdata::quote_key(style, &key).lines.join("\n");
        let mut out = Vec::new();
        detect(quoted.as_bytes(), &mut out);
        assert_eq!(out.len(), 1, "{style}");
        assert_eq!(out[0].rule, RuleId::PrivateKey, "{style}");
        assert!(out[0].value == plain[0].value, "{style}: another body");
    }
}

#[test]
fn encoded_certificates_and_stub_keys_are_not_keys() {
    let cert = testdata::pem_key("", 4).replace("PRIVATE KEY", "CERTIFICATE");
    let stub = format!("{}\nMIIE...\n", testdata::pem_begin(""));
    for text in [cert, stub] {
        assert_eq!(rules(&testdata::encode_base64(text.as_bytes())), vec![]);
    }
}

#[test]
fn an_encoded_key_after_many_encoded_certificates_is_found() {
    // A kubeconfig carries a certificate per cluster and user; the key comes after them all.
    let cert = testdata::pem_key("", 4).replace("PRIVATE KEY", "CERTIFICATE");
    let mut text: String = (0..100)
        .map(|i| {
            format!(
                "certificate-authority-data-{i}: {}\n",
                testdata::encode_base64(cert.as_bytes())
            )
        })
        .collect();
    let key = testdata::pem_key("RSA ", 6);
    text.push_str(&format!(
        "client-key-data: {}\n",
        testdata::encode_base64(key.as_bytes())
    ));
    let found = rules(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, RuleId::PrivateKey);
}

#[test]
fn a_credentials_block_whose_key_is_not_read_is_still_reported() {
    // The key is base64 once more on one line: the key reader does not follow it inside a
    // YAML block, but a real-looking `private-key` value is no stub.
    let key = testdata::encode_base64(testdata::pem_key("", 4).as_bytes());
    let text = format!("subject-credentials:\n  alg: RS256\n  private-key: {key}\n  kid: x\n");
    assert!(
        rules(&text)
            .iter()
            .any(|(_, r)| *r == RuleId::ServiceAccountCredentials),
        "{:?}",
        rules(&text)
    );
}

/// One synthetic value of each vendor format, built at run time (`prefix` + a body of the
/// format's alphabet), so no real-looking secret is checked in.
fn vendor_samples() -> Vec<(String, RuleId)> {
    const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut s = testdata::Synth::new(7);
    vec![
        (
            format!("AKIA{}", s.string(BASE32, 16)),
            RuleId::AwsAccessKeyId,
        ),
        (
            format!("ASIA{}", s.string(BASE32, 16)),
            RuleId::AwsAccessKeyId,
        ),
        (
            format!(
                "xoxb-{}-{}",
                s.string(b"0123456789", 12),
                s.string(ALNUM, 24)
            ),
            RuleId::SlackToken,
        ),
        (
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                s.string(UPPER, 8),
                s.string(UPPER, 10),
                s.string(ALNUM, 24)
            ),
            RuleId::SlackWebhookUrl,
        ),
        (
            format!("sk_live_{}", s.string(ALNUM, 32)),
            RuleId::StripeSecretKey,
        ),
        (
            format!("rk_live_{}", s.string(ALNUM, 32)),
            RuleId::StripeSecretKey,
        ),
        (format!("AIza{}", s.string(ALNUM, 35)), RuleId::GoogleApiKey),
        (
            format!("glpat-{}", s.string(ALNUM, 20)),
            RuleId::GitlabToken,
        ),
        (format!("npm_{}", s.string(ALNUM, 36)), RuleId::NpmToken),
        (
            format!("SG.{}.{}", s.string(ALNUM, 22), s.string(ALNUM, 43)),
            RuleId::SendgridApiKey,
        ),
    ]
}

#[test]
fn vendor_credentials_are_found_by_their_own_rule() {
    for (value, rule) in vendor_samples() {
        for text in [
            value.clone(),
            format!("export TOKEN={value}\n"),
            format!("token: \"{value}\"\n"),
        ] {
            assert_eq!(
                rules(&text).iter().map(|(_, r)| *r).collect::<Vec<_>>(),
                vec![rule],
                "{text}"
            );
        }
    }
}

#[test]
fn vendor_look_alikes_and_stand_ins_are_ignored() {
    let text = [
        // Documentation examples and placeholders.
        "AKIAIOSFODNN7EXAMPLE".to_string(),
        format!("sk_live_{}", "x".repeat(30)),
        format!("AIza{}", "X".repeat(35)),
        // Test-mode keys are not secrets; too short or too long bodies are not the format.
        format!("sk_test_{}", "a1B2".repeat(8)),
        format!("AKIA{}", "ABCD2345ABCD234"),
        format!("AKIA{}", "ABCD2345ABCD2345A"),
        "npm_install".to_string(),
        "xoxb-".to_string(),
        "SG.short.token".to_string(),
        // Inside a longer identifier, a prefix is not a token.
        format!("XAKIA{}", "ABCD2345ABCD2345"),
        "the glpat- prefix marks GitLab tokens".to_string(),
    ]
    .join("\n");
    assert_eq!(rules(&text), vec![]);
}
