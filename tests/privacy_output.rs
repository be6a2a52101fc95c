//! Outputs of the privacy guard: text, JSON and SARIF carry locations and aliases, never a
//! value, and SARIF has the shape GitHub code scanning reads.

use std::path::Path;

use fleetbot::privacy::{
    FileScan, PrivacyAllowlist, RuleId, ScanReport, Scanner, ScannerConfig, testdata,
};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn scanner() -> Scanner {
    Scanner::new(ScannerConfig {
        key: b"output-test-key".to_vec(),
        allowlist: PrivacyAllowlist::default(),
    })
    .expect("scanner")
}

/// Scans every positive fixture into one report; also returns each finding's value prefix
/// as it appears in the fixture (from its column up to the next delimiter).
fn corpus_report() -> (ScanReport, Vec<String>) {
    let scanner = scanner();
    let dir = Path::new(ROOT).join("fixtures/privacy/positive");
    let mut report = ScanReport::default();
    let mut values = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e != "expected"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let shown = format!(
            "fixtures/privacy/positive/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let scan = scanner.scan_text(&shown, text.as_bytes(), None);
        for f in scan.findings() {
            let line = text.split('\n').nth(f.line as usize - 1).unwrap();
            let token: String = line
                .chars()
                .skip(f.column as usize - 1)
                .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | ',' | ';' | '}'))
                .collect();
            values.push(token);
        }
        report.add(&shown, scan);
    }
    report.sort();
    (report, values)
}

#[test]
fn no_output_contains_a_found_value() {
    let (report, values) = corpus_report();
    assert!(report.findings.len() >= 50, "corpus findings missing");
    let outputs = [
        report.to_text(),
        serde_json::to_string_pretty(&report.to_json()).unwrap(),
        serde_json::to_string_pretty(&report.to_sarif()).unwrap(),
    ];
    let mut checked = 0;
    for value in values.iter().filter(|v| v.chars().count() >= 8) {
        checked += 1;
        for out in &outputs {
            assert!(
                !out.contains(value.as_str()),
                "an output contains a value from the corpus (rule output leak)"
            );
        }
    }
    assert!(checked >= 40, "too few values checked: {checked}");
}

#[test]
fn debug_of_scan_results_holds_no_value() {
    let id = testdata::nid("tenant", "e00", 15);
    let token = testdata::github("ghp_", 36);
    let text = format!("tenant: {id}\ntoken: {token}\n");
    let scan = scanner().scan_text("a.txt", text.as_bytes(), None);
    assert_eq!(scan.findings().len(), 2);
    let debug = format!("{scan:?} {:?}", scanner());
    assert!(!debug.contains(&id) && !debug.contains(&token));
}

#[test]
fn text_output_is_path_line_col_rule_alias() {
    let (report, _) = corpus_report();
    for line in report.to_text().lines() {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 3, "{line}");
        let location: Vec<&str> = parts[0].rsplitn(3, ':').collect();
        assert!(location[0].parse::<u32>().unwrap() >= 1);
        assert!(location[1].parse::<u32>().unwrap() >= 1);
        assert!(RuleId::from_id(parts[1]).is_some());
        assert_eq!(parts[2].len(), 16);
        assert!(parts[2].chars().all(|c| c.is_ascii_hexdigit()));
    }
}

#[test]
fn json_output_shape() {
    let (report, _) = corpus_report();
    let json = report.to_json();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["clean", "findings", "skipped"]);
    assert_eq!(json["clean"], false);
    let first = &json["findings"][0];
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["path", "line", "column", "rule", "alias"]);

    let mut clean = ScanReport::default();
    clean.add("empty.txt", FileScan::Findings(vec![]));
    clean.add(
        "blob.bin",
        scanner().scan_text("blob.bin", b"\x00\x01", None),
    );
    let json = clean.to_json();
    assert_eq!(json["clean"], true);
    assert_eq!(json["findings"], Value::Array(vec![]));
    assert_eq!(json["skipped"][0]["path"], "blob.bin");
    assert_eq!(json["skipped"][0]["reason"], "binary");
}

#[test]
fn sarif_output_has_the_code_scanning_shape() {
    let (report, _) = corpus_report();
    let sarif = report.to_sarif();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(
        sarif["$schema"]
            .as_str()
            .unwrap()
            .ends_with("sarif-2.1.0.json")
    );
    let runs = sarif["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "fleetbot");
    assert!(
        driver["informationUri"]
            .as_str()
            .unwrap()
            .starts_with("https://")
    );
    let rules = driver["rules"].as_array().unwrap();
    assert_eq!(rules.len(), RuleId::ALL.len());
    for rule in rules {
        let id = rule["id"].as_str().unwrap();
        assert!(RuleId::from_id(id).is_some(), "{id}");
        assert!(
            !rule["shortDescription"]["text"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
    let results = runs[0]["results"].as_array().unwrap();
    assert_eq!(results.len(), report.findings.len());
    for (result, finding) in results.iter().zip(&report.findings) {
        assert_eq!(result["ruleId"], finding.rule.as_str());
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], finding.rule.as_str());
        assert_eq!(result["level"], "error");
        let message = result["message"]["text"].as_str().unwrap();
        assert!(message.contains(&finding.alias));
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], finding.path.as_str());
        assert_eq!(location["region"]["startLine"], finding.line);
        assert_eq!(location["region"]["startColumn"], finding.column);
        assert_eq!(
            result["partialFingerprints"]["fleetbotAlias/v1"],
            finding.alias.as_str()
        );
    }
}
