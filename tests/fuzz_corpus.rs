//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`) through the fuzz
//! targets' own bodies (`fuzz/entries.rs`) on the stable toolchain, so CI, which has neither
//! nightly nor cargo-fuzz, keeps each input and each target's property meaningful, and an input
//! that once crashed a target stays fixed.

#[path = "../fuzz/entries.rs"]
mod entries;

use std::path::Path;

/// A fuzz target's body.
type Body = fn(&[u8]);

/// Each target and its body; `fuzz/fuzz_targets/<name>.rs` calls the same function.
const TARGETS: [(&str, Body); 7] = [
    ("spec", entries::spec),
    ("webhook", entries::webhook),
    ("commands", entries::commands),
    ("privacy", entries::privacy),
    ("repo_config", entries::repo_config),
    ("render", entries::render),
    ("yaml_expansion", entries::yaml_expansion),
];

fn replay(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable corpus entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no corpus", dir.display());
    for file in files {
        let data = std::fs::read(&file).expect("a readable corpus file");
        // A panic names the input, so it can be minimised and kept as a regression test.
        let outcome = std::panic::catch_unwind(|| body(&data));
        assert!(outcome.is_ok(), "{target}: {} fails", file.display());
    }
}

#[test]
fn spec_corpus() {
    replay(TARGETS[0].0, TARGETS[0].1);
}

#[test]
fn webhook_corpus() {
    replay(TARGETS[1].0, TARGETS[1].1);
}

#[test]
fn commands_corpus() {
    replay(TARGETS[2].0, TARGETS[2].1);
}

#[test]
fn privacy_corpus() {
    replay(TARGETS[3].0, TARGETS[3].1);
}

#[test]
fn repo_config_corpus() {
    replay(TARGETS[4].0, TARGETS[4].1);
}

#[test]
fn render_corpus() {
    replay(TARGETS[5].0, TARGETS[5].1);
}

#[test]
fn yaml_expansion_corpus() {
    replay(TARGETS[6].0, TARGETS[6].1);
}

/// Every fuzz target has a corpus here, and nothing here lacks a target.
#[test]
fn every_target_is_replayed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("fuzz/fuzz_targets")
        .map(|e| {
            let name = e.expect("an entry").file_name();
            name.to_string_lossy().trim_end_matches(".rs").to_string()
        })
        .collect();
    on_disk.sort();
    let mut replayed: Vec<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    replayed.sort();
    assert_eq!(on_disk, replayed);
}

/// The `spec` target's round trip runs on real specs, not only on what the fuzzer found: every
/// fixture spec and every corpus input that loads is written canonically and read back as the
/// same fleet, and a change of meaning would be caught (a renamed value reads back different).
#[test]
fn the_spec_round_trip_holds_on_the_fixtures_and_the_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut loaded = 0;
    for dir in ["fixtures/specs", "fuzz/corpus/spec"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let text = std::fs::read(entry.unwrap().path()).unwrap();
            let Ok(text) = String::from_utf8(text) else {
                continue;
            };
            if let Ok(spec) = fleetbot::spec::load_str(&text, "fleets/fuzz.yaml") {
                entries::spec_round_trip(&text, &format!("{spec:?}"));
                loaded += 1;
            }
        }
    }
    assert!(loaded >= 8, "only {loaded} specs loaded");
    // The property can fail: the same spec, described as another fleet, does not match.
    let text = std::fs::read_to_string(root.join("fixtures/specs/fleet1-test.yaml")).unwrap();
    let spec = fleetbot::spec::load_str(&text, "fleets/fuzz.yaml").unwrap();
    let other = format!("{spec:?}").replacen("fleet1", "fleet2", 1);
    let outcome = std::panic::catch_unwind(|| entries::spec_round_trip(&text, &other));
    assert!(outcome.is_err(), "a different fleet passed the round trip");
}
