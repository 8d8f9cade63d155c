"""The fork server's protocol, shared by its server (:mod:`taco.launch.forkserver_server`) and its client
(:mod:`taco.launch.forkserver`): the constants, the wire (a 4-byte length, then JSON; the request's first
message carries the client's fds 0, 1, 2), who may ask and what is refused (:func:`refusal`,
:func:`request_shape_error`, :func:`peer_uid`), and the process-group helpers. The module docstring of
:mod:`taco.launch.forkserver` says how the whole works. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import struct
import sys
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
                           "pretrain-curves", "dynamics-figures", "finetune-choice"})
#: seconds a client has to send its whole request
REQUEST_DEADLINE = 10.0
#: the longest Unix socket path (sockaddr_un.sun_path, 108 bytes with its NUL on Linux)
MAX_SOCKET_PATH = 107
#: signals the client forwards to the job's process group
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
HEADER = struct.Struct("!I")

#: the line a forked job prints last on its stderr (its log): the job's own CPU-seconds (user + system, its
#: waited-for subprocesses included), which Snakemake's ``benchmark:`` files do not see (they measure the client)
CPU_LINE = "forkserver: pid {pid} exit {code}, {cpu_seconds:.1f} CPU-s"
CPU_LINE_PATTERN = re.compile(r"^forkserver: pid \d+ exit (-?\d+), (\d+(?:\.\d+)?) CPU-s$", re.MULTILINE)


def cpu_line(pid: int, code: int, cpu_seconds: float) -> str:
    """The :data:`CPU_LINE` of one finished job (``code``: its exit status as the job returned it)."""
    return CPU_LINE.format(pid=pid, code=code, cpu_seconds=cpu_seconds)


def cpu_seconds_in(text: str) -> list[tuple[int, float]]:
    """Every :data:`CPU_LINE` in a job log's ``text``, as (exit status, CPU-seconds), in order (a log holds one per
    forked job that wrote to it; a fresh-process job, ``fork_server: false``, writes none)."""
    return [(int(code), float(cpu)) for code, cpu in CPU_LINE_PATTERN.findall(text)]


def supported() -> bool:
    """Whether this platform has what the server needs (Linux: ``os.pidfd_open``, ``socket.send_fds``)."""
    return hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and sys.platform.startswith("linux")


# ---------------------------------------------------------------------------------------------
# the wire: a 4-byte length, then JSON (the request's first message carries the client's fds 0, 1, 2)
# ---------------------------------------------------------------------------------------------
def send(sock: socket.socket, obj: Any, fds: list[int] | None = None) -> None:
    data = json.dumps(obj).encode()
    if fds:
        socket.send_fds(sock, [HEADER.pack(len(data))], fds)
        sock.sendall(data)
    else:
        sock.sendall(HEADER.pack(len(data)) + data)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def recv(sock: socket.socket, with_fds: bool = False) -> tuple[Any, list[int]]:
    if with_fds:
        head, fds, _, _ = socket.recv_fds(sock, HEADER.size, 3)
        head += recv_exact(sock, HEADER.size - len(head)) if len(head) < HEADER.size else b""
    else:
        head, fds = recv_exact(sock, HEADER.size), []
    (n,) = HEADER.unpack(head)
    return json.loads(recv_exact(sock, n)), list(fds)




def refusal(request: dict[str, Any], server_env: dict[str, str], executable: str) -> str | None:
    """Why a job must run as a fresh process instead of a fork of this server, or None.

    ``request``: the client's ``argv`` (after ``python -m taco.launch.forkserver``), ``env`` and ``executable``.
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


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
