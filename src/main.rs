//! The `fleetbot` binary: parse the command line, set up logging, hand over to the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    fleetbot::cli::main()
}
