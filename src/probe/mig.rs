//! The MIG probe: what one MIG worker's layout is and whether each slice computes, from inside
//! a pod that holds all of the node's slices. NVML lists each GPU's MIG mode and instances
//! (`nvml.rs`); then vectorAdd runs on every slice in a child process of its own, selected by
//! `CUDA_VISIBLE_DEVICES=<MIG UUID>`, because a CUDA process sees at most one MIG instance.
//! The UUIDs stay on the node; the evidence names slices by GPU and position.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cuda;
use super::graphics_evidence::{MAX_ERRORS, VectorAdd, error_line};
use super::mig_evidence::{MIG_SCHEMA, MigEvidence, MigGpu, SliceSmoke};
use super::nvml;

/// How long one slice's vectorAdd may take, JIT included.
const SLICE_TIMEOUT: Duration = Duration::from_secs(120);

/// What `fleetbot probe cuda` prints: the vectorAdd of the one device it can see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceRun {
    pub vectoradd: VectorAdd,
    pub devices: u32,
    pub passed_devices: u32,
    pub errors: Vec<String>,
}

/// `fleetbot probe cuda`: vectorAdd on whatever devices this process sees.
pub fn slice_run() -> SliceRun {
    let o = cuda::vector_add();
    SliceRun {
        vectoradd: o.vectoradd,
        devices: o.devices,
        passed_devices: o.passed_devices,
        errors: o.errors,
    }
}

#[derive(Debug, Clone)]
pub struct MigProbe {
    pub node_name: String,
    pub boot_id: PathBuf,
}

impl MigProbe {
    pub fn run(&self) -> MigEvidence {
        let inventory = nvml::inventory();
        let mut errors = inventory.errors.clone();
        let mut slices = Vec::new();
        for gpu in &inventory.gpus {
            for (i, instance) in gpu.instances.iter().enumerate() {
                let vectoradd = match smoke_in_child(&instance.uuid) {
                    Ok(run) if run.vectoradd == VectorAdd::Passed && run.devices == 1 => {
                        VectorAdd::Passed
                    }
                    Ok(run) => {
                        errors.extend(
                            run.errors
                                .iter()
                                .map(|e| error_line(&format!("GPU {} slice {i}: {e}", gpu.index))),
                        );
                        if run.devices != 1 {
                            errors.push(format!(
                                "GPU {} slice {i}: CUDA saw {} devices, not 1",
                                gpu.index, run.devices
                            ));
                        }
                        if run.vectoradd == VectorAdd::Unavailable {
                            VectorAdd::Unavailable
                        } else {
                            VectorAdd::Failed
                        }
                    }
                    Err(e) => {
                        errors.push(error_line(&format!("GPU {} slice {i}: {e}", gpu.index)));
                        VectorAdd::Failed
                    }
                };
                slices.push(SliceSmoke {
                    gpu_index: gpu.index,
                    instance: i as u32,
                    profile: instance.profile.clone(),
                    vectoradd,
                });
            }
        }
        errors.truncate(MAX_ERRORS);
        MigEvidence {
            schema: MIG_SCHEMA.into(),
            node_name: self.node_name.clone(),
            boot_id: std::fs::read_to_string(&self.boot_id)
                .map(|t| t.trim().to_string())
                .unwrap_or_default(),
            driver_version: inventory.driver_version,
            gpus: inventory
                .gpus
                .into_iter()
                .map(|g| MigGpu {
                    index: g.index,
                    mig_mode: g.mig_mode,
                    instances: g.instances.into_iter().map(|i| i.profile).collect(),
                })
                .collect(),
            slices,
            errors,
        }
    }
}

/// Runs `fleetbot probe cuda` on one slice and reads what it printed.
fn smoke_in_child(uuid: &str) -> Result<SliceRun, String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating the probe: {e}"))?;
    let mut child = Command::new(exe)
        .args(["probe", "cuda"])
        .env("CUDA_VISIBLE_DEVICES", uuid)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting the slice's vectorAdd: {e}"))?;
    let began = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if began.elapsed() > SLICE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "vectorAdd did not finish in {}s",
                    SLICE_TIMEOUT.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for the slice's vectorAdd: {e}")),
        }
    }
    let mut text = String::new();
    child
        .stdout
        .take()
        .ok_or("the slice's vectorAdd printed nothing")?
        .take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|e| format!("reading the slice's vectorAdd: {e}"))?;
    serde_json::from_str(text.trim()).map_err(|_| "the slice's vectorAdd printed no result".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{MigMode, parse_mig};
    use std::path::Path;

    fn probe(dir: &Path) -> MigProbe {
        let boot_id = dir.join("boot_id");
        std::fs::write(&boot_id, "7b1c-boot\n").unwrap();
        MigProbe {
            node_name: "node-a".into(),
            boot_id,
        }
    }

    /// Without NVIDIA's driver (this machine, CI's) the probe still prints a document the
    /// verifier accepts, with no GPU in it and the missing library said.
    #[test]
    fn without_a_gpu_the_mig_probe_lists_nothing_and_says_why() {
        if Path::new("/dev/nvidiactl").exists() {
            eprintln!("skipped: an NVIDIA GPU is present");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let e = probe(dir.path()).run();
        assert!(e.gpus.is_empty() && e.slices.is_empty());
        assert_eq!(
            (e.boot_id.as_str(), e.driver_version.as_str()),
            ("7b1c-boot", "")
        );
        assert!(
            e.errors
                .iter()
                .any(|l| l.starts_with("libnvidia-ml.so.1: ")),
            "{:?}",
            e.errors
        );
        assert_eq!(parse_mig(&serde_json::to_string(&e).unwrap()).unwrap(), e);
    }

    /// Needs a real NVIDIA GPU and its NVML: ignored by default, run by
    /// `scripts/gpu-check.sh` on a GPU machine, and a failure anywhere else. A GPU without MIG
    /// lists no instances (and runs no slice); one in MIG mode must pass vectorAdd on every
    /// slice.
    #[test]
    #[ignore = "needs an NVIDIA GPU: scripts/gpu-check.sh runs it"]
    fn on_a_real_gpu_nvml_lists_every_gpu_and_its_mig_state() {
        assert!(
            Path::new("/dev/nvidiactl").exists(),
            "no NVIDIA GPU here (/dev/nvidiactl): run it on a GPU machine, scripts/gpu-check.sh"
        );
        let dir = tempfile::tempdir().unwrap();
        let inventory = nvml::inventory();
        eprintln!("{inventory:?}");
        assert!(!inventory.gpus.is_empty(), "{:?}", inventory.errors);
        assert!(!inventory.driver_version.is_empty());
        if inventory
            .gpus
            .iter()
            .all(|g| g.mig_mode != MigMode::Enabled)
        {
            // Slices run in `fleetbot probe cuda` children, which the test binary is not.
            let e = probe(dir.path()).run();
            assert!(e.slices.is_empty());
            assert!(parse_mig(&serde_json::to_string(&e).unwrap()).is_ok());
        }
    }
}
