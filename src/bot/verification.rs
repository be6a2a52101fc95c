//! Verification as the App runs it: which clusters of a spec a `clusters=` pattern selects,
//! one kind of verification run over some fleets and published as its check run
//! (`in_progress` at once, then the sanitized summary), for the slash commands
//! (`super::handler`) and after an apply (`super::deploy`) alike.

use crate::bot::report::verify::{
    FleetVerification, VerifyCheck, check_name, graphics_check, storage_check,
};
use crate::bot::report::verify_mig::mig_check;
use crate::fleet::backend::Deploying;
use crate::fleet::guard::PublicNames;
use crate::github::{CheckOutput, CheckRunPayload, ClientError, RepoClient, RunningCheck};
use crate::spec::FleetSpec;
use crate::verify::Kind as VerifyKind;
use crate::verify::{mig_targets, select_targets};

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Whether `name` matches `pattern`, where `*` is any run of characters and `?` one.
pub fn glob_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some('*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some('?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// The spec's cluster names a `clusters=` pattern (comma-separated patterns) selects, in spec
/// order and each once; all of them for none.
fn clusters_matching(spec: &FleetSpec, pattern: Option<&str>) -> Vec<String> {
    let Some(pattern) = pattern else {
        return Vec::new();
    };
    let patterns: Vec<&str> = pattern
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for c in spec.projects.iter().flat_map(|p| &p.clusters) {
        if patterns.iter().any(|p| glob_matches(p, &c.name)) && !out.contains(&c.name) {
            out.push(c.name.clone());
        }
    }
    out
}

/// One fleet to verify, or why it cannot be.
struct Planned {
    path: String,
    names: Vec<String>,
    run: Result<(FleetSpec, String, Vec<String>), String>,
}

/// Runs one kind of verification over `specs` (path, and the spec when it parsed) and
/// publishes it as that kind's check run on `sha`: `in_progress` at once, then the sanitized
/// summary. The slash commands and `verify_after_apply` both come through here.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn verify_and_publish(
    repo: &RepoClient,
    deployer: &Deploying<'_>,
    kind: VerifyKind,
    sha: &str,
    external_id: String,
    specs: Vec<(String, Option<FleetSpec>)>,
    pattern: Option<&str>,
    scanner_key: &[u8],
) -> Result<VerifyCheck, ClientError> {
    let check_name = check_name(kind);
    let running = repo
        .start_check_run(&RunningCheck {
            name: check_name.into(),
            head_sha: sha.to_string(),
            external_id: Some(external_id.clone()),
            title: format!("{} verification running", kind.title()),
            summary: format!("Verifying {} fleet(s) on every worker.", specs.len()),
        })
        .await?;
    let mig = kind == VerifyKind::Mig;
    let planned: Vec<Planned> = specs
        .into_iter()
        .map(|(path, spec)| plan(deployer, &path, spec, pattern, sha, mig))
        .collect();
    let applier = &deployer.session;
    // Each kind has its own report type, so the loop is spelled once and typed per kind.
    macro_rules! each_fleet {
        ($method:ident) => {{
            let mut fleets = Vec::new();
            for p in planned {
                let outcome = match p.run {
                    Err(message) => Err(message),
                    Ok((spec, tenant, clusters)) => applier
                        .$method(&spec, &tenant, clusters)
                        .await
                        .map_err(|err| err.message),
                };
                fleets.push(FleetVerification {
                    path: p.path,
                    names: p.names,
                    outcome,
                });
            }
            fleets
        }};
    }
    let check: VerifyCheck = match kind {
        VerifyKind::Mig => mig_check(&each_fleet!(verify_mig_fleet)),
        VerifyKind::Graphics => graphics_check(&each_fleet!(verify_graphics_fleet)),
        VerifyKind::Storage => storage_check(&each_fleet!(verify_storage_fleet)),
    };
    let scanner = crate::bot::pr::output_scanner(scanner_key);
    let run = CheckRunPayload {
        name: check_name.into(),
        head_sha: sha.to_string(),
        external_id: Some(external_id),
        conclusion: check.conclusion,
        output: CheckOutput {
            title: check.title.clone(),
            summary: crate::bot::render::redact_private(&scanner, &check.summary),
            text: None,
            annotations: Vec::new(),
        },
        actions: Vec::new(),
    };
    repo.complete_check_run(running.id, &run).await?;
    Ok(check)
}

/// What to verify of one spec: its tenant and the clusters the pattern selects.
fn plan(
    deployer: &Deploying<'_>,
    path: &str,
    spec: Option<FleetSpec>,
    pattern: Option<&str>,
    sha: &str,
    mig: bool,
) -> Planned {
    let mut planned = Planned {
        path: path.to_string(),
        names: Vec::new(),
        run: Err(format!(
            "the spec does not parse or validate at {}",
            short(sha)
        )),
    };
    let Some(spec) = spec else {
        return planned;
    };
    let clusters = clusters_matching(&spec, pattern);
    if pattern.is_some() && clusters.is_empty() {
        planned.run = Err(format!(
            "no cluster of this fleet matches clusters={}",
            pattern.unwrap_or_default()
        ));
        return planned;
    }
    let mut names = PublicNames::of(&spec);
    let selected = if mig {
        let targets = mig_targets(&spec, &clusters);
        if targets.is_empty() {
            planned.run = Err("no MIG cluster of this fleet is selected".into());
            return planned;
        }
        Ok(targets)
    } else {
        select_targets(&spec, &[], &clusters, &spec.project_prefix).map(|s| s.targets)
    };
    if let Ok(targets) = selected {
        planned.names = targets
            .iter()
            .map(|&(p, c)| {
                format!(
                    "{}/{}",
                    names.project(&spec.projects[p].key()),
                    spec.projects[p].clusters[c].name
                )
            })
            .collect();
    }
    planned.run = match deployer.session.app_tenant_for(&spec) {
        Err(err) => Err(err.message),
        Ok(tenant) => Ok((spec, tenant, clusters)),
    };
    planned
}

/// The verifications `.fleetbot.yml` asks for after an apply, on the fleets that converged,
/// each as its check run on the applied commit. Graphics covers the RTX rendering clusters and
/// MIG the MIG clusters, so a fleet without any is not reported as failing them. A
/// verification that cannot be published is logged: the apply's own result stands.
pub(crate) async fn verify_after_apply(
    repo: &RepoClient,
    deployer: &Deploying<'_>,
    job_id: &str,
    sha: &str,
    kinds: &[VerifyKind],
    converged: &[(String, crate::spec::FleetSpec)],
    scanner_key: &[u8],
) {
    let mut kinds = kinds.to_vec();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let relevant = |c: &crate::spec::ClusterSpec| match kind {
            VerifyKind::Storage => true,
            VerifyKind::Graphics => c.gpu_workload_profile == "rtx-rendering",
            VerifyKind::Mig => c.mig_enabled(),
        };
        let mut names: Vec<String> = Vec::new();
        let mut specs = Vec::new();
        for (path, spec) in converged {
            let here: Vec<String> = spec
                .projects
                .iter()
                .flat_map(|p| &p.clusters)
                .filter(|c| relevant(c))
                .map(|c| c.name.clone())
                .collect();
            if !here.is_empty() {
                names.extend(here);
                specs.push((path.clone(), Some(spec.clone())));
            }
        }
        if specs.is_empty() {
            continue;
        }
        names.sort();
        names.dedup();
        // Cluster names are DNS labels, so the joined list matches them exactly.
        let pattern = names.join(",");
        let published = verify_and_publish(
            repo,
            deployer,
            kind,
            sha,
            format!("{}:apply:{job_id}", kind.command()),
            specs,
            Some(&pattern),
            scanner_key,
        )
        .await;
        match published {
            Ok(check) => {
                tracing::info!(check = check_name(kind), title = %check.title, "verified after apply")
            }
            Err(e) => tracing::warn!(
                check = check_name(kind),
                "cannot publish a verification after apply: {e}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_patterns_match_like_a_shell_glob() {
        assert!(glob_matches("render-*", "render-a"));
        assert!(glob_matches("render-*", "render-"));
        assert!(!glob_matches("render-*", "train-a"));
        assert!(glob_matches("gpu-?", "gpu-1"));
        assert!(!glob_matches("gpu-?", "gpu-12"));
        assert!(glob_matches("*", "anything"));
        assert!(glob_matches("exact", "exact"));
        assert!(!glob_matches("exact", "exactly"));
    }
}
