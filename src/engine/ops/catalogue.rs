//! The platforms and presets a deploy asks for, checked against what each region offers
//! (Nebius's `PlatformService`) before anything is created or counted: a typo'd platform is
//! named as one, with what the region does offer, instead of surfacing as a quota the tenant
//! lacks (`compute.instance.gpu.h900`) or as a create the cloud refuses halfway through.

use std::collections::BTreeMap;

use super::error::{EngineError, Refusal};
use super::prepare::Prepared;
use super::progress::{Event, Progress};
use crate::cloud::domain::{Cloud, Platform};

/// One pool's ask, as the spec writes it.
struct Ask<'a> {
    target: String,
    group: &'a str,
    platform: &'a str,
    preset: &'a str,
}

/// Refuses the deploy when a node group asks for a platform or preset its region does not
/// offer, naming each with what the region has. A region where the tenant has no project yet
/// has no catalogue to read (the service lists a project's region): it is said, and the
/// create itself is where Nebius checks it.
pub async fn check_catalogue<C: Cloud>(
    cloud: &C,
    tenant_id: &str,
    prepared: &Prepared,
    progress: &Progress,
) -> Result<(), EngineError> {
    let mut asks: BTreeMap<&str, Vec<Ask<'_>>> = BTreeMap::new();
    let mut readers: BTreeMap<&str, String> = BTreeMap::new();
    for target in &prepared.targets {
        let project = prepared
            .observed
            .projects
            .get(&target.key.project_key)
            .and_then(|o| o.project.as_ref());
        if let Some(project) = project {
            readers
                .entry(target.region.as_str())
                .or_insert_with(|| project.id.clone());
        }
        for group in &target.node_groups {
            asks.entry(target.region.as_str()).or_default().push(Ask {
                target: target.key.to_string(),
                group: &group.name,
                platform: &group.spec.platform,
                preset: &group.spec.preset,
            });
        }
    }
    if asks.keys().any(|region| !readers.contains_key(region)) {
        // New projects: any of the tenant's projects in the region reads its catalogue.
        let projects = cloud.list_projects(tenant_id).await.map_err(|e| {
            EngineError::cloud(&e, format!(
                "could not list the tenant's projects to read the regions' platform catalogues ({e}); nothing was changed"
            ))
        })?;
        for project in projects {
            if let Some((region, _)) = asks.get_key_value(project.region.as_str()) {
                readers.entry(region).or_insert(project.id);
            }
        }
    }
    let mut refusals = Vec::new();
    for (region, asks) in &asks {
        let Some(project_id) = readers.get(region) else {
            progress(&Event::step(
                "platform catalogue",
                format!(
                    "no project in {region} yet to read it from; Nebius checks the platforms and presets when the node groups are created"
                ),
            ));
            continue;
        };
        let platforms = cloud.list_platforms(project_id).await.map_err(|e| {
            EngineError::cloud(&e, format!(
                "could not read the platform catalogue of {region} ({e}); refusing to create node groups without it; nothing was changed"
            ))
        })?;
        refusals.extend(
            asks.iter()
                .filter_map(|ask| refusal(region, ask, &platforms)),
        );
    }
    if refusals.is_empty() {
        return Ok(());
    }
    Err(EngineError::refused(
        Refusal::Catalogue,
        format!(
            "the spec asks for platforms or presets their region does not offer; nothing was changed:\n  - {}",
            refusals.join("\n  - ")
        ),
    ))
}

fn refusal(region: &str, ask: &Ask<'_>, platforms: &[Platform]) -> Option<String> {
    let Some(platform) = platforms.iter().find(|p| p.name == ask.platform) else {
        let gpu = ask.platform.starts_with("gpu-");
        let offered: Vec<&str> = platforms
            .iter()
            .filter(|p| p.name.starts_with("gpu-") == gpu)
            .map(|p| p.name.as_str())
            .collect();
        return Some(format!(
            "{} node group {}: unknown platform {:?} for {region}; {} there: {}",
            ask.target,
            ask.group,
            ask.platform,
            if gpu {
                "GPU platforms"
            } else {
                "CPU platforms"
            },
            list(&offered)
        ));
    };
    if platform.presets.iter().any(|p| p.name == ask.preset) {
        return None;
    }
    let presets: Vec<&str> = platform.presets.iter().map(|p| p.name.as_str()).collect();
    Some(format!(
        "{} node group {}: unknown preset {:?} for {} in {region}; its presets: {}",
        ask.target,
        ask.group,
        ask.preset,
        platform.name,
        list(&presets)
    ))
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::domain::PlatformPreset;

    fn platform(name: &str, presets: &[&str]) -> Platform {
        Platform {
            name: name.into(),
            gpu_quota: String::new(),
            presets: presets
                .iter()
                .map(|p| PlatformPreset {
                    name: p.to_string(),
                    vcpus: 1,
                    memory_gib: 1,
                    gpus: 0,
                })
                .collect(),
        }
    }

    #[test]
    fn unknown_platforms_list_their_kind_and_unknown_presets_the_platforms() {
        let offered = [
            platform("cpu-d3", &["4vcpu-16gb"]),
            platform(
                "gpu-h200-sxm",
                &["1gpu-16vcpu-200gb", "8gpu-128vcpu-1600gb"],
            ),
            platform("gpu-b200-sxm", &["8gpu-160vcpu-1792gb"]),
        ];
        let ask = |platform, preset| Ask {
            target: "a/c".into(),
            group: "c-ng-gpu-0",
            platform,
            preset,
        };
        assert_eq!(
            refusal(
                "us-central1",
                &ask("gpu-h900-sxm", "8gpu-128vcpu-1600gb"),
                &offered
            )
            .unwrap(),
            "a/c node group c-ng-gpu-0: unknown platform \"gpu-h900-sxm\" for us-central1; GPU platforms there: gpu-h200-sxm, gpu-b200-sxm"
        );
        assert_eq!(
            refusal(
                "us-central1",
                &ask("gpu-h200-sxm", "8gpu-128vcpu-1600"),
                &offered
            )
            .unwrap(),
            "a/c node group c-ng-gpu-0: unknown preset \"8gpu-128vcpu-1600\" for gpu-h200-sxm in us-central1; its presets: 1gpu-16vcpu-200gb, 8gpu-128vcpu-1600gb"
        );
        assert!(
            refusal("us-central1", &ask("cpu-d4", "x"), &offered)
                .unwrap()
                .ends_with("CPU platforms there: cpu-d3")
        );
        assert_eq!(
            refusal("us-central1", &ask("cpu-d3", "4vcpu-16gb"), &offered),
            None
        );
    }
}
