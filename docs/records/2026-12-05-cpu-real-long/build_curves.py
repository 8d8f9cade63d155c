"""Rebuild efficiency_curves.csv of the 16,000-step pair from its committed eval.json files
(the checkpoints are gone). Usage, from the checkout:
    python docs/records/2026-12-05-cpu-real-long/build_curves.py curves.csv, with the same parsers `taco efficiency --checkpoints` uses."""
import math, sys
import pandas as pd
from taco.stats.efficiency import CURVE_COLUMNS
from taco.stats.validation_points import load_eval, parse_eval, probe_points, PROBE_COLUMNS

rec = "docs/records/2026-12-05-cpu-real-long"
fps_src = pd.read_csv("docs/records/2026-12-05-cpu-real-e1-tuned/efficiency_curves.csv")
fps = {o: float(fps_src[(fps_src.objective == o)].flops_per_step.iloc[0]) for o in ("mlm", "taco")}
rows = {}
for obj in ("mlm", "taco"):
    for step in (4000, 8000, 12000, 16000):
        src = f"{rec}/eval/{obj}-step-{step}-eval.json"
        ev = load_eval(src)
        pts, notes = parse_eval(ev, src, step)
        assert not notes, notes
        pr = probe_points(ev, step)
        for s, v in pts:
            rows[(obj, s)] = {"size": "tiny_long", "objective": obj, "fraction": 1.0, "pretrain_seed": 0, "seed": -1,
                              "step": s, "value": v, "budget": s == step, "architecture": "bert",
                              "flops_per_step": fps[obj], **{k: pr.get(s, {}).get(k, math.nan) for k in PROBE_COLUMNS}}
df = pd.DataFrame(list(rows.values()), columns=CURVE_COLUMNS).sort_values(["objective", "step"])
df.to_csv(sys.argv[1], index=False)
print(df.groupby("objective").step.agg(["count", "min", "max"]))
