"""Every job of the workflow's DAG, as Snakemake itself builds it (its Python API), with its shell command.

Runs in a subprocess of its own (Snakemake keeps process-wide state), so that each configuration
gets a fresh parse:

    python tests/dag_jobs.py --workdir DIR --configfile config.yaml [more.yaml] [--config key=value ...]

prints one line ``DAG_JOBS_JSON=[...]`` with, per job: ``rule``, ``wildcards``, ``shellcmd`` (the
command exactly as Snakemake formats it for the shell), ``input`` (name -> paths, ``""`` = all),
``output`` (all paths), ``report`` (output path -> its ``report()`` flag: category, subcategory,
labels; the outputs marked for ``snakemake --report``), ``threads``, the rule's ``resources`` and ``local`` (a ``localrules:`` rule or
one without a command: Snakemake runs it itself and never submits it to a cluster executor; the
test of ``Workflow.is_local`` without its "everything is local" switch). :func:`list_jobs` wraps it.

The DAG is built with ``forceall`` (every job of the targets, nothing on disk needed) through
``WorkflowApi._workflow._prepare_dag/_build_dag``: the steps ``snakemake --dry-run`` takes, minus the
executor. Snakemake 9 has no public call that returns the DAG's jobs; these two methods are what its
own ``printdag``/``summary``/``list_changes`` call.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MARK = "DAG_JOBS_JSON="


def list_jobs(workdir: Path, configfiles: list[Path], config: dict[str, Any] | None = None,
              timeout: int = 600) -> list[dict[str, Any]]:
    """The jobs of the DAG for ``configfiles`` (later files override earlier ones) and ``config``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--workdir", str(workdir),
           "--configfile", *map(str, configfiles)]
    if config:
        cmd += ["--config", json.dumps(config)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    raise RuntimeError(f"listing the DAG failed (exit {out.returncode}):\n{out.stderr[-5000:]}")


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, bool)) or value is None else str(value)


def main(argv: list[str]) -> int:
    import argparse

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (ConfigSettings, DAGSettings, OutputSettings, Quietness,
                                          ResourceSettings)

    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True, type=Path)
    ap.add_argument("--configfile", nargs="+", required=True, type=Path)
    ap.add_argument("--config", default="{}", help="JSON object of config overrides")
    a = ap.parse_args(argv)
    a.workdir.mkdir(parents=True, exist_ok=True)
    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        wf_api = api.workflow(
            resource_settings=ResourceSettings(cores=64),
            config_settings=ConfigSettings(configfiles=[p.resolve() for p in a.configfile],
                                           config=json.loads(a.config)),
            snakefile=REPO / "Snakefile", workdir=a.workdir)
        wf_api.dag(DAGSettings(forceall=True))
        workflow = wf_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True, nolock=True)
        workflow._build_dag()
        jobs = []
        for job in workflow.dag.jobs:
            inputs = {"": [str(f) for f in job.input]}
            inputs.update({name: [str(f) for f in (v if isinstance(v, list) else [v])]
                           for name, v in job.input.items()})
            jobs.append({
                "rule": job.rule.name,
                "wildcards": dict(job.wildcards_dict),
                "shellcmd": job.shellcmd,
                "input": inputs,
                "output": [str(f) for f in job.output],
                "report": {str(f): {"category": _plain(f.flags["report"].category),
                                    "subcategory": _plain(f.flags["report"].subcategory),
                                    "labels": {k: _plain(v) for k, v in (f.flags["report"].labels or {}).items()}}
                           for f in job.output if f.flags.get("report")},
                "threads": job.threads,
                "resources": {k: _plain(v) for k, v in job.resources.items()},
                "local": job.rule.name in workflow._localrules or bool(job.rule.norun),
            })
    print(MARK + json.dumps(jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
