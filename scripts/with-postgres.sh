#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests: a fresh cluster (initdb) in a temporary directory,
# listening only on a unix socket inside it (no TCP port, so nothing to collide with), with
# durability switched off because the data is thrown away. It exports
# FLEETBOT_TEST_POSTGRES_URL, which the PostgreSQL tests need.
#
#   scripts/with-postgres.sh CMD [ARG…]       start, run CMD, stop (also on failure or ^C);
#                                             exits with CMD's status
#   eval "$(scripts/with-postgres.sh start)"  start; prints the `export` lines to eval
#   scripts/with-postgres.sh stop [DIR]       stop the cluster `start` made (DIR defaults to
#                                             $FLEETBOT_TEST_POSTGRES_DIR) and delete it
#
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user (made
# by the Debian package), or as a system user `fleetbot-pg` created for it. The binaries come
# from FLEETBOT_PG_BINDIR, /usr/lib/postgresql/*/bin, pg_config or PATH; when none is found
# and apt-get is available, `apt-get install -y postgresql` installs them.
set -euo pipefail

log() { echo "with-postgres: $*" >&2; }

find_bindir() {
  local d
  if [[ -n "${FLEETBOT_PG_BINDIR:-}" && -x "${FLEETBOT_PG_BINDIR}/initdb" ]]; then
    echo "$FLEETBOT_PG_BINDIR"
    return 0
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [[ -x "$d/initdb" && -x "$d/pg_ctl" ]]; then
      echo "$d"
      return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir)"
    if [[ -x "$d/initdb" ]]; then
      echo "$d"
      return 0
    fi
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

install_postgres() {
  if ! command -v apt-get >/dev/null 2>&1; then
    log "no PostgreSQL binaries found and no apt-get to install them; set FLEETBOT_PG_BINDIR"
    exit 1
  fi
  local sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    sudo=(sudo)
  fi
  log "PostgreSQL binaries not found: installing the postgresql package"
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq postgresql >&2
}

# The user the server runs as ("" means the current user).
server_user() {
  if [[ "$(id -u)" != 0 ]]; then
    echo ""
  elif id postgres >/dev/null 2>&1; then
    echo postgres
  else
    if ! id fleetbot-pg >/dev/null 2>&1; then
      log "creating the unprivileged system user fleetbot-pg to run PostgreSQL"
      useradd --system --no-create-home --shell /usr/sbin/nologin fleetbot-pg >&2
    fi
    echo fleetbot-pg
  fi
}

as_user() {
  local user="$1"
  shift
  if [[ -z "$user" ]]; then
    "$@"
  elif command -v runuser >/dev/null 2>&1; then
    runuser -u "$user" -- "$@"
  else
    su "$user" -s /bin/sh -c "$(printf '%q ' "$@")"
  fi
}

cmd_start() {
  local started bindir user dir
  started=$(date +%s%N)
  bindir="$(find_bindir)" || {
    install_postgres
    bindir="$(find_bindir)" || {
      log "PostgreSQL binaries still not found after installing"
      exit 1
    }
  }
  user="$(server_user)"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/fleetbot-pg.XXXXXX")"
  if [[ -n "$user" ]]; then
    chown "$user" "$dir"
  fi
  as_user "$user" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync \
    >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    exit 1
  }
  # -h '' : no TCP listener; -k: the socket lives in the private directory.
  if ! as_user "$user" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-h '' -k '$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c shared_buffers=64MB" \
    start >/dev/null; then
    cat "$dir/server.log" >&2 || true
    rm -rf "$dir"
    exit 1
  fi
  local version
  version="$("$bindir/postgres" --version 2>/dev/null || echo PostgreSQL)"
  local took_ms=$((($(date +%s%N) - started) / 1000000))
  log "$version up in ${took_ms} ms (socket in $dir, user ${user:-$(id -un)})"
  printf 'export FLEETBOT_TEST_POSTGRES_URL=%q\n' "postgres://postgres@localhost/postgres?host=$dir"
  printf 'export FLEETBOT_TEST_POSTGRES_DIR=%q\n' "$dir"
  printf 'export FLEETBOT_TEST_POSTGRES_BINDIR=%q\n' "$bindir"
}

cmd_stop() {
  local dir="${1:-${FLEETBOT_TEST_POSTGRES_DIR:-}}"
  if [[ -z "$dir" ]]; then
    log "stop: no directory given and FLEETBOT_TEST_POSTGRES_DIR is unset"
    return 0
  fi
  # Only ever delete what `start` made.
  case "$(basename "$dir")" in
  fleetbot-pg.*) ;;
  *)
    log "stop: $dir is not a directory this script made; leaving it"
    return 1
    ;;
  esac
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    local bindir owner
    bindir="${FLEETBOT_TEST_POSTGRES_BINDIR:-$(find_bindir)}"
    owner="$(stat -c %U "$dir/data")"
    [[ "$owner" == "$(id -un)" ]] && owner=""
    as_user "$owner" "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  log "stopped and removed $dir"
}

case "${1:-}" in
start)
  cmd_start
  ;;
stop)
  shift
  cmd_stop "$@"
  ;;
"" | -h | --help)
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
*)
  eval "$(cmd_start)"
  trap 'cmd_stop "$FLEETBOT_TEST_POSTGRES_DIR"' EXIT
  trap 'exit 130' INT TERM
  status=0
  "$@" || status=$?
  exit "$status"
  ;;
esac
