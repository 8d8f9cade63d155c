#!/usr/bin/env bash
# Issue 64.4: E1 on ModernBERT-tiny where MLM is healthy, with this VM's replicates beside the record's.
# From the repository root; R = the results folder of the runs (configs/cpu-real.yaml + cpu-real-families.yaml +
# the overlay in this folder, from the worktree pinned at 3472370).
set -euo pipefail
R=${1:-/work/exp/mb6}
O=docs/records/2026-12-07-modernbert-replicates
REC=docs/records/2026-12-07-modernbert-widened
SPEC=docs/records/2026-12-07-modernbert-c1/grid-1e-4-1e-2/analysis.json
SPACE='{"modernbert_tiny": {"learning_rate": {"log_uniform": [0.001, 0.03]}, "warmup_steps": [200, 400], "dropout": [0.0, 0.1]}}'
P=$R/pretrain/modernbert_tiny
python $O/reproduce.py $R > $O/reproduction.csv
NEW=$(ls -d $P/{mlm,taco}/data-1.0/pretrain-seed-*/step-{800,2000,4000} 2>/dev/null)
# the record's seeds 0-2 (another VM) with this VM's new seeds: the pooled decision
taco efficiency --curves $REC/efficiency_curves.csv --checkpoints $NEW --analysis $SPEC --tuning-spaces "$SPACE" \
  --tuning $REC/space-1e-3-3e-2/{mlm,taco}/choice.json --output-dir $O/pooled
# this VM's new seeds alone (descriptive at 2 runs per arm)
taco efficiency --checkpoints $NEW --analysis $SPEC --output-dir $O/this-vm
taco cpu-seconds $R --output $O/cpu_seconds.csv
rm -f $O/*/efficiency.pdf $O/*/*.html
