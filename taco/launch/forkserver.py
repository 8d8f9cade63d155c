"""A fork server for the workflow's jobs: torch and transformers are imported once, every job forks.

Three modules: this one (the client, ``start``/``stop`` for the Snakefile, the ``python -m`` entry),
:mod:`taco.launch.forkserver_server` (the server process) and :mod:`taco.launch.forkserver_protocol`
(constants, the wire, refusals).

Every ``taco`` command of the workflow used to be a new Python process that paid 8-10 CPU-seconds importing torch
and transformers before its first step (``benchmarks/README.md``): most of the quick start's cost. With the fork
server the Snakefile's ``onstart`` starts one process per workflow run (:func:`start`) that imports them once
(:data:`~taco.launch.forkserver_protocol.PRELOAD`) and listens on a Unix socket; each job's command line is
``python -m taco.launch.forkserver -m taco <command> ...`` (the rule's ``resources.launch``,
:mod:`taco.workflow.commands`), a client of a few milliseconds that hands the job to the server: the server forks
a child that takes the client's standard input, output and error (passed over the socket, ``SCM_RIGHTS``), working
folder, environment and arguments and runs ``taco.cli.main`` in its own process group. The client forwards the
signals it gets (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to that group and exits as the child did (its
status, or the same signal), so Snakemake, ``--keep-going``, retries and the training's SIGTERM resume see what
they saw of a fresh process. If the client dies (SIGKILL), the server kills the child's group (SIGKILL): a retry
never runs beside a survivor.

**A fresh process whenever the fork could differ** (:func:`~taco.launch.forkserver_protocol.refusal`, the client
then ``exec``s ``python -m taco ...`` itself, printing why on its standard error): no server (``$TACO_FORKSERVER``
unset, its socket gone: a SLURM node, a command run by hand), another interpreter (``--use-conda``'s
environments), a command that is not ``-m taco <command>`` (``torch.distributed.run``), or an environment that
differs from the server's in anything but :data:`~taco.launch.forkserver_protocol.JOB_ENV` (the variables that may differ per job and that the
child applies itself: ``OMP_NUM_THREADS`` through ``torch.set_num_threads``, the temporary folder). Imported
modules read some variables once (``HF_HUB_OFFLINE``, ``HF_HOME``, ...), so any other difference is a refusal, not
a guess.

**Who may ask.** Only a process of the server's own user (``SO_PEERCRED``; another user's request is refused
before anything about the server's environment is said), and only the ``taco`` commands the workflow's rules run
(:data:`~taco.launch.forkserver_protocol.RULE_COMMANDS`; ``gpu-slot``, which runs any command, is not one). A
request that is not the expected JSON object is refused and the server lives on; requests are read without
blocking the accept loop, each within :data:`~taco.launch.forkserver_protocol.REQUEST_DEADLINE` seconds, so a
silent client delays no other job. If the server dies while a job runs, the client ends the job's process group
(SIGKILL) and waits for it before it exits 1: a retry never runs beside an orphan.

**Same numbers.** The child seeds every generator from its arguments as a fresh process does (the commands call
``transformers.set_seed``); the server imports but computes nothing, so no thread pool, CUDA context or random
draw is inherited. *Threads at fork time:* after the preload the server has 4 threads (measured on a 2-core Linux
VM, ``/proc/PID/task``: the main thread, two OpenBLAS workers and jemalloc's background thread); from the first
fork on, 2 (OpenBLAS ends its workers before a fork and starts them again only on a BLAS call, which the server
never makes). They wait on a condition and hold no lock the child takes (the server runs no numeric code); Python
>= 3.12 warns that forking a multi-threaded process may deadlock, which needs a lock held by another thread at the
fork (``tests/test_forkserver.py`` forks 8 jobs at once and counts the threads). The child re-creates its pools
(``torch.set_num_threads``, threadpoolctl) before any work (the server never initializes CUDA, so a forked job
may; jobs under the GPU-slot wrapper of config ``gpus`` stay fresh processes,
:meth:`taco.workflow.commands.Commands.launch_words`). A pre-training segment and a fine-tuning run through the
server write the same bytes as a fresh process (``tests/test_forkserver.py``).

**What differs.** Snakemake's ``benchmark:`` files measure the client's process tree, so their CPU columns no
longer include the job's work; the child's CPU-seconds are the ``forkserver:`` line at the end of the job's log
(:data:`taco.launch.forkserver_protocol.CPU_LINE`), which ``taco cpu-seconds RESULTS_DIR`` sums per rule folder.
The server stops with the workflow (``onsuccess``/``onerror``, :func:`stop`) or, if Snakemake is killed, within a
second of its parent's death: it takes no new job, and the running ones run on to their end (their clients get
their status), as a fresh job outlives a killed Snakemake (``tests/test_kill_snakemake.py``: the orphaned trainer
finishes its segment). ``fork_server: false`` in the configuration turns it off. Linux only (``os.pidfd_open``,
``socket.send_fds``); elsewhere every job is a fresh process.
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

from taco.launch.forkserver_protocol import (
    ENV_SOCKET,
    FORWARDED,
    MAX_SOCKET_PATH,
    PRELOAD,
    alive,
    kill_group,
    recv,
    send,
    supported,
)

# ---------------------------------------------------------------------------------------------
# the client
# ---------------------------------------------------------------------------------------------
def _fresh(argv: list[str], why: str | None) -> None:
    """Run ``python <argv>`` in this process (``exec``: the same pid, so signals reach it)."""
    if why:
        print(f"forkserver: a fresh process ({why})", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, *argv])


def client(argv: list[str]) -> int:
    """Hand ``python <argv>`` to the server named by ``$TACO_FORKSERVER`` and return as the job did;
    run it as a fresh process (``exec``) where there is no server or it refuses (module docstring)."""
    path = os.environ.get(ENV_SOCKET)
    if not path or not supported() or argv[:2] != ["-m", "taco"]:
        _fresh(argv, None if not path else "not a `-m taco` command" if supported() else "platform")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        send(sock, {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "executable": sys.executable},
              fds=[0, 1, 2])
        reply, _ = recv(sock)
    except (OSError, ConnectionError, ValueError) as exc:
        sock.close()
        _fresh(argv, f"no server at {path}: {exc}")
    if "refused" in reply:
        sock.close()
        _fresh(argv, reply["refused"])
    pid = int(reply["pid"])
    try:  # a handle on the job that survives the server (no pid reuse between now and a kill)
        pidfd: int | None = os.pidfd_open(pid)
    except OSError:
        pidfd = None

    def forward(sig: int, _frame: Any) -> None:
        kill_group(pid, sig)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        result, _ = recv(sock)
    except (OSError, ConnectionError, ValueError):
        end_orphan(pid, pidfd)
        print(f"forkserver: the server at {path} went away while job {pid} ran; the job's process group was "
              "ended (SIGKILL), so a retry does not run beside it", file=sys.stderr)
        return 1
    code = int(result["exitcode"])
    if code < 0:  # killed by a signal: die of it too (SIGKILL and SIGSTOP take no handler)
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def end_orphan(pid: int, pidfd: int | None, timeout: float = 60.0) -> bool:
    """End a job whose server went away: SIGKILL its process group, then wait (``pidfd``, polled: the client
    is not its parent) until it is gone or ``timeout`` s pass; True when it is gone."""
    kill_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    if pidfd is not None:
        sel = selectors.DefaultSelector()
        sel.register(pidfd, selectors.EVENT_READ)
        try:
            return bool(sel.select(timeout=max(deadline - time.monotonic(), 0)))
        finally:
            sel.close()
            os.close(pidfd)
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


# ---------------------------------------------------------------------------------------------
# the workflow's side: start and stop (Snakefile onstart / onsuccess / onerror)
# ---------------------------------------------------------------------------------------------
def start(log_path: str | None = None, timeout: float = 30.0) -> subprocess.Popen | None:
    """Start a server for this process's jobs: a socket in a new temporary folder, ``$TACO_FORKSERVER``
    set in ``os.environ`` (the jobs inherit it), the server's output appended to ``log_path``. Waits
    until the socket exists (``timeout`` s; RuntimeError naming the log after that). Returns the
    process, or None on a platform without :func:`supported`."""
    if not supported():
        return None
    folder = tempfile.mkdtemp(prefix="taco-fs-")
    path = os.path.join(folder, "socket")
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:  # a long $TMPDIR: the socket goes where its path fits
        os.rmdir(folder)
        folder = tempfile.mkdtemp(prefix="taco-fs-", dir="/tmp")
        path = os.path.join(folder, "socket")
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            os.rmdir(folder)
            print("taco: no fork server (no folder where a Unix socket path fits); every job runs as a fresh "
                  "process (set fork_server: false to say so)", file=sys.stderr)
            return None
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    env = {k: v for k, v in os.environ.items() if k != ENV_SOCKET}
    proc = subprocess.Popen([sys.executable, "-m", "taco.launch.forkserver", "serve", "--socket", path,
                             "--parent", str(os.getpid())], stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=env)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"the taco fork server did not start (log: {log_path or 'none'})")
        time.sleep(0.05)
    os.environ[ENV_SOCKET] = path
    return proc


def stop(proc: subprocess.Popen | None, timeout: float = 30.0) -> None:
    """Stop a server from :func:`start` (SIGTERM, then SIGKILL after ``timeout`` s) and remove its folder."""
    path = os.environ.pop(ENV_SOCKET, None)
    if proc is None:
        return
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if path:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass


def main(argv: list[str] | None = None) -> int:
    """``python -m taco.launch.forkserver serve --socket PATH [--parent PID]``, or a client:
    ``python -m taco.launch.forkserver -m taco <command> ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        ap = argparse.ArgumentParser(prog="python -m taco.launch.forkserver serve",
                                     description="fork server of the workflow's taco jobs")
        ap.add_argument("--socket", required=True, help="Unix socket path to listen on")
        ap.add_argument("--parent", type=int, default=None, help="stop when this process dies")
        ap.add_argument("--preload", nargs="*", default=None,
                        help="modules to import before the first job (default: torch, transformers, ... PRELOAD)")
        args = ap.parse_args(argv[1:])
        from taco.launch.forkserver_server import Server

        Server(args.socket, args.parent).serve(PRELOAD if args.preload is None else tuple(args.preload))
        return 0
    return client(argv)


if __name__ == "__main__":
    sys.exit(main())
