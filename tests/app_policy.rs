//! The organisation's policies through the production path (`fleetbot serve`, the fake
//! GitHub): a pull request that breaks a rule gets a failed `fleet/policy` run with the
//! annotation on its spec line and a section in the sticky comment; the policies are read from
//! the default branch, so a pull request that rewrites them is still judged by the base's.

use crate::app_harness as app;
use crate::fake_github;
use crate::support;

use app::{App, AppOptions, eventually};
use fake_github::{BOT_LOGIN, FakeGitHub, REPO, sha};

const POLICY: &str = r#"package fleetbot

deny contains {"msg": msg, "file": c.file, "line": c.line, "target": c.target} if {
	some p in input.fleet.projects
	some c in p.clusters
	c.gpu_pool.count > 1
	msg := sprintf("%s asks for %d GPU nodes; a cluster may have 1", [c.target, c.gpu_pool.count])
}

warn contains "GPU fleets are reviewed by the platform team" if {
	input.fleet.gpus > 0
}
"#;

/// The pull request's own rewrite of the policy: it would allow anything.
const PERMISSIVE: &str = "package fleetbot\n";

async fn world() -> FakeGitHub {
    let gh = FakeGitHub::start().await;
    gh.world().add_repo(
        REPO,
        "main",
        &sha(1),
        &[
            ("fleets/prod.yaml", &support::base_spec()),
            (
                ".fleetbot.yml",
                "specs: ['fleets/**/*.yaml']\npolicy: {path: policy/}\n",
            ),
            ("policy/gpus.rego", POLICY),
            ("policy/gpus_test.rego", "package fleetbot_test\n"),
        ],
    );
    gh
}

fn run_named(gh: &FakeGitHub, head: &str, name: &str) -> Option<fake_github::CheckRun> {
    gh.world()
        .runs_on(REPO, head)
        .into_iter()
        .find(|r| r.name == name && r.conclusion.is_some())
}

#[tokio::test]
async fn a_broken_rule_fails_fleet_policy_on_its_line_and_the_pull_request_cannot_rewrite_its_judge()
 {
    let gh = world().await;
    let dir = tempfile::tempdir().unwrap();
    let app = App::start(AppOptions {
        github_url: gh.url.clone(),
        dir: dir.path().to_path_buf(),
        workers: 1,
        cloud: None,
        store_url: None,
        webhook_secrets: None,
        job_lease_secs: None,
        env: Vec::new(),
    })
    .await;
    let grown = support::spec_with_a_grown();
    let line = grown
        .lines()
        .position(|l| l == "      - name: cluster")
        .unwrap() as u64
        + 1;
    {
        let mut w = gh.world();
        w.commit(
            REPO,
            &sha(1),
            &sha(2),
            &[
                ("fleets/prod.yaml", Some(&grown)),
                ("policy/gpus.rego", Some(PERMISSIVE)),
            ],
        );
        w.open_pr(REPO, 12, "grow-gpus", &sha(2));
    }
    app.deliver(
        "pull_request",
        "d-1",
        &fake_github::pr_delivery("opened", 12, &sha(2), "grow-gpus"),
    )
    .await;
    let run = eventually("fleet/policy concludes", || {
        run_named(&gh, &sha(2), "fleet/policy")
    })
    .await;
    assert_eq!(run.conclusion.as_deref(), Some("failure"), "{run:?}");
    assert_eq!(run.title, "Policy: 1 denial(s), 1 warning(s)");
    let [annotation] = run.annotations.as_slice() else {
        panic!("one annotation: {:?}", run.annotations);
    };
    assert_eq!(annotation["path"], "fleets/prod.yaml");
    assert_eq!(annotation["start_line"].as_u64(), Some(line));
    assert_eq!(annotation["annotation_level"], "failure");
    assert_eq!(
        annotation["message"],
        "a/cluster asks for 2 GPU nodes; a cluster may have 1"
    );
    let comment = eventually("the sticky comment", || {
        gh.world()
            .comments_on(REPO, 12)
            .into_iter()
            .find(|c| c.user == BOT_LOGIN)
    })
    .await;
    assert!(
        comment
            .body
            .contains("### Policy: 1 denial(s), 1 warning(s)"),
        "{}",
        comment.body
    );
    assert!(
        comment.body.contains("- **deny** `fleets/prod.yaml:")
            && comment
                .body
                .contains("GPU fleets are reviewed by the platform team"),
        "{}",
        comment.body
    );
    gh.assert_clean();
    app.stop().await;
}
