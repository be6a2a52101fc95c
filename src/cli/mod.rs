//! Command-line interface: one file per subcommand.
use std::process::ExitCode;
pub fn main() -> ExitCode { ExitCode::SUCCESS }
