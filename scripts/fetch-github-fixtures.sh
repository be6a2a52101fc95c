#!/usr/bin/env bash
# Fetches GitHub's official REST and webhook descriptions and webhook examples for the fake-GitHub tests
# into target/github-fixtures/ (override with FLEETBOT_GITHUB_FIXTURES): `npm pack` of pinned
# versions, each tarball checked against its pinned sha512 integrity (the value
# `npm view <pkg>@<version> dist.integrity` prints), then only the needed files unpacked.
# Idempotent: with the files already in place and their stamp matching, it does nothing and
# needs no network; a cached, verified tarball is reused without downloading.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST="${FLEETBOT_GITHUB_FIXTURES:-target/github-fixtures}"

# name  version  integrity  files-to-extract (inside the tarball, space-separated)
PACKAGES=(
  "@octokit/openapi|23.0.2|sha512-pV8M7L9GY23AybNvTmo2nyjmpmnt6+2sRE/tqr0ZLQcPS4lnw7u5eZGNmwRNkBC3D7gZXbFx5AHzLUVRBXGDhg==|package/generated/api.github.com.json package/package.json"
  "@octokit/webhooks-examples|7.6.1|sha512-De6U3XB6O3DtCa7bKgCMzTHdeopqqZ6SNivMYJnK65ierKL1AnNIA0tkRYCRS7lwGT792d+Ps1WbfHlso6MynQ==|package/api.github.com/index.json package/package.json"
  # GitHub's webhook description: which permission lets an App subscribe to each event
  # (tests/github_manifest.rs holds deploy/github-app-manifest.json to it).
  "@octokit/openapi-webhooks|12.1.0|sha512-Z5eDsLCUNbx1zHpZb1LNQirADqdMTvWJQ/deahi0ws+tWWnwHXB+Pr4jfmM9OrETS9Y5iW8ZRu1fdbudObhLrg==|package/generated/api.github.com.json package/package.json"
)

mkdir -p "$DEST/cache"

integrity_of() {
  # npm's integrity: "sha512-" + base64 of the raw SHA-512 digest.
  printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"
}

for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r name version integrity files <<<"$entry"
  short="${name#@octokit/}"
  out="$DEST/$short-$version"
  stamp="$out/.integrity"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$integrity" ]]; then
    echo "fetch-github-fixtures: $name@$version already in $out"
    continue
  fi
  tarball="$DEST/cache/octokit-$short-$version.tgz"
  if [[ ! -f "$tarball" || "$(integrity_of "$tarball")" != "$integrity" ]]; then
    rm -f "$tarball"
    echo "fetch-github-fixtures: npm pack $name@$version"
    (cd "$DEST/cache" && npm pack --silent "$name@$version" >/dev/null)
  fi
  actual="$(integrity_of "$tarball")"
  if [[ "$actual" != "$integrity" ]]; then
    echo "fetch-github-fixtures: integrity mismatch for $name@$version" >&2
    echo "  expected $integrity" >&2
    echo "  got      $actual" >&2
    rm -f "$tarball"
    exit 1
  fi
  rm -rf "$out"
  mkdir -p "$out"
  # shellcheck disable=SC2086 # $files is a list of paths
  tar -xzf "$tarball" -C "$out" $files
  printf '%s' "$integrity" >"$stamp"
  echo "fetch-github-fixtures: $name@$version unpacked into $out"
done
