//! `fleetbot probe`: the program a verification pod runs on a worker. It prints one evidence
//! document on stdout and exits 0 whenever it could run at all: the verdict is the verifier's,
//! from the evidence, never the probe's exit code.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::probe::graphics::GraphicsProbe;
use crate::probe::mig::MigProbe;
use crate::probe::storage::{HostProbe, PathsProbe, SharedProbe};

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(subcommand)]
    pub probe: Probe,
}

#[derive(Debug, Subcommand)]
pub enum Probe {
    /// Shared-filesystem evidence from one worker.
    #[command(subcommand)]
    Storage(StorageProbe),
    /// One GPU worker's NVIDIA stack: CUDA vectorAdd on every device, GLX, EGL and Vulkan.
    Graphics {
        /// The node's name (the downward API's `spec.nodeName`).
        #[arg(long, env = "NODE_NAME")]
        node_name: String,
        #[arg(long, default_value = "/host/proc/sys/kernel/random/boot_id")]
        boot_id: PathBuf,
        /// The NVIDIA kernel module's version file; the CUDA driver API's version is used
        /// when it cannot be read.
        #[arg(long, default_value = "/proc/driver/nvidia/version")]
        driver_version_file: PathBuf,
    },
    /// One MIG worker's layout (NVML) and vectorAdd on each of its slices.
    Mig {
        #[arg(long, env = "NODE_NAME")]
        node_name: String,
        #[arg(long, default_value = "/host/proc/sys/kernel/random/boot_id")]
        boot_id: PathBuf,
    },
    /// vectorAdd on the devices this process sees (the MIG probe runs it once per slice).
    #[command(hide = true)]
    Cuda,
}

#[derive(Debug, Subcommand)]
pub enum StorageProbe {
    /// The worker's own mount: source, type, nofail, capacity, a payload, proven cleanup.
    Host {
        /// Where the shared filesystem is visible to the probe.
        #[arg(long, default_value = "/host-storage")]
        mount_dir: PathBuf,
        /// The host's mount point of it, as mountinfo and fstab name it.
        #[arg(long)]
        mount_point: String,
        /// The expected mount source (the filesystem's mount tag).
        #[arg(long)]
        source: String,
        #[arg(long, default_value = "/host/proc/1/mountinfo")]
        mountinfo: PathBuf,
        #[arg(long, default_value = "/host/etc/fstab")]
        fstab: PathBuf,
        #[arg(long, default_value = "/host/proc/sys/kernel/random/boot_id")]
        boot_id: PathBuf,
        #[arg(long)]
        requested_bytes: u64,
        /// The node's name (the downward API's `spec.nodeName`).
        #[arg(long, env = "NODE_NAME")]
        node_name: String,
        #[arg(long)]
        run_id: String,
    },
    /// The shared volume: write this worker's payload, read every worker's.
    Shared {
        #[arg(long, default_value = "/shared")]
        dir: PathBuf,
        #[arg(long, env = "NODE_NAME")]
        node_name: String,
        #[arg(long)]
        node_index: usize,
        #[arg(long)]
        nodes: usize,
        #[arg(long)]
        run_id: String,
        /// Seconds to wait for the other workers' payloads.
        #[arg(long, default_value_t = 120)]
        wait_seconds: u64,
    },
    /// Named paths on the shared filesystem: one directory's files, and proven absences.
    Paths {
        #[arg(long, default_value = "/host-storage")]
        root: PathBuf,
        #[arg(long, env = "NODE_NAME")]
        node_name: String,
        /// A directory (relative to the root) whose files to list with their checksums.
        #[arg(long)]
        list: Option<String>,
        /// A path (relative to the root) whose absence to prove; repeatable.
        #[arg(long)]
        absent: Vec<String>,
    },
}

pub fn run(args: ProbeArgs) -> ExitCode {
    let storage = match args.probe {
        Probe::Storage(storage) => storage,
        Probe::Mig { node_name, boot_id } => {
            return print(serde_json::to_string(
                &MigProbe { node_name, boot_id }.run(),
            ));
        }
        Probe::Cuda => return print(serde_json::to_string(&crate::probe::mig::slice_run())),
        Probe::Graphics {
            node_name,
            boot_id,
            driver_version_file,
        } => {
            return print(serde_json::to_string(
                &GraphicsProbe {
                    node_name,
                    boot_id,
                    driver_version_file,
                }
                .run(),
            ));
        }
    };
    let evidence = match storage {
        StorageProbe::Host {
            mount_dir,
            mount_point,
            source,
            mountinfo,
            fstab,
            boot_id,
            requested_bytes,
            node_name,
            run_id,
        } => serde_json::to_string(
            &HostProbe {
                mount_dir,
                mount_point,
                expected_source: source,
                mountinfo,
                fstab,
                boot_id,
                requested_bytes,
                node_name,
                run_id,
            }
            .run(),
        ),
        StorageProbe::Shared {
            dir,
            node_name,
            node_index,
            nodes,
            run_id,
            wait_seconds,
        } => serde_json::to_string(
            &SharedProbe {
                dir,
                node_name,
                node_index,
                nodes,
                run_id,
                wait: Duration::from_secs(wait_seconds),
            }
            .run(),
        ),
        StorageProbe::Paths {
            root,
            node_name,
            list,
            absent,
        } => serde_json::to_string(
            &PathsProbe {
                root,
                node_name,
                list,
                absent,
            }
            .run(),
        ),
    };
    print(evidence)
}

/// Prints the one evidence document; exit 0 whenever there was one to print.
fn print(evidence: serde_json::Result<String>) -> ExitCode {
    match evidence {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("fleetbot probe: {e}");
            ExitCode::FAILURE
        }
    }
}
