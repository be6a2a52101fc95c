//! The two host files the storage probe reads to prove how the shared filesystem is mounted:
//! `/proc/<pid>/mountinfo` (source, type and options of the mount) and `/etc/fstab` (whether
//! the boot-time entry carries `nofail`). Both are untrusted input: every line is parsed
//! without panicking, and anything malformed is simply not a match.

/// One line of `mountinfo` (proc(5)): the fields the probe needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    pub mount_point: String,
    /// Per-mount options (`rw`, `ro`, `nosuid`, …).
    pub mount_options: Vec<String>,
    pub filesystem_type: String,
    /// For virtiofs, the mount tag.
    pub source: String,
    /// Per-superblock options.
    pub super_options: Vec<String>,
}

impl MountInfo {
    pub fn read_write(&self) -> bool {
        self.mount_options.iter().any(|o| o == "rw")
            && !self.super_options.iter().any(|o| o == "ro")
    }
}

/// `\040`-style octal escapes, as the kernel writes spaces, tabs, newlines and backslashes.
pub fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..=i + 3]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = (bytes[i + 1] - b'0') as u32 * 64
                + (bytes[i + 2] - b'0') as u32 * 8
                + (bytes[i + 3] - b'0') as u32;
            if let Ok(b) = u8::try_from(value) {
                out.push(b);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses one mountinfo line; `None` when it is not one.
pub fn parse_mountinfo_line(line: &str) -> Option<MountInfo> {
    let (before, after) = line.split_once(" - ")?;
    let fields: Vec<&str> = before.split(' ').collect();
    // mount ID, parent ID, major:minor, root, mount point, options, optional fields…
    if fields.len() < 6 {
        return None;
    }
    let tail: Vec<&str> = after.split(' ').collect();
    if tail.len() < 3 {
        return None;
    }
    Some(MountInfo {
        mount_point: unescape(fields[4]),
        mount_options: fields[5].split(',').map(str::to_string).collect(),
        filesystem_type: unescape(tail[0]),
        source: unescape(tail[1]),
        super_options: tail[2].split(',').map(str::to_string).collect(),
    })
}

/// The mount at exactly `mount_point`; the last one wins, as the kernel stacks mounts.
pub fn find_mount(mountinfo: &str, mount_point: &str) -> Option<MountInfo> {
    mountinfo
        .lines()
        .rev()
        .filter_map(parse_mountinfo_line)
        .find(|m| m.mount_point == mount_point)
}

/// One fstab entry: spec, file, type, options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FstabEntry {
    pub source: String,
    pub mount_point: String,
    pub filesystem_type: String,
    pub options: Vec<String>,
}

/// The fstab entry for `mount_point` (comments and blank lines skipped; the last wins).
pub fn find_fstab(fstab: &str, mount_point: &str) -> Option<FstabEntry> {
    fstab
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| FstabEntry {
                source: unescape(f[0]),
                mount_point: unescape(f[1]),
                filesystem_type: f[2].to_string(),
                options: f[3].split(',').map(str::to_string).collect(),
            })
        })
        .find(|e| e.mount_point.trim_end_matches('/') == mount_point.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MOUNTINFO: &str = "\
22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
96 22 0:48 / /mnt/data rw,relatime shared:50 - virtiofs data rw
97 22 0:49 / /mnt/with\\040space ro,relatime - virtiofs other rw
";

    #[test]
    fn the_mount_at_the_path_with_its_source_type_and_mode() {
        let m = find_mount(MOUNTINFO, "/mnt/data").unwrap();
        assert_eq!(
            (m.filesystem_type.as_str(), m.source.as_str()),
            ("virtiofs", "data")
        );
        assert!(m.read_write());
        let spaced = find_mount(MOUNTINFO, "/mnt/with space").unwrap();
        assert!(!spaced.read_write());
        assert_eq!(find_mount(MOUNTINFO, "/mnt"), None);
    }

    #[test]
    fn fstab_entries_by_mount_point() {
        let fstab = "# comment\n\ndata /mnt/data virtiofs defaults,nofail 0 2\n/dev/vda1 / ext4 defaults 0 1\n";
        let e = find_fstab(fstab, "/mnt/data/").unwrap();
        assert!(e.options.iter().any(|o| o == "nofail"));
        assert_eq!(e.source, "data");
        assert_eq!(find_fstab(fstab, "/mnt/other"), None);
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_a_panic(text in "\\PC{0,400}") {
            let _ = find_mount(&text, "/mnt/data");
            let _ = find_fstab(&text, "/mnt/data");
            let _ = unescape(&text);
        }

        #[test]
        fn a_well_formed_line_round_trips(point in "/[a-z]{1,12}", tag in "[a-z]{1,12}") {
            let line = format!("96 22 0:48 / {point} rw,relatime - virtiofs {tag} rw");
            let m = parse_mountinfo_line(&line).unwrap();
            prop_assert_eq!(m.mount_point, point);
            prop_assert_eq!(m.source, tag);
        }
    }
}
