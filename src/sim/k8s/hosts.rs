//! Each simulated node's host, as a pod with host access sees it: a directory per node holding
//! the files a real worker has (`/proc/1/mountinfo` listing its virtiofs mounts,
//! `/proc/sys/kernel/random/boot_id`, `/etc/fstab` as the node group's cloud-init wrote it),
//! and at each filesystem's mount path one directory shared by every node of the cluster that
//! attaches it. The kubelet maps a pod's `hostPath` volumes into this directory and rewrites
//! the container's arguments to match, so a probe reads and writes real files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One shared filesystem as a node mounts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMount {
    pub filesystem_id: String,
    /// The virtiofs mount tag.
    pub tag: String,
    /// Where cloud-init mounts it (`filestore_mount_path`).
    pub path: String,
    /// The fstab options cloud-init wrote (`defaults,nofail`).
    pub options: String,
    pub read_write: bool,
    /// The filesystem's size, which its simulated tmpfs has.
    pub size_bytes: u64,
}

/// What the cloud says of one node's host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    pub boot_id: String,
    pub mounts: Vec<HostMount>,
}

/// The `mounts:` entries of a cloud-config: `["tag", "/path", virtiofs, "opts", …]`.
pub fn cloud_init_mounts(cloud_init: &str) -> Vec<(String, String, String)> {
    let Ok(doc) = serde_yaml::from_str::<serde_yaml::Value>(cloud_init) else {
        return Vec::new();
    };
    doc.get("mounts")
        .and_then(|m| m.as_sequence())
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let e = entry.as_sequence()?;
            let s = |i: usize| e.get(i).and_then(|v| v.as_str()).map(str::to_string);
            (s(2).as_deref() == Some("virtiofs"))
                .then(|| Some((s(0)?, s(1)?, s(3).unwrap_or_else(|| "defaults".into()))))
                .flatten()
        })
        .collect()
}

/// The directory every node of `cluster` sees a filesystem at.
pub fn filesystem_dir(root: &Path, cluster: &str, filesystem_id: &str) -> PathBuf {
    root.join(cluster).join("filesystems").join(filesystem_id)
}

/// What a test can break on one simulated node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostFault {
    /// The shared filesystem is not mounted: its mount path is a plain directory of the
    /// node's root disk, and mountinfo does not list it.
    MountMissing,
    /// It is mounted read-only.
    MountReadOnly,
    /// The node's view of shared volumes is a directory of its own, so it cannot see what
    /// other nodes write there.
    SplitView,
    /// Its containers start and never finish.
    Stall,
    /// Its GPUs' Vulkan driver fails (the graphics probe says so).
    VulkanBroken,
    /// One of its MIG slices fails vectorAdd (the MIG probe says so).
    MigSliceBroken,
}

/// Writes a node's host files and links its mount paths to the shared filesystems, which
/// `shared` gives (making each the first time).
pub fn prepare(
    node_dir: &Path,
    facts: &HostFacts,
    fault: Option<HostFault>,
    shared: &mut dyn FnMut(&HostMount) -> std::io::Result<PathBuf>,
) -> std::io::Result<()> {
    let proc1 = node_dir.join("proc/1");
    std::fs::create_dir_all(&proc1)?;
    std::fs::create_dir_all(node_dir.join("proc/sys/kernel/random"))?;
    std::fs::create_dir_all(node_dir.join("etc"))?;
    put(
        &node_dir.join("proc/sys/kernel/random/boot_id"),
        &format!("{}\n", facts.boot_id),
    )?;
    let mut mountinfo = String::from("22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n");
    let mut fstab = String::from("LABEL=cloudimg-rootfs / ext4 discard,errors=remount-ro 0 1\n");
    for (i, m) in facts.mounts.iter().enumerate() {
        let at = node_dir.join(m.path.trim_start_matches('/'));
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let linked = std::fs::symlink_metadata(&at).is_ok_and(|md| md.file_type().is_symlink());
        if fault == Some(HostFault::MountMissing) {
            if linked {
                std::fs::remove_file(&at)?;
            }
            std::fs::create_dir_all(&at)?;
            continue;
        }
        let mode = if m.read_write && fault != Some(HostFault::MountReadOnly) {
            "rw"
        } else {
            "ro"
        };
        mountinfo.push_str(&format!(
            "{} 22 0:{} / {} {mode},relatime shared:{} - virtiofs {} rw\n",
            96 + i,
            48 + i,
            m.path,
            50 + i,
            m.tag
        ));
        fstab.push_str(&format!(
            "{} {} virtiofs {} 0 2\n",
            m.tag, m.path, m.options
        ));
        let shared = shared(m)?;
        // A link left by an earlier simulator process points at a namespace that is gone.
        let current = linked && std::fs::read_link(&at).is_ok_and(|to| to == shared);
        if !current {
            if linked {
                std::fs::remove_file(&at)?;
            } else if at.is_dir() {
                std::fs::remove_dir_all(&at)?;
            }
            #[cfg(unix)]
            std::os::unix::fs::symlink(&shared, &at)?;
        }
    }
    put(&proc1.join("mountinfo"), &mountinfo)?;
    put(&node_dir.join("etc/fstab"), &fstab)?;
    Ok(())
}

/// Writes a host file as a host's files change: never in place. A node is prepared again for
/// each pod it starts while its other pods may be reading these files, and a file truncated
/// and rewritten under a reader (which no kernel does to `/proc/1/mountinfo`) read as empty
/// or half. Unchanged, it is left alone; changed, the new text replaces it whole.
fn put(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == text.as_bytes()) {
        return Ok(());
    }
    let mut staged = path.as_os_str().to_owned();
    staged.push(".new");
    std::fs::write(&staged, text)?;
    std::fs::rename(&staged, path)
}

/// The pod's `hostPath` volumes, and the claim volumes resolved in `claims` (volume name →
/// where it is), mounted by a container: container path → path on this machine, longest
/// container path first (so `/host/proc` wins over `/host`).
pub fn host_mounts(
    container: &Value,
    pod: &Value,
    node_dir: &Path,
    claims: &HashMap<String, PathBuf>,
) -> Vec<(String, PathBuf)> {
    let volumes: HashMap<&str, PathBuf> = pod
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let name = v["name"].as_str()?;
            match v.pointer("/hostPath/path").and_then(Value::as_str) {
                Some(host) => Some((name, node_dir.join(host.trim_start_matches('/')))),
                None => claims.get(name).map(|p| (name, p.clone())),
            }
        })
        .collect();
    let mut out: Vec<(String, PathBuf)> = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let base = volumes.get(m["name"].as_str()?)?;
            let within = m["subPath"].as_str().unwrap_or("");
            let mut path = base.clone();
            if !within.is_empty() {
                path = path.join(within);
            }
            Some((
                m["mountPath"].as_str()?.trim_end_matches('/').to_string(),
                path,
            ))
        })
        .collect();
    out.sort_by_key(|(c, _)| std::cmp::Reverse(c.len()));
    out
}

/// An argument with a container path replaced by where it is on this machine.
pub fn rewrite(arg: &str, mounts: &[(String, PathBuf)]) -> String {
    for (container, host) in mounts {
        if let Some(rest) = arg.strip_prefix(container.as_str())
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("{}{rest}", host.display());
        }
        // `--flag=/path` forms.
        if let Some((flag, value)) = arg.split_once('=')
            && let Some(rest) = value.strip_prefix(container.as_str())
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("{flag}={}{rest}", host.display());
        }
    }
    arg.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cloud_init_mounts_are_read_and_host_files_written() {
        let ci = "#cloud-config\nbootcmd:\n  - [mkdir, -p, \"/mnt/data\"]\nmounts:\n  - [\"data\", \"/mnt/data\", virtiofs, \"defaults,nofail\", \"0\", \"2\"]\n";
        assert_eq!(
            cloud_init_mounts(ci),
            [("data".into(), "/mnt/data".into(), "defaults,nofail".into())]
        );
        let root = tempfile::tempdir().unwrap();
        let node = root.path().join("c/nodes/n1");
        let facts = HostFacts {
            boot_id: "b-1".into(),
            mounts: vec![HostMount {
                filesystem_id: "fs1".into(),
                tag: "data".into(),
                path: "/mnt/data".into(),
                options: "defaults,nofail".into(),
                read_write: true,
                size_bytes: 1 << 30,
            }],
        };
        let fs_dir = filesystem_dir(root.path(), "c", "fs1");
        let mut shared = |_: &HostMount| {
            std::fs::create_dir_all(&fs_dir)?;
            Ok(fs_dir.clone())
        };
        prepare(&node, &facts, None, &mut shared).unwrap();
        let info = std::fs::read_to_string(node.join("proc/1/mountinfo")).unwrap();
        let m = crate::probe::mounts::find_mount(&info, "/mnt/data").unwrap();
        assert_eq!(
            (m.filesystem_type.as_str(), m.source.as_str()),
            ("virtiofs", "data")
        );
        std::fs::write(node.join("mnt/data/x"), "shared").unwrap();
        assert_eq!(
            std::fs::read_to_string(filesystem_dir(root.path(), "c", "fs1").join("x")).unwrap(),
            "shared"
        );
        // Preparing again keeps what is there, and a reader of a host file is never shown it
        // rewritten under it: unchanged it is the same file, changed a whole new one.
        let info_path = node.join("proc/1/mountinfo");
        let mut reader = std::fs::File::open(&info_path).unwrap();
        prepare(&node, &facts, None, &mut shared).unwrap();
        assert!(node.join("mnt/data/x").exists());
        use std::os::unix::fs::MetadataExt;
        let inode = |p: &Path| std::fs::metadata(p).unwrap().ino();
        assert_eq!(reader.metadata().unwrap().ino(), inode(&info_path));
        // A missing mount leaves the node's own empty directory and no mountinfo line; once
        // mended, the node sees the filesystem again.
        prepare(&node, &facts, Some(HostFault::MountMissing), &mut shared).unwrap();
        let info = std::fs::read_to_string(node.join("proc/1/mountinfo")).unwrap();
        assert!(crate::probe::mounts::find_mount(&info, "/mnt/data").is_none());
        let mut before = String::new();
        std::io::Read::read_to_string(&mut reader, &mut before).unwrap();
        assert!(crate::probe::mounts::find_mount(&before, "/mnt/data").is_some());
        assert!(!node.join("mnt/data/x").exists());
        prepare(&node, &facts, Some(HostFault::MountReadOnly), &mut shared).unwrap();
        let info = std::fs::read_to_string(node.join("proc/1/mountinfo")).unwrap();
        assert!(
            !crate::probe::mounts::find_mount(&info, "/mnt/data")
                .unwrap()
                .read_write()
        );
        assert!(node.join("mnt/data/x").exists());
    }

    #[test]
    fn host_paths_map_into_the_node_and_arguments_follow() {
        let pod = json!({"spec": {"volumes": [
            {"name": "proc", "hostPath": {"path": "/proc"}},
            {"name": "storage", "hostPath": {"path": "/mnt/data"}},
        ]}});
        let container = json!({"volumeMounts": [
            {"name": "proc", "mountPath": "/host/proc"},
            {"name": "storage", "mountPath": "/host-storage"},
        ]});
        let mounts = host_mounts(&container, &pod, Path::new("/n"), &HashMap::new());
        assert_eq!(
            rewrite("/host/proc/1/mountinfo", &mounts),
            "/n/proc/1/mountinfo"
        );
        assert_eq!(
            rewrite("--mount-dir=/host-storage", &mounts),
            "--mount-dir=/n/mnt/data"
        );
        assert_eq!(rewrite("/host-storagex", &mounts), "/host-storagex");
        assert_eq!(rewrite("/mnt/data", &mounts), "/mnt/data");
    }
}
