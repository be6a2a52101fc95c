//! Deploys a fleet through fleetbot's library promise alone: load the spec (with the
//! operator's runtime values, when given), check its quota, deploy it, show its status, and
//! destroy it again when asked.
//!
//! ```sh
//! cargo run --example deploy_fleet -- fixtures/specs/fleet1-test.yaml
//! cargo run --example deploy_fleet -- fixtures/specs/rtxpro-mig.yaml \
//!     --runtime-values fixtures/runtime/embedded-default.yaml --destroy
//! ```
//!
//! With no Nebius credentials configured it runs against the embedded simulator, as the CLI
//! does.

use std::process::ExitCode;

use fleetbot::{Fleet, Options, RuntimeValues, Session};

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut spec, mut runtime, mut destroy) = (None, None, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runtime-values" => runtime = args.next(),
            "--destroy" => destroy = true,
            _ if spec.is_none() => spec = Some(arg),
            other => {
                eprintln!("deploy_fleet: unexpected argument {other:?}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(spec) = spec else {
        eprintln!("usage: deploy_fleet SPEC [--runtime-values FILE] [--destroy]");
        return ExitCode::from(2);
    };
    match run(&spec, runtime.as_deref(), destroy).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("deploy_fleet: {e}");
            ExitCode::FAILURE
        }
    }
}

/// True when every target ended deployed and healthy (and destroyed, when asked).
async fn run(spec: &str, runtime: Option<&str>, destroy: bool) -> Result<bool, fleetbot::Error> {
    let values = runtime
        .map(|path| RuntimeValues::load(path.as_ref()))
        .transpose()?;
    let fleet = Fleet::load_with(spec, values.as_ref())?;
    // The CLI's environment (credentials, FLEETBOT_CLOUD, FLEETBOT_TENANT_ID, …), read here at
    // the program's edge: the library reads none.
    let options = fleetbot::cli::env::session_options("")?;
    let session = Session::connect(&options).await?;
    println!("fleet '{}' on {}", fleet.name(), session.description());

    let options = Options::default().progress(|line| eprintln!("  - {line}"));
    let budget = fleet.preflight(&session, &options).await?;
    println!(
        "quota preflight: {}",
        if budget.fits() { "fits" } else { "short" }
    );
    if !budget.fits() {
        return Ok(false);
    }
    let deployed = fleet.deploy(&session, &options).await?;
    print!("{}", deployed.render_text());
    let status = fleet.status(&session).await?;
    print!("{}", status.render_text());
    let mut ok = deployed.failed == 0 && status.healthy();
    if destroy {
        let destroyed = fleet.destroy(&session, &options).await?;
        print!("{}", destroyed.render_text());
        ok &= destroyed.failed == 0;
    }
    Ok(ok)
}
