"""A pre-training segment across nodes (``pretrain.sizes.<size>.num_nodes``), as SLURM would start it.

``tests/configs/two-nodes.yaml`` puts BERT-base on 2 nodes of 8 GPUs. Snakemake's DAG gives its
pre-training jobs the resource ``nodes: 2``; with the per-node GPUs that ``docs/cluster.md`` ("Several
nodes") has the profile ask for (``gres: gpu:8``), the SLURM executor plugin as installed (2.8) submits
``sbatch --nodes=2 ... --gres=gpu:8`` and its job-step plugin starts the job's shell command as one task
over both nodes (``srun -n1 ... --nodes=2``); in that command :mod:`taco.workflow.nodes` starts one
torchrun agent per node. The launch itself runs on two stand-in nodes in ``tests/test_distributed.py``;
no test here has a cluster of several nodes.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

pytest.importorskip("snakemake_executor_plugin_slurm")

REPO = Path(__file__).resolve().parent.parent
#: the profile's pre-training resources for a multi-node size (docs/cluster.md, "Several nodes")
MULTINODE_RESOURCES = {"gres": "gpu:8", "cpus_per_gpu": 8, "mem_mb": 480000, "runtime": 720}


class _Resources(dict):
    """A job's resources as the plugin reads them (``.get`` and attributes)."""

    __getattr__ = dict.__getitem__


@pytest.fixture(scope="module")
def base_job(tmp_path_factory):
    from dag_jobs import list_jobs

    jobs = list_jobs(tmp_path_factory.mktemp("dag"), [REPO / "config.yaml", REPO / "tests/configs/two-nodes.yaml"])
    job = next(j for j in jobs if j["rule"] == "pretrain" and j["wildcards"]["size"] == "base")
    small = next(j for j in jobs if j["rule"] == "pretrain" and j["wildcards"]["size"] == "small")
    return job, small


def test_a_two_node_segment_asks_sbatch_for_two_nodes_and_starts_one_agent_per_node(base_job):
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string
    from snakemake_executor_plugin_slurm_jobstep import get_gpu_setting, get_node_setting

    from taco.workflow.nodes import build_parser

    job, small = base_job
    assert job["resources"]["nodes"] == 2 and small["resources"]["nodes"] == 1
    res = _Resources({k: v for k, v in job["resources"].items() if k != "gpu"}, **MULTINODE_RESOURCES)
    fake = SimpleNamespace(resources=res, threads=job["threads"], is_group=lambda: False)
    params = {"run_uuid": "u", "slurm_logfile": "log", "comment_str": "rule_pretrain", "account": "",
              "partition": "", "workdir": "/w"}
    sbatch = shlex.split(get_submit_command(fake, params) + set_gres_string(fake))
    assert "--nodes=2" in sbatch and "--gres=gpu:8" in sbatch and "--cpus-per-gpu=8" in sbatch, sbatch
    assert not any(w.startswith("--gpus") or w.startswith("--ntasks") for w in sbatch), sbatch
    # the job step: one task on the allocation's nodes, no job-wide GPU count asked of that one task
    assert get_node_setting(fake) == "--nodes=2" and get_gpu_setting(fake) == ""

    words = shlex.split(job["shellcmd"])
    i = words.index("taco.workflow.nodes")
    ns = build_parser().parse_args(words[i + 1:words.index(">>")])
    assert (ns.nnodes, ns.nproc_per_node, ns.gpus_per_node) == (2, 8, 8)
    assert ns.command[:4] == ["--", "-m", "taco", "pretrain"]
    # the global batch is the paper's: 128 per GPU x 1 accumulation x 16 processes = 2,048
    assert "--per-device-batch-size 128" in job["shellcmd"] and "--grad-accum 1" in job["shellcmd"]
    assert "taco.workflow.nodes" not in small["shellcmd"]  # one node: torchrun --standalone, as before


def test_the_launch_line_of_each_agent():
    """What the launcher execs inside an allocation of two nodes (scontrol answers for them)."""
    import taco.workflow.nodes as nodes

    real = nodes.allocation_hosts
    nodes.allocation_hosts = lambda job_id: ["gpu-017", "gpu-018"]
    try:
        words = nodes.launch_words(2, 8, 8, ["-m", "taco", "pretrain", "--size", "base"],
                                   env={"SLURM_JOB_ID": "123456"}, python=["python"])
    finally:
        nodes.allocation_hosts = real
    assert words == ["srun", "--jobid", "123456", "--overlap", "--nodes", "2", "--ntasks", "2",
                     "--ntasks-per-node", "1", "--kill-on-bad-exit=1", "--gpus-per-node=8",
                     "python", "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "8",
                     "--rdzv-backend", "c10d", "--rdzv-endpoint", "gpu-017:23456", "--rdzv-id", "123456",
                     "-m", "taco", "pretrain", "--size", "base"]
    from torch.distributed.run import get_args_parser

    ns = get_args_parser().parse_args(words[words.index("torch.distributed.run") + 1:])
    assert (ns.nnodes, ns.nproc_per_node, ns.rdzv_backend, ns.rdzv_endpoint) == ("2", "8", "c10d", "gpu-017:23456")
    assert nodes.rendezvous_port("123456", {"TACO_RDZV_PORT": "29555"}) == 29555


@pytest.mark.parametrize("hosts, env, needle", [
    (["a"], {"SLURM_JOB_ID": "7"}, "holds 1 node(s) (a), the segment needs 2"),
    (["a", "b"], {}, "SLURM_JOB_ID is not set"),
])
def test_an_allocation_that_cannot_hold_the_segment_is_refused(hosts, env, needle):
    import taco.workflow.nodes as nodes

    real = nodes.allocation_hosts
    nodes.allocation_hosts = lambda job_id: hosts
    try:
        with pytest.raises(nodes.NodesError, match=None) as err:
            nodes.launch_words(2, 1, 0, ["-m", "taco", "pretrain"], env=env)
    finally:
        nodes.allocation_hosts = real
    assert needle in str(err.value)


def test_the_profile_documents_the_multinode_resources():
    """docs/cluster.md shows the resources this test submits with."""
    text = (REPO / "docs/cluster.md").read_text()
    block = text.split("## Several nodes", 1)[1]
    snippet = yaml.safe_load(block.split("```yaml", 1)[1].split("```", 1)[0])
    assert snippet["set-resources"]["pretrain"] == MULTINODE_RESOURCES


def test_the_plan_prices_a_two_node_segment_with_all_its_gpus():
    """taco plan: 2 nodes x 8 GPUs are 16 GPUs at the same global batch, so the same GPU-hours as the
    paper's 2 GPUs and an eighth of the wall time per segment."""
    from taco.workflow.plan import command as plan, costs as plan_costs

    one = plan_costs.build_plan(plan.load_config([str(REPO / "config.yaml")]), device_check=None)
    two = plan_costs.build_plan(plan.load_config([str(REPO / "config.yaml"), str(REPO / "tests/configs/two-nodes.yaml")]),
                                device_check=None)
    (a,), (b,) = ([r for r in p["pretrain"] if r["size"] == "base" and r["objective"] == "mlm"] for p in (one, two))
    assert (a["gpus"], b["gpus"]) == (2, 16) and a["global_batch"] == b["global_batch"] == 2048
    assert b["gpu_hours"] == pytest.approx(a["gpu_hours"])
    assert b["longest_segment_hours"] == pytest.approx(a["longest_segment_hours"] / 8)


@pytest.mark.parametrize("port", ["abc", "-1", "99999", "80"])
def test_a_bad_rendezvous_port_is_named(port):
    """Fault sweep IV, item 9: TACO_RDZV_PORT=abc gave a ValueError traceback, -1 and 99999 went on to torchrun."""
    import taco.workflow.nodes as nodes

    with pytest.raises(nodes.NodesError, match=rf"TACO_RDZV_PORT='{port}': a TCP port in \[1024, 65535\]"):
        nodes.rendezvous_port("7", {"TACO_RDZV_PORT": port})


def test_a_hanging_scontrol_and_a_missing_srun_are_named(tmp_path, monkeypatch, capsys):
    import taco.workflow.nodes as nodes

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text("#!/bin/sh\nexec /bin/sleep 30\n")
    (fake / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", str(fake))
    monkeypatch.setattr(nodes, "SCONTROL_TIMEOUT_S", 1)
    with pytest.raises(nodes.NodesError, match=r"scontrol show job 7 gave no answer within 1 s"):
        nodes.allocation_hosts("7")
    monkeypatch.setattr(nodes, "allocation_hosts", lambda job_id: ["a", "b"])
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert nodes.main(["--nnodes", "2", "--nproc-per-node", "1", "--", "-m", "taco", "pretrain"]) == 2
    assert "srun is not on PATH" in capsys.readouterr().err
