#!/usr/bin/env bash
# The fuzzing campaign (issue 22): every cargo-fuzz target in fuzz/ for SECONDS each (default
# 120), one process per target, then its corpus minimised in place (`cargo fuzz cmin`), so
# fuzz/corpus/ stays small enough to commit and to replay on stable (tests/fuzz_corpus.rs).
# Needs nightly and cargo-fuzz (`cargo install cargo-fuzz --locked`). Prints per target the
# executions, exec/s and corpus files; a crash leaves its input in fuzz/artifacts/<target>/
# (make it a regression test and fix the cause, then rerun).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Built without a sanitizer (`-s none`): fleetbot is safe Rust, so what the campaign looks for
# is panics, broken properties (asserted in fuzz/entries.rs) and slow inputs, and uninstrumented
# code runs several times faster. Set FUZZ_SANITIZER=address to fuzz under ASan instead.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${1:-120}"
shift || true
TARGETS=("$@")
if [[ ${#TARGETS[@]} -eq 0 ]]; then
  mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi
SANITIZER="${FUZZ_SANITIZER:-none}"
LOGS=fuzz/target/logs
mkdir -p "$LOGS"

cargo +nightly fuzz build -s "$SANITIZER"
printf '%-12s %12s %8s %8s %s\n' target executions exec/s files result
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  result=ok
  # -timeout: any single input slower than 10 s is a finding (a worst case to bound);
  # -rss_limit_mb: so is one that needs more than 2 GB.
  if ! cargo +nightly fuzz run -s "$SANITIZER" "$t" "fuzz/corpus/$t" -- \
      -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$LOGS/$t.log" 2>&1; then
    result="FINDING (see $LOGS/$t.log and fuzz/artifacts/$t/)"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOGS/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$LOGS/$t.log" | tail -1)
  # Edges only (no hit counters): what makes the corpus a few hundred files, small enough to
  # commit, rather than thousands.
  cargo +nightly fuzz cmin -s "$SANITIZER" "$t" "fuzz/corpus/$t" -- -use_counters=0 >"$LOGS/$t.cmin.log" 2>&1
  files=$(find "fuzz/corpus/$t" -type f | wc -l)
  printf '%-12s %12s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$files" "$result"
done
