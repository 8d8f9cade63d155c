"""GPU slot assignment for local multi-GPU boxes (CPU-only test of the locking logic)."""

import subprocess
import sys

import pytest

from taco.workflow import gpuslots


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
        "import time, sys; from taco.workflow import gpuslots; "
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


def test_inside_slurm_the_command_runs_as_it_is(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "taco", "gpu-slot", "--gpus", "2", "--lock-dir", str(tmp_path), "--",
         sys.executable, "-c", "import os; print(os.environ.get('CUDA_VISIBLE_DEVICES'))"],
        capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "3"},
    )
    assert out.stdout.strip() == "3"
    assert not list(tmp_path.iterdir())  # no slot lock taken
