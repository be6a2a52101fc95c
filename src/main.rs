//! The `fleetbot` binary: parse the command line, set up logging, hand over to the library.

use std::process::ExitCode;

/// Planning a large fleet is allocation-bound: mimalloc's small-object paths cost a fraction
/// of glibc malloc's there (docs/status.md, "Static plan").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    fleetbot::cli::main()
}
