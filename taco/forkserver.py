"""A fork server for the workflow's jobs: torch and transformers are imported once, every job forks.

Every ``taco`` command of the workflow used to be a new Python process that paid 8-10 CPU-seconds
importing torch and transformers before its first step (``benchmarks/README.md``): most of the quick
start's cost. With the fork server the Snakefile's ``onstart`` starts one process per workflow run
(:func:`start`) that imports them once (:data:`PRELOAD`) and listens on a Unix socket; each job's
command line is ``python -m taco.forkserver -m taco <command> ...`` (the rule's ``resources.launch``,
:mod:`taco.workflow.commands`), a client of a few milliseconds that hands the job to the server: the
server forks a child that takes the client's standard input, output and error (passed over the socket,
``SCM_RIGHTS``), working folder, environment and arguments and runs ``taco.cli.main`` in its own process
group. The client forwards the signals it gets (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) to
that group and exits as the child did (its status, or the same signal), so Snakemake, ``--keep-going``,
retries and the training's SIGTERM resume see what they saw of a fresh process. If the client dies
(SIGKILL), the server kills the child's group (SIGKILL): a retry never runs beside a survivor.

**A fresh process whenever the fork could differ** (:func:`refusal`, the client then ``exec``s
``python -m taco ...`` itself, printing why on its standard error): no server (``$TACO_FORKSERVER`` unset,
its socket gone: a SLURM node, a command run by hand), another interpreter (``--use-conda``'s
environments), a command that is not ``-m taco <command>`` (``torch.distributed.run``), or an environment
that differs from the server's in anything but :data:`JOB_ENV` (the variables that may differ per job and
that the child applies itself: ``OMP_NUM_THREADS`` through ``torch.set_num_threads``, the temporary
folder). Imported modules read some variables once (``HF_HUB_OFFLINE``, ``HF_HOME``, ...), so any other
difference is a refusal, not a guess.

**Who may ask.** Only a process of the server's own user (``SO_PEERCRED``; another user's request is
refused before anything about the server's environment is said), and only the ``taco`` commands the
workflow's rules run (:data:`RULE_COMMANDS`; ``gpu-slot``, which runs any command, is not one). A request
that is not the expected JSON object is refused and the server lives on; requests are read without
blocking the accept loop, each within :data:`REQUEST_DEADLINE` seconds, so a silent client delays no other
job. If the server dies while a job runs, the client ends the job's process group (SIGKILL) and waits for
it before it exits 1: a retry never runs beside an orphan.

**Same numbers.** The child seeds every generator from its arguments as a fresh process does (the
commands call ``transformers.set_seed``); the server imports but computes nothing, so no thread pool,
CUDA context or random draw is inherited. *Threads at fork time:* the imports leave 2-4 native threads
in the server (numpy's OpenBLAS workers and allocator threads, waiting on a condition, holding no lock
the child takes: the server runs no numeric code); Python >= 3.12 warns that forking a multi-threaded
process may deadlock, which needs a lock held by another thread at the fork. The child re-creates its
pools (``torch.set_num_threads``, threadpoolctl) before any work (the server never initializes CUDA, so a forked job may; jobs
under the GPU-slot wrapper of config ``gpus`` stay fresh processes,
:meth:`taco.workflow.commands.Commands.launch_words`). A pre-training
segment and a fine-tuning run through the server write the same bytes as a fresh process
(``tests/test_forkserver.py``).

**What differs.** Snakemake's ``benchmark:`` files measure the client's process tree, so their CPU
columns no longer include the job's work; the child's CPU-seconds are the ``forkserver:`` line at the
end of the job's log. The server stops with the workflow (``onsuccess``/``onerror``, :func:`stop`) or,
if Snakemake is killed, within a second of its parent's death: it takes no new job, and the running
ones run on to their end (their clients get their status), as a fresh job outlives a killed Snakemake
(``tests/test_kill_snakemake.py``: the orphaned trainer finishes its segment). ``fork_server: false`` in the configuration turns it off.
Linux only (``os.pidfd_open``, ``socket.send_fds``); elsewhere every job is a fresh process.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

#: the environment variable that names the server's socket (set by :func:`start` for the jobs)
ENV_SOCKET = "TACO_FORKSERVER"
#: thread counts Snakemake sets per job (its ``threads``): the child applies them to torch and, through
#: threadpoolctl, to every loaded BLAS and OpenMP library (they read them once, at load, in the server)
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
              "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
#: variables a job may set differently from the server: the child applies them itself
JOB_ENV = frozenset({*THREAD_ENV, "TMPDIR", "TMP", "TEMP", "TEMPDIR", "PWD", "OLDPWD", "SHLVL", "_", ENV_SOCKET})
#: what the server imports before it accepts a job (the cost every job used to pay); optional ones may be absent
PRELOAD = ("numpy", "torch", "transformers", "transformers.trainer", "transformers.models.bert.modeling_bert",
           "datasets", "tokenizers", "safetensors.torch", "accelerate", "pandas", "scipy.stats",
           "torch.utils.tensorboard", "taco.training.pretrain", "taco.evaluation.finetune",
           "taco.evaluation.dynamics", "taco.evaluation.submission", "taco.training.control")
#: the ``taco`` commands the workflow's rules run (taco.workflow.commands; ``tests/test_forkserver.py``
#: keeps the list equal to theirs): no other command is forked
RULE_COMMANDS = frozenset({"corpus", "tokenizer", "pack", "pretrain", "init", "tuning-choice", "finetune", "dynamics",
                           "glue-submission", "aggregate", "tables", "figures", "claims", "deviations", "efficiency",
                           "pretrain-curves", "dynamics-figures"})
#: seconds a client has to send its whole request
REQUEST_DEADLINE = 10.0
#: the longest Unix socket path (sockaddr_un.sun_path, 108 bytes with its NUL on Linux)
MAX_SOCKET_PATH = 107
#: signals the client forwards to the job's process group
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_HEADER = struct.Struct("!I")


def supported() -> bool:
    """Whether this platform has what the server needs (Linux: ``os.pidfd_open``, ``socket.send_fds``)."""
    return hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")


# ---------------------------------------------------------------------------------------------
# the wire: a 4-byte length, then JSON (the request's first message carries the client's fds 0, 1, 2)
# ---------------------------------------------------------------------------------------------
def _send(sock: socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    data = json.dumps(obj).encode()
    if fds:
        socket.send_fds(sock, [_HEADER.pack(len(data))], fds)
        sock.sendall(data)
    else:
        sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def _recv(sock: socket.socket, with_fds: bool = False) -> tuple[Any, list[int]]:
    if with_fds:
        head, fds, _, _ = socket.recv_fds(sock, _HEADER.size, 3)
        head += _recv_exact(sock, _HEADER.size - len(head)) if len(head) < _HEADER.size else b""
    else:
        head, fds = _recv_exact(sock, _HEADER.size), []
    (n,) = _HEADER.unpack(head)
    return json.loads(_recv_exact(sock, n)), list(fds)


# ---------------------------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------------------------
def refusal(request: dict[str, Any], server_env: dict[str, str], executable: str) -> str | None:
    """Why a job must run as a fresh process instead of a fork of this server, or None.

    ``request``: the client's ``argv`` (after ``python -m taco.forkserver``), ``env`` and ``executable``.
    Refused: another interpreter, a command other than ``-m taco <command>``, an environment that differs
    from ``server_env`` outside :data:`JOB_ENV` (module docstring), or ``OMP_NUM_THREADS`` set in the
    server but not in the job (the server's OpenMP read it at import).
    """
    shape = request_shape_error(request)
    if shape:
        return shape
    if os.path.realpath(request.get("executable", "")) != os.path.realpath(executable):
        return f"another interpreter ({request.get('executable')!r}, the server runs {executable!r})"
    argv = request.get("argv", [])
    if argv[:2] != ["-m", "taco"] or len(argv) < 3:
        return f"not a `-m taco <command>` command line ({' '.join(argv[:3])!r})"
    if argv[2] not in RULE_COMMANDS and argv[2:] != ["--version"]:
        return f"`taco {argv[2]}` is not a command of the workflow's rules"
    env = request.get("env", {})
    differ = sorted(k for k in set(env) | set(server_env) if env.get(k) != server_env.get(k) and k not in JOB_ENV)
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        return f"the job's environment differs from the server's in {shown}"
    if "OMP_NUM_THREADS" in server_env and "OMP_NUM_THREADS" not in env:
        return "OMP_NUM_THREADS is set in the server but not in the job"
    return None


def request_shape_error(request: Any) -> str | None:
    """What is wrong with a request's shape, or None: a JSON object with ``argv`` (a list of str), ``env`` (str
    -> str), ``cwd`` and ``executable`` (str)."""
    if not isinstance(request, dict):
        return f"a malformed request (a JSON {type(request).__name__}, not an object)"
    for key, kind in (("argv", list), ("env", dict), ("cwd", str), ("executable", str)):
        if not isinstance(request.get(key), kind):
            return f"a malformed request ({key!r} missing or not a {kind.__name__})"
    if not all(isinstance(a, str) for a in request["argv"]):
        return "a malformed request ('argv' holds a non-string)"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in request["env"].items()):
        return "a malformed request ('env' holds a non-string)"
    return None


def peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (``SO_PEERCRED``), None where unknown."""
    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return struct.unpack("3i", raw)[1]


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


def _run_child(request: dict[str, Any], fds: list[int]) -> int:
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
        print(f"forkserver: pid {os.getpid()} exit {code}, "
              f"{t.user + t.system + t.children_user + t.children_system:.1f} CPU-s", file=sys.stderr)
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
                if self.parent is not None and not _alive(self.parent):
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
            _send(conn, {"refused": why})
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
        if len(p["buf"]) < _HEADER.size:
            return
        (n,) = _HEADER.unpack(p["buf"][:_HEADER.size])
        if len(p["buf"]) < _HEADER.size + n:
            return
        self.pending.pop(key)
        self.sel.unregister(p["conn"])
        try:
            request = json.loads(p["buf"][_HEADER.size:_HEADER.size + n])
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
                    code = _run_child(request, fds)
                finally:
                    os._exit(code)
            _send(conn, {"pid": pid})
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
            _killpg(pid, signal.SIGKILL)

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
            _send(job["conn"], {"exitcode": os.waitstatus_to_exitcode(status)})
        except OSError:
            pass
        job["conn"].close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


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
        _send(sock, {"argv": argv, "env": dict(os.environ), "cwd": os.getcwd(), "executable": sys.executable},
              fds=[0, 1, 2])
        reply, _ = _recv(sock)
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
        _killpg(pid, sig)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    try:
        result, _ = _recv(sock)
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
    _killpg(pid, signal.SIGKILL)
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
        if not _alive(pid):
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
    proc = subprocess.Popen([sys.executable, "-m", "taco.forkserver", "serve", "--socket", path,
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
    """``python -m taco.forkserver serve --socket PATH [--parent PID]``, or a client:
    ``python -m taco.forkserver -m taco <command> ...``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        ap = argparse.ArgumentParser(prog="python -m taco.forkserver serve",
                                     description="fork server of the workflow's taco jobs")
        ap.add_argument("--socket", required=True, help="Unix socket path to listen on")
        ap.add_argument("--parent", type=int, default=None, help="stop when this process dies")
        ap.add_argument("--preload", nargs="*", default=None,
                        help="modules to import before the first job (default: torch, transformers, ... PRELOAD)")
        args = ap.parse_args(argv[1:])
        Server(args.socket, args.parent).serve(PRELOAD if args.preload is None else tuple(args.preload))
        return 0
    return client(argv)


if __name__ == "__main__":
    sys.exit(main())
