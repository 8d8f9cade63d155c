#!/bin/bash
# seeds 4-6 for the asis and mean cells of the CoLA diagnosis (same command as run.sh, --seed 4 5 6)
cd /work/main
D=/work/exp/diag
run() {
  local name=$1 lr=$2 out=$D/runs/$1/lr-$2
  [ -f $out/cola/seed-6/metrics.json ] && return 0
  OMP_NUM_THREADS=1 python -m taco finetune --glue-source local --glue-dir /work/shared/data/glue --max-length 128 --batch-size 32 \
    --epochs 3 --warmup-steps 30 --dropout 0.1 --report-rule last --max-train-samples 5000 --max-eval-samples 2000 --data-seed 0 \
    --lr $lr --no-test-predictions --no-progress --task cola --checkpoint $D/ckpt/$name --seed 4 5 6 --output "$out/{task}/seed-{seed}" > $D/logs/$name-$lr-more.log 2>&1
}
jobs=(); for lr in 0.001 0.0003; do for arm in mlm control taco; do for v in asis mean; do jobs+=("$arm-$v $lr"); done; done; done
for ((i=0;i<${#jobs[@]};i+=2)); do run ${jobs[$i]} & run ${jobs[$((i+1))]} & wait; echo "$(date +%T) more ${jobs[$i]} / ${jobs[$((i+1))]}" >> $D/progress.log; done
echo more-finished >> $D/progress.log
