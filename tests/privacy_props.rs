//! Property tests of the privacy guard: planted values are found at the right place,
//! outputs never carry them, aliases behave, and no input makes the scanner panic.
//!
//! Planted values are built inside each case from a kind and a seed
//! (fleetbot::privacy::testdata), so a failing case prints the seed, never a value.

use fleetbot::privacy::testdata::{self, CREDENTIALS_STYLES, KEY_QUOTINGS, Synth};
use fleetbot::privacy::{FileScan, PrivacyAllowlist, RuleId, ScanReport, Scanner, ScannerConfig};
use proptest::prelude::*;

fn scanner(key: &[u8]) -> Scanner {
    Scanner::new(ScannerConfig {
        key: key.to_vec(),
        allowlist: PrivacyAllowlist::default(),
    })
    .expect("scanner")
}

/// YAML-ish lines made of lowercase letters and spaces: no digits, underscores or
/// punctuation that any rule needs, so the filler itself never yields a finding.
fn filler_line() -> impl Strategy<Value = String> {
    prop_oneof![
        ("[a-z]{1,10}", "[a-z ]{0,24}").prop_map(|(k, v)| format!("{k}: {v}")),
        "[a-z]{1,10}".prop_map(|k| format!("{k}:")),
        "[a-z ]{0,30}".prop_map(|c| format!("# {c}")),
        ("[a-z]{1,10}", "[a-z]{0,10}").prop_map(|(k, v)| format!("  - {k}: \"{v}\"")),
        "[a-z]{1,8}".prop_map(|v| format!("    - {v}")),
        Just(String::new()),
        Just("description: |".to_string()),
        Just("  folded text line".to_string()),
    ]
}

/// How a planted value sits on its line: (text before it, text after it).
fn context() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        "[a-z]{1,10}".prop_map(|k| (format!("{k}: "), String::new())),
        "[a-z]{1,10}".prop_map(|k| (format!("{k}: \""), "\"".to_string())),
        "[a-z]{1,10}".prop_map(|k| (format!("  {k}: '"), "'  # note".to_string())),
        "[a-z ]{0,12}".prop_map(|c| (format!("# {c} "), String::new())),
        Just(("    - ".to_string(), String::new())),
        Just((String::new(), String::new())),
        "[a-zé ]{0,8}".prop_map(|c| (format!("note «{c}» "), " »".to_string())),
    ]
}

/// What can sit right before and after an ID inside a string.
const ID_CONTEXTS: [(&str, &str); 32] = [
    ("\"", "\""),
    ("'", "'"),
    ("id=", "&page=2"),
    ("key:", ":value"),
    ("/v1/", "/items"),
    ("https://console.nebius.com/", "/settings"),
    ("https://api.nebius.cloud/v1/list?parent=", "&x=1"),
    ("\"first\\n", "\\nsecond\""),
    ("\"tab\\t", "\""),
    ("{\\\"id\\\":\\\"", "\\\"}"),
    ("\"\\\\n", "\\\\n\""),
    ("\\u0022", "\\u0022"),
    ("\\u002F", "\\u002F"),
    ("\\x22", "\\x22"),
    ("path%2F", "%2Fdisks"),
    ("q=%22", "%22"),
    ("%2f", "%2f"),
    ("<id>", "</id>"),
    ("&quot;", "&quot;"),
    ("`", "`"),
    ("(", ")"),
    ("[", "]"),
    (",", ","),
    ("--parent-id=", " --wait"),
    ("ID=", "; next"),
    ("nid://", ""),
    ("", ""),
    ("|", "|"),
    ("@", "."),
    ("https:\\/\\/console\\/", "\\/x"),
    ("_", "_"),
    ("«", "»"),
];

/// The part of a planted value its rule aliases (an SSH key's blob, not its type).
fn aliased_part(value: &str, rule: RuleId) -> &str {
    match rule {
        RuleId::SshPublicKey => value.split_once(' ').map_or(value, |(_, blob)| blob),
        _ => value,
    }
}

fn summary(scan: &FileScan) -> Vec<(u32, u32, RuleId)> {
    scan.findings()
        .iter()
        .map(|f| (f.line, f.column, f.rule))
        .collect()
}

fn report_of(path: &str, scan: FileScan) -> ScanReport {
    let mut report = ScanReport::default();
    report.add(path, scan);
    report
}

fn outputs(report: &ScanReport) -> [String; 3] {
    [
        report.to_text(),
        report.to_json().to_string(),
        report.to_sarif().to_string(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// An ID or token planted anywhere in random YAML is the only finding, at its line and
    /// column, with the alias of its value; no output contains the value.
    #[test]
    fn planted_value_is_found_where_it_was_planted(
        lines in prop::collection::vec(filler_line(), 0..40),
        at in any::<prop::sample::Index>(),
        (before, after) in context(),
        kind in 0usize..8,
        seed in any::<u64>(),
        crlf in any::<bool>(),
    ) {
        let (value, rule) = testdata::planted(kind, seed);
        let mut lines = lines;
        let index = at.index(lines.len() + 1);
        lines.insert(index, format!("{before}{value}{after}"));
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;

        let scanner = scanner(b"property-key");
        let scan = scanner.scan_text("notes.yaml", text.as_bytes(), None);
        let line = u32::try_from(index + 1).unwrap();
        let column = u32::try_from(before.chars().count() + 1).unwrap();
        prop_assert_eq!(summary(&scan), vec![(line, column, rule)]);
        let expected_alias = scanner.alias(aliased_part(&value, rule).as_bytes());
        prop_assert!(scan.findings()[0].alias == expected_alias, "alias is not the value's alias");

        for out in outputs(&report_of("notes.yaml", scan)) {
            prop_assert!(!out.contains(&value), "an output contains the planted value");
            prop_assert!(!out.contains(aliased_part(&value, rule)), "an output contains the aliased value");
        }
    }

    /// A private key planted as a block (plain or under a YAML `|` scalar, LF or CRLF) is
    /// reported once, at its BEGIN line; no output contains any line of its body.
    #[test]
    fn planted_key_block_is_reported_once_at_its_begin_line(
        lines in prop::collection::vec(filler_line(), 0..30),
        at in any::<prop::sample::Index>(),
        kind in prop::sample::select(vec!["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "]),
        body_lines in 2usize..12,
        seed in any::<u64>(),
        in_yaml_block in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let key = testdata::pem_key_seeded(kind, body_lines, seed);
        let mut lines = lines;
        let index = at.index(lines.len() + 1);
        let (header, indent) = if in_yaml_block { (Some("secret: |"), "  ") } else { (None, "") };
        let mut block: Vec<String> = header.map(str::to_string).into_iter().collect();
        block.extend(key.lines().map(|l| format!("{indent}{l}")));
        let begin_line = index + 1 + usize::from(header.is_some());
        lines.splice(index..index, block);
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;

        let scan = scanner(b"property-key").scan_text("k.yaml", text.as_bytes(), None);
        let column = u32::try_from(indent.len() + 1).unwrap();
        prop_assert_eq!(
            summary(&scan),
            vec![(u32::try_from(begin_line).unwrap(), column, RuleId::PrivateKey)]
        );
        for out in outputs(&report_of("k.yaml", scan)) {
            for body in key.lines().filter(|l| !l.starts_with("-----")) {
                prop_assert!(!out.contains(body), "an output contains a key body line");
            }
        }
    }

    /// A key written in any quoting style (YAML block, flow, single- and double-quoted
    /// scalars, JSON strings at any depth, environment files, comments, XML, URL and base64
    /// encodings) among random lines, LF or CRLF, is reported once, at its first line, with
    /// the alias of its bare body: the same alias whatever the quoting.
    #[test]
    fn planted_key_is_found_in_every_quoting_style(
        lines in prop::collection::vec(filler_line(), 0..30),
        at in any::<prop::sample::Index>(),
        style in prop::sample::select(KEY_QUOTINGS.to_vec()),
        kind in prop::sample::select(vec!["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "]),
        body_lines in 2usize..10,
        seed in any::<u64>(),
        crlf in any::<bool>(),
    ) {
        let key = testdata::pem_key_seeded(kind, body_lines, seed);
        let quoted = testdata::quote_key(style, &key);
        let mut lines = lines;
        let index = at.index(lines.len() + 1);
        lines.splice(index..index, quoted.lines.iter().cloned());
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;

        let scanner = scanner(b"property-key");
        let scan = scanner.scan_text("k.txt", text.as_bytes(), None);
        let line = u32::try_from(index + quoted.line + 1).unwrap();
        let column = u32::try_from(quoted.column).unwrap();
        prop_assert_eq!(summary(&scan), vec![(line, column, RuleId::PrivateKey)], "style {}", style);
        let body = testdata::pem_body(&key);
        prop_assert!(scan.findings()[0].alias == scanner.alias(body.as_bytes()), "alias is not the body's alias");
        for out in outputs(&report_of("k.txt", scan)) {
            for row in key.lines().filter(|l| !l.starts_with("-----")) {
                prop_assert!(!out.contains(row), "an output contains a key body line");
            }
        }
    }

    /// A service-account credentials file (pretty or compact JSON, YAML, or JSON inside a
    /// YAML string) among random lines yields the credentials key, the private key and
    /// each ID inside, every one at its own line and column with its own alias.
    #[test]
    fn planted_credentials_file_reports_its_key_and_every_id(
        before in prop::collection::vec(filler_line(), 0..12),
        after in prop::collection::vec(filler_line(), 0..12),
        style in prop::sample::select(CREDENTIALS_STYLES.to_vec()),
        seed in any::<u64>(),
        crlf in any::<bool>(),
    ) {
        let file = testdata::sa_credentials_styled(style, seed);
        let offset = before.len();
        let lines: Vec<String> = before.into_iter().chain(file.lines.iter().cloned()).chain(after).collect();
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;

        let scanner = scanner(b"property-key");
        let scan = scanner.scan_text("credentials.json", text.as_bytes(), None);
        let at = |(line, column): (usize, usize)| {
            (u32::try_from(offset + line + 1).unwrap(), u32::try_from(column).unwrap())
        };
        let mut want = vec![
            (at(file.credentials), RuleId::ServiceAccountCredentials),
            (at(file.private_key), RuleId::PrivateKey),
            (at(file.kid), RuleId::NebiusId),
            (at(file.iss), RuleId::NebiusId),
            (at(file.sub), RuleId::NebiusId),
        ];
        want.sort();
        let want: Vec<_> = want.into_iter().map(|((l, c), r)| (l, c, r)).collect();
        prop_assert_eq!(summary(&scan), want, "style {}", style);
        let alias_of = |rule: RuleId, nth: usize| {
            scan.findings().iter().filter(|f| f.rule == rule).nth(nth).map(|f| f.alias.clone())
        };
        prop_assert_eq!(alias_of(RuleId::PrivateKey, 0), Some(scanner.alias(file.key_body.as_bytes())));
        let ids: Vec<_> = (0..3).filter_map(|n| alias_of(RuleId::NebiusId, n)).collect();
        let mut id_aliases = vec![
            scanner.alias(file.kid_value.as_bytes()),
            scanner.alias(file.account_value.as_bytes()),
            scanner.alias(file.account_value.as_bytes()),
        ];
        let mut got_ids = ids.clone();
        got_ids.sort();
        id_aliases.sort();
        prop_assert_eq!(got_ids, id_aliases);
        for out in outputs(&report_of("credentials.json", scan)) {
            prop_assert!(!out.contains(&file.kid_value), "an output contains the key ID");
            prop_assert!(!out.contains(&file.account_value), "an output contains the account ID");
            prop_assert!(!out.contains(&file.key_body[..64]), "an output contains the private key");
        }
    }

    /// An ID of every type the scanner knows, with any routing code, is found wherever a
    /// string can hold it: quoted, after `=` or `:`, between slashes, in a URL, after an
    /// escape glued to it (`\n`, `\\n`, `\u0022`, `%2F`), in XML or Markdown.
    #[test]
    fn planted_id_of_every_type_is_found_in_any_string_context(
        lines in prop::collection::vec(filler_line(), 0..20),
        at in any::<prop::sample::Index>(),
        kind in prop::sample::select(testdata::nid_types().to_vec()),
        routing in prop::sample::select(vec!["e00", "e01", "e02", "e03", "u00", "i00", "e0t"]),
        weak_len in 12usize..24,
        (open, close) in prop::sample::select(ID_CONTEXTS.to_vec()),
        key in prop_oneof![Just(String::new()), "[a-z]{1,8}".prop_map(|k| format!("{k}: "))],
        seed in any::<u64>(),
        crlf in any::<bool>(),
    ) {
        let id = testdata::nid_seeded(kind, routing, weak_len, seed);
        let prefix = format!("{key}{open}");
        let mut lines = lines;
        let index = at.index(lines.len() + 1);
        lines.insert(index, format!("{prefix}{id}{close}"));
        let eol = if crlf { "\r\n" } else { "\n" };
        let text = lines.join(eol) + eol;

        let scanner = scanner(b"property-key");
        let scan = scanner.scan_text("ids.txt", text.as_bytes(), None);
        let line = u32::try_from(index + 1).unwrap();
        let column = u32::try_from(prefix.chars().count() + 1).unwrap();
        prop_assert_eq!(summary(&scan), vec![(line, column, RuleId::NebiusId)]);
        prop_assert!(scan.findings()[0].alias == scanner.alias(id.as_bytes()), "alias is not the ID's alias");
        for out in outputs(&report_of("ids.txt", scan)) {
            prop_assert!(!out.contains(&id), "an output contains the planted ID");
        }
    }

    /// Only findings touching the changed lines survive a diff scan.
    #[test]
    fn changed_lines_filter_keeps_exactly_the_touched_findings(
        count in 1usize..20,
        ranges in prop::collection::vec((1u32..40, 0u32..5), 0..6),
        seed in any::<u64>(),
    ) {
        let mut rng = Synth::new(seed);
        let mut text = String::new();
        for i in 0..count {
            let id = testdata::nid_seeded("tenant", "e00", 15, seed ^ i as u64);
            if rng.below(2) == 0 {
                text.push_str(&format!("id: {id}\n"));
            } else {
                text.push_str("plain line\n");
            }
        }
        let ranges: Vec<_> = ranges.into_iter().map(|(s, n)| s..=s + n).collect();
        let scanner = scanner(b"k");
        let all = scanner.scan_text("a.txt", text.as_bytes(), None);
        let filtered = scanner.scan_text("a.txt", text.as_bytes(), Some(&ranges));
        let want: Vec<_> = all
            .findings()
            .iter()
            .filter(|f| ranges.iter().any(|r| r.contains(&f.line)))
            .cloned()
            .collect();
        prop_assert_eq!(filtered.findings(), want.as_slice());
    }

    /// The alias is a function of (key, value): stable for a value, different across keys
    /// and across values.
    #[test]
    fn alias_is_stable_per_value_and_differs_across_keys(
        kind in 0usize..8,
        seed in any::<u64>(),
        key_a in prop::collection::vec(any::<u8>(), 1..48),
        key_b in prop::collection::vec(any::<u8>(), 1..48),
    ) {
        prop_assume!(key_a != key_b);
        let (value, rule) = testdata::planted(kind, seed);
        let (other, _) = testdata::planted(kind, seed.wrapping_add(1));
        prop_assume!(other != value);
        let text = format!("first: {value}\nsecond: {value}\nthird: {other}\n");
        let a = scanner(&key_a).scan_text("a.txt", text.as_bytes(), None);
        let b = scanner(&key_b).scan_text("a.txt", text.as_bytes(), None);
        let (fa, fb) = (a.findings(), b.findings());
        prop_assert_eq!(fa.len(), 3);
        prop_assert_eq!(fb.len(), 3);
        prop_assert_eq!(&fa[0].alias, &fa[1].alias);
        prop_assert_ne!(&fa[0].alias, &fa[2].alias);
        prop_assert_ne!(&fa[0].alias, &fb[0].alias);
        prop_assert_eq!(&fa[0].alias, &scanner(&key_a).alias(aliased_part(&value, rule).as_bytes()));
    }

    /// Arbitrary bytes never panic, whatever the path and changed lines.
    #[test]
    fn arbitrary_bytes_never_panic(
        content in prop::collection::vec(any::<u8>(), 0..4096),
        path in prop::sample::select(vec!["a.yaml", "b.json", "<stdin>", "c.txt"]),
        ranges in prop::collection::vec((0u32..100, 0u32..100), 0..4),
    ) {
        let ranges: Vec<_> = ranges.into_iter().map(|(s, n)| s..=s.saturating_add(n)).collect();
        let s = scanner(b"k");
        let _ = s.scan_text(path, &content, None);
        let _ = s.scan_text(path, &content, Some(&ranges));
    }

    /// YAML-shaped and Unicode text never panics, in particular inside fleet specs where the
    /// spec reader runs; findings always point inside the text.
    #[test]
    fn arbitrary_yaml_text_never_panics(
        body in r##"[ -~\n\r\t'"#:{}\[\],|>&*!é😀-]{0,3000}"##,
        fields in prop::collection::vec(
            prop::sample::select(vec![
                "tenant_id: ", "project_id: \"", "  - subnet_id: '", "bucket_name: |\n  ",
                "{capacity_block_group: ", "ssh_public_key:\n    ", "existing_filestore: >-\n",
                "-----BEGIN RSA PRIVATE KEY-----\n", "ghp_", "s3://x-", "cr.a.nebius.cloud/",
            ]),
            0..6,
        ),
        text in any::<String>(),
    ) {
        let mut content = String::from("apiVersion: npa.fleet/v0.0.1\n");
        for (i, f) in fields.iter().enumerate() {
            let cut = body.len() * i / fields.len().max(1);
            let cut = (0..=cut).rev().find(|&c| body.is_char_boundary(c)).unwrap_or(0);
            content.push_str(&body[..cut]);
            content.push_str(f);
        }
        content.push_str(&body);
        content.push_str(&text);
        let scan = scanner(b"k").scan_text("fleet.yaml", content.as_bytes(), None);
        let lines = u32::try_from(content.split('\n').count()).unwrap();
        for f in scan.findings() {
            prop_assert!(f.line >= 1 && f.line <= lines);
            prop_assert!(f.column >= 1);
        }
    }
}

/// Inputs built to make a marker rescan the rest of the file. Each must finish (the scan is
/// linear by construction); this is a termination check, not a timing test.
#[test]
fn hostile_inputs_finish() {
    let n = 5_000;
    let spec = "apiVersion: npa.fleet/v0.0.1\n";
    // Split so this file does not itself hold a credentials key.
    let sa_key = ["subject", "credentials"].join("-");
    let cases = [
        format!("{{\"{sa_key}\": {{\"a\": \"").repeat(n),
        "PuTTY-User-Key-File-3: x\n".repeat(n),
        "-----BEGIN RSA PRIVATE KEY-----\n".repeat(n),
        format!("{spec}{}", "tenant_id: \"open\nitems: [a,\n".repeat(n)),
        format!("{spec}{}", "- {capacity_block_group: [\n".repeat(n)),
        format!("{spec}{}", "subnet_id: |\n".repeat(n)),
        format!("{}-e00{}", "a".repeat(50_000), "b".repeat(50_000)),
        "-a1b".repeat(n * 4),
        format!("LS0tLS1CRUdJTi{}\n", "QUFB".repeat(20)).repeat(n),
        format!("-----BEGIN PRIVATE KEY-----{}", "\\".repeat(n * 8)),
        "-----BEGIN PRIVATE KEY-----\\n%2B&#10;".repeat(n),
        "\\u0022%2F\\n-e00".repeat(n * 4),
        format!("{sa_key}:\n  a: b\n").repeat(n),
    ];
    let s = scanner(b"k");
    for text in &cases {
        let _ = s.scan_text("fleet.yaml", text.as_bytes(), None);
    }
}
