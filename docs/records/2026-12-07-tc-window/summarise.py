"""Issue 64 item 6: the validation MLM loss and the context probe's order gap of BERT-tiny TACO runs with the TC
window W = 255 (positives span the 128-token block) and W = 5 (the paper's), beside the recorded W = 5 TACO and MLM
runs of ../2026-12-06-cpu-real-e1-retuned/ (same recipe, same data), to step 1,500.

    python docs/records/2026-12-07-tc-window/summarise.py RUNS_DIR     # RUNS_DIR/w<W>/seed-<S>/step-1500/eval.json

Writes curves.csv here (one row per run and validation point) and prints the table of the README.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORDED = HERE.parent / "2026-12-06-cpu-real-e1-retuned" / "efficiency_curves.csv"
#: the step where a run has left the bag-of-words plateau: the first point with an order gap above this
#: (taco.stats.validation_points.PLATEAU_EXIT_GAP)
EXIT_GAP = 0.1
LAST = 1500


def runs_of(root: Path) -> list[dict]:
    rows = []
    for ev in sorted(root.glob("w*/seed-*/step-1500/eval.json")):
        d = json.loads(ev.read_text())
        window, seed = int(ev.parts[-4][1:]), int(ev.parts[-3].split("-")[1])
        points = [*d["points"], {"step": d["step"], "mlm_loss": d["mlm_loss"], "probe_order_gap": d["probe_order_gap"]}]
        for p in points:
            rows.append({"source": "this record", "arm": f"TACO W={window}", "seed": seed, "step": p["step"],
                         "mlm_loss": p["mlm_loss"], "probe_order_gap": p["probe_order_gap"]})
    return rows


def recorded() -> list[dict]:
    with open(RECORDED, newline="") as fh:
        out = []
        for r in csv.DictReader(fh):
            step = int(r["step"])
            if step <= LAST and r["size"] == "tiny":
                arm = "TACO W=5" if r["objective"] == "taco" else r["objective"].upper()
                out.append({"source": "2026-12-06 record", "arm": arm, "seed": int(r["pretrain_seed"]), "step": step,
                            "mlm_loss": float(r["value"]), "probe_order_gap": float(r["probe_order_gap"])})
    return out


def main(root: str) -> None:
    rows = list({(r["source"], r["arm"], r["seed"], r["step"]): r for r in runs_of(Path(root)) + recorded()}.values())
    with open(HERE / "curves.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(sorted(rows, key=lambda r: (r["source"], r["arm"], r["seed"], r["step"])))
    runs: dict[tuple, list[dict]] = {}
    for r in rows:
        runs.setdefault((r["source"], r["arm"], r["seed"]), []).append(r)
    print("| run | loss at 750 / 1,000 / 1,500 (nats) | order gap at 1,000 / 1,500 (nats) | plateau exit (gap > 0.1) |")
    print("|---|---|---|---|")
    for (source, arm, seed), pts in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        by = {p["step"]: p for p in pts}
        exit_step = next((p["step"] for p in sorted(pts, key=lambda p: p["step"]) if p["probe_order_gap"] > EXIT_GAP), None)
        print(f"| {arm}, seed {seed} ({source}) | {by[750]['mlm_loss']:.3f} / {by[1000]['mlm_loss']:.3f} / "
              f"{by[1500]['mlm_loss']:.3f} | {by[1000]['probe_order_gap']:.3f} / {by[1500]['probe_order_gap']:.3f} | "
              f"{exit_step if exit_step else 'none by 1,500'} |")


if __name__ == "__main__":
    main(sys.argv[1])
