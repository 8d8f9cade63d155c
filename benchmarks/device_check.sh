#!/usr/bin/env bash
# One command, two parts, each time-boxed (see benchmarks/device_check.py and benchmarks/README.md):
#   bash benchmarks/device_check.sh                      # GPU: check (~3 min) + MLM-vs-TACO repro (~3 min)
#   bash benchmarks/device_check.sh --part check         # or --part repro: one part alone
#   bash benchmarks/device_check.sh --device cpu         # toy sizes on CPU (tested: tests/test_device_check.py)
#   python benchmarks/device_check.py --prepare          # here, before the loan: pack the carried corpus + GLUE
#   python benchmarks/device_check.py --dry-run          # what would be carried, and its size (<= 64 MiB)
# Writes device_check.json, device_check.md and device_check.png to $OUT if set, else benchmarks/results/.
# Needs no network and no `pip install` of the project: the tree is put on PYTHONPATH. Where
# `datasets` is missing (the lent GPU machine), wheels carried in .whl/ (benchmarks/device_wheels.sh)
# are installed into a scratch folder first (.whl/*.whl; if that set does not import there, the
# fallback set .whl/fallback/*.whl); without them the repro (and resume, finetune) are skipped.
set -u
cd "$(dirname "$0")/.." || exit 2
PY=${PYTHON:-python3}
EXTRA=""
try_wheels() {  # $1: folder of wheels, $2: target, $3: the pyarrow major version that set needs;
    # succeeds when the machine's pyarrow is new enough and datasets imports with them
    ls "$1"/*.whl >/dev/null 2>&1 || return 1
    "$PY" -c "import pyarrow, sys; sys.exit(int(pyarrow.__version__.split('.')[0]) < $3)" 2>/dev/null || return 1
    rm -rf "$2"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$2" "$1"/*.whl \
        && PYTHONPATH="$2${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c "import datasets" 2>/dev/null
}
if ! "$PY" -c "import datasets" >/dev/null 2>&1 && ls .whl/*.whl >/dev/null 2>&1; then
    SITE=${TMPDIR:-/tmp}/taco-device-site
    if try_wheels .whl "$SITE" 24; then  # datasets 5.2.0: pyarrow >= 24
        EXTRA=$SITE
    elif try_wheels .whl/fallback "$SITE-fallback" 21; then  # datasets 4.4.2: pyarrow >= 21
        EXTRA=$SITE-fallback
        echo "device_check.sh: the primary wheels did not import here; using .whl/fallback" >&2
    else
        echo "device_check.sh: installing the carried wheels failed; the repro, resume and finetune will be skipped" >&2
    fi
fi
export PYTHONPATH="$PWD${EXTRA:+:$EXTRA}${PYTHONPATH:+:$PYTHONPATH}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
# hard stop a little past the parts' own budgets (GPU: 185 s check + 185 s repro; the CPU toy mode
# 700 + 420 s), so a hang never eats the lease; on SIGTERM the running part is recorded as killed and
# the summary written
HARD=420
case " $* " in *" --device cpu "*|*" --device=cpu "*) HARD=1200 ;; esac
exec timeout -k 10 "${DEVICE_CHECK_HARD_TIMEOUT:-$HARD}" "$PY" benchmarks/device_check.py "$@"
