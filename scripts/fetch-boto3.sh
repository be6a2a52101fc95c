#!/usr/bin/env bash
# Installs boto3 from PyPI, pinned by version and SHA-256 with every dependency, into its own
# virtual environment under target/tools/, for the test that holds the simulator's S3
# endpoint to an S3 client no one here wrote (tests/s3_sim.rs, tests/s3_boto3.py).
# Idempotent: with the pinned version in place it does nothing and needs no network.
# Prints the virtual environment's python path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="1.44.8"
DEST="${FLEETBOT_TOOLS:-target/tools}/boto3-$VERSION"
PYTHON="$DEST/bin/python"

if [ -x "$PYTHON" ] && "$PYTHON" -c "import boto3, sys; sys.exit(boto3.__version__ != '$VERSION')" 2>/dev/null; then
  echo "$PWD/$PYTHON"
  exit 0
fi
rm -rf "$DEST"
python3 -m venv "$DEST" >&2
cat >"$DEST/requirements.txt" <<REQUIREMENTS
boto3==$VERSION --hash=sha256:099caf21553bbbfef118904aa02fadb8776a534704cf00bede0ed9f29a4da88e
botocore==1.44.8 --hash=sha256:76342a76c338701db80dcb8afe1c9bd079283d6fffbb9d881442abb02a215043
jmespath==1.1.0 --hash=sha256:a5663118de4908c91729bea0acadca56526eb2698e83de10cd116ae0f4e97c64
python-dateutil==2.9.0.post0 --hash=sha256:a8b2bc7bffae282281c8140a97d3aa9c14da0b136dfe83f850eea9a5f7470427
s3transfer==0.19.3 --hash=sha256:24eb7535804306355e31c952a90022bf5b2f9d760f9a11062c7493a217c08553
six==1.17.0 --hash=sha256:4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274
urllib3==2.8.0 --hash=sha256:0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3
REQUIREMENTS
"$DEST/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
  --only-binary=:all: -r "$DEST/requirements.txt" >&2
"$PYTHON" -c "import boto3; print('boto3', boto3.__version__)" >&2
echo "$PWD/$PYTHON"
