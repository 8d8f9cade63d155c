"""GPU slots for local multi-GPU boxes: each job gets its own CUDA_VISIBLE_DEVICES.

Snakemake's ``--resources gpu=N`` only *counts* GPUs; it does not say which device a job may use,
so without this every job would land on GPU 0. ``taco gpu-slot --gpus N --need K -- CMD...`` takes K
free slots out of N with exclusive ``fcntl.flock`` locks on ``<lock-dir>/gpu-<i>.lock`` (released by
the kernel when the process ends, even on SIGKILL), runs CMD with ``CUDA_VISIBLE_DEVICES`` set to
those devices, forwards SIGTERM/SIGINT to it, and exits with its status.

If ``CUDA_VISIBLE_DEVICES`` is already set, slot i maps to its i-th entry. Inside a SLURM job
(``SLURM_JOB_ID`` set) the command runs as it is: SLURM has already given the job its own GPUs.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO


def try_acquire(num_gpus: int, need: int, lock_dir: str | os.PathLike) -> tuple[list[int], list[IO]] | None:
    """Try once to lock ``need`` free slots out of ``num_gpus``.

    Returns (slot indices, open lock files that hold the locks) or None if fewer than ``need`` are
    free (nothing is held then). Raises ValueError if ``need`` is not in 1..num_gpus.
    """
    if not 1 <= need <= num_gpus:
        raise ValueError(f"need={need} GPU slot(s) but the machine has gpus={num_gpus}")
    Path(lock_dir).mkdir(parents=True, exist_ok=True)
    slots: list[int] = []
    handles: list[IO] = []
    for i in range(num_gpus):
        fh = open(Path(lock_dir) / f"gpu-{i}.lock", "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            continue
        slots.append(i)
        handles.append(fh)
        if len(slots) == need:
            return slots, handles
    release(handles)
    return None


def release(handles: list[IO]) -> None:
    """Release slot locks taken by :func:`try_acquire`."""
    for fh in handles:
        try:
            fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()


def acquire(num_gpus: int, need: int, lock_dir: str | os.PathLike, poll_s: float = 1.0,
            timeout_s: float | None = None) -> tuple[list[int], list[IO]]:
    """Block until ``need`` slots are free; TimeoutError after ``timeout_s`` seconds."""
    start = time.monotonic()
    while True:
        got = try_acquire(num_gpus, need, lock_dir)
        if got is not None:
            return got
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise TimeoutError(f"no {need} free GPU slot(s) of {num_gpus} in {lock_dir} after {timeout_s} s")
        time.sleep(poll_s)


def visible_devices(slots: list[int], parent_visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for ``slots``; slot i maps to the i-th entry of an inherited list."""
    if parent_visible:
        devices = [d.strip() for d in parent_visible.split(",") if d.strip()]
        if max(slots) >= len(devices):
            raise ValueError(f"slot {max(slots)} but CUDA_VISIBLE_DEVICES={parent_visible!r} lists {len(devices)}")
        return ",".join(devices[i] for i in slots)
    return ",".join(str(i) for i in slots)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="taco gpu-slot", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, required=True, help="GPUs on this machine")
    parser.add_argument("--need", type=int, default=1, help="GPUs this job needs")
    parser.add_argument("--lock-dir", default="results/.gpu-slots", help="folder for slot lock files")
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait for free slots")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        parser.error("no command given (taco gpu-slot --gpus N -- CMD ...)")
    if os.environ.get("SLURM_JOB_ID"):
        print(f"taco gpu-slot: inside SLURM job {os.environ['SLURM_JOB_ID']}: SLURM assigned the GPUs "
              f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')})", file=sys.stderr)
        return subprocess.call(cmd)
    try:
        slots, handles = acquire(args.gpus, args.need, args.lock_dir, timeout_s=args.timeout)
        env = dict(os.environ)
        env["CUDA_VISIBLE_DEVICES"] = visible_devices(slots, os.environ.get("CUDA_VISIBLE_DEVICES"))
    except (ValueError, TimeoutError) as err:
        print(f"taco gpu-slot: {err}", file=sys.stderr)
        return 2
    print(f"taco gpu-slot: slots {slots} -> CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}", file=sys.stderr)
    proc = subprocess.Popen(cmd, env=env)

    def forward(signum, _frame):
        proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    try:
        return proc.wait()
    finally:
        release(handles)
