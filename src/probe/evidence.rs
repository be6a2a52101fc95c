//! The evidence documents the probe prints, one JSON object on stdout, and their strict
//! parsing: a document that is not exactly one object of the expected schema, with every
//! field present and no field unknown, is refused, so a partial or garbled run can never
//! read as a pass.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const HOST_SCHEMA: &str = "fleetbot.probe.storage.host/v1";
pub const SHARED_SCHEMA: &str = "fleetbot.probe.storage.shared/v1";
pub const PATHS_SCHEMA: &str = "fleetbot.probe.storage.paths/v1";

/// What one worker proves about its own mount of the shared filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostEvidence {
    pub schema: String,
    /// The node the probe ran on (from the downward API), compared with the pod's pinning.
    pub node_name: String,
    /// The node's boot ID as its kernel reports it.
    pub boot_id: String,
    pub filesystem_type: String,
    /// The mount's source (for virtiofs, the mount tag) equals the expected one.
    pub source_matches: bool,
    pub read_write: bool,
    /// The boot-time fstab entry for the mount carries `nofail`.
    pub nofail: bool,
    pub requested_bytes: u64,
    /// `statvfs`: blocks × fragment size.
    pub capacity_bytes: u64,
    pub fragment_size: u64,
    /// SHA-256 of the unique payload written, read back byte-exact.
    pub payload_sha256: String,
    pub read_back: bool,
    /// The payload and its directory were deleted and `statx` with `AT_STATX_FORCE_SYNC`
    /// then found neither.
    pub probe_deleted: bool,
}

/// What one worker proves about the shared volume: the payload it wrote, and every payload
/// it read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedEvidence {
    pub schema: String,
    pub node_name: String,
    pub node_index: usize,
    /// SHA-256 of the payload this worker wrote.
    pub payload_sha256: String,
    /// Node index → SHA-256 of the payload read from it.
    pub verified_checksums: BTreeMap<usize, String>,
    pub read_count: usize,
}

/// What one worker sees of named paths on the shared filesystem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathsEvidence {
    pub schema: String,
    pub node_name: String,
    /// The listed directory's files → SHA-256 of each; `None` when it could not be read.
    pub listed: Option<BTreeMap<String, String>>,
    /// Each asked path → what `statx(AT_STATX_FORCE_SYNC)` found.
    pub absent: BTreeMap<String, PathState>,
}

/// A path as a forced `statx` finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// ENOENT from the filesystem itself.
    Absent,
    Present,
    /// Any other answer, or a path outside the filesystem: nothing proven.
    Unverified,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    #[error("the probe printed no evidence")]
    Missing,
    #[error("the probe's evidence is not one JSON document of the expected shape: {0}")]
    Malformed(String),
    #[error("the probe's evidence has schema {found:?}, not {expected:?}")]
    Schema {
        found: String,
        expected: &'static str,
    },
    #[error("the probe's evidence field {0} is out of range")]
    Invalid(&'static str),
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// The one document in the output: the last line that opens a JSON object, which must be the
/// whole document. A pod's log interleaves stdout and stderr, so a warning the container (its
/// runtime, its allocator) writes may land before or after the document; it is not evidence,
/// and the document is still held to its schema.
pub(crate) fn document(output: &str) -> Result<&str, EvidenceError> {
    let mut lines = output.lines().map(str::trim).filter(|l| !l.is_empty());
    let last = lines.clone().next_back().ok_or(EvidenceError::Missing)?;
    Ok(lines.rfind(|l| l.starts_with('{')).unwrap_or(last))
}

pub fn parse_host(output: &str) -> Result<HostEvidence, EvidenceError> {
    let e: HostEvidence = serde_json::from_str(document(output)?)
        .map_err(|e| EvidenceError::Malformed(e.to_string()))?;
    if e.schema != HOST_SCHEMA {
        return Err(EvidenceError::Schema {
            found: e.schema,
            expected: HOST_SCHEMA,
        });
    }
    if !is_sha256(&e.payload_sha256) {
        return Err(EvidenceError::Invalid("payload_sha256"));
    }
    if e.fragment_size == 0 {
        return Err(EvidenceError::Invalid("fragment_size"));
    }
    if e.node_name.is_empty() || e.boot_id.is_empty() {
        return Err(EvidenceError::Invalid("node_name"));
    }
    Ok(e)
}

pub fn parse_shared(output: &str) -> Result<SharedEvidence, EvidenceError> {
    let e: SharedEvidence = serde_json::from_str(document(output)?)
        .map_err(|e| EvidenceError::Malformed(e.to_string()))?;
    if e.schema != SHARED_SCHEMA {
        return Err(EvidenceError::Schema {
            found: e.schema,
            expected: SHARED_SCHEMA,
        });
    }
    if !is_sha256(&e.payload_sha256) || !e.verified_checksums.values().all(|c| is_sha256(c)) {
        return Err(EvidenceError::Invalid("checksum"));
    }
    if e.read_count != e.verified_checksums.len() {
        return Err(EvidenceError::Invalid("read_count"));
    }
    Ok(e)
}

pub fn parse_paths(output: &str) -> Result<PathsEvidence, EvidenceError> {
    let e: PathsEvidence = serde_json::from_str(document(output)?)
        .map_err(|e| EvidenceError::Malformed(e.to_string()))?;
    if e.schema != PATHS_SCHEMA {
        return Err(EvidenceError::Schema {
            found: e.schema,
            expected: PATHS_SCHEMA,
        });
    }
    if e.listed.iter().flatten().any(|(_, c)| !is_sha256(c)) {
        return Err(EvidenceError::Invalid("checksum"));
    }
    if e.node_name.is_empty() {
        return Err(EvidenceError::Invalid("node_name"));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn host() -> HostEvidence {
        HostEvidence {
            schema: HOST_SCHEMA.into(),
            node_name: "n1".into(),
            boot_id: "b".into(),
            filesystem_type: "virtiofs".into(),
            source_matches: true,
            read_write: true,
            nofail: true,
            requested_bytes: 1 << 30,
            capacity_bytes: 1 << 30,
            fragment_size: 4096,
            payload_sha256: "a".repeat(64),
            read_back: true,
            probe_deleted: true,
        }
    }

    #[test]
    fn a_whole_document_parses_and_anything_less_is_refused() {
        let text = serde_json::to_string(&host()).unwrap();
        assert_eq!(
            parse_host(&format!("warning: x\n{text}\n")).unwrap(),
            host()
        );
        // stderr interleaves with stdout in a pod's log: a warning after the document too.
        assert_eq!(
            parse_host(&format!("{text}\nwarning: late\n")).unwrap(),
            host()
        );
        assert!(matches!(
            parse_host("warning: only this\n"),
            Err(EvidenceError::Malformed(_))
        ));
        assert_eq!(parse_host(""), Err(EvidenceError::Missing));
        let missing = text.replace(",\"probe_deleted\":true", "");
        assert!(matches!(
            parse_host(&missing),
            Err(EvidenceError::Malformed(_))
        ));
        let extra = text.replace("{", "{\"passed\":true,");
        assert!(matches!(
            parse_host(&extra),
            Err(EvidenceError::Malformed(_))
        ));
        let other = text.replace(HOST_SCHEMA, SHARED_SCHEMA);
        assert!(matches!(
            parse_host(&other),
            Err(EvidenceError::Schema { .. })
        ));
        let short = text.replace(&"a".repeat(64), "abc");
        assert_eq!(
            parse_host(&short),
            Err(EvidenceError::Invalid("payload_sha256"))
        );
        // Two documents on one line are not one document.
        assert!(parse_host(&format!("{text}{text}")).is_err());
    }

    #[test]
    fn shared_evidence_must_count_what_it_read() {
        let e = SharedEvidence {
            schema: SHARED_SCHEMA.into(),
            node_name: "n".into(),
            node_index: 0,
            payload_sha256: "b".repeat(64),
            verified_checksums: [(0, "b".repeat(64)), (1, "c".repeat(64))].into(),
            read_count: 2,
        };
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(parse_shared(&text).unwrap(), e);
        let wrong = text.replace("\"read_count\":2", "\"read_count\":3");
        assert_eq!(
            parse_shared(&wrong),
            Err(EvidenceError::Invalid("read_count"))
        );
    }

    proptest! {
        #[test]
        fn any_output_is_parsed_or_refused_without_a_panic(text in "\\PC{0,600}") {
            let _ = parse_host(&text);
            let _ = parse_shared(&text);
            let _ = parse_paths(&text);
        }
    }
}
