//! `fleetbot status`: the inventory merged with a live read of every spec target.
//!
//! Exit codes: 0 when every target is deployed and healthy; 1 when one is not (the document
//! is still printed) or the status could not be read (only stderr says why); 2 when the spec
//! does not load.

use std::process::ExitCode;

use clap::Args;

use super::lifecycle::{open_cloud, runtime_for};
use super::output::{OutputFormat, print_json};

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub spec: super::args::SpecArgs,
    /// Output format: text or json.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text, value_name = "fmt")]
    pub output: OutputFormat,
}

pub fn run(args: StatusArgs) -> ExitCode {
    let spec = match args.spec.load() {
        Ok(spec) => spec,
        Err(code) => return code,
    };
    let runtime = match runtime_for(&spec.profile) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let result = async {
            let session = open_cloud(&spec.profile).await?;
            session.status(&spec).await.map_err(|e| e.to_string())
        }
        .await;
        match result {
            Ok(result) => {
                match args.output {
                    OutputFormat::Json => print_json(&result),
                    OutputFormat::Text => print!("{}", result.render_text()),
                }
                if result.healthy() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    })
}
