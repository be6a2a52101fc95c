//! The library's promise: load a fleet, then plan, preflight, deploy, check status, verify and
//! destroy it against a cloud, getting back the same typed reports the CLI prints.
//!
//! Two types carry it: [`Fleet`], a validated spec, and [`Session`], a cloud (Nebius, or the
//! simulator) with the inventory fleetbot keeps for it. Every operation is a method of
//! [`Fleet`] taking the session and its options, as the seed's SDK did
//! (`deploy(spec)`, `destroy`, `plan`, `status`, `verify_storage`, `verify_graphics`).

#![deny(missing_docs)]

pub mod apply;
pub mod backend;
pub mod connect;
pub mod guard;
pub mod live;
pub mod resident;
mod session;
pub mod static_plan;

pub use backend::Deploying;
pub use connect::{CloudChoice, SessionOptions};
pub use session::{Inventory, Session, SessionError};

use std::path::Path;
use std::sync::Arc;

use crate::engine::live::LivePlan;
use crate::engine::ops::EngineError;

// The lifecycle's words, as the engine has them: what a caller passes and gets back.
pub use crate::engine::ops::{
    DeployResult, DestroyResult, ErrorSource, Event, LifecycleOptions, Outcome, Progress, Refusal,
    SelectError, StatusResult, TargetStatus, quiet, select,
};
use crate::engine::{FleetPlan, PlanOptions};
use crate::quota::budget::PreflightReport;
use crate::quota::scope::Selection;
use crate::runtime::RuntimeValues;
use crate::spec::{FleetSpec, SpecError};
use crate::verify::graphics_report::GraphicsReport;
use crate::verify::options::KindSettings;
use crate::verify::storage_report::StorageReport;
use crate::verify::{GraphicsOptions, StorageOptions, VerifyError};

/// Why a library call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The spec (or the runtime values) does not read or validate; it names file, line and
    /// field.
    #[error("invalid fleet spec: {0}")]
    Spec(#[from] SpecError),
    /// No cloud could be chosen or reached (credentials, the simulator and its state).
    #[error("cloud: {0}")]
    Connect(#[from] connect::ConnectError),
    /// The inventory could not be opened or used.
    #[error("inventory: {0}")]
    Store(#[from] crate::store::StoreError),
    /// The session lacks what the operation needs (a tenant, a probe image).
    #[error("{0}")]
    Session(#[from] SessionError),
    /// The engine refused or failed before a result could be reported (a selector naming
    /// nothing, a live plan with problems, a quota shortfall, …). Per-target failures are
    /// not errors: they are in the result, with `failed > 0`.
    #[error("{0}")]
    Engine(#[from] EngineError),
    /// A verification could not run at all.
    #[error("verification: {0}")]
    Verify(#[from] VerifyError),
}

/// Which targets an operation acts on, and how; [`Options::default`] is the whole fleet, as
/// the CLI's defaults are.
#[derive(Clone)]
pub struct Options {
    /// Only these projects (keys or display names); empty: all.
    pub only_projects: Vec<String>,
    /// Only these clusters (names), in every selected project; empty: all.
    pub only_clusters: Vec<String>,
    /// Overrides the spec's `project_prefix` (empty: the spec's).
    pub project_prefix: String,
    /// Targets applied or verified at once (at least 1).
    pub concurrency: usize,
    /// Stop at the first failed target (default: keep going).
    pub fail_fast: bool,
    /// Check quota and capacity before the first mutation (default: true).
    pub preflight: bool,
    /// Also delete the targets fleetbot deployed for this fleet that the spec no longer
    /// declares (only with no selector), as `deploy --prune` does.
    pub prune: bool,
    /// Also apply what deletes, replaces or shrinks inside a target (a node group or an
    /// add-on deleted, a filesystem detached, a pool shrunk, a bucket cap lowered), as
    /// `deploy --allow-destroy` does; without it such a deploy is refused before any
    /// mutation (default: false).
    pub allow_destroy: bool,
    /// Per-target time limit.
    pub timeout: std::time::Duration,
    /// One line per step (`a/cluster: creating node group …`); default: none.
    pub progress: Progress,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            only_projects: Vec::new(),
            only_clusters: Vec::new(),
            project_prefix: String::new(),
            concurrency: 1,
            fail_fast: false,
            preflight: true,
            prune: false,
            allow_destroy: false,
            timeout: std::time::Duration::from_secs(120 * 60),
            progress: Arc::new(|_| {}),
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("only_projects", &self.only_projects)
            .field("only_clusters", &self.only_clusters)
            .field("project_prefix", &self.project_prefix)
            .field("concurrency", &self.concurrency)
            .field("fail_fast", &self.fail_fast)
            .field("preflight", &self.preflight)
            .field("prune", &self.prune)
            .field("allow_destroy", &self.allow_destroy)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Only these projects (keys or display names).
    pub fn only_projects<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Options {
        self.only_projects = keys.into_iter().map(Into::into).collect();
        self
    }

    /// Only these clusters, in every selected project.
    pub fn only_clusters<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        names: I,
    ) -> Options {
        self.only_clusters = names.into_iter().map(Into::into).collect();
        self
    }

    /// Calls `f` with each progress event (its `Display` is the CLI's line for it).
    pub fn progress(mut self, f: impl Fn(&Event) + Send + Sync + 'static) -> Options {
        self.progress = Arc::new(f);
        self
    }

    fn lifecycle(&self, spec: &FleetSpec) -> LifecycleOptions {
        LifecycleOptions {
            only_projects: self.only_projects.clone(),
            only_clusters: self.only_clusters.clone(),
            project_prefix: self.project_prefix.clone(),
            profile: spec.profile.clone(),
            concurrency: self.concurrency.max(1),
            continue_on_error: !self.fail_fast,
            create_projects: true,
            preflight: self.preflight,
            timeout: self.timeout,
            // Only the spec's own key: a library caller's home directory is not the fleet's.
            ssh_public_key: spec.ssh_public_key.trim().to_string(),
            spec_path: spec.source.clone(),
            prune: self.prune,
            // What it may destroy is its approval's (`fleet::apply::Approved`), given on the plan.
            ..LifecycleOptions::default()
        }
    }

    fn prefix<'a>(&'a self, spec: &'a FleetSpec) -> &'a str {
        if self.project_prefix.is_empty() {
            &spec.project_prefix
        } else {
            &self.project_prefix
        }
    }
}

/// A fleet spec, read and validated: what every operation works from.
#[derive(Debug, Clone, PartialEq)]
pub struct Fleet {
    spec: FleetSpec,
}

/// A small fleet for the examples: one project, one CPU-only cluster.
#[doc(hidden)]
pub const EXAMPLE_SPEC: &str = "apiVersion: npa.fleet/v0.0.1\nname: docs\nregion: eu-north1\nproject_prefix: docs-\ndefaults:\n  cpu_nodes: {count: 1, platform: cpu-d3, preset: 4vcpu-16gb}\n  gpu_nodes: null\n  enable_filestore: false\nprojects:\n  - name: a\n";

impl Fleet {
    /// Reads and validates a spec file (`-` is standard input).
    ///
    /// ```
    /// let fleet = fleetbot::Fleet::load("fixtures/specs/fleet1-test.yaml").unwrap();
    /// assert_eq!(fleet.name(), "fleet1-test");
    /// let e = fleetbot::Fleet::load("fixtures/specs/absent.yaml").unwrap_err();
    /// assert!(e.to_string().starts_with("invalid fleet spec: fixtures/specs/absent.yaml: cannot read file"));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Fleet, Error> {
        Fleet::load_with(path, None)
    }

    /// [`Fleet::load`] with the operator's runtime values filled into the spec's placeholders
    /// (docs/spec.md, "Runtime values").
    ///
    /// ```
    /// use fleetbot::{Fleet, RuntimeValues};
    /// let values = RuntimeValues::load("fixtures/runtime/embedded-default.yaml".as_ref()).unwrap();
    /// let fleet = Fleet::load_with("fixtures/specs/rtxpro-mig.yaml", Some(&values)).unwrap();
    /// // The public name stays; the binding is used only for cloud calls.
    /// assert_eq!(fleet.spec().projects[0].project_id, "project-REPLACE_AT_RUNTIME");
    /// ```
    pub fn load_with(
        path: impl AsRef<Path>,
        runtime: Option<&RuntimeValues>,
    ) -> Result<Fleet, Error> {
        Ok(Fleet {
            spec: crate::runtime::load_with(path.as_ref(), runtime)?,
        })
    }

    /// Reads and validates a spec held in memory; `file` names it in errors.
    ///
    /// ```
    /// let e = fleetbot::Fleet::from_yaml("apiVersion: npa.fleet/v0.0.1\nname: x\nprojects: 3\n", "x.yaml")
    ///     .unwrap_err();
    /// assert_eq!(e.to_string(), "invalid fleet spec: x.yaml:3:11: projects: projects must be a non-empty list");
    /// ```
    pub fn from_yaml(text: &str, file: &str) -> Result<Fleet, Error> {
        Ok(Fleet {
            spec: crate::spec::load_str(text, file)?,
        })
    }

    /// The fleet's `name`.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The whole spec model (projects, clusters, pools, defaults merged).
    pub fn spec(&self) -> &FleetSpec {
        &self.spec
    }

    /// The static plan, touching no cloud: the projects to create or reuse and every cluster's
    /// resolved shape (`fleetbot plan`, with the same JSON keys).
    ///
    /// ```
    /// let fleet = fleetbot::Fleet::load("fixtures/specs/fleet1-test.yaml").unwrap();
    /// let plan = fleet.plan();
    /// assert_eq!(plan.projects.len(), 2);
    /// assert!(plan.render_text().contains("fleet1-test-a"));
    /// ```
    pub fn plan(&self) -> FleetPlan {
        crate::engine::plan(&self.spec, &PlanOptions::default())
    }

    /// The live plan: what deploying would create, change or leave, read from the cloud and
    /// the inventory (`fleetbot plan --live`). Reads only.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// let plan = fleet.plan_live(&session, &fleetbot::Options::default()).await?;
    /// assert!(plan.changes_anything());
    /// assert!(!plan.has_problems(), "{:?}", plan.problems());
    /// # Ok(()) }
    /// ```
    pub async fn plan_live(&self, session: &Session, options: &Options) -> Result<LivePlan, Error> {
        let tenant = session.tenant_for(&self.spec)?;
        let prepared = crate::engine::ops::prepare(
            &session.cloud,
            &session.inventory,
            &self.spec,
            &tenant,
            &options.lifecycle(&self.spec),
        )
        .await?;
        Ok(prepared.plan)
    }

    /// The quota preflight: what the selected targets need against the tenant's allowances
    /// and capacity blocks, read live, with targets the live plan proves unchanged adding
    /// nothing (`fleetbot preflight`). [`PreflightReport::fits`] says whether it fits.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// let report = fleet.preflight(&session, &fleetbot::Options::default()).await?;
    /// assert!(report.fits());
    /// # Ok(()) }
    /// ```
    pub async fn preflight(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<PreflightReport, Error> {
        let plan = self.plan_live(session, options).await?;
        let tenant = session.tenant_for(&self.spec)?;
        let progress = options.progress.clone();
        let mut on_line = move |line: &str| progress(&Event::note(line));
        crate::engine::preflight::live_preflight(
            &session.cloud,
            &self.spec,
            &tenant,
            Selection {
                projects: options.only_projects.clone(),
                clusters: options.only_clusters.clone(),
            },
            options.prefix(&self.spec),
            &plan,
            &mut on_line,
        )
        .await
        .map_err(|e| Error::Engine(EngineError::from(e)))
    }

    /// Creates and converges the selected targets (`fleetbot deploy --yes`): live plan and
    /// preflight first, nothing mutated if either refuses; idempotent and restart-safe. A plan
    /// that deletes, replaces or shrinks inside a target is refused unless
    /// [`Options::allow_destroy`] is set, as `--yes` refuses it without `--allow-destroy`.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// let result = fleet.deploy(&session, &fleetbot::Options::default()).await?;
    /// assert_eq!((result.deployed, result.failed), (1, 0));
    /// // Again: nothing to change.
    /// let again = fleet.deploy(&session, &fleetbot::Options::default()).await?;
    /// assert!(!again.changed);
    /// # Ok(()) }
    /// ```
    pub async fn deploy(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<DeployResult, Error> {
        let tenant = session.tenant_for(&self.spec)?;
        Ok(apply::plan_and_apply(
            session,
            &self.spec,
            &tenant,
            &options.lifecycle(&self.spec),
            apply::Approved::ByPerson {
                allow_destroy: options.allow_destroy,
            },
            options.progress.clone(),
        )
        .await?)
    }

    /// Every target's recorded and live state (`fleetbot status`);
    /// [`StatusResult::healthy`] is what decides the CLI's exit code.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// assert!(!fleet.status(&session).await?.healthy(), "nothing is deployed yet");
    /// fleet.deploy(&session, &fleetbot::Options::default()).await?;
    /// let status = fleet.status(&session).await?;
    /// assert!(status.healthy());
    /// assert_eq!(status.clusters[0].nodes_ready, 1);
    /// # Ok(()) }
    /// ```
    pub async fn status(&self, session: &Session) -> Result<StatusResult, Error> {
        Ok(crate::engine::ops::status(&session.cloud, &session.inventory, &self.spec).await?)
    }

    /// Tears down the selected targets the inventory records (`fleetbot destroy --yes`): node
    /// groups, cluster, GPU cluster and filesystem, each by exact ID after its ownership is
    /// proven. Projects and buckets are kept.
    ///
    /// ```
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let session = fleetbot::Session::simulator(dir.path()).await?;
    /// let fleet = fleetbot::Fleet::from_yaml(fleetbot::fleet::EXAMPLE_SPEC, "docs.yaml")?;
    /// fleet.deploy(&session, &fleetbot::Options::default()).await?;
    /// let result = fleet.destroy(&session, &fleetbot::Options::default()).await?;
    /// assert_eq!(result.failed, 0);
    /// assert_eq!(result.clusters[0].status, fleetbot::TargetStatus::Destroyed);
    /// # Ok(()) }
    /// ```
    pub async fn destroy(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<DestroyResult, Error> {
        Ok(apply::destroy(
            session,
            &self.spec,
            &options.lifecycle(&self.spec),
            options.progress.clone(),
        )
        .await?)
    }

    /// Proves every selected target's shared filesystem on every worker with the probe
    /// (`fleetbot verify-storage`). The report is publication-safe; the session needs a
    /// probe image. A report whose `passed` is false is a result, not an error.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// let options = fleetbot::SessionOptions::default(); // the CLI fills these from its environment
    /// let session = fleetbot::Session::connect(&options)
    ///     .await?
    ///     .with_probe_image("registry.example/fleetbot-probe@sha256:…");
    /// let fleet = fleetbot::Fleet::load("fleet.yaml")?;
    /// let report = fleet.verify_storage(&session, &fleetbot::Options::default()).await?;
    /// println!("{}", report.render_text());
    /// # Ok(()) }
    /// ```
    pub async fn verify_storage(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<StorageReport, Error> {
        let verify: StorageOptions = self.verify_options(session, options)?;
        let (_never, interrupt) = tokio::sync::watch::channel(false);
        let run = session
            .verify_storage(&self.spec, &verify, options.progress.clone(), interrupt)
            .await?;
        Ok(run.report)
    }

    /// Proves CUDA, GLX, EGL and Vulkan on every GPU worker of the selected RTX rendering
    /// targets (`fleetbot verify-graphics`). The report is publication-safe; the session needs
    /// a probe image.
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), fleetbot::Error> {
    /// let options = fleetbot::SessionOptions::default(); // the CLI fills these from its environment
    /// let session = fleetbot::Session::connect(&options)
    ///     .await?
    ///     .with_probe_image("registry.example/fleetbot-probe@sha256:…");
    /// let fleet = fleetbot::Fleet::load("fleet.yaml")?;
    /// let report = fleet.verify_graphics(&session, &fleetbot::Options::default()).await?;
    /// assert!(report.passed);
    /// # Ok(()) }
    /// ```
    pub async fn verify_graphics(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<GraphicsReport, Error> {
        let verify: GraphicsOptions = self.verify_options(session, options)?;
        let (_never, interrupt) = tokio::sync::watch::channel(false);
        let run = session
            .verify_graphics(&self.spec, &verify, options.progress.clone(), interrupt)
            .await?;
        Ok(run.report)
    }

    /// The options of a verification of kind `K` over what `options` selects.
    fn verify_options<K: KindSettings>(
        &self,
        session: &Session,
        options: &Options,
    ) -> Result<crate::verify::Options<K>, Error> {
        let mut verify = crate::verify::Options::<K>::new(session.probe_image()?);
        verify.only_projects = options.only_projects.clone();
        verify.only_clusters = options.only_clusters.clone();
        verify.project_prefix = options.prefix(&self.spec).to_string();
        verify.tenant = Some(session.tenant_for(&self.spec)?);
        verify.concurrency = options.concurrency.max(1);
        verify.evidence_dir = session.evidence_dir().map(Into::into);
        Ok(verify)
    }
}
