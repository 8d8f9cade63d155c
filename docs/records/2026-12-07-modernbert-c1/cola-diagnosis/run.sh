#!/bin/bash
# ModernBERT-tiny CoLA diagnosis: what the classifier reads. Variants of each checkpoint (copies):
#   asis      the checkpoint as the suite fine-tunes it (classifier_pooling cls; head.dense/head.norm loaded from the MLM head)
#   mean      config.json classifier_pooling "mean" (ModernBertForSequenceClassification's mean over tokens)
#   headinit  head.* dropped from model.safetensors: the classification head's dense+norm start from the seeded init
# Fine-tuning exactly as the suite's finetune_checkpoint rule (cpu-real's block), CoLA, lr 3e-4 and 1e-3, seeds 1-3.
set -e
cd /work/main
R=/work/exp/cpu-real/pretrain/modernbert_tiny; D=/work/exp/diag
mk() {  # arm ckpt
  local arm=$1 ck=$2
  for v in asis mean headinit; do
    local dst=$D/ckpt/$arm-$v; [ -d $dst ] && continue
    mkdir -p $dst; cp -r $ck/. $dst/
    if [ $v = mean ]; then python - "$dst/config.json" <<'PY'
import json,sys; p=sys.argv[1]; c=json.load(open(p)); c["classifier_pooling"]="mean"; json.dump(c,open(p,"w"),indent=2)
PY
    fi
    if [ $v = headinit ]; then python - "$dst/model.safetensors" <<'PY'
import sys; from safetensors.torch import load_file, save_file
p=sys.argv[1]; t=load_file(p); t={k:v for k,v in t.items() if not k.startswith("head.")}; save_file(t,p,metadata={"format":"pt"})
PY
    fi
  done
}
mk control $R/control/data-1.0/step-0
mk mlm $R/mlm/data-1.0/step-4000
mk taco $R/taco/data-1.0/step-4000
run() {  # name lr
  local name=$1 lr=$2
  local out=$D/runs/$name/lr-$lr
  [ -f $out/cola/seed-3/metrics.json ] && return 0
  OMP_NUM_THREADS=1 python -m taco finetune --glue-source local --glue-dir /work/shared/data/glue --max-length 128 --batch-size 32 \
    --epochs 3 --warmup-steps 30 --dropout 0.1 --report-rule last --max-train-samples 5000 --max-eval-samples 2000 --data-seed 0 \
    --lr $lr --no-test-predictions --no-progress --task cola --checkpoint $D/ckpt/$name --seed 1 2 3 --output "$out/{task}/seed-{seed}" > $D/logs/$name-$lr.log 2>&1
}
mkdir -p $D/logs
jobs=()
for lr in 0.001 0.0003; do for arm in mlm control taco; do for v in asis mean headinit; do jobs+=("$arm-$v $lr"); done; done; done
# two at a time, one core each
for ((i=0;i<${#jobs[@]};i+=2)); do
  run ${jobs[$i]} & 
  [ -n "${jobs[$((i+1))]}" ] && run ${jobs[$((i+1))]} &
  wait
  echo "$(date +%T) done ${jobs[$i]} / ${jobs[$((i+1))]}" >> $D/progress.log
done
for arm in control mlm taco; do
  [ -f $D/probe/$arm/probe.json ] || OMP_NUM_THREADS=2 python -m taco probe --checkpoint $D/ckpt/$arm-asis --task cola sst2 \
    --glue-source local --glue-dir /work/shared/data/glue --output $D/probe/$arm > $D/logs/probe-$arm.log 2>&1
done
echo finished >> $D/progress.log
