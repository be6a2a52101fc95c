#!/usr/bin/env bash
# Fleet-scale figures (issue 34), against a standalone simulator on this machine:
#   deploy     PROJECTS × 4 clusters (operation_latency_ms 0, allowances unlimited), default
#              concurrency: wall time, client CPU, simulator CPU and peak RSS
#   idle       the simulator's CPU over 10 s and its RSS afterwards
#   redeploy   the same deploy again (no change): wall time, client CPU, and the gRPC calls
#              and Kubernetes API requests it made (`fleetbot sim --metrics`)
#   live plan  `plan --live`: wall time and the gRPC calls it made (`fleetbot sim --metrics`)
#   changeone  a deploy that changes one cluster of the fleet (a CPU pool of 1 node grows to 2)
#   embedded   deploy, re-deploy and live plan again on the embedded default (in process, its
#              state in a file): wall time, CPU and peak RSS of each whole process
# Usage: scripts/bench-scale.sh [PROJECTS]   (default 250, i.e. 1,000 clusters)
# Uses target/release/fleetbot (built if missing). Prints one line per figure.
set -euo pipefail
cd "$(dirname "$0")/.."
projects="${1:-250}"
bin="${FLEETBOT_BIN:-target/release/fleetbot}"
[ -x "$bin" ] || cargo build --release --locked >&2
work="$(mktemp -d)"
trap 'kill "$sim_pid" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

python3 - "$projects" "$work" <<'EOF'
import re, sys
projects, work = int(sys.argv[1]), sys.argv[2]
out = ["apiVersion: npa.fleet/v0.0.1\nname: scale\ntenant_id: \"\"\nregion: us-central1\n"
       "project_prefix: scale-\ndefaults:\n"
       "  cpu_nodes: {count: 1, platform: cpu-d3, preset: 16vcpu-64gb}\n"
       "  gpu_nodes: {count: 1, platform: gpu-h200-sxm, preset: 1gpu-16vcpu-200gb}\n"
       "  enable_filestore: false\nprojects:\n"]
for p in range(projects):
    out.append(f"  - name: team-{p}\n    clusters:\n")
    for c in range(4):
        out.append(f"      - name: c{c}\n" + ("" if c % 2 == 0 else "        gpu_nodes: null\n"))
open(f"{work}/fleet.yaml", "w").write("".join(out))
world = open("fixtures/sim/default.yaml").read()
world = world.replace("operation_latency_ms: 150", "operation_latency_ms: 0")
world = re.sub(r"(\n    [a-z0-9.\-]+): [0-9]+( *#.*)?", r"\1: unlimited", world)
open(f"{work}/world.yaml", "w").write(world)
EOF

port=$((20000 + RANDOM % 20000))
mport=$((port + 1))
"$bin" sim --listen "127.0.0.1:$port" --metrics "127.0.0.1:$mport" --world "$work/world.yaml" \
  --token bench >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do grep -q "^  tenant:" "$work/sim.log" 2>/dev/null && break; sleep 0.1; done
tenant="$(awk '/^  tenant:/ {print $2}' "$work/sim.log")"
export NEBIUS_ENDPOINT="http://127.0.0.1:$port" NEBIUS_IAM_TOKEN=bench FLEETBOT_TENANT_ID="$tenant"
export FLEETBOT_INVENTORY="$work/inventory.sqlite"

calls() { # the simulator's own count of the gRPC calls it answered
  curl -s "http://127.0.0.1:$mport/metrics" | awk '/^fleetbot_sim_calls_total/ {s += $2} END {print s + 0}'
}
kube() { # and of the requests its clusters' Kubernetes API answered
  curl -s "http://127.0.0.1:$mport/metrics" | awk '/^fleetbot_sim_kube_requests_total/ {s += $2} END {print s + 0}'
}
reads() { # and of the clusters whose Kubernetes objects it brought in line with the cloud
  curl -s "http://127.0.0.1:$mport/metrics" | awk '/^fleetbot_sim_kube_cluster_reads_total/ {print $2 + 0}'
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
hz="$(getconf CLK_TCK)"
run() { # label, then the command: wall, client CPU, simulator CPU
  local label="$1"; shift
  local s0 t0 t1 s1
  s0="$(ticks "$sim_pid")"; t0="$(date +%s.%N)"
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$work/$label.out" 2>"$work/$label.err"
  t1="$(date +%s.%N)"; s1="$(ticks "$sim_pid")"
  read -r user sys <"$work/time"
  printf '%-10s wall %6.1f s  client CPU %6.2f s  simulator CPU %6.2f s  simulator RSS %s MB\n' \
    "$label" "$(echo "$t1 - $t0" | bc)" "$(echo "$user + $sys" | bc)" \
    "$(echo "($s1 - $s0) / $hz" | bc -l)" "$(rss_mb "$sim_pid")"
}

clusters=$((projects * 4))
echo "fleet: $projects projects × 4 clusters = $clusters clusters; $(nproc) cores; $(date -u +%F)"
run deploy "$bin" deploy --yes --spec "$work/fleet.yaml"
sleep 3 # the last reconciles after the deploy returned
echo "deploy     $(reads) cluster reads by the simulator's Kubernetes side"
s0="$(ticks "$sim_pid")"; sleep 10; s1="$(ticks "$sim_pid")"
printf '%-10s simulator CPU %.2f %% of a core over 10 s, RSS %s MB\n' idle \
  "$(echo "($s1 - $s0) * 100 / $hz / 10" | bc -l)" "$(rss_mb "$sim_pid")"
c0="$(calls)"; k0="$(kube)"; r0="$(reads)"
run redeploy "$bin" deploy --yes --spec "$work/fleet.yaml"
echo "redeploy   $(( $(calls) - c0 )) gRPC calls, $(( $(kube) - k0 )) Kubernetes API requests, $(( $(reads) - r0 )) cluster reads"
c0="$(calls)"
run liveplan "$bin" plan --live --spec "$work/fleet.yaml"
echo "liveplan   $(( $(calls) - c0 )) gRPC calls ($(( ($(calls) - c0) * 1000 / clusters )) per 1,000 clusters)"
tail -n 3 "$work/redeploy.out"
tail -n 1 "$work/liveplan.out"
# A merge that changes one cluster of the fleet: team-0/c0 grows its CPU pool to 2 nodes.
python3 - "$work" <<'EOF2'
import sys
work = sys.argv[1]
text = open(f"{work}/fleet.yaml").read()
one = text.replace("  - name: team-0\n    clusters:\n      - name: c0\n",
                   "  - name: team-0\n    clusters:\n      - name: c0\n"
                   "        cpu_nodes: {count: 2, platform: cpu-d3, preset: 16vcpu-64gb}\n", 1)
assert one != text
open(f"{work}/fleet-one.yaml", "w").write(one)
EOF2
c0="$(calls)"; k0="$(kube)"; r0="$(reads)"
run changeone "$bin" deploy --yes --spec "$work/fleet-one.yaml"
sleep 1 # the tick that follows the last operation
echo "changeone  $(( $(calls) - c0 )) gRPC calls, $(( $(kube) - k0 )) Kubernetes API requests, $(( $(reads) - r0 )) cluster reads"
grep -E "^Plan:|team-0/c0" "$work/changeone.out" | head -n 3

kill "$sim_pid" 2>/dev/null || true
embedded() { # label, then the command, on the embedded default with the same world
  local label="$1"; shift
  env -u NEBIUS_ENDPOINT -u NEBIUS_IAM_TOKEN -u FLEETBOT_TENANT_ID \
    FLEETBOT_SIM_WORLD="$work/world.yaml" FLEETBOT_SIM_STATE="$work/embedded.json" \
    FLEETBOT_INVENTORY="$work/embedded.sqlite" \
    /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" >"$work/$label.out" 2>"$work/$label.err"
  read -r wall user sys rss <"$work/time"
  printf '%-10s wall %6.1f s  CPU %6.2f s  peak RSS %s MB\n' "$label" "$wall" \
    "$(echo "$user + $sys" | bc)" "$((rss / 1024))"
}
echo "embedded default:"
embedded e-deploy "$bin" deploy --yes --spec "$work/fleet.yaml"
embedded e-redeploy "$bin" deploy --yes --spec "$work/fleet.yaml"
embedded e-liveplan "$bin" plan --live --spec "$work/fleet.yaml"
tail -n 1 "$work/e-redeploy.out"
