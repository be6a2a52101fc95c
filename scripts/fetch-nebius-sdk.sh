#!/usr/bin/env bash
# Installs the official Nebius Python SDK from PyPI, pinned by version and SHA-256 with every
# dependency, into its own virtual environment under target/tools/, for the conformance test
# that drives the simulator with it (tests/sdk_sim.rs, tests/nebius_sdk.py). Wheels are pinned
# for CPython 3.11-3.13 on x86-64 Linux (manylinux); another platform needs its hashes added.
# Idempotent: with the pinned version in place it does nothing and needs no network.
# Prints the virtual environment's python path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="0.6.29"
DEST="${FLEETBOT_TOOLS:-target/tools}/nebius-sdk-$VERSION"
PYTHON="$DEST/bin/python"

if [ -x "$PYTHON" ] && "$PYTHON" -c "import importlib.metadata as m, sys; sys.exit(m.version('nebius') != '$VERSION')" 2>/dev/null; then
  echo "$PWD/$PYTHON"
  exit 0
fi
rm -rf "$DEST"
python3 -m venv "$DEST" >&2
cat >"$DEST/requirements.txt" <<'REQUIREMENTS'
nebius==0.6.29 --hash=sha256:151957804344ae95996369c8cd2fbcac9d14b27188a46dff777c4520a86b7fd0
aiohappyeyeballs==2.7.1 --hash=sha256:9243213661e29250eb41368e5daa826fc017156c3b8a11440826b2e3ed376472
aiohttp==3.14.5 --hash=sha256:50a195903119008fe9cc68710535eb37f556ffffd6a7759afe70a2c145587045 --hash=sha256:20f085697d7e911f1f73c43ed03fafbed1e7121797e2eb5428efa80398060584 --hash=sha256:1ffa3a523a36d8628f98c06492ae16a31a23d14c0b4ec721757b477319f656d6
aiosignal==1.4.0 --hash=sha256:053243f8b92b990551949e63930a839ff0cf0b0ebbe0597b0f3fb19e1a0fe82e
attrs==26.1.0 --hash=sha256:c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309
certifi==2026.10.19.post1 --hash=sha256:1324c476b4811eff41a8bc2122cd0bbd4d9c7234c725446d99ab1612b3a7fdd2
cffi==2.1.1 --hash=sha256:34e261f78cb6ceaaa36f42f2613f4380d94d9c759a9c73c769ee6e0247364632 --hash=sha256:c1453022f490d2459a11819d83ad1d586e9ff65a12ac3e705ffebd46d3685dcf --hash=sha256:a931079504ecc49efed7744c476a5c343a92fabf66dec2db95edb1b2fdc770e2
cryptography==50.0.2 --hash=sha256:9dab55f57c74c3cad24c323bacbbd04be4705ba6eb0d92e920b1fc4837ed5079 --hash=sha256:4061c0079120205fb760c58acab6443e217307dcf05e3702cf970e0689972856
frozenlist==1.8.0 --hash=sha256:2552f44204b744fba866e573be4c1f9048d6a324dfe14475103fd51613eb1d1f --hash=sha256:494a5952b1c597ba44e0e78113a7266e656b9794eec897b19ead706bd7074383 --hash=sha256:fb30f9626572a76dfe4293c7194a09fb1fe93ba94c7d4f720dfae3b646b45027
grpcio==1.85.3 --hash=sha256:f2948333a1f462c0e559b5ea436655ed36822fa448f5713d6de2d483bed6e03f --hash=sha256:8266434d54c3442ebdba71d97e6f688b73dd00194bda6e1e35e57272afbd2d73 --hash=sha256:9d20015c0dfc91de7a9a037cc84c7a174e8fe62e6427f563f1e2e35ca10f3798
idna==3.20 --hash=sha256:ab7ae7122974553370f0bdb919e1a960b2cd1bc1ef0276416d896db81c14582c
multidict==7.2.1 --hash=sha256:3b7542fad2706595c1b1853b46f2c3c4ae5cc5a6252b7225f294d607a29e1bdf --hash=sha256:1fb8c1a3480c130c3a6422d5f16f3cad6552bf08c2089dd288ba7134649183b5 --hash=sha256:cd69c99affd1b4debc1f9a53058ea6e3a9b34f2e733840bb45891666cd8ede0a
portalocker==4.4.2 --hash=sha256:e661b91af34fc1806740f8e0e42990fe55cd85cbae55675ac48a400a9656a51b
propcache==0.5.4 --hash=sha256:6e9368e87a3efc285e559131092c5db643eb8e56de4ee42064d5baec22ef2bb5 --hash=sha256:2814ecd8e818f487bee4b0f921bc4d1c176cc5fc71ac0f072d0fa67eda4ac14b --hash=sha256:f85915e00dcb1cd9f2f890ead064ed40a27df06f0db65be427b29482ae357572
protobuf==7.36.2 --hash=sha256:89f23aa53c24553a2416fd4fd1ec06f74fa42b14b546d8883128813f775bbfd2
pycparser==3.12 --hash=sha256:a076f3f489b39b43ed13563a1dafe42447445bec2e294154ec5c57fcdda4c85e
PyJWT==2.15.1 --hash=sha256:42d59d631f7768a1028a64c7ff581a9bf7519804daf91fc5b6c56e30eec5e193
PyYAML==6.0.4 --hash=sha256:622aa875fa6533f25fedcffe23079357d65a690d462200afed5d8e9d0e01ebee --hash=sha256:93bfb2459195406a518e2f487a9bbf01df240175f31e06f5a252ac6734c7bbf0 --hash=sha256:50588147ab2c6a59b5f990a4905db80899a6c2bd197e046a6201f1e67587e794
typing_extensions==4.16.0 --hash=sha256:481caa481374e813c1b176ada14e97f1f67a4539ce9cfeb3f350d78d6370c2e8
yarl==1.25.1 --hash=sha256:d5add7b4ca7afeea91d52e4d4e4db3b1fe9885b71f07054560d8c4296b7441a2 --hash=sha256:c6f117789d22dce188e5754e8bc65b7e6ebf8cb73963b9fa761f672a5883769d --hash=sha256:be80550d9bfe83d9b62398a37081a90434e6df2d978ec345c3d2820de6beddab
REQUIREMENTS
"$DEST/bin/pip" install --quiet --disable-pip-version-check --require-hashes --no-deps \
  --only-binary=:all: -r "$DEST/requirements.txt" >&2
"$PYTHON" -c "import importlib.metadata as m; print('nebius', m.version('nebius'))" >&2
echo "$PWD/$PYTHON"
