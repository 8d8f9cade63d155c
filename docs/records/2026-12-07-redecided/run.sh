#!/usr/bin/env bash
# Issue 64.1-2: the committed records decided again by the current rule (the flat-target check, the verdict's
# scope, the whole rule's detectable gap); the records themselves stay as written. From the repository root.
set -euo pipefail
D=docs/records
O=${1:-$D/2026-12-07-redecided}  # the output folder (default: this record, rewritten with the same numbers)
# BERT-tiny E1 (3 runs per arm, re-tuned choices) with its fine-tuned claims (S1, C1, C2, E2)
taco efficiency --curves $D/2026-12-06-cpu-real-e1-retuned/efficiency_curves.csv \
  --analysis $D/2026-12-06-cpu-real-finetune-retuned/analysis.json \
  --aggregate-dir $D/2026-12-06-cpu-real-finetune-retuned/aggregate --output-dir $O/bert-tiny
taco claims --aggregate-dir $D/2026-12-06-cpu-real-finetune-retuned/aggregate \
  --analysis $D/2026-12-06-cpu-real-finetune-retuned/analysis.json \
  --efficiency $O/bert-tiny/efficiency.csv --output-dir $O/bert-tiny
# ModernBERT-tiny E1 (3 runs per arm, its own space's choices) with its fine-tuned claims at the widened grid
taco efficiency --curves $D/2026-12-07-modernbert-widened/efficiency_curves.csv \
  --analysis $D/2026-12-07-modernbert-c1/grid-1e-4-1e-2/analysis.json \
  --aggregate-dir $D/2026-12-07-modernbert-c1/grid-1e-4-1e-2/aggregate --output-dir $O/modernbert-tiny
taco claims --aggregate-dir $D/2026-12-07-modernbert-c1/grid-1e-4-1e-2/aggregate \
  --analysis $D/2026-12-07-modernbert-c1/grid-1e-4-1e-2/analysis.json \
  --efficiency $O/modernbert-tiny/efficiency.csv --output-dir $O/modernbert-tiny
# the long pair (one run per arm to 16,000 steps, BERT-tiny, old recipe): descriptive
taco efficiency --curves $D/2026-12-05-cpu-real-long/efficiency_curves.csv --output-dir $O/bert-tiny-long
# the figures and HTML copies are left out of the record (the CSV and Markdown are the record)
rm -f $O/*/efficiency.pdf $O/*/*.html
