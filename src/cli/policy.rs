//! `fleetbot policy`: the organisation's Rego policies (docs/policy.md) judged locally —
//! `check` a spec against a policy directory (exit 1 on a denial, 2 when the policies cannot
//! judge), `input` prints what the policies see, `test` runs the directory's `test_` rules.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::output::{OutputFormat, print_json};
use crate::policy::{Policies, input};

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Judge a spec by the policies of a directory (exit 1 on a denial).
    Check(CheckArgs),
    /// Print the input the policies judge (`fleetbot.policy/v1`), to write rules against.
    Input(InputArgs),
    /// Run the `test_` rules of a directory's `*_test.rego` files, as `opa test` does.
    Test(TestArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    /// The directory of `*.rego` policies (package `fleetbot`, rules `deny` and `warn`).
    #[arg(long, value_name = "DIR")]
    pub policy: PathBuf,
    /// Output format: text, json or sarif (code scanning).
    #[arg(long, value_enum, default_value_t = CheckOutput::Text, value_name = "fmt")]
    pub output: CheckOutput,
}

/// `policy check --output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckOutput {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, Args)]
pub struct InputArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    /// The directory of policies and their `*_test.rego` files.
    pub dir: PathBuf,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

pub fn run(args: PolicyArgs) -> ExitCode {
    match args.command {
        PolicyCommand::Check(args) => check(args),
        PolicyCommand::Input(args) => match args.spec.load() {
            Ok(spec) => {
                print_json(&input::of_spec(&spec));
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        PolicyCommand::Test(args) => test(args),
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    // A policy that cannot judge is never a pass: exit 2, as for a spec that does not read.
    let verdict = Policies::load(&args.policy).and_then(|p| p.check(&input::of_spec(&spec)));
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fleetbot policy: {e}");
            if args.output == CheckOutput::Json {
                print_json(&serde_json::json!({"denied": true, "error": e.to_string()}));
            }
            return ExitCode::from(2);
        }
    };
    match args.output {
        CheckOutput::Json => print_json(&serde_json::json!({
            "denied": verdict.denied(),
            "policies": verdict.policies,
            "findings": verdict.findings,
        })),
        CheckOutput::Sarif => println!("{:#}", verdict.to_sarif()),
        CheckOutput::Text => print!("{}", verdict.render_text()),
    }
    if verdict.denied() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn test(args: TestArgs) -> ExitCode {
    match crate::policy::run_tests(&args.dir) {
        Ok(report) => {
            match args.output {
                OutputFormat::Json => print_json(&report),
                OutputFormat::Text => print!("{}", report.render_text()),
            }
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("fleetbot policy test: {e}");
            ExitCode::from(2)
        }
    }
}
