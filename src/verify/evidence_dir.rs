//! The owner-private receipts of a verification (`--evidence-dir`): a fresh random
//! sub-directory (0700) per run, outside any git checkout, each file created exclusively with
//! mode 0600 and named by target index and the receipt's hash. The public report carries only
//! that hash.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Why receipts cannot be kept; a run that asked for them fails rather than losing them.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceDirError {
    #[error(
        "--evidence-dir {0} is inside a git checkout; receipts hold private values and must stay outside the repository"
    )]
    InsideRepository(String),
    #[error("--evidence-dir {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EvidenceDirError + '_ {
    move |source| EvidenceDirError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The git checkout `path` lies in, if any (a `.git` file or directory at or above it).
fn checkout_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|p| p.join(".git").exists())
        .map(Path::to_path_buf)
}

/// One run's receipt directory.
#[derive(Debug)]
pub struct EvidenceDir {
    pub path: PathBuf,
}

impl EvidenceDir {
    /// Creates `<root>/<random>` with mode 0700 (the root too, if missing).
    pub fn create(root: &Path) -> Result<EvidenceDir, EvidenceDirError> {
        std::fs::create_dir_all(root).map_err(io(root))?;
        let root = root.canonicalize().map_err(io(root))?;
        if checkout_of(&root).is_some() {
            return Err(EvidenceDirError::InsideRepository(
                root.display().to_string(),
            ));
        }
        let path = root.join(format!("run-{}", uuid::Uuid::new_v4().simple()));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder.create(&path).map_err(io(&path))?;
        Ok(EvidenceDir { path })
    }

    /// Writes one target's receipt; returns its SHA-256 (what the public report shows).
    pub fn write(&self, target_index: usize, receipt: &[u8]) -> Result<String, EvidenceDirError> {
        let digest = hex::encode(Sha256::digest(receipt));
        let path = self
            .path
            .join(format!("target-{target_index}-{}.json", &digest[..16]));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path).map_err(io(&path))?;
        file.write_all(receipt).map_err(io(&path))?;
        file.sync_all().map_err(io(&path))?;
        Ok(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_are_private_exclusive_and_outside_any_checkout() {
        let root = tempfile::tempdir().unwrap();
        let dir = EvidenceDir::create(&root.path().join("evidence")).unwrap();
        let hash = dir.write(3, b"{\"node\":\"n1\"}").unwrap();
        let file = dir.path.join(format!("target-3-{}.json", &hash[..16]));
        assert_eq!(std::fs::read(&file).unwrap(), b"{\"node\":\"n1\"}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&file), 0o600);
            assert_eq!(mode(&dir.path), 0o700);
        }
        // The same receipt again is refused, never overwritten.
        assert!(dir.write(3, b"{\"node\":\"n1\"}").is_err());
        // Two runs never share a directory.
        let other = EvidenceDir::create(&root.path().join("evidence")).unwrap();
        assert_ne!(other.path, dir.path);
        // Inside a checkout: refused.
        std::fs::create_dir(root.path().join(".git")).unwrap();
        assert!(matches!(
            EvidenceDir::create(&root.path().join("inside")),
            Err(EvidenceDirError::InsideRepository(_))
        ));
    }
}
