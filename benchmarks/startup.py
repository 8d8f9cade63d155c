"""What a job pays before its first unit of work: a fresh process against a fork of the run's server.

Runs the same minimal jobs, interleaved (fresh, forked, fresh, forked, ...), and prints the median wall
seconds and CPU-seconds (user + sys) of each and the ratio fresh / forked:

- ``version``: ``taco --version`` (no torch: the interpreter and the client alone);
- ``pretrain``: one optimizer step of the tiny preset on 48 blocks of 32 tokens (``taco pretrain``);
- ``corpus``: a synthetic corpus of 20 documents (``taco corpus``, a data job).

A fresh job's CPU is its process tree's (``resource.getrusage(RUSAGE_CHILDREN)`` around it); a forked
job's is the client's plus the child's own, which the child prints on its standard error
(``forkserver: pid N exit 0, X CPU-s``; :mod:`taco.launch.forkserver`). The server's one-off preload is
measured once and printed beside them.

    python benchmarks/startup.py [--reps 5] [--jobs version,pretrain,corpus]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from taco.launch import forkserver as fs
from taco.launch import forkserver_protocol as proto

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tiny_blocks import write_blocks  # noqa: E402  (the tests' tiny blocks)


def _job(name: str, root: Path, blocks: Path, i: int) -> list[str]:
    if name == "version":
        return ["-m", "taco", "--version"]
    if name == "corpus":
        return ["-m", "taco", "corpus", "--source", "synthetic", "--num-documents", "20", "--seed", "0",
                "--output", str(root / f"corpus-{i}")]
    if name == "pretrain":
        return ["-m", "taco", "pretrain", "--blocks", str(blocks), "--objective", "mlm", "--size", "tiny",
                "--max-steps", "1", "--warmup-steps", "0", "--until", "1", "--output", str(root / f"pt-{i}" / "out"),
                "--state-dir", str(root / f"pt-{i}" / "state"), "--per-device-batch-size", "4",
                "--save-every", "1", "--logging-steps", "1", "--seed", "0", "--device", "cpu", "--no-progress",
                "--report-to", "none"]
    raise SystemExit(f"unknown job {name!r}")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(argv: list[str], env: dict[str, str], forked: bool) -> tuple[float, float]:
    before = _children_cpu()
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "taco.launch.forkserver", *argv] if forked else [sys.executable, *argv]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - before
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    if forked:
        m = re.search(r"forkserver: pid \d+ exit 0, ([0-9.]+) CPU-s", p.stderr)
        if not m:
            raise SystemExit(f"not forked: {p.stderr[-500:]}")
        cpu += float(m.group(1))
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="runs of each job each way")
    ap.add_argument("--jobs", default="version,pretrain,corpus", help="comma-separated: version, pretrain, corpus")
    args = ap.parse_args(argv)
    if not proto.supported():
        print("the fork server needs Linux")
        return 2
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")  # the server's environment too
    env = {k: v for k, v in os.environ.items() if k != proto.ENV_SOCKET}
    env["OMP_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        blocks = write_blocks(root, n_train=48)
        t0 = time.perf_counter()
        server = fs.start(str(root / "server.log"))
        # the preload is done when the first job is answered
        _run(["-m", "taco", "--version"], dict(env, **{proto.ENV_SOCKET: os.environ[proto.ENV_SOCKET]}), True)
        print(f"server start + preload: {time.perf_counter() - t0:.2f} s wall to the first answered job")
        fenv = dict(env, **{proto.ENV_SOCKET: os.environ[proto.ENV_SOCKET]})
        try:
            for name in args.jobs.split(","):
                fresh, forked = [], []
                for i in range(args.reps):
                    fresh.append(_run(_job(name, root, blocks, 2 * i), env, False))
                    forked.append(_run(_job(name, root, blocks, 2 * i + 1), fenv, True))
                fw, fc = (statistics.median(x) for x in zip(*fresh))
                kw, kc = (statistics.median(x) for x in zip(*forked))
                print(f"{name:<9} fresh {fw:6.2f} s wall {fc:6.2f} CPU-s | forked {kw:6.2f} s wall {kc:6.2f} CPU-s | "
                      f"fresh/forked wall {fw / kw:5.1f}x CPU {fc / kc:5.1f}x  (median of {args.reps})")
        finally:
            fs.stop(server)
        before = _children_cpu()
        subprocess.run([sys.executable, "-c", "import importlib, sys\nfrom taco.launch.forkserver_protocol import PRELOAD\n"
                        "for m in PRELOAD:\n    try: importlib.import_module(m)\n    except ImportError: pass"],
                       env=env, check=True)
        print(f"the server's one-off preload (PRELOAD in a fresh process): {_children_cpu() - before:.2f} CPU-s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
