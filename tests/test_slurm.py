"""The workflow on a real SLURM: a single-node cluster on localhost (tests/slurm_cluster.py).

1. The smoke configuration, reduced (see ``REDUCTION``), runs through ``--executor slurm`` with the
   SLURM profile (``workflow/profiles/slurm``; only the per-job sizes that cannot fit a 2-core test
   node are scaled down, see ``TEST_NODE_SIZES``) and, with the identical configuration, locally.
2. Evidence that the jobs went through SLURM: every non-local job has a SLURM job id in Snakemake's
   log, a SLURM log file named after that id, and ``squeue --states=all`` (no accounting database:
   MinJobAge=3600 keeps finished jobs listed) shows each id COMPLETED with the rule in its comment and the
   profile's GPU request in its TRES.
3. The trained tokenizer, the packed blocks and every budget checkpoint's weights are the same bytes,
   and the fine-tuning metrics, the aggregates and the tables the same numbers, as the local run
   (CI once saw one SST-2 accuracy differ: each run had trained its own tokenizer, and the library's
   trainer numbered tokens differently per process, huggingface/tokenizers#1794, fixed in
   taco.data.tokenizer.train_tokenizer).
4. A pre-training segment is cancelled (``scancel``: SIGTERM, then SIGKILL after KillWait) after it
   saved an intermediate state; the profile's ``retries`` resubmit it as a new SLURM job, which
   resumes from that state (its log says so), and the budget checkpoint equals the uninterrupted one
   from step 1. Nothing that had finished is redone.
5. The multi-node launch (:mod:`taco.workflow.nodes`, ``pretrain.sizes.<size>.num_nodes``) in a real
   allocation of the one node: its nested ``srun --overlap`` step, the c10d rendezvous on the node's
   name, the same bytes as ``torch.distributed.run --standalone`` with as many processes.

Skips, with the reason, only where the SLURM/munge programs are not installed (``.ci/run``
installs them with apt-get) or the test does not run as root.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dag_jobs import list_jobs  # noqa: E402
from slurm_cluster import LocalSlurm, unavailable_reason  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.v8+.yaml"

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

# The smoke grid, reduced so that both runs (SLURM and local) fit in a few minutes on 2 cores:
# two objectives (MLM, TACO) on all data instead of eight runs, both budget segments (50, 100: the same
# checkpoints as configs/smoke.yaml's, with its schedule of 100 steps),
# one GLUE-format task (SST-2) instead of three, smaller fine-tuning subsets, no dynamics. The seeds
# (1, 2), the model and every recipe setting are those of configs/smoke.yaml. Both runs use this same
# derived file.
BUDGETS = [50, 100]
REDUCTION = {
    ("pretrain", "runs"): [{"size": "tiny", "objectives": ["mlm", "taco"], "fractions": [1.0]}],
    ("glue", "tasks"): ["sst2"],
    ("finetune", "max_train_samples"): 128,
    ("finetune", "max_eval_samples"): 128,
    ("dynamics", "enabled"): False,
    # configs/smoke.yaml runs every task and seed of a checkpoint in one job (tasks_per_job: all);
    # config.yaml, which SLURM users run, submits per (checkpoint, task); the finest form, one job per
    # seed, is the one tested here (the most submissions, the same rule code).
    ("finetune", "seeds_per_job"): "one",
    ("finetune", "tasks_per_job"): "one",
}
# The profile's per-job sizes are a real cluster's (8 CPUs per GPU, 64 GB, ...); the test node has
# 4 CPU slots, 16 GB and 4 fake GPUs. Only these keys change; the GPU counts, every other setting and
# every other key of the profile are used as they are.
TEST_NODE_SIZES = {"cpus_per_gpu": 1, "mem_mb": 2000}
# Poll sooner than the profile's 40 s (MinJobAge=3600 >= 3 x this, so squeue stays the status command).
TEST_STATUS_INTERVAL = 3
CANCEL_RUN = ("tiny", "mlm", "1.0", 100)  # the segment step-50 -> step-100 is cancelled mid-way
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.")


def derived_config(tmp_path: Path) -> Path:
    config = yaml.safe_load((REPO / "configs" / "smoke.yaml").read_text())
    for (section, key), value in REDUCTION.items():
        config[section][key] = value
    assert config["pretrain"]["sizes"]["tiny"]["budgets"][:len(BUDGETS)] == BUDGETS
    config["pretrain"]["sizes"]["tiny"]["budgets"] = BUDGETS
    names = config["analysis"]["budget_names"]["tiny"]
    names = {name: step for name, step in names.items() if step in BUDGETS}
    config["analysis"]["budget_names"]["tiny"] = names
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def derived_profile(tmp_path: Path) -> Path:
    profile = yaml.safe_load(PROFILE.read_text())
    assert profile["executor"] == "slurm"
    for rule in ("pretrain", "finetune", "finetune_seeds", "finetune_checkpoint", "dynamics"):
        assert profile["set-resources"][rule]["gpu"] >= 1, rule
        profile["set-resources"][rule].update(TEST_NODE_SIZES)
    profile["default-resources"]["mem_mb"] = TEST_NODE_SIZES["mem_mb"]
    profile["slurm-init-seconds-before-status-checks"] = TEST_STATUS_INTERVAL
    folder = tmp_path / "profile"
    folder.mkdir()
    (folder / PROFILE.name).write_text(yaml.safe_dump(profile, sort_keys=False))
    return folder


def snakemake_cmd(workdir: Path, config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(workdir), "--configfile", str(config), *extra]


def env() -> dict[str, str]:
    e = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    e.pop("SLURM_CONF", None)
    return e


def run(cmd: list[str], cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env())


def job_stats(log: str) -> dict[str, int]:
    """Snakemake's "Job stats" table (rule -> planned jobs) from its log."""
    block = log.split("Job stats:", 1)[1]
    counts = {}
    for line in block.splitlines()[3:]:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def local_rules(config: Path, workdir: Path) -> set[str]:
    """The rules of ``config``'s DAG that Snakemake runs itself (``localrules:``, ``all``): never submitted."""
    return {job["rule"] for job in list_jobs(workdir, [config]) if job["local"]}


def squeue_all() -> dict[str, dict[str, str]]:
    """SLURM job id -> state and comment for every job the controller still lists."""
    out = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T|%k"],
                         capture_output=True, text=True, check=True).stdout
    jobs = {}
    for line in out.splitlines():
        jobid, state, comment = line.strip().split("|", 2)
        jobs[jobid] = {"state": state, "comment": comment}
    return jobs


def scontrol_job(jobid: str) -> str:
    return subprocess.run(["scontrol", "show", "job", "-o", jobid], capture_output=True, text=True).stdout


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def artifact_hashes(results: Path) -> dict[str, str]:
    """sha256 of the trained tokenizer, the packed blocks and every budget checkpoint's weights (not the
    manifests: they hold dates and wall times)."""
    import hashlib

    files = [*sorted((results / "data").rglob("tokenizer.json")), *sorted((results / "data").rglob("*.arrow")),
             *sorted((results / "pretrain").rglob("model.safetensors"))]
    return {str(f.relative_to(results)): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def result_numbers(results: Path) -> dict[str, object]:
    """Every number the workflow reports, keyed by file: metrics (not timings), aggregates, tables."""
    out: dict[str, object] = {}
    for m in sorted((results / "finetune").rglob("metrics.json")):
        data = json.loads(m.read_text())
        out[str(m.relative_to(results))] = {"scores": data["scores"], "epochs": data["epochs"]}
    for p in sorted((results / "aggregate").glob("*.csv")):
        out[str(p.relative_to(results))] = read_csv(p)
    for t in ("table1", "table2", "table3", "table4", "ablation"):
        out[f"{t}.csv"] = read_csv(results / f"{t}.csv")
    out["claims.csv"] = read_csv(results / "claims.csv")
    return out


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = unavailable_reason()
    if why:
        pytest.skip(why)
    # MinJobAge: finished jobs stay in squeue for the whole test (the evidence is read at the end)
    c = LocalSlurm(cpus=4, real_memory_mb=16000, gpus=4, min_job_age=3600, kill_wait=30,
                   workdir=tmp_path_factory.mktemp("slurm-cluster"))
    c.start()
    try:
        yield c
    finally:
        c.stop()


def test_smoke_on_slurm_equals_local_and_resumes_after_scancel(cluster, tmp_path):
    t0 = time.monotonic()
    config = derived_config(tmp_path)
    profile = derived_profile(tmp_path)
    slurm_dir, local_dir = tmp_path / "slurm", tmp_path / "local"
    slurm_dir.mkdir()
    local_dir.mkdir()
    results = Path(yaml.safe_load(config.read_text())["results_dir"])

    # ---- 1. the same configuration through SLURM and locally (at the same time: 2 cores each way) ----
    local = subprocess.Popen(snakemake_cmd(local_dir, config, "--cores", "2"), cwd=local_dir, env=env(),
                             stdout=open(tmp_path / "local.log", "w"), stderr=subprocess.STDOUT)
    out = run(snakemake_cmd(slurm_dir, config, "--workflow-profile", str(profile)), slurm_dir, timeout=900)
    slurm_log = out.stdout + out.stderr
    (tmp_path / "slurm.log").write_text(slurm_log)
    assert out.returncode == 0, slurm_log[-6000:] + "\n" + cluster.logs()
    assert local.wait(timeout=900) == 0, (tmp_path / "local.log").read_text()[-6000:]
    t_runs = time.monotonic() - t0

    # ---- 2. the jobs went through SLURM ----
    submitted = SUBMITTED.findall(slurm_log)
    assert submitted, "no SLURM job ids in Snakemake's log"
    slurm_ids = [s for _, s, _ in submitted]
    assert len(set(slurm_ids)) == len(slurm_ids)
    queue = squeue_all()
    by_rule: dict[str, list[str]] = {}
    for _jobid, sid, logfile in submitted:
        assert sid in queue, f"SLURM job {sid} unknown to squeue (MinJobAge too low?)"
        assert queue[sid]["state"] == "COMPLETED", (sid, queue[sid])
        rule = re.match(r"rule_([a-z_]+?)(?:_wildcards_|$)", queue[sid]["comment"]).group(1)
        by_rule.setdefault(rule, []).append(sid)
        log = Path(logfile)
        assert log.name == f"{sid}.log" and log.is_file() and log.stat().st_size > 0, logfile
    # every job Snakemake planned ran on SLURM, except the local bookkeeping rule and `all`
    planned = job_stats(slurm_log)
    assert planned.get("pretrain") == 2 * len(BUDGETS), planned  # 2 objectives x the budget segments
    assert planned.get("finetune", 0) >= 1, planned
    local = local_rules(config, tmp_path / "dag")
    assert {"all", "analysis_spec", "run_config"} <= local, local
    assert {rule: len(ids) for rule, ids in by_rule.items()} == {
        rule: n for rule, n in planned.items() if rule not in local}, (planned, by_rule)
    assert "analysis_spec" in planned and not local & set(by_rule)  # localrules never go to SLURM
    # the profile's GPU requests reached SLURM (fake GPUs on the test node)
    assert re.search(r"gres[:/]gpu[:=]2", scontrol_job(by_rule["pretrain"][0])), scontrol_job(by_rule["pretrain"][0])
    assert re.search(r"gres[:/]gpu[:=]1", scontrol_job(by_rule["finetune"][0])), scontrol_job(by_rule["finetune"][0])

    # ---- 3. same numbers as the local run ----
    # first the inputs of fine-tuning, so that a difference is located where it arises (data stage,
    # a pre-training segment, or fine-tuning itself), with what each run's logs say about resumes
    slurm_bytes, local_bytes = artifact_hashes(slurm_dir / results), artifact_hashes(local_dir / results)
    assert slurm_bytes.keys() == local_bytes.keys() and slurm_bytes
    for key in slurm_bytes:
        assert slurm_bytes[key] == local_bytes[key], (
            f"{key} differs between SLURM and local; resumes in the SLURM logs: "
            f"{re.findall(r'.*resum.*', slurm_log)[:5]}")
    slurm_numbers = result_numbers(slurm_dir / results)
    local_numbers = result_numbers(local_dir / results)
    assert slurm_numbers.keys() == local_numbers.keys()
    assert len([k for k in slurm_numbers if k.endswith("metrics.json")]) == 2 * len(BUDGETS) * 2  # x SST-2 x 2 seeds
    for key in slurm_numbers:
        assert slurm_numbers[key] == local_numbers[key], f"{key} differs between SLURM and local"

    # ---- 4. scancel a pre-training segment mid-way; the retry resumes from its saved state ----
    size, objective, fraction, step = CANCEL_RUN
    previous = BUDGETS[BUDGETS.index(step) - 1]  # the segment starts from this budget's checkpoint
    rel = f"pretrain/{size}/{objective}/data-{fraction}/step-{step}"
    ckpt = slurm_dir / results / rel
    reference = tmp_path / "uninterrupted"
    shutil.copytree(ckpt, reference)
    shutil.rmtree(ckpt)
    state_dir = slurm_dir / results / ".state" / rel
    # the finished segment keeps its final state (checkpoint-<step>) so that a lost output is re-exported
    # without training; remove it too, so that the segment trains again and can be cancelled mid-way
    assert (state_dir / f"checkpoint-{step}").is_dir(), sorted(state_dir.iterdir())
    shutil.rmtree(state_dir)
    log_path = slurm_dir / results / "logs" / f"{rel}.log"
    earlier = {p: p.stat().st_mtime_ns for p in (slurm_dir / results / "pretrain").rglob("model.safetensors")
               if p.parent != ckpt}
    rerun_log = tmp_path / "rerun.log"
    rerun = subprocess.Popen(
        snakemake_cmd(slurm_dir, config, "--workflow-profile", str(profile), str(results / rel)),
        cwd=slurm_dir, env=env(), stdout=open(rerun_log, "w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        cancelled = None
        while time.monotonic() < deadline and rerun.poll() is None:
            states = sorted(state_dir.glob("checkpoint-*/taco_state.json"))
            ids = SUBMITTED.findall(rerun_log.read_text())
            if ids and any(previous < int(p.parent.name.split("-")[1]) < step for p in states):
                cancelled = ids[0][1]
                subprocess.run(["scancel", cancelled], check=True)
                break
            time.sleep(0.3)
        assert cancelled, f"no intermediate state to cancel after:\n{rerun_log.read_text()[-4000:]}"
        assert rerun.wait(timeout=400) == 0, rerun_log.read_text()[-6000:]
    finally:
        if rerun.poll() is None:
            rerun.kill()
    text = rerun_log.read_text()
    ids = [s for _, s, _ in SUBMITTED.findall(text)]
    assert len(ids) == 2 and ids[0] == cancelled, f"expected the cancelled job and one retry: {ids}\n{text[-4000:]}"
    queue = squeue_all()
    assert queue[cancelled]["state"] == "CANCELLED", queue.get(cancelled)
    assert queue[ids[1]]["state"] == "COMPLETED", queue.get(ids[1])
    assert "rule_pretrain" in queue[ids[1]]["comment"]
    # Snakemake clears a rule's log before it reruns the job, so the log is the retry's; the runner's
    # own event log in .state/ (not an output) keeps both attempts.
    m = re.search(r"resuming from intermediate state .*?\(step (\d+)\)", log_path.read_text())
    assert m and previous < int(m.group(1)) < step, log_path.read_text()[-3000:]
    resumed_step = int(m.group(1))
    events = [json.loads(line) for line in (state_dir / "logs" / "train_log.jsonl").read_text().splitlines()
              if line.strip()]
    kinds = [(e.get("event"), e.get("step")) for e in events]
    # the cancelled job caught SIGTERM, saved a state at the end of its current step and stopped;
    # the retry resumed from exactly that state (not from the previous budget)
    assert ("interrupted", resumed_step) in kinds, kinds
    assert kinds.index(("interrupted", resumed_step)) < kinds.index(("resume_state", resumed_step)), kinds
    # the resumed segment ends where the uninterrupted one did
    from safetensors.numpy import load_file

    resumed, uninterrupted = load_file(ckpt / "model.safetensors"), load_file(reference / "model.safetensors")
    assert resumed.keys() == uninterrupted.keys()
    for name in resumed:
        assert (resumed[name] == uninterrupted[name]).all(), f"{name} differs after resume"
    assert json.loads((ckpt / "manifest.json").read_text())["step"] == step
    # nothing that had finished was redone
    for p, mtime in earlier.items():
        assert p.stat().st_mtime_ns == mtime, f"{p} was rewritten"
    print(f"SLURM and local runs: {t_runs:.0f} s; whole test: {time.monotonic() - t0:.0f} s")


# The job step as the SLURM executor's job-step plugin (2.x) starts a job's shell command: one task over
# the job's nodes, every SLURM_*/SRUN_*/SBATCH_* variable removed but these (the plugin's own list).
JOBSTEP_KEEPS = ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN",
                 "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP", "SLURM_CLUSTER_NAME", "SLURM_SUBMIT_DIR",
                 "SLURM_SUBMIT_HOST")


def test_the_multi_node_launch_runs_in_a_real_allocation(cluster, tmp_path):
    """taco.workflow.nodes on the real SLURM (one node: --nnodes 1, two processes): scontrol gives the
    node, the nested ``srun --overlap`` step starts the torchrun agent, the c10d rendezvous forms on the
    node's name, and the segment writes the bytes of ``torch.distributed.run --standalone`` with two
    processes (the same world size; a one-node launch hashes no num_nodes). Several nodes cannot be had
    here: tests/test_distributed.py runs two agents under stand-ins for srun/scontrol."""
    from tests.test_distributed import _cmd, _env, _run, _sha
    from tests.test_train import _blocks

    blocks = _blocks(tmp_path)
    reference = tmp_path / "standalone"
    _run(_cmd(blocks, reference, 2), tmp_path / "standalone.log")

    out = tmp_path / "allocation"
    launch = [sys.executable, "-m", "taco.workflow.nodes", "--nnodes", "1", "--nproc-per-node", "2",
              "--gpus-per-node", "0", "--", *_cmd(blocks, out, 1)[1:]]
    keep = "|".join(JOBSTEP_KEEPS)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n"
                      "for v in $(compgen -e | grep -E '^(SLURM|SRUN|SBATCH)_'); do\n"
                      f"  case $v in {keep}) ;; *) unset $v ;; esac\n"
                      "done\n"
                      "exec srun -n1 --cpu-bind=q --nodes=1 " + " ".join(shlex.quote(w) for w in launch) + "\n")
    log = tmp_path / "job.log"
    submit = subprocess.run(["sbatch", "--parsable", "--wait", "--nodes=1", "--ntasks=1", "--cpus-per-task=2",
                             "--mem=4000", f"--output={log}", f"--chdir={REPO}", str(script)],
                            capture_output=True, text=True, env=_env(), timeout=600)
    text = log.read_text() if log.exists() else ""
    assert submit.returncode == 0, submit.stdout + submit.stderr + text[-4000:] + cluster.logs()
    jobid = submit.stdout.strip().split(";")[0]
    assert squeue_all()[jobid]["state"] == "COMPLETED"
    launched = re.search(r"^taco nodes: (.*)$", text, re.M)
    assert launched, text[-3000:]
    words = shlex.split(launched.group(1))
    assert words[:4] == ["srun", "--jobid", jobid, "--overlap"], words
    endpoint = words[words.index("--rdzv-endpoint") + 1]
    assert endpoint == f"{cluster.hostname}:{20000 + int(jobid) % 20000}", endpoint
    assert words[words.index("--rdzv-id") + 1] == jobid
    assert _sha(out) == _sha(reference), text[-3000:]
