//! The dashboard's typed view: what the page and `/api/dashboard` show, already sanitized
//! (no cloud ID, token or tenant ID is a field of it; free text has been through the privacy
//! scanner), so a renderer can only show what is safe to show.

use serde::Serialize;

/// Everything the page shows, gathered from the store (and the cloud's quota, when one is
/// configured) at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DashboardView {
    /// Unix ms the view was gathered.
    pub generated_at: i64,
    /// Which kind of store it was read from (`SQLite`, `PostgreSQL`); never its location.
    pub store: String,
    /// Fleet specs per repository, as merge-to-deploy recorded them.
    pub repositories: Vec<RepositoryView>,
    /// What fleetbot created, per fleet (by the spec's `name`).
    pub fleets: Vec<FleetView>,
    /// Apply leases held now.
    pub locks: Vec<LockView>,
    /// The newest jobs.
    pub jobs: Vec<JobView>,
    /// Quota per tenant and region; `None` when no quota source is configured.
    pub quota: Option<QuotaView>,
    /// What could not be read, in words (a part of the store, the cloud's quota).
    pub problems: Vec<String>,
}

/// One repository and the fleet specs the store knows of in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RepositoryView {
    /// `owner/name`, lowercased.
    pub name: String,
    pub specs: Vec<SpecView>,
}

/// One fleet spec of a repository: its last apply, its last review, and how the two compare.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpecView {
    /// The spec's path in the repository.
    pub path: String,
    pub last_apply: Option<ApplyView>,
    pub last_review: Option<ReviewView>,
    /// The reviewed plan against the last apply (see [`ReviewState`]).
    pub review_state: ReviewState,
    /// [`ReviewState::label`], for readers of the JSON.
    pub review_label: String,
}

/// How the newest reviewed plan of a spec compares with its last apply. The store records
/// no drift of its own; this is what it does know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewState {
    /// The last apply applied the newest reviewed plan.
    Applied,
    /// A plan was reviewed after the last apply (or never applied): merging applies it.
    Pending,
    /// Applied, and no reviewed plan is on record (an `/apply` of a head, or pruned records).
    NoReview,
    /// The last apply applied another plan than the newest review, which is older than it
    /// (an approved or re-planned apply).
    Differs,
    /// Neither is on record.
    #[default]
    Unknown,
}

impl ReviewState {
    /// Words for the page.
    pub fn label(self) -> &'static str {
        match self {
            ReviewState::Applied => "applied as reviewed",
            ReviewState::Pending => "reviewed, not applied yet",
            ReviewState::NoReview => "applied, no review on record",
            ReviewState::Differs => "applied a plan other than the last review",
            ReviewState::Unknown => "nothing on record",
        }
    }
}

/// The last apply of a spec, from the audit log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ApplyView {
    /// Unix ms.
    pub at: i64,
    /// The apply's conclusion (`success`, `failure`, `neutral`, …).
    pub outcome: String,
    /// What asked for it (`apply (merge)`, `apply (command)`, …).
    pub action: String,
    pub pr: u64,
    /// The applied commit, shortened.
    pub sha: String,
    pub actor: String,
    /// The applied plan's digest, shortened, when the apply run recorded one.
    pub digest: String,
}

/// The newest plan reviewed for a spec on a pull request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReviewView {
    /// Unix ms.
    pub at: i64,
    pub pr: u64,
    /// The reviewed head, shortened.
    pub sha: String,
    /// The plan's digest, shortened.
    pub digest: String,
    /// How many lines the plan's summary has (its changes), when it could be read.
    pub changes: usize,
    /// How many deletions it holds.
    pub deletions: usize,
}

/// One fleet in the inventory.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FleetView {
    /// The spec's `name`.
    pub name: String,
    /// Who holds the fleet's apply lease now, if anyone.
    pub locked_by: Option<String>,
    pub clusters: Vec<ClusterView>,
}

/// One target: its state and its last recorded change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClusterView {
    /// The spec's project key.
    pub project: String,
    pub cluster: String,
    pub backend: String,
    /// The inventory's status (`deployed`, `error`, `destroy-incomplete`, …).
    pub state: String,
    pub region: String,
    /// The tenant as a digest (never its ID): the same one the apply lease keys carry.
    pub tenant: String,
    pub profile: String,
    /// Add-ons fleetbot installed in it.
    pub addons: Vec<String>,
    /// The desired-state digest last applied in full, shortened; empty before one was.
    pub applied_digest: String,
    /// Unix ms of the record's last change.
    pub updated_at: i64,
    /// The last error, sanitized; empty when none.
    pub error: String,
}

/// A held apply lease.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LockView {
    /// The fleet's name: leases are per fleet, whichever file declares it.
    pub fleet: String,
    /// The repository of the apply holding it.
    pub repository: String,
    /// The tenant's digest.
    pub tenant: String,
    /// What holds it (`#12 at abc1234 (merge)`).
    pub holder: String,
    /// Unix ms it runs out unless renewed.
    pub expires_at: i64,
}

/// One job of the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobView {
    pub id: String,
    pub kind: String,
    pub event: String,
    /// `queued`, `running`, `done` or `failed`.
    pub state: String,
    pub attempts: u32,
    /// `owner/name#number` when the job is about one pull request.
    pub pull_request: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms; 0 while running or queued.
    pub finished_at: i64,
    /// The last error, sanitized.
    pub error: String,
}

/// Quota as the cloud reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QuotaView {
    /// The source, in public words (`Nebius`, `the fleetbot simulator`).
    pub source: String,
    pub tenants: Vec<TenantQuota>,
    /// When the source answered (unix ms).
    pub read_at: i64,
    /// The source did not answer this time: these are the figures of its last answer.
    pub stale: bool,
}

/// One tenant's quotas, per region.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TenantQuota {
    /// The tenant's digest.
    pub tenant: String,
    pub regions: Vec<RegionQuota>,
    /// Why this tenant's quota could not be read, if it could not.
    pub error: String,
}

/// One region's finite quotas.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RegionQuota {
    pub region: String,
    /// Something is used, requested or unreadable here: shown open. A region with nothing in
    /// use is folded away, so the regions a fleet lives in come first.
    pub in_use: bool,
    pub bars: Vec<QuotaBar>,
    /// Quotas without a limit here (not drawn).
    pub unlimited: usize,
    /// Quotas whose records preflight could not use either (not drawn).
    pub unreadable: usize,
}

/// One quota: used against its limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QuotaBar {
    /// The quota's name (`compute.instance.gpu.h100`).
    pub name: String,
    pub used: u64,
    pub limit: u64,
    /// Both in the quota's unit (binary units for bytes).
    pub used_text: String,
    pub limit_text: String,
    /// `used / limit` in percent, 0 to 100 (a limit of 0 reads as full when anything is used).
    pub percent: f64,
    /// [`level`] of `percent`: `ok`, `high` (70 % or more) or `full` (90 % or more).
    pub level: String,
    /// What open pull requests would take on top if merged (their latest reviewed plans), in
    /// the quota's unit; 0 when none asks for it.
    pub requested: u64,
    pub requested_text: String,
    /// The requested part of the bar, in percent of the limit (at most what is left of it).
    pub requested_percent: f64,
    /// Open pull requests together would take more than is left.
    pub requested_over: bool,
    /// How many open pull requests ask for this quota.
    pub requested_by: usize,
}

/// A bar's colour class: how close the quota is to its limit.
pub fn level(percent: f64) -> &'static str {
    if percent >= 90.0 {
        "full"
    } else if percent >= 70.0 {
        "high"
    } else {
        "ok"
    }
}
