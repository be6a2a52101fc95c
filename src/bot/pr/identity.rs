//! One fleet, one file: a changed spec that declares a fleet, or a cluster of a project, that
//! another spec file of the repository at the same commit also declares fails the preflight,
//! with both files' lines. Two files applying over one fleet would otherwise each undo the
//! other, and their leases (one per fleet) could not tell them apart.

use super::{ChangedFile, OtherSpec};
use crate::bot::report::{FleetReport, FleetStatus, SpecProblem};
use crate::runtime::{RuntimeValues, load_str_with};
use crate::spec::FleetSpec;
use crate::spec::identity::conflicts;

/// Adds a located problem to each changed fleet that shares a fleet or a cluster with another
/// spec file, and fails every changed fleet when the other specs could not all be read (the
/// rule cannot be checked, so it does not pass).
pub(super) fn one_fleet_one_file(
    fleets: &mut [FleetReport],
    changed: &[&ChangedFile],
    others: &[OtherSpec],
    others_unread: Option<&str>,
    runtime: Option<&RuntimeValues>,
) {
    let loaded = |path: &str, bytes: Option<&[u8]>| -> Option<FleetSpec> {
        let text = std::str::from_utf8(bytes?).ok()?;
        load_str_with(text, path, runtime).ok()
    };
    let mut specs: Vec<FleetSpec> = changed
        .iter()
        .filter(|f| f.status != crate::github::FileStatus::Removed)
        .filter_map(|f| loaded(&f.path, f.head.as_deref()))
        .collect();
    let changed_count = specs.len();
    specs.extend(
        others
            .iter()
            .filter_map(|o| loaded(&o.path, Some(&o.content))),
    );
    let refs: Vec<&FleetSpec> = specs.iter().collect();
    for conflict in conflicts(&refs) {
        for (claim, error) in [
            (&conflict.first, conflict.error_at_first()),
            (&conflict.second, conflict.error()),
        ] {
            let is_changed = specs[..changed_count]
                .iter()
                .any(|s| s.source == claim.file);
            if let Some(fleet) = fleets.iter_mut().find(|f| f.path == claim.file)
                && is_changed
            {
                fail(fleet, problem(&error));
            }
        }
    }
    if let Some(why) = others_unread {
        for fleet in fleets.iter_mut().filter(|f| f.status == FleetStatus::Valid) {
            fail(
                fleet,
                SpecProblem {
                    line: None,
                    column: None,
                    field: String::new(),
                    message: format!(
                        "the repository's other spec files could not all be read ({why}), so fleetbot cannot tell that none of them declares this fleet or its clusters"
                    ),
                },
            );
        }
    }
}

fn problem(error: &crate::spec::SpecError) -> SpecProblem {
    SpecProblem {
        line: error.pos.map(|p| p.line),
        column: error.pos.map(|p| p.col),
        field: error.path.clone(),
        message: error.message.clone(),
    }
}

fn fail(fleet: &mut FleetReport, problem: SpecProblem) {
    if fleet.status != FleetStatus::Removed {
        fleet.status = FleetStatus::Invalid;
    }
    if !fleet.problems.contains(&problem) {
        fleet.problems.push(problem);
    }
}
