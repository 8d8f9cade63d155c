#!/usr/bin/env bash
# Download, on a machine with PyPI access, the wheels the lent GPU machine lacks (datasets and the two
# packages it needs beyond that machine's image: dill, multiprocess) into .whl/ for the device tool's
# `carry: [".whl"]`; benchmarks/device_check.sh installs them there. ~0.9 MB. Versions: those this
# suite is tested with (datasets 5.2.0 needs huggingface-hub >= 1.31, pyarrow >= 24).
set -eu
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
ls -la .whl
