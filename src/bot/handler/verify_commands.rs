//! `/verify-storage`, `/verify-graphics` and `/verify-mig` on a pull request: the fleets it
//! changed (or `fleet=`), their clusters (or those `clusters=` names, `*` and `?` allowed),
//! verified on every worker through the engine; a `fleet/verify-storage`,
//! `fleet/verify-graphics` or `fleet/verify-mig` check run on the commit that matters is
//! `in_progress` at once and then carries the sanitized summary. The reply points at it.

use super::deploy_commands::{Said, changed_fleets, commit_of};
use super::{Bot, BotError};
use crate::bot::commands::{Command, CommandKind};
use crate::bot::config::VerifyKind;
use crate::bot::deploy::job::short;
use crate::bot::guard::PublicNames;
use crate::bot::report::ReplyNote;
use crate::bot::report::verify::{FleetVerification, VerifyCheck, graphics_check, storage_check};
use crate::bot::report::verify_mig::mig_check;
use crate::engine::verify::{mig_targets, select_targets};
use crate::github::events::IssueCommentEvent;
use crate::github::{CheckOutput, CheckRunPayload, RepoClient, RunningCheck};
use crate::spec::FleetSpec;

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

impl Bot {
    pub(super) async fn verify_command(
        &self,
        repo: &RepoClient,
        e: &IssueCommentEvent,
        command: &Command,
        said: &mut Said,
    ) -> Result<String, BotError> {
        let kind = match command.kind {
            CommandKind::VerifyGraphics => VerifyKind::Graphics,
            CommandKind::VerifyMig => VerifyKind::Mig,
            _ => VerifyKind::Storage,
        };
        let slash = format!("/{}", kind.command());
        let Some(deployer) = &self.settings.deploy else {
            said.errors.push(format!(
                "{slash} is not available: fleetbot has no cloud configured to verify"
            ));
            return Ok("refused: no cloud".into());
        };
        let only = command.args.get("fleet").map(String::as_str);
        let pattern = command
            .args
            .get("clusters")
            .or_else(|| command.args.get("cluster"))
            .map(String::as_str);
        let Some((pr, targets)) = changed_fleets(repo, e.issue_number, only, &slash, said).await?
        else {
            return Ok("refused: no fleet".into());
        };
        let sha = commit_of(&pr);
        let mut specs = Vec::new();
        for target in targets.iter().filter(|t| !t.removed) {
            let spec = match repo.file_content(&target.path, &sha).await? {
                Some(bytes) => std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|t| crate::spec::load_str(t, &target.path).ok()),
                None => None,
            };
            specs.push((target.path.clone(), spec));
        }
        let check = verify_and_publish(
            repo,
            deployer,
            kind,
            &sha,
            format!("{}:c{}", kind.command(), e.comment_id),
            specs,
            pattern,
            &self.alias_key(repo.installation_id()),
        )
        .await?;
        said.notes.push(ReplyNote {
            line: format!(
                "{slash} at {}: {}; the {} check run has the details",
                short(&sha),
                check.title,
                kind.check_name()
            ),
            items: Vec::new(),
        });
        Ok(format!("{:?}", check.conclusion).to_lowercase())
    }
}

/// Runs one kind of verification over `specs` (path, and the spec when it parsed) and
/// publishes it as that kind's check run on `sha`: `in_progress` at once, then the sanitized
/// summary. The slash commands and `verify_after_apply` both come through here.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn verify_and_publish(
    repo: &RepoClient,
    deployer: &crate::bot::backend::Deployer,
    kind: VerifyKind,
    sha: &str,
    external_id: String,
    specs: Vec<(String, Option<FleetSpec>)>,
    pattern: Option<&str>,
    scanner_key: &[u8],
) -> Result<VerifyCheck, crate::github::ClientError> {
    let check_name = kind.check_name();
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
    let applier = &deployer.applier;
    let check: VerifyCheck = match kind {
        VerifyKind::Mig => {
            let mut fleets = Vec::new();
            for p in planned {
                let outcome = match p.run {
                    Err(message) => Err(message),
                    Ok((spec, tenant, clusters)) => applier
                        .verify_mig_fleet(&spec, &tenant, clusters)
                        .await
                        .map_err(|err| err.message),
                };
                fleets.push(FleetVerification {
                    path: p.path,
                    names: p.names,
                    outcome,
                });
            }
            mig_check(&fleets)
        }
        VerifyKind::Graphics => {
            let mut fleets = Vec::new();
            for p in planned {
                let outcome = match p.run {
                    Err(message) => Err(message),
                    Ok((spec, tenant, clusters)) => applier
                        .verify_graphics_fleet(&spec, &tenant, clusters)
                        .await
                        .map_err(|err| err.message),
                };
                fleets.push(FleetVerification {
                    path: p.path,
                    names: p.names,
                    outcome,
                });
            }
            graphics_check(&fleets)
        }
        VerifyKind::Storage => {
            let mut fleets = Vec::new();
            for p in planned {
                let outcome = match p.run {
                    Err(message) => Err(message),
                    Ok((spec, tenant, clusters)) => applier
                        .verify_storage_fleet(&spec, &tenant, clusters)
                        .await
                        .map_err(|err| err.message),
                };
                fleets.push(FleetVerification {
                    path: p.path,
                    names: p.names,
                    outcome,
                });
            }
            storage_check(&fleets)
        }
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
    deployer: &crate::bot::backend::Deployer,
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
    planned.run = match deployer.applier.tenant_for(&spec) {
        Err(err) => Err(err.message),
        Ok(tenant) => Ok((spec, tenant, clusters)),
    };
    planned
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
