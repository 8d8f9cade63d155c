"""One pre-training segment across several nodes of a SLURM allocation: SLURM's ``srun`` starts one
torchrun agent per node, torchrun's c10d rendezvous joins them (``pretrain.sizes.<size>.num_nodes`` > 1).

``python -m taco.workflow.nodes --nnodes N --nproc-per-node G -- -m taco pretrain ...`` runs inside the
job's shell command, which the SLURM executor plugin (2.8) and its job-step plugin start as one task
(``srun -n1 --nodes=N``) on the allocation's first node, with every ``SLURM_*`` variable stripped but the
job ids. It reads the allocation's nodes from the controller (``scontrol show job $SLURM_JOB_ID``, then
``scontrol show hostnames``), takes the first as the rendezvous host, and replaces itself (``exec``) by::

    srun --jobid J --overlap --nodes N --ntasks N --ntasks-per-node 1 --kill-on-bad-exit=1 [--gpus-per-node G]
         <python> -m torch.distributed.run --nnodes N --nproc-per-node G --rdzv-backend c10d
         --rdzv-endpoint <first node>:<port> --rdzv-id J -m taco pretrain ...

Why this launch: the job's own step holds one task, so the agents need a step of their own; a nested
``srun`` inside a running step needs ``--overlap`` (it shares the step's resources) and, with the
``SLURM_*`` variables gone, every geometry option spelled out. An MPI job (the plugin's ``mpi``
resource) would skip the outer step, but the plugin refuses an MPI job of one task (``tasks: 1``), and
``tasks`` on a GPU job becomes ``--ntasks-per-gpu``, which is one process per GPU where torchrun wants
one agent per node. ``--kill-on-bad-exit=1`` ends every agent when one fails (a dead node): no survivor
trains on, and Snakemake's retry resumes from the saved state. The port: ``$TACO_RDZV_PORT``, else
``20000 + job id mod 20000`` (one rendezvous per job; a site must allow it between its nodes).

Errors (exit 2, before anything starts): no ``SLURM_JOB_ID`` (a multi-node segment needs a SLURM
allocation: run it through ``--workflow-profile workflow/profiles/slurm``), ``scontrol`` missing or
failing, or an allocation with fewer nodes than ``--nnodes``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence

from taco.cli_parts import HelpFormatter, cli_error

NAME = "nodes"
#: the rendezvous port when $TACO_RDZV_PORT is unset: PORT_BASE + job id mod PORT_SPAN
PORT_BASE, PORT_SPAN = 20000, 20000


class NodesError(RuntimeError):
    """The allocation cannot run the segment (no job id, no controller, too few nodes)."""


def rendezvous_port(job_id: str, env: dict[str, str] | None = None) -> int:
    """The c10d rendezvous port of job ``job_id``: ``$TACO_RDZV_PORT``, else 20000 + id mod 20000."""
    env = os.environ if env is None else env
    if env.get("TACO_RDZV_PORT"):
        text = env["TACO_RDZV_PORT"].strip()
        if not text.isdigit() or not 1024 <= int(text) <= 65535:
            raise NodesError(f"TACO_RDZV_PORT={env['TACO_RDZV_PORT']!r}: a TCP port in [1024, 65535] for the c10d "
                             "rendezvous (unset it for 20000 + job id mod 20000)")
        return int(text)
    digits = "".join(ch for ch in str(job_id) if ch.isdigit()) or "0"
    return PORT_BASE + int(digits) % PORT_SPAN


def torchrun_words(python: Sequence[str], nnodes: int, nproc_per_node: int, endpoint: str, rdzv_id: str) -> list[str]:
    """The per-node agent: ``<python> -m torch.distributed.run --nnodes N --nproc-per-node G --rdzv-backend
    c10d --rdzv-endpoint HOST:PORT --rdzv-id ID`` (torch.distributed.run's own options)."""
    return [*python, "-m", "torch.distributed.run", "--nnodes", str(nnodes), "--nproc-per-node", str(nproc_per_node),
            "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint, "--rdzv-id", str(rdzv_id)]


def srun_words(job_id: str, nnodes: int, gpus_per_node: int) -> list[str]:
    """The nested step that starts one agent per node (see the module docstring)."""
    return ["srun", "--jobid", str(job_id), "--overlap", "--nodes", str(nnodes), "--ntasks", str(nnodes),
            "--ntasks-per-node", "1", "--kill-on-bad-exit=1",
            *([f"--gpus-per-node={gpus_per_node}"] if gpus_per_node > 0 else [])]


#: seconds one scontrol call may take before the launcher gives up naming it (a hung slurmctld)
SCONTROL_TIMEOUT_S = 60


def _scontrol(args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=SCONTROL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise NodesError(f"scontrol {' '.join(args)} gave no answer within {SCONTROL_TIMEOUT_S} s (is slurmctld "
                         "reachable?)") from None


def allocation_hosts(job_id: str) -> list[str]:
    """The host names of job ``job_id``'s nodes, in SLURM's order (``scontrol``, each call given
    :data:`SCONTROL_TIMEOUT_S`); NodesError if unknown or when scontrol hangs."""
    if shutil.which("scontrol") is None:
        raise NodesError("scontrol is not on PATH: a multi-node segment runs inside a SLURM allocation")
    show = _scontrol(["show", "job", str(job_id)])
    nodelist = next((w.split("=", 1)[1] for w in show.stdout.split() if w.startswith("NodeList=")), "")
    if show.returncode != 0 or not nodelist or nodelist == "(null)":
        raise NodesError(f"scontrol show job {job_id}: no NodeList ({(show.stderr or show.stdout).strip()[:200]})")
    hosts = _scontrol(["show", "hostnames", nodelist])
    if hosts.returncode != 0:
        raise NodesError(f"scontrol show hostnames {nodelist}: {hosts.stderr.strip()[:200]}")
    return hosts.stdout.split()


def launch_words(nnodes: int, nproc_per_node: int, gpus_per_node: int, command: Sequence[str],
                 env: dict[str, str] | None = None, python: Sequence[str] | None = None) -> list[str]:
    """The whole command this module ``exec``s for ``command`` (``-m taco pretrain ...``); NodesError when
    the allocation cannot run it."""
    env = os.environ if env is None else env
    job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job_id:
        raise NodesError("SLURM_JOB_ID is not set: pretrain.sizes.<size>.num_nodes > 1 needs a SLURM allocation "
                         "(snakemake --workflow-profile workflow/profiles/slurm; docs/cluster.md)")
    hosts = allocation_hosts(job_id)
    if len(hosts) < nnodes:
        raise NodesError(f"SLURM job {job_id} holds {len(hosts)} node(s) ({', '.join(hosts)}), the segment needs "
                         f"{nnodes}: give the rule the SLURM resource nodes={nnodes}")
    endpoint = f"{hosts[0]}:{rendezvous_port(job_id, env)}"
    return [*srun_words(job_id, nnodes, gpus_per_node),
            *torchrun_words(python or [sys.executable], nnodes, nproc_per_node, endpoint, job_id), *command]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m taco.workflow.nodes``."""
    p = argparse.ArgumentParser(formatter_class=HelpFormatter, prog="python -m taco.workflow.nodes",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--nnodes", type=int, required=True, help="nodes of the segment (pretrain.sizes.<size>.num_nodes)")
    p.add_argument("--nproc-per-node", type=int, required=True, help="processes per node (one per GPU)")
    p.add_argument("--gpus-per-node", type=int, default=0, help="GPUs per node for the agents' step (0: none)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="after --: the module to run, e.g. -m taco pretrain ...")
    return p


def main(argv: list[str] | None = None) -> int:
    """Replace this process by the nested ``srun`` (module docstring); exit 2 on an allocation that cannot
    run the segment."""
    args = build_parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.nnodes < 1 or args.nproc_per_node < 1 or not command:
        return cli_error(NAME, "--nnodes and --nproc-per-node must be >= 1, and a command must follow --")
    try:
        words = launch_words(args.nnodes, args.nproc_per_node, args.gpus_per_node, command)
    except NodesError as exc:
        return cli_error(NAME, exc)
    print("taco nodes: " + " ".join(words), file=sys.stderr, flush=True)
    try:
        os.execvp(words[0], words)
    except FileNotFoundError:
        return cli_error(NAME, f"{words[0]} is not on PATH: a multi-node segment starts its agents with {words[0]} "
                               "inside the SLURM allocation")
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
