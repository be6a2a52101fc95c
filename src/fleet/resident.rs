//! The resident simulator: the embedded default's simulator kept running in the background
//! (`fleetbot sim --resident`), so that kubectl reaches the clusters a command deployed after
//! that command has exited. `fleetbot kubeconfig` starts it when none runs; every command on
//! the embedded default then talks to it rather than starting a second simulator on the same
//! state; `fleetbot kube-token --simulator-state` hands kubectl its token. It writes where it
//! listens, with a token of its own, beside the state (`<state>.resident.json`, mode 0600) and
//! removes that file when it stops.
//!
//! One resident per state: a resident holds an exclusive lock on `<state>.resident.lock` for
//! its life, taken before it reads the state. Two commands that each start one at once start
//! two processes, but only one takes the lock; the other exits at once with
//! [`EXIT_ALREADY_SERVED`], and the command that started it uses the winner. The lock goes
//! with its process, however it ends, so a dead resident never holds a state.

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How long a starting resident may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The exit status of a resident that found another serving its state.
pub const EXIT_ALREADY_SERVED: u8 = 75;

/// The lock a resident holds on its state for its life.
#[derive(Debug)]
pub struct StateLock {
    _file: std::fs::File,
}

/// The lock file of a simulator state.
pub fn lock_file_of(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(".resident.lock");
    state.with_file_name(name)
}

/// Takes the state's resident lock without waiting: `Ok(None)` when another process holds
/// it.
pub fn lock(state: &Path) -> std::io::Result<Option<StateLock>> {
    if let Some(dir) = state.parent() {
        private_dir(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options.open(lock_file_of(state))?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor this function owns; LOCK_NB never blocks.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if !taken {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) => Ok(None),
                _ => Err(e),
            };
        }
    }
    Ok(Some(StateLock { _file: file }))
}

/// Creates `dir` if needed, readable by its owner alone: it holds the simulator's state, its
/// Kubernetes objects and inventory, and the simulated S3 key pair.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    crate::store::private::dir(dir)
}

/// Where a resident simulator listens, and what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resident {
    /// Its process, to tell a live resident from a stale file.
    pub pid: u32,
    /// The Nebius API, `http://127.0.0.1:<port>`.
    pub endpoint: String,
    /// The tenant of its world, for specs that name none.
    pub tenant_id: String,
    /// A bearer token only this resident accepts; the file is the user's alone.
    pub token: String,
    /// The probe image its kubelet runs (this binary, by digest).
    pub probe_image: String,
}

/// The resident's file for a simulator state.
pub fn file_of(state: &Path) -> PathBuf {
    let mut name = state.file_name().unwrap_or_default().to_os_string();
    name.push(".resident.json");
    state.with_file_name(name)
}

/// The resident serving `state`, when one runs and answers.
pub fn find(state: &Path) -> Option<Resident> {
    let text = std::fs::read_to_string(file_of(state)).ok()?;
    let resident: Resident = serde_json::from_str(&text).ok()?;
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(resident.pid as libc::pid_t, 0) } == 0;
    let address: SocketAddr = resident.endpoint.strip_prefix("http://")?.parse().ok()?;
    let answers = TcpStream::connect_timeout(&address, Duration::from_millis(500)).is_ok();
    (alive && answers).then_some(resident)
}

/// Creates (or empties) a file readable by its owner alone.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    crate::store::private::create(path, true)
}

/// Writes the resident's file, readable by its owner alone.
pub fn write(state: &Path, resident: &Resident) -> std::io::Result<()> {
    let path = file_of(state);
    let temp = path.with_extension(format!("{}.tmp", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&temp)?;
    file.write_all(serde_json::to_string(resident)?.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temp, &path)
}

/// Removes the file if it is still this process's.
pub fn remove(state: &Path) {
    let path = file_of(state);
    let ours = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Resident>(&t).ok())
        .is_some_and(|r| r.pid == std::process::id());
    if ours {
        let _ = std::fs::remove_file(path);
    }
}

/// Why no resident simulator could be reached or started.
#[derive(Debug, thiserror::Error)]
pub enum ResidentError {
    /// A file or directory it needs: this binary, the state's directory, its log.
    #[error("cannot {what} {}: {source}", path.display())]
    File {
        /// `find`, `create` or `write`.
        what: &'static str,
        /// Which.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It could not be started.
    #[error("cannot start the resident simulator: {0}")]
    Spawn(std::io::Error),
    /// It started and exited; its log says why.
    #[error("the resident simulator exited ({status}); see {}", log.display())]
    Exited {
        /// How it exited.
        status: std::process::ExitStatus,
        /// Its log.
        log: PathBuf,
    },
    /// It did not say where it listens in time.
    #[error("the resident simulator did not start within {} s; see {}", within.as_secs(), log.display())]
    Slow {
        /// How long it was given.
        within: Duration,
        /// Its log.
        log: PathBuf,
    },
}

/// The resident serving `state`: the one running, else a new one started in the background
/// (its output in `<state>.resident.log`).
pub fn ensure(state: &Path, world: Option<&Path>) -> Result<Resident, ResidentError> {
    if let Some(resident) = find(state) {
        return Ok(resident);
    }
    let file = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ResidentError::File { what, path, source }
    };
    let exe = std::env::current_exe().map_err(file("find", Path::new("this binary")))?;
    if let Some(dir) = state.parent() {
        private_dir(dir).map_err(file("create", dir))?;
    }
    let mut log_name = state.file_name().unwrap_or_default().to_os_string();
    log_name.push(".resident.log");
    let log_path = state.with_file_name(log_name);
    let log = private_file(&log_path).map_err(file("write", &log_path))?;
    let mut command = Command::new(exe);
    command
        .args(["sim", "--resident", "--listen", "127.0.0.1:0", "--state"])
        .arg(state)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(file("write", &log_path))?)
        .stderr(log)
        .env_remove("NEBIUS_IAM_TOKEN");
    if let Some(world) = world {
        command.arg("--world").arg(world);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: the terminal's Ctrl-C for this command does not reach it.
        command.process_group(0);
    }
    let mut child = command.spawn().map_err(ResidentError::Spawn)?;
    let began = Instant::now();
    while began.elapsed() < START_TIMEOUT {
        if let Some(resident) = find(state) {
            return Ok(resident);
        }
        match child.try_wait() {
            // Another resident took the state first: it is the one to use, once it says where
            // it listens.
            Ok(Some(status)) if status.code() == Some(i32::from(EXIT_ALREADY_SERVED)) => {}
            Ok(Some(status)) => {
                return Err(ResidentError::Exited {
                    status,
                    log: log_path,
                });
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    Err(ResidentError::Slow {
        within: START_TIMEOUT,
        log: log_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_sits_beside_the_state_and_only_a_live_answering_resident_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("default.state");
        assert_eq!(
            file_of(&state),
            dir.path().join("default.state.resident.json")
        );
        assert_eq!(find(&state), None);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let resident = Resident {
            pid: std::process::id(),
            endpoint: format!("http://{}", listener.local_addr().unwrap()),
            tenant_id: "tenant-x".into(),
            token: "sim1.secret".into(),
            probe_image: "img".into(),
        };
        write(&state, &resident).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(file_of(&state))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the token file is the owner's alone");
        }
        assert_eq!(find(&state), Some(resident.clone()));
        drop(listener);
        assert_eq!(
            find(&state),
            None,
            "a resident that no longer answers is not found"
        );
        remove(&state);
        assert!(!file_of(&state).exists());
    }

    #[test]
    fn one_process_holds_a_state_s_lock_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("sub").join("default.state");
        let held = lock(&state).unwrap().expect("the first takes it");
        // flock locks belong to the open file: a second open, as another process makes, is
        // refused while the first is held.
        assert!(lock(&state).unwrap().is_none(), "the second is refused");
        drop(held);
        assert!(lock(&state).unwrap().is_some(), "free once let go");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&dir.path().join("sub")), 0o700);
            assert_eq!(mode(&lock_file_of(&state)), 0o600);
        }
    }
}
