"""Issue 64.4: does a re-run seed reproduce its recorded curve? This VM's seed 0 (MLM and TACO, ModernBERT-tiny,
the record's choices) against ../2026-12-07-modernbert-widened/efficiency_curves.csv, point by point, with the
record's between-seed SD at each step beside the difference. Usage: python reproduce.py RESULTS_DIR > reproduction.csv"""

import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
rec = pd.read_csv(HERE.parent / "2026-12-07-modernbert-widened" / "efficiency_curves.csv")
results = Path(sys.argv[1])
rows = []
for obj in ("mlm", "taco"):
    points = {}
    for budget in ("step-800", "step-2000", "step-4000"):
        ev = results / "pretrain" / "modernbert_tiny" / obj / "data-1.0" / budget / "eval.json"
        if ev.is_file():
            e = json.loads(ev.read_text())
            points.update({p["step"]: p for p in e.get("points", [])})
            points[e["step"]] = e
    r = rec[rec.objective == obj]
    for step in sorted(points):
        seeds = r[r.step == step]
        if seeds.empty:
            continue
        old = float(seeds[seeds.pretrain_seed == 0].value.iloc[0])
        new = float(points[step]["mlm_loss"])
        rows.append({"objective": obj, "step": step, "recorded_seed0": round(old, 6), "rerun_seed0": round(new, 6),
                     "difference": round(new - old, 6), "recorded_sd_seeds_0_2": round(float(seeds.value.std(ddof=1)), 6)})
pd.DataFrame(rows).to_csv(sys.stdout, index=False)
