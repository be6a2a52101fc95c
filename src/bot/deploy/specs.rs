//! The specs an apply job applies, as read at its commit: each changed spec removed, invalid,
//! valid, or valid but sharing its fleet or a cluster with another spec file of the commit
//! (one fleet, one file).

use crate::bot::config::LoadedConfig;
use crate::github::{ClientError, RepoClient};
use crate::runtime::RuntimeValues;

/// The commit an apply reads its specs at, and the spec paths its pull request changed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Commit<'a> {
    pub sha: &'a str,
    /// The changed spec paths, in path order.
    pub paths: &'a [String],
    /// Of those, the ones the commit deleted.
    pub removed: &'a [String],
}

/// One changed spec as read at the commit.
pub(super) enum SpecAt {
    Removed(String),
    Invalid(String),
    Valid(String, Box<crate::spec::FleetSpec>),
    /// Valid, but another spec file at the commit declares its fleet or one of its clusters
    /// (the reason names both files), or that could not be ruled out.
    Shared(String, String),
}

impl SpecAt {
    pub(super) fn path(&self) -> &str {
        match self {
            SpecAt::Removed(p)
            | SpecAt::Invalid(p)
            | SpecAt::Valid(p, _)
            | SpecAt::Shared(p, _) => p,
        }
    }
}

/// One fleet, one file, at the commit applied: a valid spec that shares its fleet or a
/// cluster with another spec file of the commit is not applied (the preflight said so
/// before the merge; this holds whatever was merged meanwhile).
pub(super) async fn one_fleet_one_file(
    repo: &RepoClient,
    settings: &crate::bot::BotSettings,
    config: &LoadedConfig,
    job: Commit<'_>,
    specs: Vec<SpecAt>,
) -> Result<Vec<SpecAt>, ClientError> {
    if !specs.iter().any(|s| matches!(s, SpecAt::Valid(..))) {
        return Ok(specs);
    }
    let matcher = config.config.spec_matcher();
    let changed: Vec<crate::bot::pr::ChangedFile> = job
        .paths
        .iter()
        .map(|p| crate::bot::pr::ChangedFile {
            path: p.clone(),
            ..Default::default()
        })
        .collect();
    let (others, unread) =
        crate::bot::jobs::other_specs::read(repo, settings, &matcher, job.sha, &changed).await?;
    let others: Vec<crate::spec::FleetSpec> = others
        .iter()
        .filter_map(|o| {
            let text = std::str::from_utf8(&o.content).ok()?;
            crate::runtime::load_str_with(text, &o.path, settings.runtime.as_deref()).ok()
        })
        .collect();
    let mut all: Vec<&crate::spec::FleetSpec> = specs
        .iter()
        .filter_map(|s| match s {
            SpecAt::Valid(_, spec) => Some(&**spec),
            _ => None,
        })
        .collect();
    all.extend(others.iter());
    let mut reasons: std::collections::BTreeMap<String, String> = Default::default();
    for c in crate::spec::identity::conflicts(&all) {
        reasons
            .entry(c.first.file.clone())
            .or_insert_with(|| c.error_at_first().to_string());
        reasons
            .entry(c.second.file.clone())
            .or_insert_with(|| c.error().to_string());
    }
    Ok(specs
        .into_iter()
        .map(|s| match s {
            SpecAt::Valid(path, spec) => match (reasons.remove(&path), &unread) {
                (Some(why), _) => SpecAt::Shared(path, why),
                (None, Some(why)) => SpecAt::Shared(
                    path,
                    format!(
                        "the repository's other spec files could not all be read ({why}), so fleetbot cannot tell that none of them declares this fleet or its clusters"
                    ),
                ),
                (None, None) => SpecAt::Valid(path, spec),
            },
            other => other,
        })
        .collect())
}

pub(super) async fn read_spec(
    repo: &RepoClient,
    job: Commit<'_>,
    path: &str,
    runtime: Option<&RuntimeValues>,
) -> Result<SpecAt, ClientError> {
    if job.removed.iter().any(|p| p == path) {
        return Ok(SpecAt::Removed(path.to_string()));
    }
    let Some(bytes) = repo.file_content(path, job.sha).await? else {
        return Ok(SpecAt::Removed(path.to_string()));
    };
    let parsed = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| crate::runtime::load_str_with(text, path, runtime).ok());
    Ok(match parsed {
        Some(spec) => SpecAt::Valid(path.to_string(), Box::new(spec)),
        None => SpecAt::Invalid(path.to_string()),
    })
}
