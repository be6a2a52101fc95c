//! Property tests for the spec reader: hostile input never panics, and valid specs round-trip.

use fleetbot::spec::{load_str, spec_from_str};
use proptest::prelude::*;

fn yamlish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("apiVersion: npa.fleet/v0.0.1\n".to_string()),
        Just("name: f\n".to_string()),
        Just("projects:\n".to_string()),
        Just("  - name: a\n".to_string()),
        Just("    clusters:\n".to_string()),
        Just("      - ".to_string()),
        Just("gpu_nodes: {count: 1}\n".to_string()),
        Just("cpu_nodes: null\n".to_string()),
        Just("defaults: &d {x: 1}\n".to_string()),
        Just("<<: *d\n".to_string()),
        Just("*d\n".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(": ".to_string()),
        Just("- ".to_string()),
        Just("\"".to_string()),
        Just("'".to_string()),
        Just("|\n".to_string()),
        Just("\t".to_string()),
        Just("\r\n".to_string()),
        Just("!!binary ".to_string()),
        "[a-z_]{1,8}".prop_map(|s| format!("{s}: ")),
        "[ -~]{0,12}",
        "-?[0-9]{1,20}",
    ];
    prop::collection::vec(token, 0..60).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
        let _ = load_str(&text, "fuzz.yaml");
    }

    #[test]
    fn yaml_shaped_noise_never_panics(text in yamlish()) {
        let _ = load_str(&text, "fuzz.yaml");
    }
}

#[derive(Debug, Clone)]
struct Pool {
    count: i64,
    disk: i64,
    preemptible: bool,
}

#[derive(Debug, Clone)]
struct Cluster {
    name: String,
    cpu: Option<Pool>,
    gpu: Option<(Pool, u8)>,
    filestore: Option<i64>,
    stabilization: i64,
}

fn pool() -> impl Strategy<Value = Pool> {
    (
        1i64..64,
        prop_oneof![Just(0i64), 64i64..4096],
        any::<bool>(),
    )
        .prop_map(|(count, disk, preemptible)| Pool {
            count,
            disk,
            preemptible,
        })
}

fn cluster() -> impl Strategy<Value = Cluster> {
    (
        "[a-z][a-z0-9]{0,10}",
        prop::option::of(pool()),
        prop::option::of((pool(), prop::sample::select(vec![1u8, 2, 4]))),
        prop::option::of(1i64..100_000),
        0i64..10_000,
    )
        .prop_filter("needs a node", |(_, c, g, _, _)| c.is_some() || g.is_some())
        .prop_map(|(name, cpu, gpu, filestore, stabilization)| Cluster {
            name,
            cpu,
            gpu,
            filestore,
            stabilization,
        })
}

fn render(projects: &[(String, Vec<Cluster>)]) -> String {
    let mut out = String::from(
        "apiVersion: npa.fleet/v0.0.1\nname: prop-fleet\nregion: eu-north1\nprojects:\n",
    );
    for (pname, clusters) in projects {
        out.push_str(&format!("  - name: {pname}\n    clusters:\n"));
        for c in clusters {
            out.push_str(&format!("      - name: {}\n", c.name));
            out.push_str(&format!(
                "        gpu_health_stabilization_seconds: {}\n",
                c.stabilization
            ));
            match &c.cpu {
                Some(p) => out.push_str(&format!(
                    "        cpu_nodes:\n          count: {}\n          preset: 16vcpu-64gb\n          disk_size_gib: {}\n          preemptible: {}\n",
                    p.count, p.disk, p.preemptible
                )),
                None => out.push_str("        cpu_nodes: null\n"),
            }
            if let Some((p, gpus)) = &c.gpu {
                out.push_str(&format!(
                    "        gpu_nodes: {{count: {}, platform: gpu-l40s-a, preset: \"{gpus}gpu-40vcpu-160gb\", disk_size_gib: {}, preemptible: {}}}\n",
                    p.count, p.disk, p.preemptible
                ));
            }
            if let Some(size) = c.filestore {
                out.push_str(&format!("        enable_filestore: true\n        filestore_disk_size_gibibytes: {size}\n"));
            }
        }
    }
    out
}

fn projects() -> impl Strategy<Value = Vec<(String, Vec<Cluster>)>> {
    prop::collection::vec(prop::collection::vec(cluster(), 1..4), 1..5).prop_map(|ps| {
        ps.into_iter()
            .enumerate()
            .map(|(i, mut cs)| {
                // Names must be unique within a project.
                for (j, c) in cs.iter_mut().enumerate() {
                    c.name = format!("{}-{j}", c.name);
                }
                (format!("project-{i}"), cs)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Every value written in the YAML comes back out of the model unchanged.
    #[test]
    fn valid_specs_round_trip_through_the_model(projects in projects()) {
        let text = render(&projects);
        let spec = load_str(&text, "prop.yaml").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(spec.projects.len(), projects.len());
        for (p, (pname, clusters)) in spec.projects.iter().zip(&projects) {
            prop_assert_eq!(&p.name, pname);
            prop_assert_eq!(p.clusters.len(), clusters.len());
            for (c, want) in p.clusters.iter().zip(clusters) {
                prop_assert_eq!(&c.name, &want.name);
                prop_assert_eq!(c.gpu_health_stabilization_seconds, want.stabilization);
                prop_assert_eq!(c.cpu_nodes.as_ref().map(|p| (p.count, p.disk_size_gib, p.preemptible)),
                    want.cpu.as_ref().map(|p| (p.count, p.disk, p.preemptible)));
                prop_assert_eq!(c.gpu_nodes.as_ref().map(|p| (p.count, p.disk_size_gib, p.preemptible)),
                    want.gpu.as_ref().map(|(p, _)| (p.count, p.disk, p.preemptible)));
                prop_assert_eq!(c.enable_filestore, want.filestore.is_some());
                if let Some(size) = want.filestore {
                    prop_assert_eq!(c.filestore_disk_size_gibibytes, size);
                }
            }
        }
        // Reading is deterministic.
        prop_assert_eq!(spec, spec_from_str(&text, "prop.yaml").unwrap());
    }
}
