//! GitHub adapter: webhook verification, the event model, App authentication and the REST client.
//!
//! GitHub types stop here: [`events`] turns payloads into fleetbot's own structs, and
//! [`client::RepoClient`] decodes responses into small local structs, so the rest of the bot
//! never sees GitHub's JSON. The client is concrete (no trait); tests point it at a fake GitHub
//! on loopback through the injectable base URL.

pub mod app;
pub mod client;
pub mod events;
#[cfg(test)]
pub(crate) mod test_key;
pub mod webhook;

use std::fmt;

pub use app::{AppAuthError, AppCredentials, InstallationToken, TokenCache};
pub use client::{
    Annotation, AnnotationLevel, AppIdentity, CheckAction, CheckConclusion, CheckOutput,
    CheckRunPayload, ClientConfig, ClientError, FileStatus, GitHubClient, OpenPullRequest,
    Permission, PrFile, PullRequestInfo, PullState, RepoClient, RetryPolicy, RunningCheck,
    TreeFile,
};
pub use events::{Event, EventError, parse_event};
pub use webhook::{SignatureError, Verifier, WebhookSecrets, sign};

/// The default REST base URL; GitHub Enterprise Server uses `https://HOST/api/v3`.
pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// A secret string (token, key, password) whose `Debug` and `Display` never show the value.
///
/// The only way to the value is [`SecretString::expose`], so every use is greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        SecretString(value.into())
    }

    /// The secret itself; call only where it is sent or used as a key.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the secret is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(<redacted>)")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `owner/name` of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepoName {
    /// The account that owns it.
    pub owner: String,
    /// The repository name.
    pub name: String,
}

impl RepoName {
    /// Builds a name from its parts.
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> Self {
        RepoName {
            owner: owner.into(),
            name: name.into(),
        }
    }

    /// Parses `owner/name`; anything else is `None`.
    pub fn parse(full_name: &str) -> Option<Self> {
        let (owner, name) = full_name.split_once('/')?;
        let valid = |s: &str| !s.is_empty() && !s.contains('/');
        (valid(owner) && valid(name)).then(|| RepoName::new(owner, name))
    }
}

impl fmt::Display for RepoName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_debug_and_display_redact() {
        let s = SecretString::new("ghs_supersecret");
        assert!(!format!("{s:?}").contains("supersecret"));
        assert!(!format!("{s}").contains("supersecret"));
        assert_eq!(s.expose(), "ghs_supersecret");
    }

    #[test]
    fn repo_names() {
        assert_eq!(RepoName::parse("a/b"), Some(RepoName::new("a", "b")));
        assert_eq!(RepoName::parse("a/b").unwrap().to_string(), "a/b");
        assert_eq!(RepoName::parse("a"), None);
        assert_eq!(RepoName::parse("a/b/c"), None);
        assert_eq!(RepoName::parse("/b"), None);
    }
}
