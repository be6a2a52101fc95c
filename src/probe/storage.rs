//! The storage probe's two phases, with real system calls: the host phase proves one
//! worker's mount of the shared filesystem (mount source and type, `nofail`, capacity via
//! `statvfs`, a unique payload written, read back and deleted, and its absence proven with
//! `statx(AT_STATX_FORCE_SYNC)` so a cached dentry cannot pass for a fresh look); the shared
//! phase proves that every worker sees every other worker's payload on one RWX volume.

use std::ffi::CString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::evidence::{
    HOST_SCHEMA, HostEvidence, PATHS_SCHEMA, PathState, PathsEvidence, SHARED_SCHEMA,
    SharedEvidence,
};
use super::mounts::{find_fstab, find_mount};

/// Where the host phase looks.
#[derive(Debug, Clone)]
pub struct HostProbe {
    /// Where the shared filesystem is visible to the probe (`/host-storage` in the pod).
    pub mount_dir: PathBuf,
    /// The host's mount point of it (`filestore_mount_path`), as mountinfo and fstab name it.
    pub mount_point: String,
    /// The expected mount source (the filesystem's mount tag).
    pub expected_source: String,
    /// The host's `mountinfo` (`/host/proc/1/mountinfo`: the host's PID 1 under `hostPID`).
    pub mountinfo: PathBuf,
    pub fstab: PathBuf,
    /// The host's boot ID (`/host/proc/sys/kernel/random/boot_id`).
    pub boot_id: PathBuf,
    pub requested_bytes: u64,
    pub node_name: String,
    /// Names the probe directory, so runs never collide and cleanup can prove its own paths.
    pub run_id: String,
}

/// The host phase's directory for one worker, relative to the filesystem's root. One per
/// worker, not per run: every worker's host phase runs at once on the same shared filesystem,
/// and a directory they shared was made by one and refused to the others (`O_EXCL`), or taken
/// away under them, so a healthy cluster failed its check.
pub fn host_probe_dir(run_id: &str, node_name: &str) -> String {
    format!(".fleetbot-probe-{run_id}-{node_name}")
}

fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// `statvfs` of a directory: (blocks × fragment size, fragment size).
pub fn capacity(dir: &Path) -> std::io::Result<(u64, u64)> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))?;
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `s` a writable statvfs.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fragment = s.f_frsize as u64;
    Ok((s.f_blocks as u64 * fragment, fragment))
}

/// Whether `path` is absent, asking the filesystem rather than the dentry cache:
/// `Ok(true)` only for ENOENT from `statx(AT_STATX_FORCE_SYNC)`.
pub fn absent_forced(path: &Path) -> std::io::Result<bool> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::other("a path with a NUL byte"))?;
    let mut buf: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: valid path and a writable statx buffer.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_STATX_FORCE_SYNC | libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_BASIC_STATS,
            &mut buf,
        )
    };
    if rc == 0 {
        return Ok(false);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENOENT) => Ok(true),
        _ => Err(err),
    }
}

/// A payload no other worker or run can have: random bytes bound to the run and node.
fn payload(run_id: &str, node: &str) -> Vec<u8> {
    let mut out = format!("fleetbot storage probe {run_id} {node}\n").into_bytes();
    out.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    out.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    out
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Writes `bytes` to a file that must not exist yet, and makes it durable.
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

fn read_all(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    std::fs::File::open(path)?.read_to_end(&mut out)?;
    Ok(out)
}

impl HostProbe {
    /// Runs the host phase. IO failures show in the evidence (a false field, an empty
    /// checksum refused by the verifier), never as a pass.
    pub fn run(&self) -> HostEvidence {
        let mount = find_mount(&read_text(&self.mountinfo), &self.mount_point);
        let fstab = find_fstab(&read_text(&self.fstab), &self.mount_point);
        let (capacity_bytes, fragment_size) = capacity(&self.mount_dir).unwrap_or((0, 0));
        let dir = self
            .mount_dir
            .join(host_probe_dir(&self.run_id, &self.node_name));
        let file = dir.join(format!("{}.bin", self.node_name));
        let bytes = payload(&self.run_id, &self.node_name);
        let written = std::fs::create_dir(&dir)
            .and_then(|()| write_new(&file, &bytes))
            .is_ok();
        let read_back = written && read_all(&file).is_ok_and(|b| b == bytes);
        let removed = std::fs::remove_file(&file).is_ok() && std::fs::remove_dir(&dir).is_ok();
        let probe_deleted = removed
            && absent_forced(&file).unwrap_or(false)
            && absent_forced(&dir).unwrap_or(false);
        HostEvidence {
            schema: HOST_SCHEMA.into(),
            node_name: self.node_name.clone(),
            boot_id: read_text(&self.boot_id).trim().to_string(),
            filesystem_type: mount
                .as_ref()
                .map(|m| m.filesystem_type.clone())
                .unwrap_or_default(),
            source_matches: mount
                .as_ref()
                .is_some_and(|m| m.source == self.expected_source),
            read_write: mount.as_ref().is_some_and(|m| m.read_write()),
            nofail: fstab.is_some_and(|e| e.options.iter().any(|o| o == "nofail")),
            requested_bytes: self.requested_bytes,
            capacity_bytes,
            fragment_size,
            payload_sha256: if read_back {
                sha256(&bytes)
            } else {
                String::new()
            },
            read_back,
            probe_deleted,
        }
    }
}

/// The shared phase on one worker.
#[derive(Debug, Clone)]
pub struct SharedProbe {
    /// The RWX volume's mount in the pod.
    pub dir: PathBuf,
    pub node_name: String,
    pub node_index: usize,
    pub nodes: usize,
    pub run_id: String,
    /// How long to wait for the other workers' payloads.
    pub wait: Duration,
}

impl SharedProbe {
    pub fn run(&self) -> SharedEvidence {
        let name = |i: usize| self.dir.join(format!("fleetbot-{}-{i}.bin", self.run_id));
        let bytes = payload(&self.run_id, &self.node_name);
        let own = if write_new(&name(self.node_index), &bytes).is_ok() {
            sha256(&bytes)
        } else {
            String::new()
        };
        let started = Instant::now();
        let mut verified = std::collections::BTreeMap::new();
        while verified.len() < self.nodes && started.elapsed() < self.wait {
            for i in 0..self.nodes {
                if verified.contains_key(&i) {
                    continue;
                }
                // A payload counts once it is complete: its writer syncs before it exits,
                // and a reader only takes a file whose size stopped changing.
                if let Ok(first) = read_all(&name(i))
                    && !first.is_empty()
                    && read_all(&name(i)).is_ok_and(|again| again == first)
                {
                    verified.insert(i, sha256(&first));
                }
            }
            if verified.len() < self.nodes {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        SharedEvidence {
            schema: SHARED_SCHEMA.into(),
            node_name: self.node_name.clone(),
            node_index: self.node_index,
            payload_sha256: own,
            read_count: verified.len(),
            verified_checksums: verified,
        }
    }
}

/// Paths on the shared filesystem the verifier asks about: one directory's files and their
/// checksums (a volume's backing directory), and paths that must be gone after cleanup.
#[derive(Debug, Clone)]
pub struct PathsProbe {
    /// The filesystem's root as the probe sees it (`/host-storage`).
    pub root: PathBuf,
    pub node_name: String,
    /// A directory, relative to `root`, whose files to list.
    pub list: Option<String>,
    /// Paths, relative to `root`, whose absence to prove.
    pub absent: Vec<String>,
}

impl PathsProbe {
    pub fn run(&self) -> PathsEvidence {
        // A relative path with `..` could look outside the filesystem: it proves nothing.
        let inside = |rel: &str| {
            let rel = Path::new(rel);
            (rel.is_relative()
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_))))
            .then(|| self.root.join(rel))
        };
        let listed = self.list.as_deref().and_then(inside).and_then(|dir| {
            let mut files = std::collections::BTreeMap::new();
            for entry in std::fs::read_dir(dir).ok()? {
                let entry = entry.ok()?;
                let name = entry.file_name().to_string_lossy().into_owned();
                files.insert(name, sha256(&read_all(&entry.path()).ok()?));
            }
            Some(files)
        });
        let absent = self
            .absent
            .iter()
            .map(|rel| {
                let state = match inside(rel).map(|p| absent_forced(&p)) {
                    Some(Ok(true)) => PathState::Absent,
                    Some(Ok(false)) => PathState::Present,
                    _ => PathState::Unverified,
                };
                (rel.clone(), state)
            })
            .collect();
        PathsEvidence {
            schema: PATHS_SCHEMA.into(),
            node_name: self.node_name.clone(),
            listed,
            absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_dirs(root: &Path, fs_line: &str, fstab_line: &str) -> HostProbe {
        let storage = root.join("storage");
        std::fs::create_dir_all(&storage).unwrap();
        std::fs::create_dir_all(root.join("proc/1")).unwrap();
        std::fs::write(root.join("proc/1/mountinfo"), fs_line).unwrap();
        std::fs::write(root.join("fstab"), fstab_line).unwrap();
        std::fs::write(root.join("boot_id"), "6a4f\n").unwrap();
        HostProbe {
            mount_dir: storage,
            mount_point: "/mnt/data".into(),
            expected_source: "data".into(),
            mountinfo: root.join("proc/1/mountinfo"),
            fstab: root.join("fstab"),
            boot_id: root.join("boot_id"),
            requested_bytes: 1 << 30,
            node_name: "n1".into(),
            run_id: "r1".into(),
        }
    }

    /// A read-write virtiofs mount with `nofail`: the host a worker should have.
    fn healthy_host(root: &Path) -> HostProbe {
        host_dirs(
            root,
            "96 22 0:48 / /mnt/data rw,relatime - virtiofs data rw\n",
            "data /mnt/data virtiofs defaults,nofail 0 2\n",
        )
    }

    #[test]
    fn the_paths_probe_lists_a_directory_and_proves_absence_only_inside_its_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/v1")).unwrap();
        std::fs::write(dir.path().join("data/v1/a.bin"), b"a").unwrap();
        std::fs::write(dir.path().join("left"), b"x").unwrap();
        let probe = PathsProbe {
            root: dir.path().to_path_buf(),
            node_name: "n1".into(),
            list: Some("data/v1".into()),
            absent: vec!["left".into(), "gone".into(), "../gone".into()],
        };
        let e = probe.run();
        assert_eq!(
            e.listed.unwrap(),
            [("a.bin".to_string(), sha256(b"a"))].into()
        );
        assert_eq!(
            e.absent,
            [
                ("left".to_string(), PathState::Present),
                ("gone".to_string(), PathState::Absent),
                ("../gone".to_string(), PathState::Unverified)
            ]
            .into()
        );
        let missing = PathsProbe {
            list: Some("data/v2".into()),
            ..probe
        };
        assert_eq!(missing.run().listed, None);
    }

    #[test]
    fn the_host_phase_does_real_io_and_proves_its_path_gone() {
        let dir = tempfile::tempdir().unwrap();
        let probe = healthy_host(dir.path());
        let e = probe.run();
        assert_eq!(e.filesystem_type, "virtiofs");
        assert!(e.source_matches && e.read_write && e.nofail && e.read_back && e.probe_deleted);
        assert_eq!(e.payload_sha256.len(), 64);
        assert!(e.capacity_bytes > 0 && e.fragment_size > 0);
        assert_eq!(e.boot_id, "6a4f");
        assert_eq!(std::fs::read_dir(&probe.mount_dir).unwrap().count(), 0);
        // Serialized, it is what the verifier's strict parser accepts.
        let text = serde_json::to_string(&e).unwrap();
        assert_eq!(crate::probe::parse_host(&text).unwrap(), e);
    }

    #[test]
    fn a_read_only_mount_without_nofail_and_a_leftover_path_show_in_the_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let probe = host_dirs(
            dir.path(),
            "96 22 0:48 / /mnt/data ro,relatime - virtiofs other rw\n",
            "data /mnt/data virtiofs defaults 0 2\n",
        );
        // A directory of this run and worker is in the way: nothing is overwritten.
        std::fs::create_dir(probe.mount_dir.join(".fleetbot-probe-r1-n1")).unwrap();
        let e = probe.run();
        assert!(!e.source_matches && !e.read_write && !e.nofail);
        assert!(!e.read_back && e.payload_sha256.is_empty());
        assert!(absent_forced(&dir.path().join("nothing-here")).unwrap());
        assert!(!absent_forced(dir.path()).unwrap());
    }

    #[test]
    fn workers_probing_one_shared_filesystem_at_once_do_not_get_in_each_others_way() {
        let dir = tempfile::tempdir().unwrap();
        let one = healthy_host(dir.path());
        let other = HostProbe {
            node_name: "n2".into(),
            ..one.clone()
        };
        // The other worker is in the middle of its host phase on the same filesystem.
        let theirs = one.mount_dir.join(host_probe_dir("r1", "n2"));
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("n2.bin"), b"in flight").unwrap();
        let e = one.run();
        assert!(e.read_back && e.probe_deleted, "{e:?}");
        assert_eq!(std::fs::read(theirs.join("n2.bin")).unwrap(), b"in flight");
        std::fs::remove_dir_all(&theirs).unwrap();
        let e = other.run();
        assert!(e.read_back && e.probe_deleted, "{e:?}");
    }

    #[test]
    fn every_worker_reads_every_payload_on_the_shared_volume() {
        let dir = tempfile::tempdir().unwrap();
        let probes: Vec<SharedProbe> = (0..3)
            .map(|i| SharedProbe {
                dir: dir.path().to_path_buf(),
                node_name: format!("n{i}"),
                node_index: i,
                nodes: 3,
                run_id: "r".into(),
                wait: Duration::from_secs(5),
            })
            .collect();
        let handles: Vec<_> = probes
            .into_iter()
            .map(|p| std::thread::spawn(move || p.run()))
            .collect();
        let evidence: Vec<SharedEvidence> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let own: std::collections::BTreeMap<usize, String> = evidence
            .iter()
            .map(|e| (e.node_index, e.payload_sha256.clone()))
            .collect();
        for e in &evidence {
            assert_eq!(e.read_count, 3);
            assert_eq!(e.verified_checksums, own);
        }
        // A worker alone never sees the others: its evidence says so.
        let lonely = SharedProbe {
            dir: tempfile::tempdir().unwrap().path().to_path_buf(),
            node_name: "x".into(),
            node_index: 0,
            nodes: 2,
            run_id: "q".into(),
            wait: Duration::from_millis(200),
        };
        let _ = std::fs::create_dir_all(&lonely.dir);
        assert_eq!(lonely.run().read_count, 1);
    }
}
