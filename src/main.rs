//! The `fleetbot` binary: parse the command line, set up logging, hand over to the library.

use std::process::ExitCode;

use fleetbot::server::job_process::memory::Budgeted;

/// Planning a large fleet is allocation-bound: mimalloc's small-object paths cost a fraction
/// of glibc malloc's there (docs/status.md, "Static plan"). A job process counts its heap
/// against its memory budget (`server::job_process::memory`); elsewhere the count is off.
#[global_allocator]
static ALLOCATOR: Budgeted<mimalloc::MiMalloc> = Budgeted(mimalloc::MiMalloc);

fn main() -> ExitCode {
    fleetbot::cli::main()
}
