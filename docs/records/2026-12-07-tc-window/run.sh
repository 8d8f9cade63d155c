#!/usr/bin/env bash
# issue 64 item 6: BERT-tiny TACO with non-local positives (W = 255 spans the 128-token block) against W = 5,
# each at TACO's recorded recipe (lr 3.74e-3, warm-up 200, dropout 0.1; docs/records/2026-12-06-cpu-real-tuning/),
# 1,500 steps of the 4,000-step schedule, validation and the context probe every 250 steps.
# From the worktree pinned at 3472370; two lanes (one thread each) on the 2-core VM, nothing else beside them.
# usage: run.sh "W SEED" ...   (one lane: its runs in order)
set -euo pipefail
cd /work/exp/wt
B=/work/exp/mb6/data/blocks/data-1.0
for spec in "$@"; do
  set -- $spec; W=$1; S=$2; O=/work/exp/window/w$W/seed-$S
  [ -f $O/step-1500/eval.json ] && continue
  OMP_NUM_THREADS=1 PYTHONPATH=/work/exp/wt python -m taco pretrain --size tiny --size-name tiny --objective taco --max-steps 4000 \
    --warmup-steps 200 --per-device-batch-size 32 --grad-accum 1 --lr 0.00374 --weight-decay 0.01 \
    --mlm-probability 0.15 --dropout 0.1 --tc-weight 1.0 --tc-temperature 0.07 --tc-window $W --tc-negatives 50 \
    --precision fp32 --seed $S --until 1500 --eval-every 250 --save-every 500 --logging-steps 20 --no-progress \
    --report-to none --blocks $B --state-dir /work/exp/window/.state/w$W/seed-$S --output $O/step-1500 \
    > /work/exp/window/logs/w$W-seed-$S.log 2>&1
  echo "done W=$W seed=$S $(date -u +%H:%M:%S)"
done
