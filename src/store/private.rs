//! Files fleetbot keeps are its user's alone: a store holds deliveries and reviewed plans, the
//! simulator's state the simulated S3 key pair and the tokens its clusters accept; each file is
//! written 0600 into a 0700 directory.

use std::io::Write;
use std::path::Path;

/// Creates `dir` and its missing parents, each 0700; a directory that exists already (one the
/// user named, `/tmp` say) is left as it is.
pub fn dir(dir: &Path) -> std::io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// [`dir`] for a directory that is fleetbot's own (the default simulator directory, a state's
/// nodes): made 0700 also when an older fleetbot created it readable by all.
pub fn own_dir(path: &Path) -> std::io::Result<()> {
    dir(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Opens `path` for writing, created 0600 (an existing file is made 0600 too).
pub fn create(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(truncate);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Writes `bytes` to `path` atomically (a 0600 temporary file beside it, then a rename).
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(name);
    let mut file = create(&tmp, true)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_the_owner_s_alone_even_where_they_were_not_before() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let sim = data.join("simulator");
        dir(&sim).unwrap();
        assert_eq!((mode(&data), mode(&sim)), (0o700, 0o700));
        // An older file, readable by all, is made private when it is written again.
        let state = sim.join("default.state");
        std::fs::write(&state, b"old").unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&state, b"new").unwrap();
        assert_eq!(std::fs::read(&state).unwrap(), b"new");
        assert_eq!(mode(&state), 0o600);
        let db = sim.join("inventory.sqlite");
        create(&db, false).unwrap();
        assert_eq!(mode(&db), 0o600);
        // A directory that was there already is left alone, unless it is fleetbot's own.
        std::fs::set_permissions(&sim, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir(&sim).unwrap();
        assert_eq!(mode(&sim), 0o755);
        own_dir(&sim).unwrap();
        assert_eq!(mode(&sim), 0o700);
        // Nothing but the file is left behind.
        let names: Vec<_> = std::fs::read_dir(&sim)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
