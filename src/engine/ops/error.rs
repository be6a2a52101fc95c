//! Why a lifecycle command stopped: the engine's refusals and the store's and cloud's failures,
//! each keeping where it came from so a pull-request comment can name it without its text.

/// Why a lifecycle command stopped before (or instead of) acting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// For the operator: may name resources, IDs and the store's location.
    pub message: String,
    pub source: ErrorSource,
}

/// Where an [`EngineError`] came from, for output that must not carry its text (a pull-request
/// comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorSource {
    /// The engine's own rules, naming which refused (the message names spec keys only).
    Engine(Refusal),
    /// The inventory store.
    Store,
    /// The cloud, with its status code.
    Cloud(tonic::Code),
}

/// Which of the engine's rules refused, before anything was changed (or, for
/// [`Refusal::TaskFailed`], before a target's result could be known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A selector names nothing the spec declares.
    Selection,
    /// The live plan has problems (a name taken, a version the cloud does not offer, …).
    PlanProblems,
    /// A project the spec names by ID does not exist.
    ProjectMissing,
    /// A project is missing and creating projects was not allowed.
    ProjectCreationDisabled,
    /// The plan deletes, replaces or shrinks what was not allowed or approved.
    Destructive,
    /// The quota preflight found a shortfall.
    Quota,
    /// The selection's demand cannot be computed (a region unresolved, …).
    Demand,
    /// The spec asks for platforms or presets its region does not offer.
    Catalogue,
    /// Soperator pieces that do not map to the Nebius API.
    Soperator,
    /// The inventory records a target of another backend than the spec selects.
    OtherBackend,
    /// A target's task ended without a result (it panicked or was cancelled).
    TaskFailed,
}

impl EngineError {
    /// A refusal of the engine's own rule `why`, worded for the operator.
    pub fn refused(why: Refusal, message: impl Into<String>) -> Self {
        EngineError {
            message: message.into(),
            source: ErrorSource::Engine(why),
        }
    }

    /// A cloud call the engine needed failed: the cloud's code travels with the operator's
    /// words, so a pull request is told the code and never the cloud's text.
    pub fn cloud(e: &crate::cloud::CloudError, message: impl Into<String>) -> Self {
        EngineError {
            message: message.into(),
            source: ErrorSource::Cloud(e.code),
        }
    }

    /// Which rule refused, when it was the engine's own.
    pub fn refusal(&self) -> Option<Refusal> {
        match self.source {
            ErrorSource::Engine(why) => Some(why),
            _ => None,
        }
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EngineError {}

impl From<super::options::SelectError> for EngineError {
    fn from(e: super::options::SelectError) -> Self {
        EngineError::refused(Refusal::Selection, e.to_string())
    }
}

impl From<crate::store::StoreError> for EngineError {
    fn from(e: crate::store::StoreError) -> Self {
        EngineError {
            message: e.to_string(),
            source: ErrorSource::Store,
        }
    }
}

impl From<crate::engine::preflight::PreflightError> for EngineError {
    fn from(e: crate::engine::preflight::PreflightError) -> Self {
        use crate::engine::preflight::PreflightError;
        match &e {
            // The cloud's words stay the operator's: a pull request is told the code only.
            PreflightError::Evidence(cloud) => EngineError {
                message: e.to_string(),
                source: ErrorSource::Cloud(cloud.code),
            },
            PreflightError::Demand(_) => EngineError::refused(Refusal::Demand, e.to_string()),
        }
    }
}

impl From<crate::cloud::CloudError> for EngineError {
    fn from(e: crate::cloud::CloudError) -> Self {
        // A refused credential reads as one, whichever call met it first.
        let message = match e.code {
            tonic::Code::Unauthenticated => format!(
                "cloud: authentication failed ({e}): the credentials were refused; check NEBIUS_IAM_TOKEN or the profile's service-account key"
            ),
            _ => format!("cloud: {e}"),
        };
        EngineError {
            message,
            source: ErrorSource::Cloud(e.code),
        }
    }
}

/// Why one apply step failed. It shows exactly its cause's text, which is what the target's
/// record and result carry.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Cloud(#[from] crate::cloud::CloudError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// An add-on did not install or did not become ready; the message is fleetbot's own.
    #[error("{0}")]
    Addon(String),
    /// A resource exists but is not ready for use (object storage's read-back or probe).
    #[error("{0}")]
    Readiness(String),
}

impl ApplyError {
    /// Whether the cloud refused the step without acting on it.
    pub fn took_no_effect(&self) -> bool {
        matches!(self, ApplyError::Cloud(e) if e.took_no_effect())
    }
}
