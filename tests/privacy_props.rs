//! Property tests of the privacy guard: planted values are found at the right place,
//! outputs never carry them, aliases behave, and no input makes the scanner panic.
//!
//! Planted values are built inside each case from a kind and a seed
//! (fleetbot::privacy::testdata), so a failing case prints the seed, never a value.

use fleetbot::privacy::testdata::{self, Synth};
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
    ];
    let s = scanner(b"k");
    for text in &cases {
        let _ = s.scan_text("fleet.yaml", text.as_bytes(), None);
    }
}
