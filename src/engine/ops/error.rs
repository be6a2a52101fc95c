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
    /// The engine's own rules (the message names spec keys only).
    Engine,
    /// The inventory store.
    Store,
    /// The cloud, with its status code.
    Cloud(tonic::Code),
}

impl EngineError {
    /// An error of the engine's own rules.
    pub fn new(message: impl Into<String>) -> Self {
        EngineError {
            message: message.into(),
            source: ErrorSource::Engine,
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
        EngineError::new(e.to_string())
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
            PreflightError::Demand(_) => EngineError::new(e.to_string()),
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
