#!/usr/bin/env bash
# cargo-deny against the committed policy (deny.toml): licences, bans and sources by default,
# which need no network beyond crates.io. cargo-deny itself is installed once, pinned, under
# target/tools/cargo-deny (CI caches target/), and reused while its version matches.
#
#   scripts/deny.sh                 # licenses bans sources (offline from GitHub)
#   scripts/deny.sh advisories      # needs GitHub: the RustSec database is a git clone
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.20.2
ROOT=target/tools/cargo-deny
BIN="$ROOT/bin/cargo-deny"

if [[ ! -x "$BIN" ]] || [[ "$("$BIN" --version 2>/dev/null)" != "cargo-deny $VERSION" ]]; then
  echo "deny: installing cargo-deny $VERSION into $ROOT"
  cargo install --locked --root "$ROOT" --version "$VERSION" cargo-deny
fi
if [[ $# -eq 0 ]]; then
  set -- licenses bans sources
fi
"$BIN" --locked check --hide-inclusion-graph "$@"
