"""finetune.mnli_start: RTE, MRPC and STS-B start from the MNLI fine-tuned model of the same checkpoint and
seed (MosaicBERT, ModernBERT); off by default, and then the workflow is as without the option.

What the DAG does is what ``snakemake -n`` plans (a scratch ``--directory``); the command of every job of
the overlay ``tests/configs/smoke-mnli-start.yaml`` is checked by tests/test_commands.py; the fine-tuning
itself by tests/test_finetune_init.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SMOKE = REPO / "configs" / "smoke.yaml"
ON = REPO / "tests" / "configs" / "smoke-mnli-start.yaml"
CKPT = "results/smoke/finetune/tiny/mlm/data-1.0/step-50"


def dry_run(*configfiles: Path, target: str, extra: tuple[str, ...] = ()) -> str:
    """``snakemake -n`` of one target in a scratch folder; its stdout (exit 0 asserted)."""
    with tempfile.TemporaryDirectory(prefix="taco-mnli-start-") as work:
        out = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
             "--configfile", *map(str, configfiles), "--directory", work, *extra, "--", target],
            cwd=work, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def job_counts(stdout: str) -> dict[str, int]:
    """Rule -> jobs of ``snakemake -n``'s job-stats table."""
    table = stdout.split("Job stats:")[1].split("\n\n")[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def test_the_option_adds_the_mnli_job_as_a_dependency_of_stsb_only_when_on(tmp_path):
    target = f"{CKPT}/stsb/seed-1/metrics.json"
    # per (checkpoint, task) jobs on both sides (smoke's tasks_per_job: all does not apply with the option)
    per_task = tmp_path / "per-task.yaml"
    per_task.write_text("finetune: {tasks_per_job: one}\n")
    off = job_counts(dry_run(SMOKE, per_task, target=target))
    on_stdout = dry_run(SMOKE, per_task, ON, target=target)
    on = job_counts(on_stdout)
    assert "finetune_mnli_seeds" not in off and off["finetune_seeds"] == 1
    assert on["finetune_mnli_seeds"] == 1 and on["finetune_seeds"] == 1
    assert {k: v for k, v in on.items() if k != "finetune_mnli_seeds"} == off  # nothing else changes
    # the STS-B job reads the MNLI models of its checkpoint (every seed of the job); the MNLI job saves them
    assert f"--init-from '{CKPT}/mnli/seed-{{seed}}/model'" in on_stdout
    mnli_cmd = next(ln for ln in on_stdout.splitlines() if "--task mnli" in ln)
    assert "--save-model" in mnli_cmd and f"--checkpoint {CKPT.replace('finetune', 'pretrain')} " in mnli_cmd


def test_one_job_per_seed_depends_on_the_mnli_model_of_the_same_seed(tmp_path):
    from dag_jobs import list_jobs

    jobs = list_jobs(tmp_path, [SMOKE, ON], {"finetune": {"seeds_per_job": "one"}})
    stsb = [j for j in jobs if j["rule"] == "finetune" and j["wildcards"]["task"] == "stsb"]
    mnli = {tuple(sorted(j["wildcards"].items())): j for j in jobs if j["wildcards"].get("task") == "mnli"}
    assert stsb and all(j["rule"] == "finetune_mnli" for j in mnli.values())
    for j in stsb:
        w = j["wildcards"]
        run = f"{w['size']}/{w['objective']}/data-{w['fraction']}{w['pseed']}/step-{w['step']}"
        model = f"results/smoke/finetune/{run}/mnli/seed-{w['seed']}/model"
        assert j["input"]["init"] == [model]
        assert model in mnli[tuple(sorted({**w, "task": "mnli"}.items()))]["output"]
        assert f"--init-from {model} --seed {w['seed']} " in j["shellcmd"]
    sst2 = [j for j in jobs if j["wildcards"].get("task") == "sst2"]
    assert sst2 and all(j["rule"] == "finetune" and "--init-from" not in j["shellcmd"] for j in sst2)


@pytest.mark.parametrize("tasks, absent, needle", [
    (["sst2", "stsb"], None, "needs mnli among the GLUE tasks run;"),
    (["sst2", "mnli"], None, "none of them is among the GLUE tasks run"),
    (["mnli", "stsb"], {"mnli": "no MNLI/ folder", "stsb": None}, "(absent from glue.data_dir)"),
])
def test_the_option_without_its_tasks_is_refused_before_any_job(tasks, absent, needle):
    """The cross-key check of the workflow's config (taco.workflow.config_checks.check_config, which the
    Snakefile and `taco plan` run before any job) names the key."""
    from snakemake.utils import validate
    from taco.workflow.schema import schema_file

    from taco.workflow import config as wc
    from taco.workflow import config_checks as wcc

    cfg = yaml.safe_load(SMOKE.read_text())
    cfg["glue"]["tasks"] = tasks
    cfg["finetune"]["mnli_start"] = True
    validate(cfg, str(schema_file(REPO / "workflow/schemas/config.schema.yaml")))
    with pytest.raises(wc.ConfigError, match=r"^finetune\.mnli_start: ") as err:
        wcc.check_config(cfg, absent)
    assert needle in str(err.value)
    cfg["finetune"]["mnli_start"] = False  # off: the same tasks are fine
    wcc.check_config(cfg, None)


def test_every_fine_tuning_rule_has_its_slurm_resources():
    """The MNLI rules of the option are GPU rules like `finetune`: the SLURM profile sizes each of them."""
    text = (REPO / "workflow" / "rules" / "finetune.smk").read_text()
    rules = set(re.findall(r"^\s*rule (\w+):", text, re.M)) | set(re.findall(r"^\s*use rule \w+ as (\w+)", text, re.M))
    assert {"finetune", "finetune_seeds", "finetune_mnli", "finetune_mnli_seeds"} <= rules
    sized = yaml.safe_load((REPO / "workflow/profiles/slurm/config.v8+.yaml").read_text())["set-resources"]
    assert all(sized.get(r, {}).get("gpu", 0) >= 1 for r in rules), sorted(r for r in rules if r not in sized)


def test_deviations_list_the_option_only_when_on():
    from test_deviations import resolved

    from taco.deviations import find_deviations

    off = find_deviations(resolved("configs/smoke.yaml"))
    assert not [d for d in off if d.key == "finetune.mnli_start"]
    on = [d for d in find_deviations(resolved("configs/smoke.yaml", "tests/configs/smoke-mnli-start.yaml"))
          if d.key == "finetune.mnli_start"]
    assert len(on) == 1 and on[0].topic == "fine-tuning start of STSB"  # smoke runs sst2, mnli, stsb
    assert "MNLI fine-tuned model of the same checkpoint and seed" in on[0].here
    assert "pre-trained checkpoint" in on[0].paper
