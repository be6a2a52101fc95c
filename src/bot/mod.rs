//! The GitHub App's behaviour: repository config, commands, the pull-request preflight, the
//! public report and its rendering, and the handlers and jobs that tie them to GitHub.
//!
//! Dependencies point one way: [`handler`] (one handler per event) starts [`jobs`], which
//! fetch through the one GitHub client and call the pure [`pr::evaluate_pull_request`]; that
//! turns fetched inputs into the [`report`] and, through [`render`], the comment and the two
//! check runs, so the rules are tested without any network.

pub mod authority;
pub mod commands;
pub mod config;
pub mod deploy;
pub mod handler;
pub mod jobs;
pub mod policy;
pub mod pr;
pub mod reconcile;
pub mod render;
pub mod report;
pub mod settings;
pub mod spec_blobs;
pub mod triage;
pub mod verification;

pub use commands::{Command, CommandError, CommandKind, ParsedComment, parse_comment};
pub use config::{ConfigError, LoadedConfig, RepoConfig};
pub use handler::{Bot, BotError, BotSettings, Handled, JobError};
pub use pr::{
    ChangedFile, PREFLIGHT_CHECK, PRIVACY_CHECK, PrInput, PrOutcome, QuotaInput,
    evaluate_pull_request,
};
pub use report::PrReport;
