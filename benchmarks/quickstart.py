"""The quick start's cost: ``snakemake --cores N --configfile configs/smoke.yaml`` timed whole and per job kind.

Runs the README's quick start into a scratch ``results_dir`` (never the checkout's ``results/``), then
prints:

- the wall seconds and the CPU-seconds (user + sys) of the whole run: ``resource.getrusage(RUSAGE_CHILDREN)``
  around Snakemake, which waits for its fork server and the server for every job it forked, so every
  process of the run is counted;
- the CPU-seconds of each rule (job kind): the sum of the ``forkserver: pid N exit 0, X CPU-s`` lines
  (:mod:`taco.launch.forkserver`) in the logs of that rule's jobs, the log files mapped to rules by
  ``snakemake --summary``; the rest (Snakemake itself, the server's one-off import of torch and
  transformers, jobs run as fresh processes) is printed as one line, so the per-rule lines and the
  rest add up to the total;
- the machine's load average before the run (a shared machine inflates wall time, not CPU-seconds).

A regression shows as a rule whose CPU-seconds grew; compare with the line recorded in
``benchmarks/README.md`` (and the README's quick-start sentence).

    python benchmarks/quickstart.py [--cores 2] [--keep DIR] [--json OUT.json]

``--keep DIR`` runs into DIR and leaves it (e.g. to render the report afterwards with
``snakemake --cores 2 --configfile configs/smoke.yaml --config results_dir=DIR --report DIR/report.html``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "configs/smoke.yaml"
JOB_LINE = re.compile(r"^forkserver: pid \d+ exit (-?\d+), ([0-9.]+) CPU-s$", re.M)
DONE_LINE = re.compile(r"(\d+) of (\d+) steps \(100%\) done")


def _snakemake(results_dir: str, cores: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", CONFIG,
            "--config", f"results_dir={results_dir}", *extra]


def rule_of_logs(results_dir: str, cores: int) -> dict[str, str]:
    """Each job's log file -> its rule, from ``snakemake --summary`` (a tab-separated table with
    the columns ``rule`` and ``log-file(s)``; several logs of a job are comma-separated)."""
    out = subprocess.run(_snakemake(results_dir, cores, "--summary"), cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    start = out.find("output_file\t")
    if start < 0:
        raise RuntimeError("snakemake --summary printed no table:\n" + out[-2000:])
    logs: dict[str, str] = {}
    for row in csv.DictReader(io.StringIO(out[start:]), delimiter="\t"):
        for log in (row.get("log-file(s)") or "").split(","):
            log = log.strip()
            if log and log != "-":
                logs[log] = row["rule"]
    return logs


def per_rule(logs: dict[str, str]) -> tuple[dict[str, float], dict[str, int], list[str]]:
    """CPU-seconds and jobs per rule from the jobs' ``forkserver:`` lines; the logs without one."""
    cpu: dict[str, float] = defaultdict(float)
    jobs: dict[str, int] = defaultdict(int)
    silent = []
    for log, rule in logs.items():
        path = ROOT / log
        text = path.read_text(errors="replace") if path.exists() else ""
        found = JOB_LINE.findall(text)
        if not found:
            silent.append(log)
            continue
        jobs[rule] += 1
        cpu[rule] += sum(float(s) for _, s in found)
    return dict(cpu), dict(jobs), silent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", default=None, help="run into this folder and leave it (default: a scratch "
                    "folder under results/, removed afterwards)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args(argv)

    if args.keep:
        results_dir = args.keep
        if Path(ROOT / results_dir).exists():
            ap.error(f"--keep {results_dir}: exists; the benchmark times a run from nothing")
    else:
        results_dir = os.path.relpath(tempfile.mkdtemp(prefix="bench-quickstart-", dir=ROOT / "results"), ROOT)
    load = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    run = subprocess.run(_snakemake(results_dir, args.cores), cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        print(run.stderr[-4000:], file=sys.stderr)
        print(f"quickstart: snakemake exited {run.returncode}; the folder {results_dir} is kept", file=sys.stderr)
        return 1
    total_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    done = DONE_LINE.findall(run.stderr)
    n_jobs = int(done[-1][1]) if done else None
    cpu, jobs, silent = per_rule(rule_of_logs(results_dir, args.cores))

    print(f"quick start ({CONFIG}, --cores {args.cores}) on {platform.node()}, {os.cpu_count()} CPUs, "
          f"load before {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min), {time.strftime('%Y-%m-%d')}")
    print(f"jobs {n_jobs}, wall {wall:.0f} s, CPU {total_cpu:.0f} s (user + sys of every process), "
          f"CPU / wall {total_cpu / wall:.2f}")
    print(f"{'rule':<22} {'jobs':>5} {'CPU-s':>8} {'share':>6} {'CPU-s/job':>10}")
    for rule in sorted(cpu, key=cpu.get, reverse=True):
        print(f"{rule:<22} {jobs[rule]:>5} {cpu[rule]:>8.1f} {cpu[rule] / total_cpu:>6.1%} "
              f"{cpu[rule] / jobs[rule]:>10.1f}")
    rest = total_cpu - sum(cpu.values())
    print(f"{'(the rest: Snakemake, its in-process rules, the server import)':<44} {rest:>8.1f} {rest / total_cpu:>6.1%}")
    if silent:
        print(f"{len(silent)} job log(s) without a forkserver line (rules run inside Snakemake, or fresh processes; counted in the "
              f"rest): {', '.join(sorted(silent)[:5])}{' ...' if len(silent) > 5 else ''}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "date": time.strftime("%Y-%m-%d"), "cores": args.cores, "cpus": os.cpu_count(), "load_before": load,
            "jobs": n_jobs, "wall_s": wall, "cpu_s": total_cpu, "rest_cpu_s": rest,
            "rules": {r: {"jobs": jobs[r], "cpu_s": cpu[r]} for r in cpu}}, indent=2) + "\n")
    if not args.keep:
        shutil.rmtree(ROOT / results_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
