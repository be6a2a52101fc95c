#!/usr/bin/env bash
# The device check for the GPU probes, for a session whose task has a GPU machine (run it there
# with the `run` tool, carrying target/debug/fleetbot built here): the graphics and MIG probes
# run for real and their evidence is kept under $OUT (or ./gpu-check). It prints the figures to
# record in docs/verification.md; the verdict is read from the evidence, never this script.
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
