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
    let mut samples = vec![
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
    ];
    samples.extend(more_vendor_samples(&mut s));
    samples
}

/// The formats of issue 22, item 14, each built from its published shape.
fn more_vendor_samples(s: &mut testdata::Synth) -> Vec<(String, RuleId)> {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const URLSAFE: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
    const HEX: &[u8] = b"0123456789abcdef";
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
    const B64: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
    // Fixed parts the formats publish, split so this file holds none of them whole.
    let openai_marker = ["T3Bl", "bkFJ"].concat();
    let mut v = |alphabet: &[u8], n: usize| s.string(alphabet, n);
    vec![
        (
            format!("sk-ant-api03-{}AA", v(URLSAFE, 93)),
            RuleId::AnthropicApiKey,
        ),
        (
            format!(
                "sk-proj-{}{openai_marker}{}",
                v(URLSAFE, 74),
                v(URLSAFE, 74)
            ),
            RuleId::OpenaiApiKey,
        ),
        (
            format!("sk-{}{openai_marker}{}", v(ALNUM, 20), v(ALNUM, 20)),
            RuleId::OpenaiApiKey,
        ),
        (format!("hf_{}", v(ALNUM, 34)), RuleId::HuggingfaceToken),
        (format!("SK{}", v(HEX, 32)), RuleId::TwilioApiKey),
        (format!("shpat_{}", v(HEX, 32)), RuleId::ShopifyToken),
        (format!("shpss_{}", v(HEX, 32)), RuleId::ShopifyToken),
        (format!("dop_v1_{}", v(HEX, 64)), RuleId::DigitaloceanToken),
        (format!("dor_v1_{}", v(HEX, 64)), RuleId::DigitaloceanToken),
        (format!("hvs.{}", v(URLSAFE, 91)), RuleId::VaultToken),
        (format!("hvb.{}", v(URLSAFE, 140)), RuleId::VaultToken),
        (
            format!(
                "{}.{}.{}",
                v(ALNUM, 14),
                ["atlas", "v1"].concat(),
                v(ALNUM, 67)
            ),
            RuleId::TerraformCloudToken,
        ),
        (
            format!(
                "{}{}",
                ["pypi-AgEI", "cHlwaS5vcmc"].concat(),
                v(URLSAFE, 150)
            ),
            RuleId::PypiToken,
        ),
        (format!("dapi{}", v(HEX, 32)), RuleId::DatabricksToken),
        (format!("dapi{}-2", v(HEX, 32)), RuleId::DatabricksToken),
        (format!("dp.pt.{}", v(ALNUM, 43)), RuleId::DopplerToken),
        (format!("dp.st.dev.{}", v(ALNUM, 40)), RuleId::DopplerToken),
        (format!("lin_api_{}", v(ALNUM, 40)), RuleId::LinearApiKey),
        (
            format!("PMAK-{}-{}", v(HEX, 24), v(HEX, 34)),
            RuleId::PostmanApiKey,
        ),
        (format!("glc_eyJ{}", v(B64, 120)), RuleId::GrafanaToken),
        (
            format!("glsa_{}_{}", v(ALNUM, 32), v(HEX, 8)),
            RuleId::GrafanaToken,
        ),
        (format!("NRAK-{}", v(UPPER, 27)), RuleId::NewrelicApiKey),
        (
            format!("sntrys_eyJ{}_{}", v(B64, 150), v(ALNUM, 43)),
            RuleId::SentryToken,
        ),
        (format!("sntryu_{}", v(HEX, 64)), RuleId::SentryToken),
        (
            format!("{}{}", ["AGE-SECRET", "-KEY-1"].concat(), v(BECH32, 58)),
            RuleId::AgeSecretKey,
        ),
        (format!("sq0atp-{}", v(URLSAFE, 22)), RuleId::SquareToken),
        (format!("sq0csp-{}", v(URLSAFE, 43)), RuleId::SquareToken),
        (
            format!("{}:AA{}", v(b"0123456789", 10), v(URLSAFE, 33)),
            RuleId::TelegramBotToken,
        ),
        (
            format!("ATATT3{}={}", v(URLSAFE, 177), v(b"0123456789ABCDEF", 8)),
            RuleId::AtlassianApiToken,
        ),
        (
            format!("AccountKey={}==", v(B64, 86)),
            RuleId::AzureStorageAccountKey,
        ),
        (format!("LTAI{}", v(ALNUM, 20)), RuleId::AlibabaAccessKeyId),
        (format!("pul-{}", v(HEX, 40)), RuleId::PulumiToken),
        (
            format!("dt0c01.{}.{}", v(UPPER, 24), v(UPPER, 64)),
            RuleId::DynatraceToken,
        ),
        (
            format!("pscale_tkn_{}", v(URLSAFE, 43)),
            RuleId::PlanetscaleToken,
        ),
        (format!("glrt-{}", v(URLSAFE, 20)), RuleId::GitlabToken),
    ]
}

#[test]
fn every_vendor_rule_has_a_sample() {
    let sampled: std::collections::BTreeSet<RuleId> =
        vendor_samples().into_iter().map(|(_, r)| r).collect();
    for (rule, _, _) in super::vendor::VENDOR_RULES {
        assert!(sampled.contains(rule), "{rule} has no sample");
    }
    assert!(sampled.contains(&RuleId::TerraformCloudToken));
    assert!(sampled.contains(&RuleId::TelegramBotToken));
}

#[test]
fn an_azure_connection_string_reports_its_account_key() {
    let key = testdata::Synth::new(3).string(
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
        86,
    );
    let text = format!(
        "AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=fleetlogs;AccountKey={key}==;EndpointSuffix=core.windows.net\n"
    );
    let found = rules(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, RuleId::AzureStorageAccountKey);
    assert_eq!(found[0].0, text.find("AccountKey=").unwrap());
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
        // Issue 22, item 14: the new formats' prefixes in prose and code, wrong lengths and
        // alphabets, and bodies that only stand in for a secret.
        "sk-proj-placeholder and sk-your-key-here".to_string(),
        format!("sk-{}", "a1B2c3D4".repeat(6)),
        "hf_hub_download(repo_id, filename) and hf_token = None".to_string(),
        format!("hf_{}", "x".repeat(34)),
        format!("SK{}", "0123456789ABCDEF".repeat(2)),
        format!("TASK{}", "0123456789abcdef".repeat(2)),
        format!("SK{}", "0123456789abcdef".repeat(3)),
        format!("shpat_{}", "0".repeat(32)),
        format!("dop_v1_{}", "0123456789abcdef".repeat(3)),
        "hvs.example and hvs.CAES".to_string(),
        "app.terraform.io/app/org.atlasv1.settings".to_string(),
        format!("{}.atlasv1.{}", "a".repeat(20), "b1".repeat(33)),
        "pypi-AgEIcHlwaS5vcmc".to_string(),
        format!("dapi{}", "0123456789abcdef".repeat(2).to_uppercase()),
        format!("dapi{}", "x".repeat(32)),
        "dp.pt.<your-token> dp.st.dev".to_string(),
        "lin_api_key: \"\"".to_string(),
        "PMAK-xxxxxxxxxxxxxxxxxxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".to_string(),
        "glc_config and glsa_token".to_string(),
        "NRAK-XXXXXXXXXXXXXXXXXXXXXXXXXXX".to_string(),
        "sntrys_ and sntryu_ prefixes".to_string(),
        "AGE-SECRET-KEY-1 and age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
            .to_string(),
        "sq0atp-REPLACE_AT_RUNTIME".to_string(),
        "12345678:AA and 1234567:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".to_string(),
        format!("v{}:AA{}", "1".repeat(9), "b2".repeat(17)),
        "ATATT3xFfGF0 is how Atlassian tokens begin".to_string(),
        format!("AccountKey={}==", "x".repeat(86)),
        "AccountKey=<storage-account-key>".to_string(),
        "LTAI_ACCESS_KEY and pul-request".to_string(),
        "dt0c01.ABC".to_string(),
        "pscale_tkn_ pscale_pw_".to_string(),
    ]
    .join("\n");
    assert_eq!(rules(&text), vec![]);
}

/// A synthetic AWS secret access key: 40 characters of base64, built at run time.
fn aws_secret(seed: u64) -> String {
    const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+";
    testdata::Synth::new(seed).string(BASE64, 40)
}

/// Issue #32: a standalone AWS secret access key in each form it is written in is found, at
/// the value, by the name it is assigned to.
#[test]
fn aws_secret_access_keys_are_found_by_the_name_they_are_assigned_to() {
    let key = aws_secret(3);
    for (text, at) in [
        (format!("aws_secret_access_key = {key}\n"), 24),
        (format!("export AWS_SECRET_ACCESS_KEY={key}\n"), 29),
        (format!("AWS_SECRET_ACCESS_KEY=\"{key}\"\n"), 23),
        (format!("  aws_secret_access_key: '{key}'\n"), 26),
        (format!("{{\"SecretAccessKey\": \"{key}\"}}"), 21),
        (format!("{{\"aws_secret_access_key\":\"{key}\"}}"), 26),
        (
            format!("env: \"{{\\\"AWS_SECRET_ACCESS_KEY\\\": \\\"{key}\\\"}}\""),
            36,
        ),
        (format!("secret_access_key => {key},\n"), 21),
    ] {
        assert_eq!(
            rules(&text),
            vec![(at, RuleId::AwsSecretAccessKey)],
            "{text}"
        );
    }
}

#[test]
fn aws_secret_look_alikes_and_stand_ins_are_ignored() {
    let key = aws_secret(4);
    let text = [
        // 40 base64 characters with no key name: a hash, a token of another kind.
        format!("checksum = {key}"),
        format!("secret = {key}"),
        // Longer or shorter than a key, or a reference to one.
        format!("aws_secret_access_key = {key}A"),
        format!("aws_secret_access_key = {key}=="),
        format!("AWS_SECRET_ACCESS_KEY={}", &key[..39]),
        "AWS_SECRET_ACCESS_KEY=${{ secrets.AWS_SECRET_ACCESS_KEY }}".to_string(),
        "aws_secret_access_key = ${AWS_SECRET}".to_string(),
        // AWS's documented example and filler.
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_string(),
        format!("aws_secret_access_key = {}", "x".repeat(40)),
        // The name in prose.
        "set aws_secret_access_key in ~/.aws/credentials".to_string(),
    ]
    .join("\n");
    assert_eq!(rules(&text), vec![]);
}
