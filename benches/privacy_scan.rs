//! Benchmark of the privacy guard: scanning 100 MB of mixed text on one core.
//!
//! The corpus mixes fleet specs (so the spec reader runs), Markdown prose, source code,
//! logs and JSON, with words that look half like IDs (`gpu-h200-sxm`, `eu-north1`, digests,
//! UUIDs) and a few planted values per file. Issue 5 sets the target at over 200 MB/s.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fleetbot::privacy::testdata::{self, Synth};
use fleetbot::privacy::{PrivacyAllowlist, Scanner, ScannerConfig};

const TOTAL_BYTES: usize = 100 * 1024 * 1024;
const FILE_BYTES: usize = 1024 * 1024;

const WORDS: [&str; 40] = [
    "the",
    "fleet",
    "cluster",
    "node",
    "group",
    "project",
    "tenant",
    "region",
    "eu-north1",
    "us-central1",
    "gpu-h200-sxm",
    "8gpu-128vcpu-1600gb",
    "cpu-d3",
    "16vcpu-64gb",
    "k8s-training",
    "deploy",
    "plan",
    "quota",
    "capacity",
    "block",
    "filestore",
    "subnet",
    "bucket",
    "registry",
    "v1.2.3",
    "apply",
    "destroy",
    "status",
    "preflight",
    "mk8s",
    "soperator",
    "kuberay",
    "release-2026",
    "node-group-a",
    "cuda13.0",
    "is",
    "a",
    "of",
    "and",
    "with",
];

fn words(rng: &mut Synth, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.below(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn hex(rng: &mut Synth, n: usize) -> String {
    rng.string(b"0123456789abcdef", n)
}

fn spec_chunk(rng: &mut Synth, i: usize) -> String {
    format!(
        "  - name: team-{i}\n    project_id: \"<your-project-id>\"\n    clusters:\n      - name: train-{i}\n        \
         gpu_nodes: {{ count: {}, platform: gpu-h200-sxm, preset: 8gpu-128vcpu-1600gb, capacity_block_group: capacityblockgroup-REPLACE_AT_RUNTIME }}\n        \
         cpu_nodes: {{ count: 2, platform: cpu-d3, preset: 16vcpu-64gb }}\n        enable_filestore: true  # {}\n        subnet_id: \"\"\n",
        rng.below(16),
        words(rng, 6)
    )
}

fn prose_chunk(rng: &mut Synth) -> String {
    format!(
        "## {}\n\n{}. See https://docs.example.com/{} and commit {}.\n\n",
        words(rng, 4),
        words(rng, 40),
        words(rng, 1),
        hex(rng, 40)
    )
}

fn code_chunk(rng: &mut Synth) -> String {
    format!(
        "fn handle_{}(ctx: &Context) -> Result<(), Error> {{\n    let digest = \"sha256:{}\";\n    tracing::info!(\"{}\");\n    ctx.apply(&[\"{}\"])?;\n    Ok(())\n}}\n",
        rng.below(1000),
        hex(rng, 64),
        words(rng, 8),
        words(rng, 2)
    )
}

fn log_chunk(rng: &mut Synth) -> String {
    format!(
        "2026-11-30T17:{:02}:{:02}Z INFO request={}-{}-4{}-a{}-{} ip=10.{}.{}.{} msg=\"{}\"\n",
        rng.below(60),
        rng.below(60),
        hex(rng, 8),
        hex(rng, 4),
        hex(rng, 3),
        hex(rng, 3),
        hex(rng, 12),
        rng.below(256),
        rng.below(256),
        rng.below(256),
        words(rng, 10)
    )
}

fn json_chunk(rng: &mut Synth) -> String {
    format!(
        "{{\"name\": \"{}\", \"image\": \"nvcr.io/nvidia/cuda@sha256:{}\", \"labels\": {{\"team\": \"{}\"}}, \"replicas\": {}}}\n",
        words(rng, 2),
        hex(rng, 64),
        words(rng, 1),
        rng.below(10)
    )
}

fn planted(rng: &mut Synth) -> String {
    let (value, _) = testdata::planted(rng.below(8), rng.next_u64());
    format!("leftover: {value}\n")
}

/// About 100 files of about 1 MB each, deterministic.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut rng = Synth::new(2026);
    let mut files = Vec::new();
    let mut total = 0;
    let mut n = 0;
    while total < TOTAL_BYTES {
        let kind = n % 5;
        let (path, mut text) = match kind {
            0 => (
                format!("fleets/f{n}.yaml"),
                "apiVersion: npa.fleet/v0.0.1\nname: bench\ntenant_id: \"\"\nprojects:\n"
                    .to_string(),
            ),
            1 => (format!("docs/d{n}.md"), String::new()),
            2 => (format!("src/s{n}.rs"), String::new()),
            3 => (format!("logs/l{n}.log"), String::new()),
            _ => (format!("data/j{n}.json"), String::new()),
        };
        let mut i = 0;
        while text.len() < FILE_BYTES {
            let chunk = match kind {
                0 => spec_chunk(&mut rng, i),
                1 => prose_chunk(&mut rng),
                2 => code_chunk(&mut rng),
                3 => log_chunk(&mut rng),
                _ => json_chunk(&mut rng),
            };
            text.push_str(&chunk);
            // A handful of real-looking values per file, as a leaky repository might have.
            if i % 2000 == 1999 && kind != 0 {
                text.push_str(&planted(&mut rng));
            }
            i += 1;
        }
        total += text.len();
        files.push((path, text.into_bytes()));
        n += 1;
    }
    files
}

fn scan_mixed_text(c: &mut Criterion) {
    let files = corpus();
    let bytes: usize = files.iter().map(|(_, t)| t.len()).sum();
    let scanner = Scanner::new(ScannerConfig {
        key: b"bench-key".to_vec(),
        allowlist: PrivacyAllowlist::default(),
    })
    .expect("scanner");

    let mut group = c.benchmark_group("privacy");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("scan_100MB_mixed", |b| {
        b.iter(|| {
            let mut findings = 0usize;
            for (path, text) in &files {
                findings += scanner.scan_text(path, text, None).findings().len();
            }
            black_box(findings)
        })
    });
    group.finish();
}

criterion_group!(benches, scan_mixed_text);
criterion_main!(benches);
