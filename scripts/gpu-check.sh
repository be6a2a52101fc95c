#!/usr/bin/env bash
# The device check for the GPU probes, for a session whose task has a GPU machine (run it there
# with the `run` tool, carrying target/debug/fleetbot built here): the graphics and MIG probes
# run for real and their evidence is kept under $OUT (or ./gpu-check). It prints the figures to
# record in docs/verification.md; the verdict is read from the evidence, never this script.
# It also runs the GPU-only unit tests (`#[ignore = "needs an NVIDIA GPU: …"]` in
# src/probe/graphics.rs and src/probe/mig.rs), which fail anywhere without a GPU: with cargo
# where there is one, else the library's test binary built here (`cargo test --lib --no-run`)
# and carried, named by FLEETBOT_TEST_BIN.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu-check}"
mkdir -p "$out"
bin="${FLEETBOT_BIN:-target/debug/fleetbot}"
{
  echo "# $(date -u +%FT%TZ) on $(uname -srm)"
  nvidia-smi --query-gpu=name,driver_version,mig.mode.current --format=csv 2>&1 || echo "nvidia-smi: not available"
  ls -l /dev/nvidiactl 2>&1
} | tee "$out/machine.txt"
for probe in graphics mig; do
  start=$(date +%s%N)
  NODE_NAME="$(hostname)" "$bin" probe "$probe" --boot-id /proc/sys/kernel/random/boot_id \
    > "$out/$probe.json" 2> "$out/$probe.stderr"
  rc=$?
  echo "probe $probe: exit $rc in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  head -c 4000 "$out/$probe.json"; echo
done
# The GPU-only unit tests; their exit status is this script's.
if [[ -n "${FLEETBOT_TEST_BIN:-}" ]]; then
  "$FLEETBOT_TEST_BIN" --ignored on_a_real_gpu 2>&1 | tee "$out/unit-tests.txt"
elif command -v cargo >/dev/null; then
  cargo test --lib -- --ignored on_a_real_gpu 2>&1 | tee "$out/unit-tests.txt"
else
  echo "unit tests: not run (no cargo here and FLEETBOT_TEST_BIN is not set)" | tee "$out/unit-tests.txt"
  exit 2
fi
exit "${PIPESTATUS[0]}"
