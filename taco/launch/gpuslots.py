"""GPU slots for local jobs: each job gets its own CUDA_VISIBLE_DEVICES.

Snakemake's ``--resources gpu=N`` only *counts* GPUs; it does not say which device a job may use,
so without this every job would land on GPU 0. ``taco gpu-slot --gpus N --need K -- CMD...`` takes K
free slots out of N with exclusive ``fcntl.flock`` locks, runs CMD with ``CUDA_VISIBLE_DEVICES`` set
to those devices, forwards SIGTERM/SIGINT to it, and exits with its status.

One rule decides between the cases (:func:`decide`):

- **Step aside** when the job already sees exactly the devices it needs: ``CUDA_VISIBLE_DEVICES``
  is set and lists exactly K devices. That is a job submitted by the SLURM executor (``sbatch
  --gpus=K`` gives each job its own K devices), so nothing is locked and CMD runs as it is.
- **Take slots** otherwise. Slot i is device i on a bare machine, and the i-th entry of the
  inherited ``CUDA_VISIBLE_DEVICES`` when one is set, as when Snakemake itself runs inside a
  SLURM allocation (``salloc --gpus=4``: ``CUDA_VISIBLE_DEVICES=0,1,2,3``) and starts local jobs.
  ``--gpus`` must not exceed the inherited list (a clear error, exit 2), and local jobs then never
  share a device. Keep Snakemake's ``--resources gpu=`` equal to ``--gpus``: a job that needs all
  of an allocation's devices steps aside without locking, so only that limit keeps others off them.

Locks are per machine, not per workflow: two workflows on one box (``config.yaml`` and
``configs/gpu-mini.yaml`` started together, whatever their ``results_dir``) take their slots from the
same lock folder, so they never both get GPU 0. The folder (:func:`default_lock_dir`) is, first
found: ``--lock-dir`` (the workflow passes its config key ``gpu_lock_dir`` when set), the environment
variable ``TACO_GPU_LOCK_DIR``, else ``/tmp/taco-gpu-slots`` (the machine's ``/tmp``, not ``$TMPDIR``,
which a batch system may make private to one job; not ``$XDG_RUNTIME_DIR``, private to one user). It
is created world-writable with the sticky bit, as ``/tmp`` is, and lock files readable by all, so
users of one box share it (``flock`` needs only a read-only descriptor). Containers or services with
a private ``/tmp`` must point ``TACO_GPU_LOCK_DIR`` at a folder they share. Lock files are
``<lock-dir>/<host>-gpu-<device>.lock``, one per physical device (the inherited entry, not the slot
index), so two allocations on one node with different devices never block each other, and a folder
on a shared filesystem can serve several nodes (``flock`` over NFS: Linux >= 2.6.12 emulates it with
byte-range locks).

Killed wrapper (``kill -9``): the locks must live exactly as long as the job does. The locked files
are inherited by CMD (``Popen(pass_fds=...)``): an ``flock`` lock belongs to the open file
description, which the child shares, so the kernel releases it only when the wrapper *and* the
child have exited (or closed it). A wrapper killed with ``kill -9`` therefore leaves a running
child that still holds its slot; the next job waits for it instead of being given a busy device,
and the child's work (a pre-training segment that runs on) is not lost. This was chosen over
``PR_SET_PDEATHSIG`` (which would kill the child with the wrapper): that signal fires when the
forking *thread* ends, reaches only the direct child (not the workers of ``torch.distributed.run``),
and would throw away finished work. Programs that close inherited descriptors (``close_fds``)
before their own children run keep the lock in the direct child only, which outlives them.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from taco.cli_parts import cli_error


def parse_visible(value: str | None) -> list[str] | None:
    """The entries of a ``CUDA_VISIBLE_DEVICES`` value (None when unset or empty)."""
    if value is None:
        return None
    devices = [d.strip() for d in value.split(",") if d.strip()]
    return devices or None


@dataclass(frozen=True)
class Decision:
    """What ``taco gpu-slot`` does: ``step_aside`` (run CMD as it is) or take slots of ``devices``."""

    step_aside: bool
    devices: list[str]  # slot i -> devices[i]; empty when stepping aside
    reason: str


def decide(num_gpus: int, need: int, parent_visible: str | None) -> Decision:
    """Apply the module's one rule; raises ValueError for an impossible request.

    Args:
        num_gpus: slots of this machine (``--gpus``).
        need: devices the job needs (``--need``), >= 1.
        parent_visible: the inherited ``CUDA_VISIBLE_DEVICES`` (None if unset).
    Raises:
        ValueError: ``need`` < 1; ``need`` > ``num_gpus``; ``num_gpus`` exceeds the inherited list.
    """
    if need < 1:
        raise ValueError(f"--need must be >= 1, got {need}")
    inherited = parse_visible(parent_visible)
    if inherited is not None and len(inherited) == need:
        return Decision(True, [], f"the job already sees exactly its {need} device(s) "
                                  f"(CUDA_VISIBLE_DEVICES={parent_visible})")
    if not 1 <= need <= num_gpus:
        raise ValueError(f"need={need} GPU slot(s) but the machine has gpus={num_gpus}")
    if inherited is None:
        return Decision(False, [str(i) for i in range(num_gpus)], "no inherited CUDA_VISIBLE_DEVICES")
    if num_gpus > len(inherited):
        raise ValueError(f"--gpus {num_gpus} (config key gpus) exceeds the {len(inherited)} device(s) this "
                         f"process may use (CUDA_VISIBLE_DEVICES={parent_visible}); set gpus to at most "
                         f"{len(inherited)}")
    return Decision(False, inherited[:num_gpus],
                    f"slots map onto the inherited CUDA_VISIBLE_DEVICES={parent_visible}")


#: environment variable that overrides the default lock folder (see the module docstring)
LOCK_DIR_ENV = "TACO_GPU_LOCK_DIR"
#: the machine-wide default lock folder
DEFAULT_LOCK_DIR = "/tmp/taco-gpu-slots"


def default_lock_dir(environ: dict[str, str] | None = None) -> str:
    """The lock folder when ``--lock-dir`` is not given: ``$TACO_GPU_LOCK_DIR`` if set and not empty,
    else :data:`DEFAULT_LOCK_DIR`; one folder per machine, whichever workflow asks."""
    env = os.environ if environ is None else environ
    return env.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR


def unmanaged_gpus_note(gpus: int, environ: dict[str, str] | None = None,
                        device_node: str = "/dev/nvidia0") -> str | None:
    """The note for ``gpus: 0`` on a machine with GPUs, or None when it does not apply.

    ``gpus: 0`` means no GPU-slot management, not "CPU only": every job then sees every GPU and
    torch picks GPU 0. The note applies when ``gpus`` is 0, the NVIDIA device node exists and
    ``CUDA_VISIBLE_DEVICES`` is unset (setting it, even to "", is the user's own choice).
    """
    environ = os.environ if environ is None else environ
    if gpus or not os.path.exists(device_node) or "CUDA_VISIBLE_DEVICES" in environ:
        return None
    return ("NOTE: gpus is 0 on a machine with GPUs: jobs get no GPU slot and each sees every GPU "
            "(concurrent jobs share GPU 0); set gpus: <number of GPUs>, or CUDA_VISIBLE_DEVICES=\"\" "
            "for CPU only")


def _lock_path(lock_dir: str | os.PathLike, device: str) -> Path:
    return Path(lock_dir) / f"{socket.gethostname()}-gpu-{device}.lock"


def _make_lock_dir(lock_dir: str | os.PathLike) -> None:
    """Create the lock folder shared by every user of the machine (mode 1777, as /tmp)."""
    path = Path(lock_dir)
    if path.is_dir():
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except PermissionError as err:
        raise PermissionError(f"cannot create the GPU slot lock folder {path} ({err.strerror}); choose one "
                              f"this user may write: config key gpu_lock_dir or ${LOCK_DIR_ENV}") from None
    try:
        os.chmod(path, 0o1777)
    except PermissionError:  # made by another user in between: theirs to set
        pass


def _open_lock(path: Path) -> IO:
    """Open (creating, readable by all) one device's lock file; a read-only descriptor suffices for flock."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except PermissionError as err:
        raise PermissionError(f"cannot open GPU slot lock {path} ({err.strerror}); choose a lock folder "
                              f"this user may write: config key gpu_lock_dir or ${LOCK_DIR_ENV}") from None
    return os.fdopen(fd, "r")


def try_acquire(num_gpus: int, need: int, lock_dir: str | os.PathLike,
                devices: list[str] | None = None) -> tuple[list[int], list[IO]] | None:
    """Try once to lock ``need`` free slots out of ``num_gpus``.

    Slot i locks the file of device ``devices[i]`` (default: ``str(i)``). Returns (slot indices,
    open lock files that hold the locks) or None if fewer than ``need`` are free (nothing is held
    then). Raises ValueError if ``need`` is not in 1..num_gpus or ``devices`` is shorter.
    """
    if not 1 <= need <= num_gpus:
        raise ValueError(f"need={need} GPU slot(s) but the machine has gpus={num_gpus}")
    devices = [str(i) for i in range(num_gpus)] if devices is None else list(devices)
    if len(devices) < num_gpus:
        raise ValueError(f"{num_gpus} slots but only {len(devices)} devices ({devices})")
    _make_lock_dir(lock_dir)
    slots: list[int] = []
    handles: list[IO] = []
    for i in range(num_gpus):
        try:
            fh = _open_lock(_lock_path(lock_dir, devices[i]))
        except PermissionError:
            release(handles)
            raise
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
    """Release slot locks taken by :func:`try_acquire` (only once no child shares them)."""
    for fh in handles:
        try:
            fcntl.flock(fh, fcntl.LOCK_UN)
        finally:
            fh.close()


def acquire(num_gpus: int, need: int, lock_dir: str | os.PathLike, poll_s: float = 1.0,
            timeout_s: float | None = None, devices: list[str] | None = None) -> tuple[list[int], list[IO]]:
    """Block until ``need`` slots are free; TimeoutError after ``timeout_s`` seconds."""
    start = time.monotonic()
    while True:
        got = try_acquire(num_gpus, need, lock_dir, devices)
        if got is not None:
            return got
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise TimeoutError(f"no {need} free GPU slot(s) of {num_gpus} in {lock_dir} after {timeout_s} s")
        time.sleep(poll_s)


def visible_devices(slots: list[int], parent_visible: str | None) -> str:
    """CUDA_VISIBLE_DEVICES for ``slots``; slot i maps to the i-th entry of an inherited list."""
    devices = parse_visible(parent_visible)
    if devices is not None:
        if max(slots) >= len(devices):
            raise ValueError(f"slot {max(slots)} but CUDA_VISIBLE_DEVICES={parent_visible!r} lists {len(devices)}")
        return ",".join(devices[i] for i in slots)
    return ",".join(str(i) for i in slots)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``taco gpu-slot``."""
    from taco.cli_parts import HelpFormatter

    # a usage, not the design note: that is this module's docstring (python -m pydoc taco.launch.gpuslots)
    parser = argparse.ArgumentParser(
        prog="taco gpu-slot", formatter_class=HelpFormatter,
        description="Run a command on GPUs of its own: take --need free slots out of --gpus (one lock per "
                    "device), set CUDA_VISIBLE_DEVICES to them, run the command and exit with its status. "
                    "Steps aside (runs the command as it is) when CUDA_VISIBLE_DEVICES already lists exactly "
                    "--need devices, as in a SLURM job.",
        epilog="Example: taco gpu-slot --gpus 4 --need 1 -- python -m taco finetune ... "
               "Design (locks per machine, the lock folder, a killed wrapper): the docstring of "
               "taco/launch/gpuslots.py (python -m pydoc taco.launch.gpuslots).")
    parser.add_argument("--gpus", type=int, required=True,
                        help="GPU slots (this machine's GPUs, or at most the inherited CUDA_VISIBLE_DEVICES)")
    parser.add_argument("--need", type=int, default=1, help="GPUs this job needs")
    parser.add_argument("--lock-dir", default=None,
                        help=f"folder for slot lock files, one per machine (default: ${LOCK_DIR_ENV}, else "
                             f"{DEFAULT_LOCK_DIR})")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for free slots, then exit 2 (default: wait as long as it takes)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``taco gpu-slot``: take slots (or step aside), run the command, return its exit status (2: no slots)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        parser.error("no command given (taco gpu-slot --gpus N -- CMD ...)")
    parent_visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    try:
        decision = decide(args.gpus, args.need, parent_visible)
        if decision.step_aside:
            print(f"taco gpu-slot: {decision.reason}: running the command as it is", file=sys.stderr)
            return subprocess.call(cmd)
        slots, handles = acquire(args.gpus, args.need, args.lock_dir or default_lock_dir(), timeout_s=args.timeout,
                                 devices=decision.devices)
    except (ValueError, TimeoutError, PermissionError) as err:
        return cli_error("gpu-slot", err)
    env = dict(os.environ)
    env["CUDA_VISIBLE_DEVICES"] = ",".join(decision.devices[i] for i in slots)
    print(f"taco gpu-slot: slots {slots} -> CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']} "
          f"({decision.reason})", file=sys.stderr)
    # the child shares the locked file descriptions: the locks outlive a wrapper killed with -9
    proc = subprocess.Popen(cmd, env=env, pass_fds=[fh.fileno() for fh in handles])

    def forward(signum, _frame):
        proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    try:
        return proc.wait()
    finally:
        release(handles)
