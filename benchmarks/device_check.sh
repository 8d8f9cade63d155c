#!/usr/bin/env bash
# One-command device check (see benchmarks/device_check.py and benchmarks/README.md):
#   bash benchmarks/device_check.sh                 # GPU: <= 5 minutes on one H200
#   bash benchmarks/device_check.sh --device cpu    # toy sizes on CPU (tested in CI)
# Writes device_check.json and device_check.md to $OUT if set, else benchmarks/results/.
# Needs no network and no `pip install` of the project: the tree is put on PYTHONPATH. Where
# `datasets` is missing (the lent GPU machine), wheels carried in .whl/ (benchmarks/device_wheels.sh)
# are installed into a scratch folder first; without them the resume and finetune parts are skipped.
set -u
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
EXTRA=""
if ! "$PY" -c "import datasets" >/dev/null 2>&1 && ls .whl/*.whl >/dev/null 2>&1; then
    SITE=${TMPDIR:-/tmp}/taco-device-site
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl; then
        EXTRA=$SITE
    else
        echo "device_check.sh: installing the carried wheels failed; resume and finetune will be skipped" >&2
    fi
fi
export PYTHONPATH="$PWD${EXTRA:+:$EXTRA}${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1
# hard stop a little past the check's own budget (285 s on GPU, 900 s in the CPU toy mode), so a hang
# never eats the lease; on SIGTERM the check records the running part as killed and writes its summary
HARD=330
case " $* " in *" --device cpu "*|*" --device=cpu "*) HARD=960 ;; esac
exec timeout -k 10 "${DEVICE_CHECK_HARD_TIMEOUT:-$HARD}" "$PY" benchmarks/device_check.py "$@"
