//! The MIG probe's evidence document (`fleetbot.probe.mig/v1`) and its strict parsing: every
//! GPU the driver reports with its MIG mode and GPU instances, and the CUDA vectorAdd run on
//! each MIG slice, one process per slice. Every field is present and none unknown; a profile
//! is `<n>g.<m>gb`; a slice result belongs to a listed instance, and every instance of an
//! enabled GPU has exactly one; so a garbled or half-written document never reads as a
//! working layout.

use serde::{Deserialize, Serialize};

use super::evidence::{EvidenceError, document};
use super::graphics_evidence::{VectorAdd, check_header, tidy_errors};

pub const MIG_SCHEMA: &str = "fleetbot.probe.mig/v1";
/// The most GPUs, and MIG instances per GPU, one document may list (a GPU has at most 7).
const MAX_GPUS: usize = 16;
const MAX_INSTANCES: usize = 7;

/// A GPU's MIG mode as NVML reports it (`nvmlDeviceGetMigMode`'s current mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MigMode {
    Enabled,
    Disabled,
    /// The GPU has no MIG, or NVML could not say.
    Unsupported,
}

impl MigMode {
    /// As the verification report writes it.
    pub fn as_report(self) -> &'static str {
        match self {
            MigMode::Enabled => "Enabled",
            MigMode::Disabled => "Disabled",
            MigMode::Unsupported => "Unsupported",
        }
    }
}

/// One physical GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigGpu {
    pub index: u32,
    pub mig_mode: MigMode,
    /// Its GPU instances' profiles (`1g.24gb`), in NVML's order; the UUIDs stay on the node.
    pub instances: Vec<String>,
}

/// vectorAdd on one MIG slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceSmoke {
    pub gpu_index: u32,
    /// The slice's place among its GPU's instances.
    pub instance: u32,
    pub profile: String,
    pub vectoradd: VectorAdd,
}

/// What one MIG worker proves about its layout from inside a pod that holds all its slices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigEvidence {
    pub schema: String,
    pub node_name: String,
    pub boot_id: String,
    /// NVML's driver version (`580.173.02`); empty when NVML could not be loaded.
    pub driver_version: String,
    pub gpus: Vec<MigGpu>,
    pub slices: Vec<SliceSmoke>,
    pub errors: Vec<String>,
}

/// Whether a profile reads as NVML names one: `1g.24gb`, `2g.48gb`, `1g.24gb+me`.
pub fn plausible_profile(text: &str) -> bool {
    let core = text.strip_suffix("+me").unwrap_or(text);
    let Some((g, rest)) = core.split_once("g.") else {
        return false;
    };
    let Some(gb) = rest.strip_suffix("gb") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.len() <= 3 && s.bytes().all(|b| b.is_ascii_digit());
    digits(g) && digits(gb)
}

pub fn parse_mig(output: &str) -> Result<MigEvidence, EvidenceError> {
    let e: MigEvidence = serde_json::from_str(document(output)?)
        .map_err(|e| EvidenceError::Malformed(e.to_string()))?;
    check_header(
        &e.schema,
        MIG_SCHEMA,
        &e.node_name,
        &e.boot_id,
        &e.driver_version,
    )?;
    let indexes_ascend = e.gpus.windows(2).all(|w| w[0].index < w[1].index);
    if e.gpus.len() > MAX_GPUS || !indexes_ascend {
        return Err(EvidenceError::Invalid("gpus"));
    }
    for gpu in &e.gpus {
        let listed_when_enabled = gpu.mig_mode == MigMode::Enabled || gpu.instances.is_empty();
        if gpu.instances.len() > MAX_INSTANCES
            || !listed_when_enabled
            || !gpu.instances.iter().all(|p| plausible_profile(p))
        {
            return Err(EvidenceError::Invalid("instances"));
        }
    }
    // Exactly one result per listed instance, in order, naming that instance's profile.
    let expected: Vec<(u32, u32, &str)> = e
        .gpus
        .iter()
        .flat_map(|g| {
            g.instances
                .iter()
                .enumerate()
                .map(move |(i, p)| (g.index, i as u32, p.as_str()))
        })
        .collect();
    let found: Vec<(u32, u32, &str)> = e
        .slices
        .iter()
        .map(|s| (s.gpu_index, s.instance, s.profile.as_str()))
        .collect();
    if expected != found {
        return Err(EvidenceError::Invalid("slices"));
    }
    if !tidy_errors(&e.errors) {
        return Err(EvidenceError::Invalid("errors"));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn balanced() -> MigEvidence {
        let instances = vec!["1g.24gb".into(), "1g.24gb".into(), "2g.48gb".into()];
        MigEvidence {
            schema: MIG_SCHEMA.into(),
            node_name: "n1".into(),
            boot_id: "b".into(),
            driver_version: "580.173.02".into(),
            slices: instances
                .iter()
                .enumerate()
                .map(|(i, p): (usize, &String)| SliceSmoke {
                    gpu_index: 0,
                    instance: i as u32,
                    profile: p.clone(),
                    vectoradd: VectorAdd::Passed,
                })
                .collect(),
            gpus: vec![MigGpu {
                index: 0,
                mig_mode: MigMode::Enabled,
                instances,
            }],
            errors: Vec::new(),
        }
    }

    #[test]
    fn a_whole_document_parses_and_anything_less_is_refused() {
        let text = serde_json::to_string(&balanced()).unwrap();
        assert!(text.contains("\"mig_mode\":\"enabled\""));
        assert_eq!(parse_mig(&format!("note\n{text}\n")).unwrap(), balanced());
        for field in [
            "schema",
            "node_name",
            "boot_id",
            "driver_version",
            "gpus",
            "slices",
            "errors",
        ] {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v.as_object_mut().unwrap().remove(field);
            assert!(
                matches!(parse_mig(&v.to_string()), Err(EvidenceError::Malformed(_))),
                "{field} may not be left out"
            );
        }
        assert!(matches!(
            parse_mig(&text.replace(MIG_SCHEMA, "fleetbot.probe.mig/v2")),
            Err(EvidenceError::Schema { .. })
        ));
        assert!(parse_mig(&text.replacen('{', "{\"ready\":true,", 1)).is_err());
        assert!(parse_mig(&text.replace("\"enabled\"", "\"on\"")).is_err());
    }

    #[test]
    fn every_instance_has_exactly_its_one_slice_result() {
        type Fault = Box<dyn Fn(&mut MigEvidence)>;
        let cases: Vec<(Fault, &str)> = vec![
            (Box::new(|e| drop(e.slices.pop())), "slices"),
            (
                Box::new(|e| e.slices[1].profile = "2g.48gb".into()),
                "slices",
            ),
            (Box::new(|e| e.slices.swap(0, 2)), "slices"),
            (Box::new(|e| e.slices[0].gpu_index = 1), "slices"),
            (
                Box::new(|e| e.gpus[0].instances[0] = "big".into()),
                "instances",
            ),
            (
                Box::new(|e| e.gpus[0].mig_mode = MigMode::Disabled),
                "instances",
            ),
            (Box::new(|e| e.errors.push("a\nb".into())), "errors"),
            (
                Box::new(|e| e.driver_version = "v580".into()),
                "driver_version",
            ),
            (
                Box::new(|e| {
                    let again = e.gpus[0].clone();
                    e.gpus.push(again);
                }),
                "gpus",
            ),
        ];
        for (fault, field) in cases {
            let mut e = balanced();
            fault(&mut e);
            assert_eq!(
                parse_mig(&serde_json::to_string(&e).unwrap()),
                Err(EvidenceError::Invalid(field))
            );
        }
        let mut off = balanced();
        off.gpus[0].mig_mode = MigMode::Disabled;
        off.gpus[0].instances.clear();
        off.slices.clear();
        assert!(parse_mig(&serde_json::to_string(&off).unwrap()).is_ok());
    }

    #[test]
    fn profiles_are_nvml_names() {
        for good in ["1g.24gb", "2g.48gb", "1g.24gb+me", "7g.192gb"] {
            assert!(plausible_profile(good), "{good}");
        }
        for bad in [
            "", "1g", "g.24gb", "1g.gb", "1g.24GB", "1g.24gb ", "x1g.24gb",
        ] {
            assert!(!plausible_profile(bad), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_output_never_panics(text in ".{0,400}") {
            let _ = parse_mig(&text);
        }
    }
}
