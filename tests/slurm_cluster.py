"""A throwaway single-node SLURM on localhost for the cluster integration test (tests/test_slurm.py).

Debian's ``slurm-wlm`` (22.05) and ``munge`` packages (installed by ``.ci/run`` with apt-get) run a
real controller and compute node on this machine:

- ``munged`` (authentication), started as the ``munge`` user unless one is already serving the
  default socket (then it is reused and left alone);
- ``slurmctld`` and ``slurmd`` in the foreground (``-D``) as children of this process, so their PIDs
  are known and :meth:`LocalSlurm.stop` ends exactly those processes (never by name).

Settings that matter (each one was needed to make it work on a container without systemd/cgroups):

- ``/etc/slurm/slurm.conf`` (not ``$SLURM_CONF``): the Snakemake job step calls ``srun`` with an
  environment from which every ``SLURM_*`` variable but the job id was removed, so only the default
  path is found. An existing file there is backed up and restored by :meth:`LocalSlurm.stop`.
- ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``: no cgroups needed.
- ``SelectType=select/cons_tres``: per-CPU/memory/GPU allocation, so several jobs share the node.
- no accounting (``accounting_storage/none``): ``sacct`` has nothing to ask, so the executor's
  status check must use ``squeue`` (``--slurm-status-command squeue``), which needs finished jobs to
  stay listed: ``MinJobAge`` (default 3600 here; the plugin wants >= 3 x its first status interval,
  and the test reads every job's final state at its end).
- ``Gres=gpu:N`` with a count-only ``gres.conf``: *fake* GPUs, so the profile's real ``--gpus=1``
  requests are scheduled as written (the jobs run on CPU; nothing opens a device).
- ``KillWait``: seconds between SIGTERM and SIGKILL at a time limit or ``scancel`` (the runner saves
  its state in that window).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SLURM_CONF = Path("/etc/slurm/slurm.conf")
GRES_CONF = Path("/etc/slurm/gres.conf")
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
FAKE_GPU_FILES = ("/dev/zero", "/dev/full", "/dev/null", "/dev/urandom")
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "scontrol", "srun")


def missing_binaries() -> list[str]:
    """Names of the SLURM/munge programs that are not on PATH (or in /usr/sbin)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    return [b for b in BINARIES if shutil.which(b, path=path) is None]


def unavailable_reason() -> str | None:
    """Why a local SLURM cannot be started here, or None if it can."""
    missing = missing_binaries()
    if missing:
        return (f"SLURM/munge not installed ({', '.join(missing)} missing); install them with "
                "`apt-get install slurm-wlm munge` (.ci/run does this where apt-get is available)")
    if os.geteuid() != 0:
        return "starting slurmctld/slurmd/munged and writing /etc/slurm/slurm.conf needs root"
    return None


def _sbin(name: str) -> str:
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin" + os.pathsep + "/sbin"
    found = shutil.which(name, path=path)
    if found is None:
        raise FileNotFoundError(name)
    return found


def _munge_works() -> bool:
    if shutil.which("munge") is None or shutil.which("unmunge") is None:
        return MUNGE_SOCKET.exists()
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=10, check=True).stdout
        subprocess.run(["unmunge"], input=cred, capture_output=True, timeout=10, check=True)
        return True
    except (subprocess.SubprocessError, OSError):
        return False


class LocalSlurm:
    """Start with :meth:`start`, stop with :meth:`stop` (or use as a context manager)."""

    def __init__(self, cpus: int | None = None, real_memory_mb: int = 16000, gpus: int = 2,
                 min_job_age: int = 3600, kill_wait: int = 30, workdir: str | os.PathLike | None = None,
                 partition: str = "debug"):
        self.cpus = cpus or os.cpu_count() or 1
        self.real_memory_mb = real_memory_mb
        self.gpus = gpus
        self.min_job_age = min_job_age
        self.kill_wait = kill_wait
        self.partition = partition
        self.dir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="taco-slurm-"))
        self.hostname = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen] = {}
        self._backups: dict[Path, Path | None] = {}
        self._munged_pid: int | None = None

    # ---- configuration ----
    def slurm_conf(self) -> str:
        d = self.dir
        gres = f" Gres=gpu:{self.gpus}" if self.gpus else ""
        return "\n".join([
            "# written by tests/slurm_cluster.py for the taco SLURM integration test",
            "ClusterName=taco-test",
            f"SlurmctldHost={self.hostname}(127.0.0.1)",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "SlurmUser=root",
            "SlurmdUser=root",
            "SlurmctldPort=6817",
            "SlurmdPort=6818",
            f"StateSaveLocation={d}/ctld-state",
            f"SlurmdSpoolDir={d}/slurmd-spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/slurmctld.log",
            f"SlurmdLogFile={d}/slurmd.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=sched_interval=2",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdParameters=config_overrides",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            f"MinJobAge={self.min_job_age}",
            f"KillWait={self.kill_wait}",
            "InactiveLimit=0",
            "Waittime=0",
            "GresTypes=gpu",
            f"NodeName={self.hostname} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={self.real_memory_mb}"
            f"{gres} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.hostname} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])

    def gres_conf(self) -> str:
        if not self.gpus:
            return ""
        # gres/gpu needs a device file per GPU; these stand-ins exist everywhere and nothing opens them
        return "".join(f"NodeName={self.hostname} Name=gpu File={f}\n" for f in FAKE_GPU_FILES[: self.gpus])

    def _write_etc(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path not in self._backups:
            if path.exists():
                backup = self.dir / f"backup-{path.name}"
                shutil.copy2(path, backup)
                self._backups[path] = backup
            else:
                self._backups[path] = None
        path.write_text(text)

    # ---- lifecycle ----
    def _start_munged(self) -> None:
        if MUNGE_SOCKET.exists() and _munge_works():
            return  # a munged is already serving; reuse it, never stop it
        munge = pwd.getpwnam("munge")
        for folder in (Path("/run/munge"), Path("/var/lib/munge"), Path("/var/log/munge")):
            folder.mkdir(parents=True, exist_ok=True)
            os.chown(folder, munge.pw_uid, munge.pw_gid)
        key = Path("/etc/munge/munge.key")
        if not key.exists():
            subprocess.run(["mungekey", "--create"], check=True)  # writes /etc/munge/munge.key
            os.chown(key, munge.pw_uid, munge.pw_gid)
            key.chmod(0o400)
        proc = subprocess.Popen(
            [_sbin("munged"), "--foreground"], user=munge.pw_uid, group=munge.pw_gid, extra_groups=[],
            stdout=open(self.dir / "munged.out", "wb"), stderr=subprocess.STDOUT)
        self.procs["munged"] = proc
        for _ in range(100):
            if MUNGE_SOCKET.exists() and _munge_works():
                return
            if proc.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"munged did not start: {(self.dir / 'munged.out').read_text(errors='replace')}")

    def start(self, timeout: float = 60) -> "LocalSlurm":
        self.dir.mkdir(parents=True, exist_ok=True)
        for sub in ("ctld-state", "slurmd-spool"):
            (self.dir / sub).mkdir(exist_ok=True)
        self._write_etc(SLURM_CONF, self.slurm_conf())
        self._write_etc(GRES_CONF, self.gres_conf())
        try:
            self._start_munged()
            env = dict(os.environ)
            env.pop("SLURM_CONF", None)
            self.procs["slurmctld"] = subprocess.Popen(
                [_sbin("slurmctld"), "-D", "-c", "-i"], env=env,
                stdout=open(self.dir / "slurmctld.out", "wb"), stderr=subprocess.STDOUT)
            self.procs["slurmd"] = subprocess.Popen(
                [_sbin("slurmd"), "-D", "-N", self.hostname], env=env,
                stdout=open(self.dir / "slurmd.out", "wb"), stderr=subprocess.STDOUT)
            self.wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def wait_idle(self, timeout: float) -> None:
        """Wait until the node accepts jobs (sinfo reports it idle/mixed/allocated)."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.logs()}")
            r = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True)
            last = (r.stdout + r.stderr).strip()
            if r.returncode == 0 and any(s.startswith(("idle", "mixed", "alloc")) for s in last.split()):
                return
            time.sleep(0.5)
        raise RuntimeError(f"SLURM node not ready after {timeout} s (sinfo: {last!r}):\n{self.logs()}")

    def logs(self, tail: int = 40) -> str:
        out = []
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munged.out"):
            p = self.dir / name
            if p.exists():
                lines = p.read_text(errors="replace").splitlines()[-tail:]
                out.append(f"--- {p} ---\n" + "\n".join(lines))
        return "\n".join(out)

    def stop(self) -> None:
        """Cancel remaining jobs, stop the daemons this object started (by PID), restore /etc files."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            subprocess.run(["scancel", "--full", "--user", pwd.getpwuid(os.getuid()).pw_name],
                           capture_output=True, timeout=30)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()  # SIGTERM to this PID only
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        for path, backup in self._backups.items():
            if backup is None:
                path.unlink(missing_ok=True)
            else:
                shutil.copy2(backup, path)
        self._backups.clear()

    def __enter__(self) -> "LocalSlurm":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":  # manual check: python tests/slurm_cluster.py
    why = unavailable_reason()
    if why:
        raise SystemExit(why)
    with LocalSlurm() as cluster:
        print(subprocess.run(["sinfo"], capture_output=True, text=True).stdout)
        job = subprocess.run(["sbatch", "--parsable", "--gpus=1", "--wrap", "echo gpus=$SLURM_GPUS; hostname"],
                             capture_output=True, text=True)
        print("sbatch:", job.stdout, job.stderr)
        time.sleep(5)
        print(subprocess.run(["squeue", "--states=all"], capture_output=True, text=True).stdout)
