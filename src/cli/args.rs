//! The argument groups the subcommands share (`#[command(flatten)]`): which spec, read how,
//! and which of its targets.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::fleet::SelectError;
use crate::spec::FleetSpec;

/// The spec a command works on, and the private values that fill it.
#[derive(Debug, Clone, Args)]
pub struct SpecArgs {
    /// Path to an npa.fleet/v0.0.1 spec YAML (`-` reads standard input).
    #[arg(long = "spec", short = 'f', value_name = "PATH")]
    pub path: PathBuf,
    /// Treat unknown spec keys (warnings on stderr otherwise) as errors: exit 2.
    #[arg(long)]
    pub strict: bool,
    /// The operator's private runtime values (existing project IDs, capacity block groups,
    /// chart repositories, bucket names) that fill the spec's placeholders; never printed.
    #[arg(long, value_name = "FILE", env = "FLEETBOT_RUNTIME_VALUES")]
    pub runtime_values: Option<PathBuf>,
}

impl SpecArgs {
    /// The spec, merged and validated; its problems are on stderr and in the exit code.
    pub fn load(&self) -> Result<FleetSpec, ExitCode> {
        super::plan::load_spec(&self.path, self.strict, self.runtime_values.as_deref())
    }

    /// The spec's path as retry commands name it.
    pub fn shown(&self) -> String {
        self.path.display().to_string()
    }
}

/// Which of the spec's targets a command touches (fleet-engine §7.1).
#[derive(Debug, Clone, Default, Args)]
pub struct SelectionArgs {
    /// Only these projects (keys or display names, comma-separated).
    #[arg(long, value_name = "CSV")]
    pub only_projects: Option<String>,
    /// Only these clusters (names, comma-separated), in every selected project.
    #[arg(long, value_name = "CSV")]
    pub only_clusters: Option<String>,
}

impl SelectionArgs {
    /// The names each selector gives, or why one names nothing.
    pub fn names(&self) -> Result<(Vec<String>, Vec<String>), SelectError> {
        super::lifecycle::selectors(self.only_projects.as_deref(), self.only_clusters.as_deref())
    }

    /// Whether either selector was given.
    pub fn any(&self) -> bool {
        self.only_projects.is_some() || self.only_clusters.is_some()
    }
}
