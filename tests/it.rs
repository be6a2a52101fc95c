//! The integration suite as one test binary: every scenario, property and snapshot test in
//! `tests/` is a module here, so the whole crate is linked once for all of them and the
//! helpers under `tests/support/` are compiled once. Run one file's tests with
//! `cargo test --test it app_deploy::` (the module is the file's name).

#[path = "support/app.rs"]
mod app_harness;
#[path = "support/cli_home.rs"]
mod cli_home;
#[path = "support/fake_github/mod.rs"]
mod fake_github;
#[path = "support/intake.rs"]
mod intake;
#[path = "support/postgres.rs"]
mod pg;
#[path = "support/stores.rs"]
mod stores;
#[path = "support/mod.rs"]
mod support;

mod addons_sim;
mod app;
mod app_deploy;
mod app_policy;
mod cloud_sim;
mod crash_campaign;
mod dashboard_browser;
mod engine_sim;
mod fuzz_corpus;
mod github_app;
mod github_durable;
mod github_events_kept;
mod github_manifest;
mod guards_cli;
mod intake_depth;
mod kube_sim;
mod kubectl_cli;
mod library_sim;
mod lifecycle_cli;
mod mixed_backends_sim;
mod object_storage_sim;
mod plan_cli;
mod policy_cli;
mod preview_cli;
mod privacy_cli;
mod privacy_corpus;
mod privacy_output;
mod privacy_props;
mod probe_sim;
mod quota_cli;
mod quota_live;
mod quota_props;
mod quota_reference;
mod quota_scenarios;
mod s3_sim;
mod sdk_sim;
mod sim_cli;
mod spec_behaviour;
mod spec_props;
mod store_conformance;
mod strict_sim;
mod verify_graphics_sim;
mod verify_mig_sim;
mod verify_storage_sim;
