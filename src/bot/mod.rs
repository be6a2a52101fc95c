//! The GitHub App's behaviour: repository config, commands, the pull-request preflight, the
//! public report and its rendering, and the handler that ties them to GitHub.
//!
//! Everything but [`handler`] is pure: [`pr::evaluate_pull_request`] turns fetched inputs into
//! the comment and the two check runs, so the rules are tested without any network.

pub mod commands;
pub mod config;
pub mod handler;
pub mod live;
pub mod pr;
pub mod render;
pub mod report;

pub use commands::{Command, CommandError, CommandKind, ParsedComment, parse_comment};
pub use config::{ConfigError, LoadedConfig, RepoConfig};
pub use handler::{Bot, BotError, BotSettings, Handled};
pub use pr::{
    ChangedFile, PREFLIGHT_CHECK, PRIVACY_CHECK, PrInput, PrOutcome, QuotaInput,
    evaluate_pull_request,
};
pub use report::PrReport;
