//! A simulated shared filesystem of its real size: a tmpfs of the filesystem's byte size,
//! mounted inside a private user and mount namespace held open by one small process, and
//! reached by everyone else through that process's `/proc/<pid>/root`. So `statvfs` on a
//! simulated node reports what the cloud says the filesystem holds, and the storage probe's
//! capacity check is as real as its file IO, without root and without leaking a mount into
//! the machine's own namespace.
//!
//! Where unprivileged user namespaces are off, the filestore is a plain directory: file IO and
//! `statx` stay real, but `statvfs` then reports the machine's disk and the capacity check
//! fails, as it should when the capacity cannot be shown.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// One filesystem's data, as every node of its cluster sees it.
pub struct Filestore {
    /// Where its files are, from this process.
    path: PathBuf,
    /// The namespace's holder; it exits when its standard input closes (also when this
    /// process dies), and the tmpfs goes with it.
    holder: Option<Child>,
}

/// The holder: mount, say so, and wait for standard input to close.
const HOLDER: &str =
    "mount -t tmpfs -o size=\"$1\",mode=0755 fleetbot-filestore \"$2\" && echo ready && read -r _";

impl Filestore {
    /// A filestore of `size_bytes` at `dir` (an absolute path).
    pub fn create(dir: &Path, size_bytes: u64) -> std::io::Result<Filestore> {
        std::fs::create_dir_all(dir)?;
        let dir = std::path::absolute(dir)?;
        if size_bytes > 0
            && let Some((path, holder)) = mount_tmpfs(&dir, size_bytes)
        {
            return Ok(Filestore {
                path,
                holder: Some(holder),
            });
        }
        tracing::warn!(
            "the simulated filestore is a plain directory (no user namespace for a tmpfs): its capacity cannot be shown"
        );
        Ok(Filestore {
            path: dir,
            holder: None,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `statvfs` here reports the filesystem's own size.
    pub fn sized(&self) -> bool {
        self.holder.is_some()
    }
}

fn mount_tmpfs(dir: &Path, size_bytes: u64) -> Option<(PathBuf, Child)> {
    let mut child = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "--propagation",
            "private",
        ])
        .args(["sh", "-c", HOLDER, "sh"])
        .arg(size_bytes.to_string())
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    let ready = child
        .stdout
        .take()
        .map(BufReader::new)
        .is_some_and(|mut out| out.read_line(&mut line).is_ok() && line.trim() == "ready");
    if !ready {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let path =
        PathBuf::from(format!("/proc/{}/root", child.id())).join(dir.strip_prefix("/").ok()?);
    Some((path, child))
}

impl Drop for Filestore {
    fn drop(&mut self) {
        if let Some(mut holder) = self.holder.take() {
            drop(holder.stdin.take());
            let _ = holder.kill();
            let _ = holder.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filestore_reports_its_own_size_where_a_user_namespace_is_allowed() {
        let root = tempfile::tempdir().unwrap();
        let size = 64u64 << 30;
        let fs = Filestore::create(&root.path().join("fs"), size).unwrap();
        std::fs::write(fs.path().join("x"), b"shared").unwrap();
        assert_eq!(std::fs::read(fs.path().join("x")).unwrap(), b"shared");
        if !fs.sized() {
            eprintln!("skipped the size check: no unprivileged user namespace here");
            return;
        }
        let (capacity, fragment) = crate::probe::storage::capacity(fs.path()).unwrap();
        assert_eq!(capacity, size);
        assert!(fragment > 0);
        // The machine's own view of the directory is not the tmpfs.
        assert!(!root.path().join("fs/x").exists());
        let path = fs.path().to_path_buf();
        drop(fs);
        assert!(!path.exists(), "the namespace outlived its filestore");
    }
}
