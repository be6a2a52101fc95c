//! The App as registered: `deploy/github-app-manifest.json`, read by the fake GitHub so that
//! what the tests deliver and what the fake allows is what a registered App gets.
//!
//! GitHub sends an App only the events it subscribes to (`default_events`), plus those every
//! App receives (`installation`, `installation_repositories`), `check_run` and `check_suite`
//! when it holds `checks: write` ("automatically subscribed", @octokit/openapi-webhooks), and
//! `ping` when its hook is set up. Installation tokens carry `default_permissions`.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::Value;

use super::permissions::{Grants, Level, grants_from_json};

/// The parsed manifest.
#[derive(Debug)]
pub struct Manifest {
    pub default_permissions: Grants,
    pub default_events: Vec<String>,
    pub raw: Value,
}

/// Where the manifest is, from the crate root.
pub const PATH: &str = "deploy/github-app-manifest.json";

/// The repository's manifest, read once per test binary.
pub fn manifest() -> &'static Manifest {
    static MANIFEST: OnceLock<Manifest> = OnceLock::new();
    MANIFEST.get_or_init(|| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PATH);
        let raw: Value = serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{PATH} is not JSON: {e}"));
        Manifest {
            default_permissions: grants_from_json(&raw["default_permissions"]),
            default_events: raw["default_events"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|e| e.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            raw,
        }
    })
}

impl Manifest {
    /// Every event GitHub delivers to the App registered from this manifest.
    pub fn delivered_events(&self) -> BTreeSet<String> {
        let mut events: BTreeSet<String> = self.default_events.iter().cloned().collect();
        for always in ["installation", "installation_repositories", "ping"] {
            events.insert(always.to_string());
        }
        if self.default_permissions.get("checks") == Some(&Level::Write) {
            events.insert("check_run".into());
            events.insert("check_suite".into());
        }
        events
    }
}

/// Fails the test when GitHub would never deliver `event` to the App: a test that posts it
/// proves a path the shipped App cannot take.
pub fn assert_subscribed(event: &str) {
    assert!(
        manifest().delivered_events().contains(event),
        "GitHub never delivers `{event}` to this App: {PATH} does not subscribe to it (delivered: {:?})",
        manifest().delivered_events()
    );
}
