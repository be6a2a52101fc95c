#!/usr/bin/env bash
# The reconcile loop's fault campaign (tests/crash_campaign.rs): two `fleetbot serve` replicas on
# one throwaway PostgreSQL against a `fleetbot sim` failing 10 % of its calls and a fake GitHub
# answering 502 to 10 % of repository calls, pull requests opened and merged with 10 % of
# their deliveries dropped and one replica killed at random per run. Prints one line per run
# and the totals of lost deliveries, duplicated and orphaned resources, stuck locks and
# converged fleets; exits non-zero unless nothing was lost, duplicated, orphaned or stuck and
# every fleet converged. FAULT_RUNS (default 3), FAULT_FLEETS (merges a run, default 4),
# FAULT_SEED replays a campaign.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-github-fixtures.sh >/dev/null
exec bash scripts/with-postgres.sh cargo test --test it crash_campaign::a_fault_campaign -- --ignored --nocapture --test-threads 1
