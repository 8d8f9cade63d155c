"""The calibrated steps-to-target test and the t rule, simulated side by side on every scenario.

    python benchmarks/speedup_calibration.py [--outer 2000] [--inner 1000] [--runs 3 5]

For each scenario of ``taco.stats.speedup_simulation`` (checked, edge, known limits) and run count: the t
rule's coverage and false supported / not supported (``simulate``, ``--outer`` x 10 experiments) and the
calibrated test's (``simulate_calibrated``, ``--outer`` experiments of ``--inner`` null draws each), at a true
speedup equal to the margin. The fast suite runs the calibrated half at 400 x 200
(``tests/test_speedup_calibration.py``); this is the large run. Prints the wall time.
"""

from __future__ import annotations

import argparse
import time

from taco.stats.speedup_calibration import simulate_calibrated
from taco.stats.speedup_simulation import EDGES, LIMITS, SCENARIOS, simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--outer", type=int, default=2000, help="experiments per row of the calibrated test")
    ap.add_argument("--inner", type=int, default=1000, help="null draws per experiment")
    ap.add_argument("--runs", type=int, nargs="+", default=[3, 5], help="units per arm")
    args = ap.parse_args()
    t0 = time.time()
    print(f"outer {args.outer} x inner {args.inner} (calibrated); t rule {10 * args.outer} experiments")
    print(f"{'scenario':44s} {'A/B':>4s} | {'t: cov':>6s} {'sup':>6s} {'not':>6s} | {'cal: cov':>8s} {'sup':>6s} {'not':>6s}")
    for group, models in (("checked", SCENARIOS), ("edge", EDGES), ("known limit", LIMITS)):
        print(f"-- {group}")
        for i, (name, m) in enumerate(models.items()):
            for n in args.runs:
                t = simulate(m, n, n, reps=10 * args.outer, seed=1000 + 10 * i + n)
                c = simulate_calibrated(m, n, n, reps=args.outer, inner=args.inner, seed=2000 + 10 * i + n)
                print(f"{name:44s} {n}/{n:<2d} | {t['coverage']:6.3f} {t['supported']:6.3f} {t['not_supported']:6.3f} | "
                      f"{c['coverage']:8.3f} {c['supported']:6.3f} {c['not_supported']:6.3f}", flush=True)
    print(f"wall {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
