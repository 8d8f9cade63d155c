"""``taco cpu-seconds``: what a results folder's jobs cost in CPU-seconds, from their logs.

A job run through the fork server (:mod:`taco.launch.forkserver`) prints its own CPU-seconds as the last line of
its log (:data:`taco.launch.forkserver_protocol.CPU_LINE`); Snakemake's ``benchmark:`` files measure only the
client that waits for it, so their CPU columns are ~0. This command reads every ``*.log`` under
``<results_dir>/logs/`` and sums those lines per rule folder (the log's first folder: ``pretrain``, ``tuning``,
``finetune``, ``finetune_tuning``, ``data``, ``report``, ...; a log directly in ``logs/``, the fork server's own,
is not a job's): the cost a record states. A log holds the last run of its job (Snakemake rewrites it when the
job runs again), so the sum is the cost of the results as they stand, not of every attempt. Jobs run as fresh
processes (``fork_server: false``, GPU jobs under ``taco gpu-slot``) write no line, nor do a job still running and
a rule Snakemake runs in its own process (``aggregate_inputs``); they are counted apart, without a number.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from taco.launch.forkserver_protocol import cpu_seconds_in
from taco.manifest import atomic_write_text

#: the columns of ``--output`` (``jobs_without_log``: jobs with a Snakemake benchmark record and no log, so no cost)
COLUMNS = ("rule_folder", "jobs", "jobs_without_count", "failed", "cpu_seconds", "jobs_without_log")
#: a line that claims to be a CPU line (checked strictly by :func:`cpu_lines`)
_LOOSE = re.compile(r"^forkserver: pid .*CPU-s\s*$")


@dataclass
class RuleCost:
    """One rule folder's jobs: how many logs, how many without a CPU line, how many ended non-zero, and the sum
    of their CPU-seconds (every CPU line of every log)."""

    rule_folder: str
    jobs: int = 0
    jobs_without_count: int = 0
    failed: int = 0
    cpu_seconds: float = 0.0
    #: jobs with a benchmark record (``<results_dir>/benchmarks/<same path>.tsv``) but no log: cost unknown
    without_log: list[str] = field(default_factory=list)


def cpu_lines(log: Path) -> list[tuple[int, float]]:
    """The CPU lines of one job log (:func:`taco.launch.forkserver_protocol.cpu_seconds_in`); ValueError naming
    the log and the line when a line claims to be one and is damaged (``1.2.3``, ``.``)."""
    text = log.read_text(errors="replace")
    lines = cpu_seconds_in(text)
    claimed = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if _LOOSE.match(ln)]
    if len(claimed) != len(lines):
        good = {ln for ln in text.splitlines() if cpu_seconds_in(ln)}
        n, bad = next((n, ln) for n, ln in claimed if ln not in good)
        raise ValueError(f"{log}: line {n}: {bad.strip()!r} is not a CPU line (forkserver: pid N exit CODE, "
                         "SECONDS CPU-s)")
    return lines


def collect(results_dir: str | Path) -> list[RuleCost]:
    """Per rule folder under ``<results_dir>/logs/`` (sorted by name), the jobs and their CPU-seconds, and the
    jobs whose benchmark record has no log (a deleted log: named, not silently dropped).

    Raises ``FileNotFoundError`` naming the folder when ``<results_dir>/logs`` does not exist, ValueError naming
    the log and line of a damaged CPU line."""
    logs = Path(results_dir) / "logs"
    if not logs.is_dir():
        raise FileNotFoundError(f"{logs}: no logs folder (is {results_dir} a results folder of the workflow?)")
    costs: dict[str, RuleCost] = {}
    for log in sorted(logs.rglob("*.log")):
        rel = log.relative_to(logs)
        if len(rel.parts) == 1 or not log.is_file():  # the fork server's own log; a folder named *.log
            continue
        cost = costs.setdefault(rel.parts[0], RuleCost(rel.parts[0]))
        cost.jobs += 1
        lines = cpu_lines(log)
        if not lines:
            cost.jobs_without_count += 1
        cost.failed += any(code != 0 for code, _ in lines)
        cost.cpu_seconds += sum(seconds for _, seconds in lines)
    bench = Path(results_dir) / "benchmarks"
    for tsv in sorted(bench.rglob("*.tsv")) if bench.is_dir() else []:
        rel = tsv.relative_to(bench).with_suffix(".log")
        if len(rel.parts) > 1 and tsv.is_file() and not (logs / rel).is_file():
            costs.setdefault(rel.parts[0], RuleCost(rel.parts[0])).without_log.append(str(rel.with_suffix("")))
    return [costs[k] for k in sorted(costs)]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco cpu-seconds``."""
    from taco.cli_parts import HelpFormatter
    ap = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco cpu-seconds",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("results_dir", help="the workflow's results folder (config results_dir)")
    ap.add_argument("--output", help="also write the table as CSV here (columns: " + ", ".join(COLUMNS) + ")")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        costs = collect(args.results_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"taco cpu-seconds: {exc}", file=sys.stderr)
        return 2
    rows = [[c.rule_folder, c.jobs, c.jobs_without_count, c.failed, round(c.cpu_seconds, 1), len(c.without_log)]
            for c in costs]
    total = sum(c.cpu_seconds for c in costs)
    print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")
    print(f"| **total** | {sum(c.jobs for c in costs)} | {sum(c.jobs_without_count for c in costs)} | "
          f"{sum(c.failed for c in costs)} | {total:.1f} | {sum(len(c.without_log) for c in costs)} |")
    missing = [j for c in costs for j in c.without_log]
    if missing:
        print(f"taco cpu-seconds: note: {len(missing)} job(s) have a benchmark record but no log, so their cost is "
              f"not in the total: {', '.join(missing[:10])}" + (" ..." if len(missing) > 10 else ""), file=sys.stderr)
    if args.output:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
        atomic_write_text(Path(args.output), buf.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
