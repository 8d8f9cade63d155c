"""The fork server's process: :class:`Server` imports torch and transformers once (:data:`PRELOAD
<taco.launch.forkserver_protocol.PRELOAD>`), accepts requests without blocking its loop, and forks one child
per job, which takes the client's fds, folder, environment and arguments and runs ``taco.cli.main`` in its own
process group (:func:`run_child`). Started by :func:`taco.launch.forkserver.start` as ``python -m
taco.launch.forkserver serve``; :mod:`taco.launch.forkserver` says how the whole works.
"""

from __future__ import annotations

import importlib
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
from typing import Any

from taco.launch.forkserver_protocol import (
    FORWARDED,
    HEADER,
    PRELOAD,
    REQUEST_DEADLINE,
    alive,
    cpu_line,
    kill_group,
    peer_uid,
    refusal,
    send,
)

def _count(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None


def _apply_threads(env: dict[str, str] | os._Environ) -> None:
    """The job's thread counts (:data:`THREAD_ENV`), which a fresh process's libraries would have read at
    load: ``torch.set_num_threads`` (intra-op, its OpenMP and MKL), and threadpoolctl's limits for the
    other OpenMP and BLAS libraries loaded (numpy's OpenBLAS). numexpr's is not applied (never loaded)."""
    omp = _count(env.get("OMP_NUM_THREADS"))
    blas = _count(env.get("OPENBLAS_NUM_THREADS") or env.get("MKL_NUM_THREADS") or env.get("GOTO_NUM_THREADS"))
    if omp and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(omp)
    if omp or blas:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            return
        if omp:
            threadpool_limits(limits=omp, user_api="openmp")
        if blas:
            threadpool_limits(limits=blas, user_api="blas")


def _set_name(name: str) -> None:
    """The process name ``top`` and ``ps -o comm`` show (Linux ``prctl(PR_SET_NAME)``, 15 bytes): the job's
    command instead of the server's; its ``/proc/<pid>/cmdline`` stays the server's."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass


def run_child(request: dict[str, Any], fds: list[int]) -> int:
    """In the forked child: become the job (fds, folder, environment, threads, argv) and run it."""
    for sig in (*FORWARDED, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    os.setpgid(0, 0)
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    try:
        os.chdir(request["cwd"])
    except OSError as exc:
        print(f"forkserver: the job's working folder {request['cwd']!r} cannot be entered ({exc.strerror})",
              file=sys.stderr, flush=True)
        return 1
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # read TMPDIR again
    _apply_threads(os.environ)
    argv = request["argv"][2:]
    sys.argv = ["taco", *argv]
    _set_name(f"taco {argv[0]}")
    try:
        from taco.cli import main

        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the job's traceback, as a fresh process prints it
        import traceback

        traceback.print_exc()
        code = 1
    try:
        import atexit

        atexit._run_exitfuncs()
    finally:
        t = os.times()  # a forked child's counters start at 0; its waited-for subprocesses included
        cpu = t.user + t.system + t.children_user + t.children_system
        print(cpu_line(os.getpid(), int(code or 0), cpu), file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    return int(code or 0) & 0xFF if code else 0


class Server:
    """The fork server (module docstring) on the Unix socket ``path``; stops when ``parent`` dies."""

    def __init__(self, path: str, parent: int | None = None):
        self.path = path
        self.parent = parent
        self.env = dict(os.environ)
        self.sel = selectors.DefaultSelector()
        self.jobs: dict[int, dict[str, Any]] = {}  # pid -> {"conn", "pidfd"}
        self.pending: dict[int, dict[str, Any]] = {}  # fd -> a request being read {"conn", "buf", "fds", "deadline"}
        self.listener: socket.socket | None = None
        self.stopping = False

    def serve(self, preload: tuple[str, ...] = PRELOAD) -> None:
        """Listen, import ``preload``, then fork a child per request until stopped."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(64)
        self.listener = listener
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for name in preload:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        sys.stdout.flush()
        sys.stderr.flush()
        self.sel.register(listener, selectors.EVENT_READ, ("listen", None))
        listening = True
        try:
            # stopped (SIGTERM) or orphaned (the parent died): no new job, but the running ones run on to
            # their end and their clients get their status, as a fresh job outlives a killed Snakemake
            while listening or self.jobs:
                if listening and self.stopping:
                    listening = False
                    self.sel.unregister(listener)
                    self._close_listener(listener)
                for key, _ in self.sel.select(timeout=1.0):
                    kind, pid = key.data
                    if kind == "listen":
                        self._accept(listener)
                    elif kind == "request":
                        self._read_request(pid)
                    elif kind == "child":
                        self._reap(pid)
                    elif kind == "client":
                        self._client_gone(pid)
                self._expire_pending()
                if self.parent is not None and not alive(self.parent):
                    self.stopping = True
        finally:
            self._close_listener(listener)

    def _close_listener(self, listener: socket.socket) -> None:
        listener.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def _stop(self, *_: Any) -> None:
        self.stopping = True

    def _accept(self, listener: socket.socket) -> None:
        """Take a connection: another user's is refused at once; the rest are read without blocking
        (:meth:`_read_request`, whole request within :data:`REQUEST_DEADLINE`)."""
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        uid = peer_uid(conn)
        if uid is not None and uid != os.getuid():
            self._refuse(conn, "the server takes jobs of its own user only")
            return
        conn.setblocking(False)
        self.pending[conn.fileno()] = {"conn": conn, "buf": b"", "fds": [],
                                       "deadline": time.monotonic() + REQUEST_DEADLINE}
        self.sel.register(conn, selectors.EVENT_READ, ("request", conn.fileno()))

    def _refuse(self, conn: socket.socket, why: str, fds: list[int] | None = None) -> None:
        try:
            conn.setblocking(True)
            conn.settimeout(5)
            send(conn, {"refused": why})
        except OSError:
            pass
        conn.close()
        for fd in fds or []:
            os.close(fd)

    def _drop_pending(self, key: int, why: str | None = None) -> None:
        p = self.pending.pop(key, None)
        if p is None:
            return
        try:
            self.sel.unregister(p["conn"])
        except (KeyError, ValueError):
            pass
        if why is None:
            p["conn"].close()
            for fd in p["fds"]:
                os.close(fd)
        else:
            self._refuse(p["conn"], why, p["fds"])

    def _expire_pending(self) -> None:
        now = time.monotonic()
        for key in [k for k, p in self.pending.items() if p["deadline"] < now]:
            self._drop_pending(key, f"no whole request within {REQUEST_DEADLINE:g} s")

    def _read_request(self, key: int) -> None:
        p = self.pending.get(key)
        if p is None:
            return
        try:
            data, fds, _, _ = socket.recv_fds(p["conn"], 65536, 3)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop_pending(key)
            return
        p["fds"] += list(fds)
        if not data:  # the client went away before its request was whole
            self._drop_pending(key)
            return
        p["buf"] += data
        if len(p["buf"]) < HEADER.size:
            return
        (n,) = HEADER.unpack(p["buf"][:HEADER.size])
        if len(p["buf"]) < HEADER.size + n:
            return
        self.pending.pop(key)
        self.sel.unregister(p["conn"])
        try:
            request = json.loads(p["buf"][HEADER.size:HEADER.size + n])
        except (ValueError, UnicodeDecodeError):
            self._refuse(p["conn"], "a malformed request (not JSON)", p["fds"])
            return
        self._start_job(p["conn"], request, p["fds"])

    def _start_job(self, conn: socket.socket, request: Any, fds: list[int]) -> None:
        """Refuse (:func:`refusal`) or fork the job of a whole request."""
        conn.setblocking(True)
        conn.settimeout(30)
        why = refusal(request, self.env, sys.executable)
        if why is None and len(fds) != 3:
            why = f"expected the client's 3 standard streams, got {len(fds)} descriptors"
        if why is not None:
            self._refuse(conn, why, fds)
            return
        listener = self.listener
        try:
            pid = os.fork()
            if pid == 0:  # the child never returns to the server loop
                code = 1
                try:
                    self.sel.close()
                    for obj in (listener, conn, *(j["conn"] for j in self.jobs.values()),
                                *(q["conn"] for q in self.pending.values())):
                        obj.close()
                    for job in self.jobs.values():
                        os.close(job["pidfd"])
                    code = run_child(request, fds)
                finally:
                    os._exit(code)
            send(conn, {"pid": pid})
        except (OSError, ValueError, ConnectionError):
            conn.close()
            return
        finally:
            for fd in fds:
                os.close(fd)
        conn.settimeout(None)
        pidfd = os.pidfd_open(pid)
        self.jobs[pid] = {"conn": conn, "pidfd": pidfd}
        self.sel.register(pidfd, selectors.EVENT_READ, ("child", pid))
        self.sel.register(conn, selectors.EVENT_READ, ("client", pid))

    def _client_gone(self, pid: int) -> None:
        job = self.jobs.get(pid)
        if job is None:
            return
        try:
            data = job["conn"].recv(1)
        except OSError:
            data = b""
        if not data:  # the client died without its signal handlers (SIGKILL): no survivor beside a retry
            self.sel.unregister(job["conn"])
            kill_group(pid, signal.SIGKILL)

    def _reap(self, pid: int, block: bool = False) -> None:
        job = self.jobs.get(pid)
        if job is None:
            return
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if not done:
            return
        self.jobs.pop(pid)
        for obj in (job["pidfd"], job["conn"]):
            try:
                self.sel.unregister(obj)
            except (KeyError, ValueError):
                pass
        os.close(job["pidfd"])
        try:
            send(job["conn"], {"exitcode": os.waitstatus_to_exitcode(status)})
        except OSError:
            pass
        job["conn"].close()
