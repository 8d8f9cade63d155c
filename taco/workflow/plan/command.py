"""``taco plan --configfile config.yaml``: what a configuration costs before anything runs.

For any configuration: jobs by rule (the compute-carrying rules from the config's grid; every
rule from ``snakemake -n`` where Snakemake is installed); model FLOPs and GPU-hours of pre-training and fine-tuning; disk per
artifact kind; the longest job against the cluster profile's time limit; and, for the paper's
tables, figures and claims, what each one needs (runs, steps, fine-tuning jobs) and costs, so a
user can target the cheap ones first (``snakemake <results_dir>/table1.csv``).

Modules
-------
This module is the command: its parser, :func:`main`, reading and checking the configuration
(:func:`load_config`) and ``snakemake -n``'s job table and notes (:func:`snakemake_dry_run`). The numbers
(model FLOPs, GPU-hours, rates, disk, time limits, the cost of each target; :func:`build_plan`) are in
:mod:`taco.workflow.plan.costs`, where the sources of the numbers are stated; the Markdown, JSON and
one-line output in :mod:`taco.workflow.plan.render`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

from taco.cli_parts import cli_error
from taco.workflow import config as wc
from taco.workflow import config_checks as wcc
from taco.flops import H200_BF16_DENSE_TFLOPS
from taco.workflow.plan.costs import (
    DEFAULT_FINETUNE_UTILIZATION,
    DEFAULT_JOB_OVERHEAD_S,
    DEFAULT_PRETRAIN_UTILIZATION,
    DEVICE_CHECK,
    REPO,
    SLURM_PROFILE,
    build_plan,
)
from taco.workflow.plan.inputs import PlanError
from taco.workflow.plan.render import render_json, render_markdown

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
def load_config(configfiles: list[str], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Merge YAML ``configfiles`` (later ones win, nested mappings merged, as Snakemake does), apply
    ``overrides`` (``--config key=value``: a mapping value is merged into the section, not put in its
    place, as Snakemake merges ``--config``), check the schema with the project's own readable check
    (``taco.workflow.schema.check_schema``: key, bad value, allowed values), fill defaults and validate
    with Snakemake's ``snakemake.utils.validate``, then ``taco.workflow.config_checks.check_config``.

    Raises PlanError: a file that is missing or not valid YAML in one line (``FILE:LINE:COLUMN: ...``,
    :func:`taco.workflow.config_source.read_config_file`); a bad key with ``FILE:LINE: `` of the file
    that sets it (or ``--config``) before each line naming a key
    (:meth:`taco.workflow.config_source.KeySources.annotate`).
    """
    from taco.workflow.config_source import ConfigFileError, KeySources, config_file_errors, read_config_file

    order = [e for e in config_file_errors(configfiles) if "is an overlay of" in e]
    if order:
        raise PlanError("; ".join(order))
    config: dict[str, Any] = {}
    sources = KeySources()
    for f in configfiles:
        try:
            data, where = read_config_file(f)
        except ConfigFileError as exc:
            raise PlanError(f"--configfile {exc}") from None
        _deep_update(config, data)
        sources.add_file(f, data, where)
    _deep_update(config, overrides or {})  # --config merges nested mappings too, as Snakemake's update_config
    sources.add_overrides(overrides or {})
    from taco.workflow.schema import SchemaError, check_schema, schema_file

    try:  # the project's own check first: the key, the bad value and what is allowed, one line each
        check_schema(config, SCHEMA)
    except SchemaError as exc:
        raise PlanError(sources.annotate(str(exc))) from None
    try:
        from snakemake.utils import validate

        validate(config, str(schema_file(SCHEMA)))
    except ImportError:  # a machine without Snakemake: the schema's defaults are not filled
        raise PlanError("taco plan needs Snakemake's schema validation (pip install -e .[dev])") from None
    except Exception as exc:  # noqa: BLE001 - snakemake's WorkflowError names the key
        raise PlanError(f"configuration does not match {SCHEMA.name}: {str(exc).splitlines()[0][:500]}") from None
    try:  # with the local GLUE folder's tasks, as the workflow checks it
        wcc.check_config(config, wcc.local_glue_availability(config))
    except wc.ConfigError as exc:
        raise PlanError(sources.annotate(str(exc))) from None
    return config


def _deep_update(config: dict[str, Any], overlay: dict[str, Any]) -> None:
    """Merge ``overlay`` into ``config`` recursively (nested mappings merged, other values replaced),
    as Snakemake merges several ``--configfile`` (``snakemake.utils.update_config``)."""
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(config.get(key), dict):
            _deep_update(config[key], value)
        else:
            config[key] = value


class DryRunError(RuntimeError):
    """``snakemake -n`` could not plan the workflow; the message says why in one line."""


#: how much of a failed dry run's error a plan quotes
DRY_RUN_ERROR_CHARS = 300


def _dry_run_error(text: str, returncode: int) -> str:
    """The error of a failed ``snakemake -n`` in one line: its first error line (Snakemake prints the
    exception's name and where) and the message lines after it, up to the traceback's ``File`` lines,
    at most :data:`DRY_RUN_ERROR_CHARS` characters; else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines)
                  if re.search(r"(Error|Exception)\b", ln) and not ln.startswith(("File ", "Traceback"))), None)
    if start is None:
        msg = lines[-1] if lines else "no output"
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith(("File ", "Traceback"))),
                   len(lines))
        msg = " ".join(lines[start:end])
    if len(msg) > DRY_RUN_ERROR_CHARS:
        msg = msg[:DRY_RUN_ERROR_CHARS - 3] + "..."
    return f"exit {returncode}: {msg}"


def snakemake_dry_run(configfiles: list[str], overrides: list[str] | None = None,
                      cwd: str | os.PathLike | None = None, timeout: float = 300) -> tuple[dict[str, int], list[str]]:
    """What ``snakemake -n`` plans now in ``cwd`` (what is left to run there): jobs per rule (its "Job
    stats" table; empty when nothing is to be done) and the notes the workflow prints at its start
    (its ``NOTE: ...`` lines, without the prefix: skipped GLUE tasks, too few pre-training seeds, what
    Snakemake's ``gpu`` resource is).

    Raises DryRunError (one line: the exit status and Snakemake's error) when Snakemake cannot be run,
    runs past ``timeout`` seconds or fails.
    """
    import subprocess

    cmd = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--snakefile", str(REPO / "Snakefile"),
           "--configfile", *[str(Path(f).resolve()) for f in configfiles]]
    if overrides:
        cmd += ["--config", *overrides]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=str(cwd or os.getcwd()), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise DryRunError(f"did not finish within {timeout:g} s") from None
    except OSError as exc:
        raise DryRunError(f"could not start {sys.executable} -m snakemake: {exc}") from None
    text = r.stdout + r.stderr
    if r.returncode != 0:
        raise DryRunError(_dry_run_error(text, r.returncode))
    notes = [line[len("NOTE: "):] for line in r.stderr.splitlines() if line.startswith("NOTE: ")]
    if "Nothing to be done" in text:
        return {}, notes
    stats: dict[str, int] = {}
    in_table = False
    for line in text.splitlines():
        if line.startswith("Job stats"):
            in_table, stats = True, {}
            continue
        parts = line.split()
        if in_table and len(parts) == 2 and parts[1].isdigit():
            if parts[0] == "total":
                in_table = False
                continue
            stats[parts[0]] = int(parts[1])
    return stats, notes


def snakemake_job_stats(configfiles: list[str], overrides: list[str] | None = None,
                        cwd: str | os.PathLike | None = None, timeout: float = 300) -> dict[str, int]:
    """Jobs per rule that ``snakemake -n`` plans now (:func:`snakemake_dry_run`'s first part); raises
    DryRunError when the dry run fails."""
    return snakemake_dry_run(configfiles, overrides, cwd, timeout)[0]


# ------------------------------------------------------------------------------------------------
# the command
# ------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco plan``."""
    from taco.cli_parts import HelpFormatter
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="taco plan", description="Compute plan of a workflow configuration: jobs, "
                                "model FLOPs, GPU-hours, disk, time limits, and the cost of each table and claim.")
    p.add_argument("--configfile", nargs="+", default=[str(REPO / "config.yaml")],
                   help="configuration file(s), merged in order as Snakemake does (default: config.yaml)")
    p.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                   help="top-level overrides, parsed and merged as Snakemake's --config (a mapping value is "
                        "merged into its section); for a nested setting use an overlay file in --configfile "
                        "(default: none)")
    p.add_argument("--device-check", default=str(DEVICE_CHECK),
                   help="device-check JSON with measured throughput (used if it exists and is a GPU run)")
    p.add_argument("--peak-tflops", type=float, default=H200_BF16_DENSE_TFLOPS,
                   help="GPU peak dense TFLOP/s (default: H100/H200 bf16, 989)")
    p.add_argument("--pretrain-utilization", type=float, default=DEFAULT_PRETRAIN_UTILIZATION,
                   help="share of the peak pre-training reaches where not measured (default: an assumption, "
                        f"{DEFAULT_PRETRAIN_UTILIZATION})")
    p.add_argument("--finetune-utilization", type=float, default=DEFAULT_FINETUNE_UTILIZATION,
                   help="share of the peak fine-tuning reaches where not measured (default: an assumption, "
                        f"{DEFAULT_FINETUNE_UTILIZATION})")
    p.add_argument("--job-overhead-s", type=float, default=None,
                   help=f"seconds per fine-tuning process start (default: measured, else {DEFAULT_JOB_OVERHEAD_S:g})")
    p.add_argument("--profile", default=str(SLURM_PROFILE), help="cluster profile for the time limits")
    p.add_argument("--no-snakemake", action="store_true",
                   help="skip the `snakemake -n` table of every rule's jobs left to run")
    p.add_argument("--output", default=None, help="also write the Markdown here")
    p.add_argument("--json", default=None, help="also write the plan as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    """``taco plan``: print the plan as Markdown (and write ``--output`` / ``--json``); exit 2 on a bad
    configuration or device-check file."""
    args = build_parser().parse_args(argv)
    try:
        import yaml

        overrides = {}
        for kv in args.config:
            if "=" not in kv:
                raise PlanError(f"--config {kv!r}: expected KEY=VALUE")
            k, v = kv.split("=", 1)
            if "." in k:  # Snakemake's --config has no dotted keys either
                raise PlanError(f"--config {kv!r}: dotted keys are not supported (nor by Snakemake); change a "
                                f"nested setting with an overlay file: --configfile base.yaml overlay.yaml, the "
                                f"overlay holding only that key (see docs/configuration.md)")
            try:  # Snakemake's own parsing, so the plan sees the values the workflow will see
                from snakemake.cli import parse_config

                overrides.update(parse_config([kv]))
            except ImportError:
                overrides[k] = yaml.safe_load(v)
            except Exception as exc:  # noqa: BLE001 - Snakemake's ValueError / YAML errors
                raise PlanError(f"--config {kv!r}: {str(exc).splitlines()[0]}") from None
        config = load_config(args.configfile, overrides)
        for note in wcc.config_notes(config):  # printed as the workflow prints them (common.smk)
            print(f"taco plan: note: {note}", file=sys.stderr)
        plan = build_plan(config, args.device_check, args.peak_tflops, args.pretrain_utilization,
                          args.finetune_utilization, args.job_overhead_s, args.profile)
        if not args.no_snakemake:
            try:
                plan["snakemake_jobs_left"], plan["snakemake_notes"] = snakemake_dry_run(args.configfile, args.config)
            except DryRunError as exc:  # the plan still prints, and says which section is missing and why
                plan["snakemake_jobs_left"], plan["snakemake_dry_run_error"] = None, str(exc)
                print(f"taco plan: note: `snakemake -n` failed, the plan has no table of the jobs it plans: {exc}",
                      file=sys.stderr)
    except PlanError as exc:
        return cli_error("plan", exc)
    text = render_markdown(plan)
    print(text)
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        Path(args.json).write_text(render_json(plan))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
