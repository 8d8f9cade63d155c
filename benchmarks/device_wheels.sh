#!/usr/bin/env bash
# Download, on a machine with PyPI access, the wheels the lent GPU machine lacks (datasets and the two
# packages it needs beyond that machine's image: dill, multiprocess) into .whl/ for the device tool's
# `carry: [".whl", "benchmarks/carry"]`; benchmarks/device_check.sh installs them there. ~1.8 MB.
# Primary set: the versions this suite is tested with (datasets 5.2.0 needs pyarrow >= 24 and
# huggingface-hub >= 1.31). The machine's pyarrow version is not listed in its notes, so a fallback set
# for an older pyarrow (datasets 4.4.2: pyarrow >= 21, huggingface-hub < 2) goes to .whl/fallback/;
# device_check.sh uses it only when the primary set does not import there. Both are ignored by git.
set -eu
cd "$(dirname "$0")/.."
dl() {
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d "$@"
}
dl .whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
dl .whl/fallback datasets==4.4.2 dill==0.4.0 multiprocess==0.70.18
ls -la .whl .whl/fallback
