//! Crafted specs that once cost seconds to gigabytes (issue 22, item 3), each of which must now
//! be answered in time near-linear in its size: a 100,000-key mapping, two unlike 40,000-line
//! specs diffed for the sticky comment, and the defaults bomb (2,000 default keys copied into
//! 20,000 empty clusters). The figures are in docs/status.md.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use fleetbot::bot::LoadedConfig;
use fleetbot::bot::pr::{ChangedFile, PrInput, evaluate_pull_request};
use fleetbot::bot::report::DiffWithheld;
use fleetbot::github::FileStatus;
use fleetbot::spec::load_str;

const HEAD: &str = "apiVersion: npa.fleet/v0.0.1\nname: bench\nregion: eu-north1\nprojects:\n  - name: p\n    clusters:\n      - name: c\n        cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n";

/// One mapping of 100,000 keys (3.5 MB), with a duplicate of the first key at its end.
fn huge_mapping() -> String {
    let mut text = String::from(HEAD);
    text.push_str("labels:\n");
    for i in 0..100_000 {
        text.push_str(&format!("  label_{i:06}: value-{i:06}-{}\n", "x".repeat(5)));
    }
    text.push_str("  label_000000: again\n");
    text
}

/// `keys` default keys and `clusters` empty clusters, the clusters in flow style on one line.
fn defaults_bomb(keys: usize, clusters: usize) -> String {
    let mut text = String::from("apiVersion: npa.fleet/v0.0.1\nname: bomb\ndefaults:\n");
    for k in 0..keys {
        text.push_str(&format!("  k{k}: 0\n"));
    }
    text.push_str("projects:\n  - name: p\n    clusters: [");
    text.push_str(&vec!["{}"; clusters].join(", "));
    text.push_str("]\n");
    text
}

/// A valid spec followed by `lines` comment lines that differ between `tag`s.
fn grown_spec(tag: &str, lines: usize) -> String {
    let mut text = String::from(HEAD);
    for i in 0..lines {
        text.push_str(&format!("# {tag} note {i}\n"));
    }
    text
}

/// The preflight of one modified spec, as the bot's worker runs it; returns the diff's reason
/// for being withheld.
fn preflight(base: &str, head: &str) -> Option<DiffWithheld> {
    let files = [ChangedFile {
        path: "fleets/a.yaml".into(),
        status: FileStatus::Modified,
        head: Some(head.as_bytes().to_vec()),
        base: Some(base.as_bytes().to_vec()),
        ..ChangedFile::default()
    }];
    let config = LoadedConfig::from_default_branch("main", None);
    let out = evaluate_pull_request(&PrInput {
        repo: "o/r",
        number: 1,
        head_sha: &"a".repeat(40),
        base_sha: &"b".repeat(40),
        files: &files,
        files_truncated: false,
        config: &config,
        alias_key: b"k",
        quota: None,
        live: &BTreeMap::new(),
        runtime: None,
        others: &[],
        others_unread: None,
    });
    out.report.diffs[0].withheld
}

fn bench(c: &mut Criterion) {
    let mapping = huge_mapping();
    assert!(mapping.len() > 3_400_000, "{}", mapping.len());
    let e = load_str(&mapping, "bench.yaml").expect_err("duplicate key");
    assert!(e.to_string().contains(":100010:3: duplicate key"), "{e}");
    c.bench_function("spec_100k_key_mapping_duplicate_at_end", |b| {
        b.iter(|| load_str(black_box(&mapping), "bench.yaml"))
    });
    let unique = mapping.replace("  label_000000: again\n", "");
    c.bench_function("spec_100k_key_mapping", |b| {
        b.iter(|| load_str(black_box(&unique), "bench.yaml"))
    });

    let bomb = defaults_bomb(2_000, 20_000);
    let e = load_str(&bomb, "bench.yaml").expect_err("over the budget");
    assert!(e.message.contains("merge expansion limit"), "{e}");
    c.bench_function("spec_defaults_bomb_2000_keys_x_20000_clusters", |b| {
        b.iter(|| load_str(black_box(&bomb), "bench.yaml"))
    });

    let (old, new) = (grown_spec("old", 40_000), grown_spec("new", 40_000));
    assert_eq!(preflight(&old, &new), Some(DiffWithheld::TooLarge));
    c.bench_function("preflight_two_unlike_40000_line_specs", |b| {
        b.iter(|| preflight(black_box(&old), black_box(&new)))
    });

    // The worst a diff under the line cap can cost: nothing alike, 10,000 lines a side. It is
    // diffed until the deadline, if it gets that far.
    let (old, new) = (grown_spec("old", 9_990), grown_spec("new", 9_990));
    let mut group = c.benchmark_group("slow");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("preflight_two_unlike_10000_line_specs", |b| {
        b.iter(|| preflight(black_box(&old), black_box(&new)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
