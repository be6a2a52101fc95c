#!/usr/bin/env bash
# The crash campaign of merge to deploy (tests/crash_campaign.rs): `fleetbot serve` against a
# separately running `fleetbot sim`, killed with SIGKILL at a random moment of an apply and
# restarted, CRASH_TRIALS times (default 50). Prints one line per trial and the totals of
# duplicated and orphaned cloud resources; exits non-zero unless every trial converged with
# none. CRASH_SEED replays a campaign; CRASH_WINDOW_MS bounds when the kill lands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-github-fixtures.sh >/dev/null
exec cargo test --test it crash_campaign:: -- --ignored --nocapture --test-threads 1
