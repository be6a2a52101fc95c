//! Issue #32's reproductions through the binary on the embedded simulator: a typo that would
//! delete a GPU pool, a detached filesystem and a lowered bucket cap are destructive, so
//! `deploy --yes` refuses them without `--allow-destroy` and the prompt lists them; a selector
//! that names nothing (empty, blank, only commas) is an error for every command, never "all".

use std::process::Output;

use crate::cli_home::{CliHome, json};

impl CliHome {
    /// The example fleet changed by `edit`, written beside the simulator's state.
    fn spec_with(&self, name: &str, edit: impl Fn(&str) -> String) -> String {
        let text = edit(include_str!("../fixtures/specs/fleet1-test.yaml"));
        let path = self.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn deployed(&self) {
        let out = self.run(&["deploy", "--spec", SPEC, "--yes", "--output", "json"], "");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(json(&out)["deployed"], 2);
    }

    /// The live plan of the unchanged example: what is deployed is still all there.
    fn assert_untouched(&self) {
        let plan = self.run(&["plan", "--live", "--spec", SPEC, "--output", "json"], "");
        let plan = json(&plan);
        assert_eq!(plan["summary"]["unchanged"], 2, "{plan:#}");
        assert_eq!(plan["summary"]["delete"], 0, "{plan:#}");
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const SPEC: &str = "fixtures/specs/fleet1-test.yaml";

/// `cuont:` for `count:` under `defaults.gpu_nodes`: a warning (the reference accepts unknown
/// keys), the GPU pools become empty, and the plan deletes both GPU node groups and the device
/// plugin. `deploy --yes` must refuse that and change nothing; the prompt must list it.
#[test]
fn a_count_typo_that_empties_the_gpu_pools_is_refused_and_listed() {
    let env = CliHome::new();
    env.deployed();
    let typo = env.spec_with("typo.yaml", |s| {
        s.replacen(
            "  gpu_nodes:\n    count: 1\n",
            "  gpu_nodes:\n    cuont: 2\n",
            1,
        )
    });

    let out = env.run(&["deploy", "--spec", &typo, "--yes"], "");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cuont: unknown key; did you mean 'count'?"),
        "the typo is still a warning: {err}"
    );
    assert!(
        err.contains("deploy --yes does not delete, replace or shrink inside the fleet's targets unless --allow-destroy is given; nothing was changed"),
        "{err}"
    );
    for target in ["a/cluster", "b/cluster"] {
        let line = format!("delete node-group cluster-ng-gpu-0 in {target}: no longer in the spec");
        assert!(err.contains(&line), "{line}: {err}");
        assert!(
            err.contains("delete add-on ")
                && err.contains(&format!(" in {target}: no longer in the spec")),
            "the device plugin's deletion is named: {err}"
        );
    }
    let banner = stdout(&out);
    assert!(
        banner.contains("About to create/update fleet 'fleet1-test'")
            && banner.contains(" to delete.\n")
            && banner.contains("  ! delete node-group cluster-ng-gpu-0 in a/cluster"),
        "{banner}"
    );
    env.assert_untouched();

    // Asked without --yes: the prompt counts and lists every deletion; declining changes nothing.
    let out = env.run(&["deploy", "--spec", &typo], "n\n");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let prompt = stdout(&out);
    let counts = prompt
        .lines()
        .find(|l| l.starts_with("Plan: "))
        .unwrap_or_else(|| panic!("no counts line: {prompt}"));
    assert!(
        counts.starts_with("Plan: 0 to create, ") && counts.ends_with(" to delete."),
        "{counts}"
    );
    let deletes: usize = counts
        .trim_end_matches(" to delete.")
        .rsplit(", ")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        prompt.matches("\n  ! delete ").count(),
        deletes,
        "each deletion is listed: {prompt}"
    );
    assert!(deletes >= 4, "{prompt}");
    assert!(stderr(&out).contains("Proceed to create? [y/N]: Aborted."));
    env.assert_untouched();

    // Allowed explicitly, the same deploy applies it.
    let out = env.run(&["deploy", "--spec", &typo, "--yes", "--allow-destroy"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let plan = env.run(&["plan", "--live", "--spec", &typo, "--output", "json"], "");
    assert_eq!(json(&plan)["summary"]["unchanged"], 2);
}

/// Turning the filesystem off detaches it from every node group, and a smaller bucket lowers
/// its cap: both take something away inside a target, so both need --allow-destroy.
#[test]
fn a_detached_filesystem_and_a_lowered_bucket_cap_need_allow_destroy() {
    let env = CliHome::new();
    env.deployed();
    let smaller = env.spec_with("smaller.yaml", |s| {
        s.replacen("enable_filestore: true", "enable_filestore: false", 1)
            .replacen("      size_gibibytes: 1024", "      size_gibibytes: 512", 1)
    });
    let out = env.run(
        &["deploy", "--spec", &smaller, "--yes", "--output", "json"],
        "",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let doc = json(&out);
    let error = doc["error"].as_str().unwrap();
    assert_eq!(doc["failed"], 1);
    assert!(
        error.contains(
            "change bucket (generated name) in project a: size cap lowered from 1024 GiB to 512 GiB"
        ),
        "{error}"
    );
    for target in ["a/cluster", "b/cluster"] {
        for group in ["cluster-ng-cpu", "cluster-ng-gpu-0"] {
            let line = format!(
                "change node-group {group} in {target}: detaches a filesystem its nodes mount"
            );
            assert!(error.contains(&line), "{line}: {error}");
        }
        let csi = format!("delete add-on filesystem-csi in {target}: no longer in the spec");
        assert!(error.contains(&csi), "{csi}: {error}");
    }
    env.assert_untouched();
}

/// `destroy --only-clusters=","` destroyed every cluster and `plan --live --only-projects=" "`
/// planned everything. An empty, blank or comma-only selector is now an error naming the flag,
/// for every command that selects, before anything is contacted.
#[test]
fn a_selector_that_names_nothing_is_an_error_for_every_command() {
    let env = CliHome::new();
    for command in [
        &["plan", "--live"][..],
        &["deploy", "--yes"],
        &["destroy", "--yes"],
        &["preflight"],
        &["kubeconfig"],
        &["verify-storage"],
        &["verify-graphics"],
    ] {
        for (flag, value) in [
            ("--only-clusters", ","),
            ("--only-projects", " "),
            ("--only-projects", ""),
            ("--only-clusters", " , ,"),
        ] {
            let mut args = command.to_vec();
            let assigned = format!("{flag}={value}");
            args.extend(["--spec", SPEC, &assigned]);
            let out = env.run(&args, "");
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(
                err.contains(&format!("{flag} names nothing")),
                "{args:?}: {err}"
            );
            assert!(
                !err.contains("simulator"),
                "{args:?} contacted the cloud: {err}"
            );
        }
    }
    assert!(!env.path().join("sim.state").exists());

    // JSON mode: the command's error document, naming the flag.
    let out = env.run(
        &[
            "deploy",
            "--spec",
            SPEC,
            "--only-clusters=,",
            "--output",
            "json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(
        (doc["deployed"].as_u64(), doc["failed"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .starts_with("--only-clusters names nothing")
    );
}

/// The reproduction itself: on a deployed fleet, `destroy --only-clusters=","` destroys nothing.
#[test]
fn destroy_with_a_comma_for_a_selector_destroys_nothing() {
    let env = CliHome::new();
    env.deployed();
    let out = env.run(
        &["destroy", "--spec", SPEC, "--only-clusters=,", "--yes"],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("--only-clusters names nothing"));
    env.assert_untouched();
}

/// `verify-mig` printed compute instance IDs as node names; verification output is what the
/// reference calls safe to publish. Nodes are now worker ordinals, in text and JSON, and the
/// names are kept only in the receipt under `--evidence-dir`.
#[test]
fn verify_mig_names_workers_by_ordinal_and_keeps_node_names_in_the_receipt() {
    let env = CliHome::new();
    let spec = "fixtures/specs/rtxpro-mig.yaml";
    let values = "fixtures/runtime/embedded-default.yaml";
    let out = env.run(
        &["deploy", "-f", spec, "--runtime-values", values, "--yes"],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = env.run(&["verify-mig", "-f", spec, "--runtime-values", values], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.starts_with("MIG ready: 2 node(s)"), "{text}");
    assert!(
        text.contains("\n  worker-1: ") && text.contains("\n  worker-2: "),
        "{text}"
    );
    for shown in [&text, &stderr(&out)] {
        assert!(!shown.contains("computeinstance-"), "{shown}");
    }

    let evidence = env.path().join("evidence");
    let out = env.run(
        &[
            "verify-mig",
            "-f",
            spec,
            "--runtime-values",
            values,
            "--output",
            "json",
            "--evidence-dir",
            evidence.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    assert_eq!(doc["nodes"][0]["name"], "worker-1");
    assert_eq!(doc["hardware"][1]["node"], "worker-2");
    assert!(!stdout(&out).contains("computeinstance-"));
    let run = std::fs::read_dir(&evidence)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let receipt = std::fs::read_dir(&run)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let receipt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&receipt).unwrap()).unwrap();
    let node = receipt["workers"]["worker-1"].as_str().unwrap();
    assert!(node.starts_with("computeinstance-"), "{receipt:#}");
    assert_eq!(receipt["report"]["nodes"][0]["name"], node);
    let digest = doc["evidence_sha256"].as_str().unwrap();
    assert_eq!(digest.len(), 64);
}

/// The node groups of `project`'s cluster, as `client` reads them on `runtime`.
fn pools(
    runtime: &tokio::runtime::Runtime,
    client: &fleetbot::cloud::NebiusClient,
    tenant: &str,
    project: &str,
) -> Vec<fleetbot::cloud::domain::NodeGroup> {
    use fleetbot::cloud::Cloud;
    runtime.block_on(async {
        let projects = client.list_projects(tenant).await.unwrap();
        let p = projects.iter().find(|p| p.name == project).unwrap();
        let clusters = client.list_clusters(&p.id).await.unwrap();
        let c = clusters.iter().find(|c| c.name == "cluster").unwrap();
        client.list_node_groups(&c.id).await.unwrap()
    })
}

/// Issue 53, item 1: `deploy` showed "1 to change" (a CPU pool 1 → 2) and, while its prompt
/// waited, the GPU pool was grown by hand (1 → 2); the person answered `y` to what they saw,
/// and fleetbot shrank the GPU pool back to 1, deleting a node nobody was shown, without
/// `--allow-destroy`. Now a target the cloud no longer holds as the plan read it is not
/// touched, and the command says why; a target nobody changed is applied as shown.
#[test]
fn a_pool_grown_by_hand_while_the_prompt_waits_is_not_shrunk_back() {
    use fleetbot::cloud::Cloud;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    let env = CliHome::new();
    env.deployed();
    // A resident simulator serves the home's state (what `kubeconfig` starts), so the cloud can
    // be changed from outside while the command waits at its prompt.
    let kc = env.path().join("kc").display().to_string();
    let out = env.run(&["kubeconfig", "--spec", SPEC, "--output", &kc], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let resident = fleetbot::fleet::resident::find(&env.path().join("sim.state"))
        .expect("a resident simulator serves the state");
    // One runtime for the client: its connection lives on it.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _in_runtime = runtime.enter();
    let client = fleetbot::cloud::NebiusClient::new(
        fleetbot::cloud::client::Endpoints::Single {
            uri: resident.endpoint.clone(),
        },
        fleetbot::cloud::auth::Credentials::Static(resident.token.clone()),
    );
    let tenant = resident.tenant_id.clone();
    let count = |project: &str, gpu: bool| {
        pools(&runtime, &client, &tenant, project)
            .into_iter()
            .find(|g| g.spec.platform.starts_with("gpu") == gpu)
            .map(|g| g.spec.node_count)
            .unwrap()
    };
    let more_cpu = env.spec_with("more-cpu.yaml", |s| {
        s.replacen(
            "  cpu_nodes:\n    count: 1\n",
            "  cpu_nodes:\n    count: 2\n",
            1,
        )
    });
    let mut deploy = env
        .command(&["deploy", "--spec", &more_cpu])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut shown = String::new();
    let mut lines = BufReader::new(deploy.stdout.take().unwrap());
    while !shown.contains("\nPlan: ") {
        let mut line = String::new();
        assert!(
            lines.read_line(&mut line).unwrap() > 0,
            "no plan shown: {shown}"
        );
        shown.push_str(&line);
    }
    assert!(
        shown.contains("Plan: 0 to create, 2 to change, 0 to delete."),
        "{shown}"
    );
    // While the prompt waits: a/cluster's GPU pool grown by hand.
    let gpu = pools(&runtime, &client, &tenant, "fleet1-test-a")
        .into_iter()
        .find(|g| g.spec.platform.starts_with("gpu"))
        .unwrap();
    let mut grown = gpu.spec.clone();
    grown.node_count = 2;
    runtime
        .block_on(client.update_node_group(&gpu.id, &grown, &gpu.labels, "grown-by-hand"))
        .unwrap();
    deploy.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let mut rest = String::new();
    lines.read_to_string(&mut rest).unwrap();
    let mut err = String::new();
    deploy
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = deploy.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("the cloud changed since the plan was shown (node group cluster-ng-gpu-0 was changed); nothing was changed on this target: plan again"),
        "{err}"
    );
    // Nothing nobody was shown: the GPU pool keeps its node, and a/cluster's CPU pool was not
    // changed either; b/cluster, which nobody touched, was applied as shown.
    assert_eq!(count("fleet1-test-a", true), 2);
    assert_eq!(count("fleet1-test-a", false), 1);
    assert_eq!(count("fleet1-test-b", false), 2);
}
