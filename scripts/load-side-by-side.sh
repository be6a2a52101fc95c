#!/usr/bin/env bash
# fleetbot's webhook intake measured side by side with a Probot app that only acknowledges
# (issue 18, item 5): the same open-loop driver (examples/load_webhooks), the same signed
# GitHub-shaped deliveries, the same rates, in one run on one machine. For each scenario and
# rate it runs the driver against a freshly started `fleetbot serve` (temporary SQLite store)
# and against a freshly started Probot 13.4.7 (scripts/probot-ack, installed from npm by this
# script into target/tools/probot-ack, pinned by its package-lock.json), then prints one
# Markdown table, and each target's saturation rate: the highest rate at which p99 stays under
# 100 ms with no errors (coarsely from the table, then by a ladder of rates).
#
#   scripts/load-side-by-side.sh                      # the full run (about 25 minutes here)
#   scripts/load-side-by-side.sh --seconds 3 --rates 100 --backoff-depth 200 --saturation none
#
# Options (each also an environment variable):
#   --seconds S            seconds per run (LOAD_SECONDS, default 10)
#   --rates "R ..."        deliveries a second (LOAD_RATES, default "500 1000 2000")
#   --scenarios "S ..."    (LOAD_SCENARIOS, default "pull_request-busy pull_request-many
#                          issue_comment check_run backoff"; also issue_comment-plan, ping;
#                          backoff = pull_request-busy behind --backoff-depth jobs in backoff)
#   --backoff-depth N      jobs queued behind the backed-off one (LOAD_BACKOFF_DEPTH, 10000)
#   --targets "T ..."      fleetbot and/or probot (LOAD_TARGETS, default both)
#   --saturation "S ..."   scenarios to find the saturation rate of by a ladder of rates, or
#                          none (LOAD_SATURATION, default pull_request-busy)
#   --saturation-seconds S seconds per ladder step (LOAD_SATURATION_SECONDS, default --seconds:
#                          a queue that grows takes seconds to hurt, so short steps flatter)
#   --out FILE             also write the report there (LOAD_OUT)
#   --no-build             use the binaries already built
#
# LOAD_FLEETBOT_BIN and LOAD_DRIVER_BIN name other binaries than target/release's (with
# --no-build: e.g. copies taken when a shared target directory may be rebuilt meanwhile).
#
# Needs cargo, node (18 or later) and npm (the registry, the first time), openssl and
# python3. The driver and both servers share the machine's cores; every figure is a loopback
# figure. The full driver output of every run goes to target/load-side-by-side/runs.log.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_SECONDS="${LOAD_SECONDS:-10}"
RATES="${LOAD_RATES:-500 1000 2000}"
SCENARIOS="${LOAD_SCENARIOS:-pull_request-busy pull_request-many issue_comment check_run backoff}"
DEPTH="${LOAD_BACKOFF_DEPTH:-10000}"
TARGETS="${LOAD_TARGETS:-fleetbot probot}"
SATURATION="${LOAD_SATURATION:-pull_request-busy}"
SATURATION_SECONDS="${LOAD_SATURATION_SECONDS:-}"
OUT="${LOAD_OUT:-}"
BUILD=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) RUN_SECONDS="$2"; shift 2 ;;
    --rates) RATES="$2"; shift 2 ;;
    --scenarios) SCENARIOS="$2"; shift 2 ;;
    --backoff-depth) DEPTH="$2"; shift 2 ;;
    --targets) TARGETS="$2"; shift 2 ;;
    --saturation) SATURATION="$2"; shift 2 ;;
    --saturation-seconds) SATURATION_SECONDS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "load-side-by-side: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$SATURATION" == none ]] && SATURATION=""
SATURATION_SECONDS="${SATURATION_SECONDS:-$RUN_SECONDS}"

TARGET_DIR="${CARGO_TARGET_DIR:-target}"
DRIVER="${LOAD_DRIVER_BIN:-$TARGET_DIR/release/examples/load_webhooks}"
FLEETBOT="${LOAD_FLEETBOT_BIN:-$TARGET_DIR/release/fleetbot}"
PROBOT_DIR="$TARGET_DIR/tools/probot-ack"
PROBOT_VERSION=13.4.7
LOG_DIR="$TARGET_DIR/load-side-by-side"
mkdir -p "$LOG_DIR"
RUNS_LOG="$LOG_DIR/runs.log"
: >"$RUNS_LOG"
started_at=$(date +%s)

say() { echo "load-side-by-side: $*" >&2; }

if [[ $BUILD == 1 ]]; then
  say "cargo build --release --bin fleetbot --example load_webhooks"
  cargo build --release --bin fleetbot --example load_webhooks
fi
[[ -x "$DRIVER" && -x "$FLEETBOT" ]] || { say "no $DRIVER or $FLEETBOT; build them first"; exit 1; }

# Probot from npm, exactly as the committed lock file pins it; installed once per lock file.
install_probot() {
  local want stamp="$PROBOT_DIR/.package-lock.sha256"
  want="$(sha256sum scripts/probot-ack/package-lock.json | cut -d' ' -f1)"
  mkdir -p "$PROBOT_DIR"
  cp scripts/probot-ack/package.json scripts/probot-ack/package-lock.json scripts/probot-ack/index.js "$PROBOT_DIR/"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$PROBOT_DIR/node_modules/probot" ]]; then
    say "probot $PROBOT_VERSION already installed in $PROBOT_DIR"
  else
    say "npm ci (probot $PROBOT_VERSION) into $PROBOT_DIR"
    # No install scripts run: nothing Probot needs builds anything.
    (cd "$PROBOT_DIR" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >&2
    echo "$want" >"$stamp"
  fi
  local have
  have="$(cd "$PROBOT_DIR" && node -p 'require("probot/package.json").version')"
  [[ "$have" == "$PROBOT_VERSION" ]] || { say "installed probot is $have, not $PROBOT_VERSION"; exit 1; }
}
[[ " $TARGETS " == *" probot "* ]] && install_probot

WORK="$(mktemp -d)"
probot_pid=""
# Runs happen in command substitutions (subshells, which do not run this shell's traps), and
# a background process ignores ^C in a script: the pid file lets the exit trap stop Probot.
stop_probot() {
  if [[ -n "$probot_pid" ]]; then
    kill -TERM "$probot_pid" 2>/dev/null || true
    wait "$probot_pid" 2>/dev/null || true
    probot_pid=""
  fi
  rm -f "$WORK/probot.pid"
}
on_exit() {
  if [[ -f "$WORK/probot.pid" ]]; then
    kill -TERM "$(cat "$WORK/probot.pid")" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap on_exit EXIT
# One throwaway webhook secret and App key for the whole run, never printed: the driver reads
# the secret from its environment, Probot from its own.
LOAD_WEBHOOK_SECRET="$(openssl rand -hex 24)"
export LOAD_WEBHOOK_SECRET
openssl genrsa -traditional -out "$WORK/probot-app-key.pem" 2048 2>/dev/null

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the Probot app on a free port; sets probot_pid and probot_port.
start_probot() {
  probot_port="$(free_port)"
  # Warnings only, as fleetbot runs (RUST_LOG=warn): a log line per request is not intake.
  # In its own directory, so Probot's dotenv reads no .env of the caller's; `exec` keeps the
  # pid the driver measures node's own.
  (cd "$PROBOT_DIR" && APP_ID=1 PRIVATE_KEY_PATH="$WORK/probot-app-key.pem" \
    WEBHOOK_SECRET="$LOAD_WEBHOOK_SECRET" HOST=127.0.0.1 PORT="$probot_port" LOG_LEVEL=warn \
    NODE_ENV=production exec node index.js) >>"$LOG_DIR/probot.log" 2>&1 &
  probot_pid=$!
  echo "$probot_pid" >"$WORK/probot.pid"
}

# One driver run: target, scenario, rate, seconds. Prints the driver's `result` fields
# (tab-separated, see examples/load_webhooks/main.rs), or nothing if it failed.
run_once() {
  local target="$1" scenario="$2" rate="$3" seconds="$4" event="$2" args output line
  [[ "$scenario" == backoff ]] && event=pull_request-busy
  args=(--rate "$rate" --seconds "$seconds" --event "$event" --name "$target" --tsv)
  [[ "$scenario" == backoff ]] && args+=(--prefill-backoff "$DEPTH")
  if [[ "$target" == probot ]]; then
    start_probot
    args+=(--url "http://127.0.0.1:$probot_port" --pid "$probot_pid"
      --webhook-path /api/github/webhooks --ready-path /ping)
  else
    args+=(--server "$FLEETBOT")
  fi
  say "$target $scenario $rate/s for $seconds s"
  # The driver exits 1 when any delivery failed; the figures say so, the run goes on.
  output="$("$DRIVER" "${args[@]}" 2>&1)" || true
  stop_probot
  printf '== %s %s %s/s %ss\n%s\n\n' "$target" "$scenario" "$rate" "$seconds" "$output" >>"$RUNS_LOG"
  line="$(grep $'^result\t' <<<"$output" | tail -n1 || true)"
  if [[ -z "$line" ]]; then
    say "  the driver gave no result (see $RUNS_LOG)"
    return 0
  fi
  printf '%s\n' "${line#result$'\t'}"
}

# Whether a result line meets the saturation bar: no errors, no GitHub timeouts, p99 < 100 ms.
passes() {
  local f
  IFS=$'\t' read -r -a f <<<"$1"
  [[ ${#f[@]} -ge 10 && "${f[5]}" == 0 && "${f[6]}" == 0 ]] && awk -v p="${f[9]}" 'BEGIN { exit !(p < 100) }'
}

# A scenario's name in the tables; `detail` says how deep the backoff queue was.
label() {
  local scenario="$1" detail="${2:-}"
  case "$scenario" in
    pull_request-busy) echo "pull_request, one busy PR" ;;
    pull_request-many) echo "pull_request, a PR each" ;;
    issue_comment) echo "issue_comment, no command" ;;
    issue_comment-plan) echo "issue_comment, /plan" ;;
    check_run) echo "check_run rerequested" ;;
    backoff) echo "pull_request, one busy PR, $detail" ;;
    *) echo "$scenario" ;;
  esac
}

# fleetbot's backoff queue is as deep as it reported; Probot keeps no queue, it was only sent
# the same deliveries first.
backoff_detail() {
  if [[ "$1" == fleetbot ]]; then echo "behind ${2:-$DEPTH} in backoff"; else echo "after $DEPTH sent"; fi
}

rows=()
declare -A coarse
for scenario in $SCENARIOS; do
  for target in $TARGETS; do coarse["$target $scenario"]="< ${RATES%% *}"; done
  for rate in $RATES; do
    for target in $TARGETS; do
      line="$(run_once "$target" "$scenario" "$rate" "$RUN_SECONDS")"
      if [[ -z "$line" ]]; then
        rows+=("| $target | $(label "$scenario" "$(backoff_detail "$target")") | $rate | (failed) | | | | | | |")
        continue
      fi
      IFS=$'\t' read -r name _ _ sent ok errors slow p50 p90 p99 max thr cpu cpu_per rss idle settle queued prefilled <<<"$line"
      depth="$(backoff_detail "$target" "$prefilled")"
      err="$errors"
      [[ "$slow" != 0 ]] && err="$errors ($slow > 10 s)"
      rows+=("| $name | $(label "$scenario" "$depth") | $rate | $p50 | $p99 | $err | $thr | $cpu_per | $rss | $idle |")
      passes "$line" && coarse["$target $scenario"]="≥ $rate"
    done
  done
done

# The ladder: doubling from 250 a second until a rate fails the bar, then two halvings of
# the gap; the last rate that passed is the saturation rate (within the last step).
saturation_rows=()
for scenario in $SATURATION; do
  for target in $TARGETS; do
    good=0 bad=0 rate=250
    while [[ $rate -le 8000 ]]; do
      line="$(run_once "$target" "$scenario" "$rate" "$SATURATION_SECONDS")"
      if [[ -n "$line" ]] && passes "$line"; then good=$rate; rate=$((rate * 2)); else bad=$rate; break; fi
    done
    if [[ $bad -gt 0 && $good -gt 0 ]]; then
      for _ in 1 2; do
        rate=$(((good + bad) / 2 / 50 * 50))
        [[ $rate -le $good ]] && break
        line="$(run_once "$target" "$scenario" "$rate" "$SATURATION_SECONDS")"
        if [[ -n "$line" ]] && passes "$line"; then good=$rate; else bad=$rate; fi
      done
    fi
    if [[ $bad -eq 0 ]]; then
      result="≥ $good (the ladder stops at 8000)"
    elif [[ $good -eq 0 ]]; then
      result="< 250"
    else
      result="$good (fails at $bad)"
    fi
    saturation_rows+=("| $target | $(label "$scenario" "$(backoff_detail "$target")") | $result |")
  done
done

elapsed=$(($(date +%s) - started_at))
report() {
  echo "Webhook intake side by side: fleetbot serve (release, SQLite, 2 workers) and Probot $PROBOT_VERSION"
  echo "(acknowledge only), $RUN_SECONDS s a run, open loop, latency from each request's due time,"
  echo "on $(nproc) cores shared by the driver and the server, $(date -u +%Y-%m-%d)."
  echo
  echo "| target | scenario | rate/s | p50 ms | p99 ms | errors | throughput/s | CPU ms/delivery | peak RSS MiB | idle CPU % |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Saturation rate (the highest rate with p99 < 100 ms and no errors), coarsely from the table:"
  echo
  echo "| target | scenario | saturation rate/s |"
  echo "|---|---|---|"
  for scenario in $SCENARIOS; do
    for target in $TARGETS; do
      echo "| $target | $(label "$scenario" "$(backoff_detail "$target")") | ${coarse["$target $scenario"]} |"
    done
  done
  if [[ ${#saturation_rows[@]} -gt 0 ]]; then
    echo
    echo "Saturation rate by a ladder of $SATURATION_SECONDS s runs (doubling from 250/s, then two halvings):"
    echo
    echo "| target | scenario | saturation rate/s |"
    echo "|---|---|---|"
    printf '%s\n' "${saturation_rows[@]}"
  fi
  echo
  echo "Each run starts its server afresh (fleetbot on an empty store, its GitHub a stand-in that"
  echo "answers 404, so each job ends after one call) and warms it up with 1,000 unmeasured"
  echo "deliveries of the run's kind, let settle (the backoff runs are warmed by their prefill)."
  echo "Errors: deliveries not answered 2xx (or not within the client's 30 s); in brackets those"
  echo "answered after more than 10 s, which GitHub would have given up on. CPU: the server"
  echo "process's user + system time while sending, over the deliveries sent. Idle CPU: the 5 s"
  echo "after the queue settled. Whole run: $((elapsed / 60)) min $((elapsed % 60)) s."
}
if [[ -n "$OUT" ]]; then report | tee "$OUT"; else report; fi
