"""GPU slot assignment for local multi-GPU boxes (CPU-only test of the locking logic)."""

import subprocess
import sys

import pytest

from taco.launch import gpuslots


def test_two_jobs_never_share_a_slot(tmp_path):
    a = gpuslots.try_acquire(4, 1, tmp_path)
    b = gpuslots.try_acquire(4, 2, tmp_path)
    assert a is not None and b is not None
    assert a[0] == [0] and b[0] == [1, 2]
    assert not set(a[0]) & set(b[0])
    # only slot 3 left: asking for 2 fails and holds nothing
    assert gpuslots.try_acquire(4, 2, tmp_path) is None
    c = gpuslots.try_acquire(4, 1, tmp_path)
    assert c[0] == [3]
    gpuslots.release(a[1])
    d = gpuslots.try_acquire(4, 1, tmp_path)
    assert d[0] == [0]
    for h in (b[1], c[1], d[1]):
        gpuslots.release(h)


def test_lock_is_released_when_the_holder_dies(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time, sys; from taco.launch import gpuslots; "
        f"s = gpuslots.try_acquire(1, 1, {str(tmp_path)!r}); print(s[0], flush=True); time.sleep(60)"
    )], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "[0]"
    assert gpuslots.try_acquire(1, 1, tmp_path) is None
    holder.kill()
    holder.wait()
    got = gpuslots.try_acquire(1, 1, tmp_path)
    assert got is not None and got[0] == [0]
    gpuslots.release(got[1])


def test_visible_devices_maps_through_an_inherited_list():
    assert gpuslots.visible_devices([0, 2], None) == "0,2"
    assert gpuslots.visible_devices([1], "4,5,6") == "5"
    with pytest.raises(ValueError):
        gpuslots.visible_devices([3], "4,5")


def test_bad_need_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="need=3"):
        gpuslots.try_acquire(2, 3, tmp_path)


def test_cli_sets_cuda_visible_devices(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "2", "--need", "1", "--lock-dir", str(tmp_path),
         "--", sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.strip() == "0"


def test_a_job_that_sees_exactly_its_devices_runs_as_it_is(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "2", "--lock-dir", str(tmp_path), "--",
         sys.executable, "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"],
        capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "3"},
    )
    assert out.stdout.strip() == "3"
    assert not list(tmp_path.iterdir())  # no slot lock taken


# ---- inside a SLURM allocation (item 5) ------------------------------------------------
def _slot_cli(tmp_path, gpus, need, env_extra, code="import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"):
    env = {"PATH": "/usr/bin:/bin", **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", str(gpus), "--need", str(need), "--lock-dir",
         str(tmp_path), "--", sys.executable, "-c", code],
        capture_output=True, text=True, env=env,
    )


def test_decide_one_rule():
    # a job of the SLURM executor sees exactly its devices: step aside, whatever --gpus says
    assert gpuslots.decide(8, 1, "3").step_aside
    assert gpuslots.decide(2, 4, "4,5,6,7").step_aside
    # Snakemake inside `salloc --gpus=4`: slots map onto the inherited list
    d = gpuslots.decide(4, 1, "4,5,6,7")
    assert not d.step_aside and d.devices == ["4", "5", "6", "7"]
    assert gpuslots.decide(2, 1, "4,5,6,7").devices == ["4", "5"]
    # a bare machine
    assert gpuslots.decide(3, 2, None).devices == ["0", "1", "2"]
    assert gpuslots.decide(3, 2, "").devices == ["0", "1", "2"]
    with pytest.raises(ValueError, match="exceeds the 2 device"):
        gpuslots.decide(4, 1, "0,1")
    with pytest.raises(ValueError, match="need=3"):
        gpuslots.decide(2, 3, None)


def test_jobs_in_an_allocation_get_distinct_inherited_devices(tmp_path):
    """Snakemake in `salloc --gpus=4` (SLURM_JOB_ID set, 4 devices inherited): two concurrent local
    jobs get two different devices of the allocation, not both GPU 0."""
    env = {"SLURM_JOB_ID": "77", "CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    holder = subprocess.Popen(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "4", "--need", "1", "--lock-dir", str(tmp_path),
         "--", sys.executable, "-c",
         "import os, sys, time; print(os.environ['CUDA_VISIBLE_DEVICES'], flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin", **env})
    try:
        assert holder.stdout.readline().strip() == "4"
        second = _slot_cli(tmp_path, 4, 2, env)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "5,6"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_gpus_beyond_the_inherited_devices_is_a_clear_error(tmp_path):
    out = _slot_cli(tmp_path, 4, 1, {"SLURM_JOB_ID": "77", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert out.returncode == 2
    assert "--gpus 4" in out.stderr and "CUDA_VISIBLE_DEVICES=0,1" in out.stderr
    assert "Traceback" not in out.stderr


def test_killed_wrapper_leaves_its_slot_held_while_the_child_runs(tmp_path):
    """kill -9 of the wrapper: the orphaned child still holds the slot (the lock fd is inherited), so
    the next job is not given that device; once the child ends, the slot is free again."""
    import os
    import signal
    import time

    flag = tmp_path / "child-started"
    wrapper = subprocess.Popen(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "1", "--need", "1", "--lock-dir", str(tmp_path),
         "--", sys.executable, "-c",
         f"import os, sys; open({str(flag)!r}, 'w').write(str(os.getpid())); sys.stdin.read()"],
        stdin=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})
    deadline = time.time() + 30
    while not (flag.is_file() and flag.read_text()):
        assert time.time() < deadline and wrapper.poll() is None, "the child did not start"
        time.sleep(0.05)
    child_pid = int(flag.read_text())
    os.kill(wrapper.pid, signal.SIGKILL)
    wrapper.wait(timeout=30)
    os.kill(child_pid, 0)  # the child runs on
    assert gpuslots.try_acquire(1, 1, tmp_path) is None  # ... and its slot is not handed out
    second = subprocess.run(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "1", "--lock-dir", str(tmp_path), "--timeout", "1",
         "--", sys.executable, "-c", "print('ran')"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert second.returncode == 2 and "ran" not in second.stdout and "no 1 free GPU slot" in second.stderr
    wrapper.stdin.close()  # the child reads EOF and exits
    deadline = time.time() + 30
    got = None
    while got is None and time.time() < deadline:
        got = gpuslots.try_acquire(1, 1, tmp_path)
        time.sleep(0.05)
    assert got is not None and got[0] == [0]
    gpuslots.release(got[1])


# ---- locks per machine, not per results_dir (item 6) ---------------------------------
def test_default_lock_dir_is_one_per_machine():
    assert gpuslots.default_lock_dir({}) == "/tmp/taco-gpu-slots" == gpuslots.DEFAULT_LOCK_DIR
    assert gpuslots.default_lock_dir({"TACO_GPU_LOCK_DIR": "/shared/locks"}) == "/shared/locks"
    assert gpuslots.default_lock_dir({"TACO_GPU_LOCK_DIR": ""}) == "/tmp/taco-gpu-slots"
    assert gpuslots.build_parser().parse_args(["--gpus", "1", "--", "true"]).lock_dir is None


def _slot_taker(results_dir, gpus=2, lock_dir=None):
    """The launch words the workflow gives a fine-tuning job of a config with this results_dir."""
    from types import SimpleNamespace

    from taco.workflow.commands import Commands

    cfg = {"results_dir": results_dir, "gpus": gpus, "finetune": {"num_gpus": 1}, "gpu_lock_dir": lock_dir}
    return Commands(cfg, python=[sys.executable]).launch_words("finetune", SimpleNamespace(size="tiny"))


def test_two_workflows_with_different_results_dirs_never_share_a_gpu(tmp_path):
    """config.yaml and configs/gpu-mini.yaml started together on one box (results/ and results/gpu-mini):
    the second workflow's job gets GPU 1 while the first one's holds GPU 0, and with one GPU it waits."""
    import os

    env = {"PATH": "/usr/bin:/bin", "TACO_GPU_LOCK_DIR": str(tmp_path / "locks")}
    a, b = tmp_path / "paper", tmp_path / "mini"
    a.mkdir()
    b.mkdir()
    first = _slot_taker("results")
    second = _slot_taker("results/gpu-mini")
    assert "--lock-dir" not in first and "--lock-dir" not in second  # the machine's folder, not results_dir
    show = "import os; print(os.environ['CUDA_VISIBLE_DEVICES'], flush=True)"
    holder = subprocess.Popen(first + ["-c", show + "; import sys; sys.stdin.read()"], cwd=a, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "0"
        out = subprocess.run(second + ["-c", show], cwd=b, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr
        one_gpu = _slot_taker("results/gpu-mini", gpus=1)
        i = one_gpu.index("--")
        busy = subprocess.run(one_gpu[:i] + ["--timeout", "1"] + one_gpu[i:] + ["-c", show], cwd=b, env=env,
                              capture_output=True, text=True, timeout=60)
        assert busy.returncode == 2 and "no 1 free GPU slot" in busy.stderr and not busy.stdout
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert not (a / "results").exists() and not (b / "results").exists()  # nothing under results_dir
    locks = sorted(p.name for p in (tmp_path / "locks").iterdir())
    assert locks == [f"{os.uname().nodename}-gpu-0.lock", f"{os.uname().nodename}-gpu-1.lock"]
    assert (tmp_path / "locks").stat().st_mode & 0o7777 == 0o1777  # shared by every user, as /tmp


def test_gpu_lock_dir_overrides_the_default(tmp_path):
    words = _slot_taker("results", lock_dir=str(tmp_path / "nfs"))
    assert words[words.index("--lock-dir") + 1] == str(tmp_path / "nfs")
    out = subprocess.run(words + ["-c", "print('ran')"], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "TACO_GPU_LOCK_DIR": str(tmp_path / "env")})
    assert out.returncode == 0 and out.stdout.strip() == "ran", out.stderr
    assert list((tmp_path / "nfs").iterdir()) and not (tmp_path / "env").exists()


def test_a_lock_folder_this_user_cannot_write_is_a_clear_error(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root may write any folder: the permission error cannot happen")
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o555)
    out = _slot_cli(locked, 1, 1, {})
    assert out.returncode == 2 and "gpu_lock_dir" in out.stderr and "Traceback" not in out.stderr


def test_permission_error_names_the_keys(tmp_path, monkeypatch):
    """Where the lock folder belongs to another user (root runs this test too: the error is injected)."""
    import os

    real_open = os.open

    def denied(path, flags, mode=0o777, **kw):
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(gpuslots.os, "open", denied)
    with pytest.raises(PermissionError, match="gpu_lock_dir or \\$TACO_GPU_LOCK_DIR"):
        gpuslots.try_acquire(2, 1, tmp_path)


def test_unmanaged_gpus_note_only_for_gpus_zero_on_a_gpu_box(tmp_path):
    node = tmp_path / "nvidia0"
    assert gpuslots.unmanaged_gpus_note(0, {}, str(node)) is None  # no GPU
    node.touch()
    assert "gpus is 0" in gpuslots.unmanaged_gpus_note(0, {}, str(node))
    assert gpuslots.unmanaged_gpus_note(2, {}, str(node)) is None
    assert gpuslots.unmanaged_gpus_note(0, {"CUDA_VISIBLE_DEVICES": ""}, str(node)) is None
