"""Summarise a tuning run of configs/cpu-real.yaml into this record (run from the repository root):

    python docs/records/2026-12-06-cpu-real-tuning/summarise.py RESULTS_DIR

Copies each arm's choice.json here, and prints the table of the README: per trial its setting, the validation
MLM loss at the horizon, the context probe's order gap there, and the job's CPU-seconds (its log's forkserver line).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(results: str) -> None:
    res = Path(results)
    rows = {}
    for arm in ("mlm", "taco"):
        choice = res / "tuning" / "tiny" / arm / "choice.json"
        shutil.copy2(choice, HERE / f"{arm}-choice.json")
        c = json.loads(choice.read_text())
        for t in c["trials"]:
            n = int(t["trial"].split("-")[1])
            ev = json.loads((res / "tuning" / "tiny" / arm / t["trial"] / "step-2000" / "eval.json").read_text())
            log = (res / "logs" / "tuning" / "tiny" / arm / t["trial"] / "step-2000.log").read_text()
            cpu = re.findall(r"exit 0, ([0-9.]+) CPU-s", log)
            rows.setdefault(n, {"setting": t["setting"]})[arm] = (
                t["mlm_loss"], ev.get("probe_order_gap"), float(cpu[-1]) if cpu else None, c["chosen"]["trial"] == t["trial"])
    print("| trial | lr | warmup | dropout | MLM loss (order gap; CPU-s) | TACO loss (order gap; CPU-s) |")
    print("|---|---|---|---|---|---|")
    total = 0.0
    for n in sorted(rows):
        r, s = rows[n], rows[n]["setting"]
        cells = []
        for arm in ("mlm", "taco"):
            loss, gap, cpu, chosen = r[arm]
            total += cpu or 0.0
            text = f"{loss:.3f} ({gap:.3f}; {cpu:.0f})" if gap is not None else f"{loss:.3f} (-; {cpu:.0f})"
            cells.append(f"**{text}** (chosen)" if chosen else text)
        print(f"| {n} | {s['learning_rate']:.3g} | {s['warmup_steps']} | {s['dropout']} | {cells[0]} | {cells[1]} |")
    print(f"\nCPU-seconds of the 16 trial jobs: {total:,.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
