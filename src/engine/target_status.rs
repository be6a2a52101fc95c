//! The target status vocabulary (fleet-engine §6.3): what deploy, destroy and status report for
//! a target. The inventory keeps it as text; the engine reads and writes it through this type.

use serde::Serialize;

/// One target's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetStatus {
    /// Being applied; a run that stops midway leaves it so.
    Provisioning,
    Deployed,
    Error,
    Destroyed,
    /// Teardown left resources behind; the record stays so a retry finds them.
    DestroyIncomplete,
    /// Selected for destroy, but the inventory records nothing of it.
    Absent,
    /// Nothing recorded, or a record without a status.
    Unknown,
    /// The live read failed, or contradicts the record.
    StatusError,
    /// A status the inventory holds that this version does not name; shown as it is.
    Other(String),
}

/// Statuses that do not count as failures (fleet-engine §6.3 `_recount`).
pub const NOT_FAILED: &[TargetStatus] = &[
    TargetStatus::Deployed,
    TargetStatus::Destroyed,
    TargetStatus::Absent,
];

impl TargetStatus {
    const NAMED: [TargetStatus; 8] = [
        TargetStatus::Provisioning,
        TargetStatus::Deployed,
        TargetStatus::Error,
        TargetStatus::Destroyed,
        TargetStatus::DestroyIncomplete,
        TargetStatus::Absent,
        TargetStatus::Unknown,
        TargetStatus::StatusError,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            TargetStatus::Provisioning => "provisioning",
            TargetStatus::Deployed => "deployed",
            TargetStatus::Error => "error",
            TargetStatus::Destroyed => "destroyed",
            TargetStatus::DestroyIncomplete => "destroy-incomplete",
            TargetStatus::Absent => "absent",
            TargetStatus::Unknown => "unknown",
            TargetStatus::StatusError => "status-error",
            TargetStatus::Other(text) => text,
        }
    }

    /// An inventory record's status: empty reads as unknown, and any other text reads back to
    /// exactly itself.
    pub fn from_record(text: &str) -> TargetStatus {
        if text.is_empty() {
            return TargetStatus::Unknown;
        }
        Self::NAMED
            .into_iter()
            .find(|s| s.as_str() == text)
            .unwrap_or_else(|| TargetStatus::Other(text.to_string()))
    }

    pub fn is_failure(&self) -> bool {
        !NOT_FAILED.contains(self)
    }
}

impl std::fmt::Display for TargetStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

// As its text: the JSON of results and the inventory's column stay what they were.
impl Serialize for TargetStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl From<TargetStatus> for String {
    fn from(status: TargetStatus) -> String {
        match status {
            TargetStatus::Other(text) => text,
            named => named.as_str().to_string(),
        }
    }
}

impl PartialEq<str> for TargetStatus {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TargetStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_text_reads_back_to_itself() {
        for status in TargetStatus::NAMED {
            let text = String::from(status.clone());
            assert_eq!(TargetStatus::from_record(&text), status);
            assert_eq!(serde_json::to_value(&status).unwrap(), text.as_str());
        }
        let other = TargetStatus::from_record("paused");
        assert_eq!(other, TargetStatus::Other("paused".into()));
        assert_eq!(String::from(other), "paused");
        assert_eq!(TargetStatus::from_record(""), TargetStatus::Unknown);
    }

    #[test]
    fn only_deployed_destroyed_and_absent_are_not_failures() {
        let failures: Vec<&str> = TargetStatus::NAMED
            .iter()
            .filter(|s| s.is_failure())
            .map(TargetStatus::as_str)
            .collect();
        assert_eq!(
            failures,
            [
                "provisioning",
                "error",
                "destroy-incomplete",
                "unknown",
                "status-error"
            ]
        );
    }
}
