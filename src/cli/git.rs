//! A git repository driven through the `git` command, for the commands that read a spec
//! repository (`preview`, `preview --post`) or make a throwaway one (`demo`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The commits a preview compares, by SHA.
pub(super) struct Refs {
    /// The branch name the config is read from.
    pub branch: String,
    pub branch_sha: String,
    pub base_sha: String,
    pub head_sha: String,
}

/// A git repository.
pub(super) struct Git {
    dir: PathBuf,
    /// A repository of fleetbot's own making: a fixed identity and no user or system config,
    /// so its commits are the same whatever this machine's git is set up to do (hooks,
    /// signing, templates).
    isolated: bool,
}

impl Git {
    /// The checkout at `dir`, read as its owner's git reads it.
    pub fn new(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            isolated: false,
        }
    }

    /// A new repository at `dir` on branch `main`, of fleetbot's own making.
    pub fn init(dir: &Path) -> Result<Git, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let git = Git {
            dir: dir.to_path_buf(),
            isolated: true,
        };
        git.run(&["init", "-q", "-b", "main"])?;
        Ok(git)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("-C").arg(&self.dir);
        if self.isolated {
            cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "fleetbot demo")
                .env("GIT_AUTHOR_EMAIL", "demo@fleetbot.invalid")
                .env("GIT_COMMITTER_NAME", "fleetbot demo")
                .env("GIT_COMMITTER_EMAIL", "demo@fleetbot.invalid");
        }
        cmd
    }

    pub fn bytes(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let out = self
            .command()
            .args(args)
            .output()
            .map_err(|e| format!("cannot run git (it must be on PATH): {e}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "git {}: {}",
                args.first().copied().unwrap_or_default(),
                stderr.trim()
            ));
        }
        Ok(out.stdout)
    }

    pub fn text(&self, args: &[&str]) -> Result<String, String> {
        Ok(String::from_utf8_lossy(&self.bytes(args)?)
            .trim()
            .to_string())
    }

    pub fn run(&self, args: &[&str]) -> Result<(), String> {
        self.bytes(args).map(|_| ())
    }

    /// Writes a file of the work tree (its folders made as needed).
    pub fn write(&self, path: &str, text: &str) -> Result<(), String> {
        let file = self.dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))
    }

    /// Commits everything in the work tree; the new commit's SHA.
    pub fn commit(&self, message: &str) -> Result<String, String> {
        self.run(&["add", "-A"])?;
        self.run(&["commit", "-q", "-m", message])?;
        self.text(&["rev-parse", "HEAD"])
    }

    /// The bytes of `path` at `commit` if it is a file there of at most `limit` bytes:
    /// `Ok(Err(size))` for a larger one, whose bytes are never read (as the App refuses a file
    /// on the size GitHub states).
    pub fn blob(
        &self,
        commit: &str,
        path: &str,
        limit: usize,
    ) -> Result<Option<Result<Vec<u8>, u64>>, String> {
        let spec = format!("{commit}:{path}");
        let kind = self
            .command()
            .args(["cat-file", "-t", &spec])
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !kind.status.success() || String::from_utf8_lossy(&kind.stdout).trim() != "blob" {
            return Ok(None);
        }
        let size: u64 = self
            .text(&["cat-file", "-s", &spec])?
            .parse()
            .map_err(|e| format!("git cat-file -s {spec}: {e}"))?;
        if size > limit as u64 {
            return Ok(Some(Err(size)));
        }
        self.bytes(&["cat-file", "blob", &spec])
            .map(|b| Some(Ok(b)))
    }
}
