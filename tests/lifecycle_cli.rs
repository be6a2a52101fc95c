//! `deploy`, `status` and `destroy` through the binary on the embedded simulator: one JSON
//! document on stdout, progress on stderr, the confirmation contract and exit codes; and
//! `serve --help`, which documents every setting without showing a secret value.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli_home::{CliHome, json};

const SPEC: &str = "fixtures/specs/fleet1-test.yaml";

#[test]
fn declined_confirmation_aborts_without_touching_anything() {
    let env = CliHome::new();
    let out = env.run(&["deploy", "--spec", SPEC, "--only-projects", "a"], "n\n");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "About to create/update fleet 'fleet1-test': 1 cluster(s) across 1 project(s)."
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  - fleet1-test-a / cluster cluster") && !stdout.contains("fleet1-test-b"),
        "only targeted clusters are listed: {stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Aborted."));
    let status = env.run(&["status", "--spec", SPEC, "--output", "json"], "");
    assert!(
        json(&status)["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "unknown")
    );
    // Nothing is deployed: status says so in its exit code as well as its document.
    assert_eq!(status.status.code(), Some(1));
}

#[test]
fn deploy_status_destroy_in_json_keep_stdout_one_document() {
    let env = CliHome::new();
    let out = env.run(&["deploy", "--spec", SPEC, "--yes", "--output", "json"], "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(
        (doc["deployed"].as_u64(), doc["failed"].as_u64()),
        (Some(2), Some(0))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("About to create/update") && stderr.contains("embedded Nebius simulator"),
        "{stderr}"
    );

    let out = env.run(&["status", "--spec", SPEC, "--output", "json"], "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "every target deployed and healthy"
    );
    let status = json(&out);
    assert!(
        status["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "deployed" && c["live_state"] == "ready")
    );

    let plan = env.run(&["plan", "--live", "--spec", SPEC, "--output", "json"], "");
    assert_eq!(json(&plan)["summary"]["unchanged"], 2);

    let out = env.run(
        &["destroy", "--spec", SPEC, "--yes", "--output", "json"],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(doc["failed"], 0);
    assert!(
        doc["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "destroyed")
    );
    let out = env.run(&["status", "--spec", SPEC], "");
    assert_eq!(
        out.status.code(),
        Some(1),
        "destroyed targets are not healthy"
    );
}

const RUNTIME: &str = "fixtures/runtime/embedded-default.yaml";

/// Every example fleet deploys into the embedded default with the runtime values of
/// fixtures/runtime/, shows every target deployed and healthy, and destroys; the static plan
/// made with those values shows the public placeholders and none of the bound IDs.
#[test]
fn every_example_fleet_deploys_shows_status_and_destroys_with_runtime_values() {
    let bound: Vec<String> = std::fs::read_to_string(RUNTIME)
        .unwrap()
        .split_whitespace()
        .filter(|w| w.starts_with("project-u") || w.starts_with("capacityblockgroup-"))
        .map(str::to_string)
        .collect();
    assert!(bound.len() >= 6, "{bound:?}");
    let mut specs: Vec<_> = std::fs::read_dir("fixtures/specs")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    specs.sort();
    assert_eq!(specs.len(), 8);
    let env = CliHome::new();
    for spec in &specs {
        let spec = spec.to_str().unwrap();
        let with = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend(["--spec", spec, "--runtime-values", RUNTIME]);
            env.run(&all, "")
        };
        let plan = with(&["plan"]);
        assert_eq!(plan.status.code(), Some(0), "{spec}");
        let text = String::from_utf8_lossy(&plan.stdout);
        for id in &bound {
            assert!(
                !text.contains(id.as_str()),
                "{spec}: the plan shows a bound ID: {text}"
            );
        }
        let out = with(&["deploy", "--yes", "--output", "json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{spec}: {stderr}");
        let doc = json(&out);
        let clusters = doc["clusters"].as_array().unwrap().len();
        assert!(clusters > 0, "{spec}");
        assert_eq!(
            doc["deployed"].as_u64(),
            Some(clusters as u64),
            "{spec}: {doc}"
        );
        let out = with(&["status", "--output", "json"]);
        assert_eq!(out.status.code(), Some(0), "{spec}: {}", json(&out));
        let out = with(&["destroy", "--yes", "--output", "json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(json(&out)["failed"], 0, "{spec}");
    }
}

/// Without the runtime values a placeholder project stops the deploy before any mutation,
/// and the message says what to do.
#[test]
fn a_placeholder_project_without_runtime_values_says_where_the_id_goes() {
    let env = CliHome::new();
    let out = env.run(
        &[
            "deploy",
            "--spec",
            "fixtures/specs/rtxpro-mig.yaml",
            "--yes",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("project project-replace-at-runtime: project_id is a placeholder; give the existing project's ID in the runtime values (--runtime-values FILE or FLEETBOT_RUNTIME_VALUES)"),
        "{stderr}"
    );
    let out = env.run(
        &[
            "plan",
            "--spec",
            "fixtures/specs/rtxpro-mig.yaml",
            "--runtime-values",
            "fixtures/specs/README.md",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("Invalid runtime values: fixtures/specs/README.md:"),
        "{stderr}"
    );
}

/// A spec read from standard input deploys; deploying it again changes nothing and says so;
/// status text shows each target's nodes.
#[test]
fn a_redeploy_from_stdin_says_nothing_changed_and_status_shows_the_nodes() {
    let env = CliHome::new();
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/",
        "fixtures/specs/fleet1-test.yaml"
    ))
    .unwrap();
    let first = env.run(&["deploy", "--spec", "-", "--yes"], &spec);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(!String::from_utf8_lossy(&first.stdout).contains("Nothing changed"));
    let again = env.run(&["deploy", "--spec", "-", "--yes"], &spec);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(0));
    assert!(
        stdout.ends_with("Nothing changed: every selected target already matched the spec.\n"),
        "{stdout}"
    );
    let doc = json(&env.run(&["deploy", "--spec", SPEC, "--yes", "--output", "json"], ""));
    assert_eq!(doc["changed"], false);
    let status = env.run(&["status", "--spec", "-"], &spec);
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(
        text.matches("    nodes: 2 of 2 ready in 2 node groups\n")
            .count(),
        2,
        "{text}"
    );
    assert!(!text.lines().any(|l| l.ends_with(' ')), "{text:?}");
}

/// A selector naming nothing is a typo: every selecting command refuses it before it
/// contacts anything, with the reference's message, instead of doing nothing with exit 0.
#[test]
fn selectors_that_name_nothing_are_errors_for_every_command() {
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
        for (flags, message) in [
            (
                &["--only-projects", "regoin"][..],
                "project selector has no declared Fleet target: regoin",
            ),
            (
                &["--only-projects", "a", "--only-clusters", "clutser"],
                "cluster selector has no target in selected projects: clutser",
            ),
        ] {
            let mut args = command.to_vec();
            args.extend(["--spec", SPEC]);
            args.extend(flags);
            let out = env.run(&args, "");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            assert!(stderr.contains(message), "{args:?}: {stderr}");
            assert!(
                !stderr.contains("simulator"),
                "{args:?} contacted the cloud: {stderr}"
            );
        }
    }
    // The cloud was never started, so nothing was recorded anywhere.
    assert!(!env.path().join("sim.state").exists());
}

#[test]
fn a_project_removed_from_the_spec_is_kept_by_deploy_and_deleted_by_deploy_prune() {
    let env = CliHome::new();
    let out = env.run(&["deploy", "--spec", SPEC, "--yes", "--output", "json"], "");
    assert_eq!(json(&out)["deployed"], 2);
    let smaller = env.path().join("smaller.yaml");
    let text = std::fs::read_to_string(SPEC).unwrap();
    let without_b = text.replace("  - name: b   # display name fleet1-test-b\n", "");
    assert_ne!(without_b, text);
    std::fs::write(&smaller, without_b).unwrap();
    let smaller = smaller.to_str().unwrap();

    let plan = json(&env.run(
        &["plan", "--live", "--spec", smaller, "--output", "json"],
        "",
    ));
    let pruned: Vec<&serde_json::Value> = plan["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["prune"] == true)
        .collect();
    assert_eq!(pruned.len(), 1, "{plan}");
    assert_eq!(pruned[0]["target"], "b/cluster");
    let text = env.run(&["plan", "--live", "--spec", smaller], "");
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("target b/cluster (removed from the spec; deleted only by deploy --prune)"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    let kept = env.run(
        &["deploy", "--spec", smaller, "--yes", "--output", "json"],
        "",
    );
    assert_eq!(kept.status.code(), Some(0));
    let doc = json(&kept);
    assert_eq!(doc["not_pruned"], serde_json::json!(["b/cluster"]));
    assert!(doc.get("pruned").is_none(), "{doc}");

    let out = env.run(
        &[
            "deploy", "--spec", smaller, "--prune", "--yes", "--output", "json",
        ],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(
        doc["pruned"],
        serde_json::json!([{"project_key": "b", "cluster_name": "cluster", "status": "destroyed"}])
    );
    assert_eq!(doc["failed"], 0);
    assert!(doc.get("not_pruned").is_none(), "{doc}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--prune:"));
    let plan = json(&env.run(
        &["plan", "--live", "--spec", smaller, "--output", "json"],
        "",
    ));
    assert!(
        plan["targets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("prune").is_none()),
        "{plan}"
    );
}

/// A selection that names nothing is a resolution error (fleet-engine §8.3): in JSON mode
/// stdout is still one document, the error document, and the exit code is 1.
#[test]
fn an_empty_selection_in_json_prints_the_error_document_and_exits_1() {
    let env = CliHome::new();
    let out = env.run(
        &[
            "deploy",
            "--spec",
            SPEC,
            "--only-clusters",
            "nope",
            "--output",
            "json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let doc = json(&out);
    assert_eq!(doc["clusters"], serde_json::json!([]));
    assert_eq!(
        (doc["deployed"].as_u64(), doc["failed"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(
        doc["error"],
        "cluster selector has no target in selected projects: nope"
    );
}

#[test]
fn demo_help_says_what_no_wait_does() {
    let env = CliHome::new();
    let out = env.run(&["demo", "--help"], "");
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    let line = help
        .lines()
        .skip_while(|l| !l.contains("--no-wait"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(line.contains("Clean up at once"), "{help}");
}

#[test]
fn serve_help_documents_every_setting_and_never_shows_a_secret_value() {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .args(["serve", "--help"])
        .env("FLEETBOT_WEBHOOK_SECRET", "hunter2-webhook-secret")
        .env(
            "FLEETBOT_STORE",
            "postgres://fleetbot:hunter2-db@db/fleetbot",
        )
        .env(
            "FLEETBOT_TENANT_ID",
            format!("tenant-{}hunter2tenant", "e00"),
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for setting in [
        "FLEETBOT_LISTEN",
        "FLEETBOT_WEBHOOK_SECRET",
        "FLEETBOT_APP_ID",
        "FLEETBOT_APP_PRIVATE_KEY_PATH",
        "FLEETBOT_GITHUB_API_URL",
        "FLEETBOT_STORE",
        "FLEETBOT_WORKERS",
        "FLEETBOT_RETENTION_DAYS",
        "FLEETBOT_CLOUD",
        "FLEETBOT_TENANT_ID",
        "FLEETBOT_RUNTIME_VALUES",
        "FLEETBOT_RECONCILE_NOW",
        "FLEETBOT_RECONCILE_TICK_SECS",
        "FLEETBOT_SHUTDOWN_GRACE_SECS",
    ] {
        assert!(
            help.contains(&format!("[env: {setting}")),
            "{setting} in {help}"
        );
    }
    assert!(!help.contains("hunter2"), "{help}");
}

#[test]
fn verify_storage_after_deploy_passes_on_every_worker_and_prints_one_document() {
    let env = CliHome::new();
    let out = env.run(&["deploy", "--spec", SPEC, "--yes", "--output", "json"], "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A later command (a new simulator process) finds the clusters' add-ons where deploy put
    // them, and the probe is this binary, named by its digest.
    let out = env.run(&["verify-storage", "--spec", SPEC, "--output", "json"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = json(&out);
    assert_eq!(doc["passed"], true);
    assert_eq!(
        (
            &doc["verified_clusters"],
            &doc["cpu_workers"],
            &doc["gpu_workers"]
        ),
        (
            &serde_json::json!(2),
            &serde_json::json!(2),
            &serde_json::json!(2)
        )
    );
    assert_eq!(doc["requested_gibibytes"], 2048);
    let roles: Vec<&str> = doc["clusters"][0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["cpu", "gpu"]);
    assert!(!stderr.contains("computeinstance-"), "{stderr}");

    let text = env.run(
        &["verify-storage", "--spec", SPEC, "--only-projects", "b"],
        "",
    );
    assert_eq!(text.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&text.stdout).starts_with(
            "Fleet storage verification passed: 1/1 clusters, 1 CPU and 1 GPU workers, 1024 GiB requested.\n"
        ),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );

    // Graphics: these targets are not RTX rendering ones; nothing is created, exit 1.
    let out = env.run(
        &[
            "verify-graphics",
            "--spec",
            SPEC,
            "--output",
            "json",
            "-j",
            "2",
        ],
        "",
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(
        doc["failures"],
        serde_json::json!(["invalid_graphics_target"])
    );
    assert_eq!(doc["selected_clusters"], 2);

    // An unknown selector: nothing runs, and the one document says so.
    let out = env.run(
        &[
            "verify-storage",
            "--spec",
            SPEC,
            "--only-clusters",
            "nope",
            "--output",
            "json",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json(&out),
        serde_json::json!({"passed": false, "failures": ["storage_verification_unavailable"]})
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("cluster selector has no target in selected projects: nope")
    );
}

/// `fleetbot demo` with no terminal runs every step by itself, cleans up after itself, and
/// says the same thing every time once times, ports, SHAs and IDs are masked.
#[test]
fn the_demo_runs_to_the_end_by_itself_and_leaves_nothing_behind() {
    let env = CliHome::new();
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fleetbot"))
        .arg("demo")
        .env("HOME", env.path())
        .env("TMPDIR", &tmp)
        .env("XDG_DATA_HOME", env.path().join("data"))
        // Credentials on this machine never send the demo to Nebius.
        .env("NEBIUS_IAM_TOKEN", "not-a-token")
        .env_remove("FLEETBOT_CLOUD")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the throwaway directory is removed"
    );
    let masks = [
        (r"/\S*/fleetbot-demo-[0-9a-f]+", "<dir>"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:<port>"),
        (r"\((\d+ ms|\d+\.\d s|\d+ min \d+ s)\)", "(<time>)"),
        (r"Done in [^.]+\.\d s", "Done in <time>"),
        (r"\d+\.\d KiB", "<size>"),
        (r"mk8scluster-[a-z0-9]+", "<cluster-id>"),
        (r"\b[0-9a-f]{7,64}\b", "<hex>"),
    ];
    let mut text = stdout.into_owned();
    for (pattern, with) in masks {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, with)
            .into_owned();
    }
    insta::assert_snapshot!("demo_output", text);
}

/// One command shown in a `sh` block of the documentation.
struct DocCommand {
    place: String,
    line: String,
    expected: i32,
}

/// The `fleetbot …` (or `cargo run -- …`) lines of every `sh` block of `text`, continuations
/// joined, each with the exit code the text gives it: `exits N` or `exit N` in its trailing
/// comment or in the comment lines right above it, else 0.
fn documented_commands(file: &str, text: &str) -> Vec<DocCommand> {
    let exit = regex::Regex::new(r"\bexits? (\d)\b").unwrap();
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending: Option<i32> = None;
    let mut joined = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(info) = line.strip_prefix("```") {
            in_sh = !in_sh && matches!(info, "sh" | "bash" | "shell");
            pending = None;
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(c) = exit.captures(comment) {
                pending = Some(c[1].parse().unwrap());
            }
            continue;
        }
        if let Some(start) = line.strip_suffix('\\') {
            joined.push_str(start);
            continue;
        }
        joined.push_str(line);
        let whole = std::mem::take(&mut joined);
        let (command, comment) = match whole.find(" #") {
            Some(at) => (whole[..at].trim().to_string(), &whole[at..]),
            None => (whole.trim().to_string(), ""),
        };
        let command = match command.strip_prefix("cargo run -- ") {
            Some(rest) => format!("fleetbot {rest}"),
            None => command,
        };
        let blank = command.is_empty();
        if command.starts_with("fleetbot ") {
            let expected = exit
                .captures(comment)
                .map(|c| c[1].parse().unwrap())
                .or(pending)
                .unwrap_or(0);
            out.push(DocCommand {
                place: format!("{file}:{}", n + 1),
                line: command,
                expected,
            });
        }
        if blank {
            pending = None;
        }
    }
    out
}

/// The arguments of a documented command that runs on the embedded default, or why not.
fn runnable(command: &str) -> Result<Vec<String>, &'static str> {
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.get(1).copied() {
        Some("serve" | "sim" | "register") => return Err("a server, or waits for a person"),
        Some("kube-token" | "probe") => return Err("run by kubectl or inside a pod"),
        Some("preview") => return Err("needs a spec repository checkout (tests/preview_cli.rs)"),
        _ => {}
    }
    if command.contains(['|', '>', '<', '$', '\'', '"', '…']) {
        return Err("a shell construct or a placeholder");
    }
    if command.contains("origin/") {
        return Err("needs the repository's remote history");
    }
    let placeholder = regex::Regex::new(r"^[A-Z][A-Z_]+$").unwrap();
    if words.iter().any(|w| placeholder.is_match(w)) {
        return Err("a placeholder");
    }
    Ok(words[1..].iter().map(|w| w.to_string()).collect())
}

/// Every command README.md, docs/*.md and fixtures/quotas/README.md show in a `sh` block that
/// can run on the embedded default runs, in order, in one fresh environment, and exits as the
/// text beside it says.
#[test]
fn every_documented_command_exits_as_documented() {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir("docs")
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files.push("fixtures/quotas/README.md".into());
    let env = CliHome::new();
    let (mut ran, mut skipped) = (0, Vec::new());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for c in documented_commands(file, &text) {
            let args = match runnable(&c.line) {
                Ok(args) => args,
                Err(why) => {
                    skipped.push(format!("{}: {} ({why})", c.place, c.line));
                    continue;
                }
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = env.run(&args, "");
            assert_eq!(
                out.status.code(),
                Some(c.expected),
                "{}: `{}` exits {:?}, the docs say {}\n{}",
                c.place,
                c.line,
                out.status.code(),
                c.expected,
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(
        ran >= 20,
        "only {ran} documented commands ran; skipped:\n{}",
        skipped.join("\n")
    );
}

/// A fleet with no region has nowhere to be: `plan --live` refuses it with deploy's sentence
/// instead of showing an empty plan that deploy then refuses.
#[test]
fn a_live_plan_without_a_region_fails_as_deploy_does() {
    let env = CliHome::new();
    let spec = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SPEC))
        .unwrap();
    let spec: String = spec
        .lines()
        .filter(|l| !l.trim_start().starts_with("region:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let want = "region could not be resolved for project 'a': set 'region' in the fleet spec or on the project";
    for command in [&["plan", "--live"][..], &["deploy", "--yes"][..]] {
        let mut args = command.to_vec();
        args.extend(["--spec", "-"]);
        let out = env.run(&args, &spec);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty() || !String::from_utf8_lossy(&out.stdout).contains("Plan:"));
    }
}

/// A platform or preset the region does not offer is named as such, with what the region has,
/// before anything is created (not as a quota the tenant lacks); without preflight the
/// simulator refuses the node group as Nebius does, naming the field.
#[test]
fn an_unknown_platform_or_preset_is_named_with_what_the_region_offers() {
    let env = CliHome::new();
    let spec = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SPEC))
        .unwrap();
    let cases = [
        (
            spec.replace("platform: gpu-rtx6000", "platform: gpu-h900-sxm"),
            "unknown platform \"gpu-h900-sxm\" for us-central1; GPU platforms there: gpu-h200-sxm, gpu-b200-sxm, gpu-rtx6000",
        ),
        (
            spec.replace("preset: 1gpu-24vcpu-218gb", "preset: 1gpu-24vcpu-218"),
            "unknown preset \"1gpu-24vcpu-218\" for gpu-rtx6000 in us-central1; its presets: 1gpu-24vcpu-218gb, 8gpu-192vcpu-1744gb",
        ),
    ];
    for (spec, want) in &cases {
        let out = env.run(&["deploy", "--yes", "--spec", "-"], spec);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(!stderr.contains("omitted required allowances"), "{stderr}");
        assert!(stderr.contains("nothing was changed"), "{stderr}");
    }
    let out = env.run(
        &["deploy", "--yes", "--no-preflight", "--spec", "-"],
        &cases[0].0,
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("platform \"gpu-h900-sxm\" is not available in region us-central1"),
        "{all}"
    );
}

/// Issue 52, item 5: the embedded simulator's state, Kubernetes objects and inventory hold the
/// simulated S3 key pair and the clusters' tokens; they were written readable by all (0644).
/// After a deploy on the embedded default, in a fresh home, each file the simulator keeps is
/// 0600 and its directory 0700.
#[cfg(unix)]
#[test]
fn the_embedded_simulator_keeps_its_files_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/specs/fleet1-test.yaml");
    let values =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runtime/embedded-default.yaml");
    let out = crate::cli_home::fresh_shell(
        Path::new(env!("CARGO_BIN_EXE_fleetbot")),
        home,
        &[
            "deploy",
            "--yes",
            "-f",
            spec.to_str().unwrap(),
            "--runtime-values",
            values.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = home.join("data/fleetbot/simulator");
    assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert_eq!(mode(&path), 0o700, "{}", path.display());
        } else {
            assert_eq!(mode(&path), 0o600, "{}", path.display());
            files.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    files.sort();
    for kept in [
        "default.state",
        "default.kube.json",
        "default.inventory.sqlite",
    ] {
        assert!(files.iter().any(|f| f == kept), "{kept} in {files:?}");
    }
}
