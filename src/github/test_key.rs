//! A throwaway RSA key pair for unit tests, made once per test binary with the `openssl` CLI,
//! so no private key (not even a test one) lives in the repository.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The pair, and the private key's file (for code that reads a key path).
pub(crate) struct TestKey {
    pub private_pem: String,
    pub public_pem: String,
    pub private_path: PathBuf,
    /// Kept so the file outlives every test of the binary.
    _dir: tempfile::TempDir,
}

/// The binary's test key: 2048-bit RSA, the private half in PKCS#1 PEM (`BEGIN RSA PRIVATE
/// KEY`, the form GitHub hands out for Apps), the public half in SPKI PEM.
pub(crate) fn test_key() -> &'static TestKey {
    static KEY: OnceLock<TestKey> = OnceLock::new();
    KEY.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let private_path = dir.path().join("app-test-key.pem");
        let status = Command::new("openssl")
            .args(["genrsa", "-traditional", "-out"])
            .arg(&private_path)
            .arg("2048")
            .stderr(Stdio::null())
            .status()
            .expect("the openssl CLI is installed (it makes the tests' throwaway keys)");
        assert!(status.success(), "openssl genrsa failed");
        let public = Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&private_path)
            .output()
            .expect("openssl pkey runs");
        assert!(public.status.success(), "openssl pkey -pubout failed");
        TestKey {
            private_pem: std::fs::read_to_string(&private_path).expect("the key was written"),
            public_pem: String::from_utf8(public.stdout).expect("PEM is ASCII"),
            private_path,
            _dir: dir,
        }
    })
}
