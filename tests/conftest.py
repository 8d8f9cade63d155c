"""Shared pytest fixtures. Tests never touch the network: the Hub is switched off here.

No test writes under the checkout's ``results/``: dry runs and real runs use scratch
``--directory`` folders. The session checks it: :func:`pytest_sessionstart` takes a snapshot (path,
mtime, size) of the files under the ``results_dir`` of every configuration the tests use
(``config.yaml``, ``configs/*.yaml``, ``tests/configs/*.yaml``: ``results/smoke``, ``results/local``,
``results/cpu-real-ci``, ...; for ``config.yaml``'s ``results`` only its direct files and the folders
the workflow writes there), and :func:`pytest_sessionfinish` fails the session, naming the files, if
any of them is new, changed or gone. Results already there (a user's quick start) fail nothing by
themselves. Other subfolders of ``results/`` are not watched, on purpose: a real run of another
``results_dir`` (``results/cpu-efficiency``, say) may be writing there while the tests run, and its
files are not the tests'. A run of a watched configuration started by hand during the session would
be reported. ``tests/results_guard.py`` says exactly what is watched.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import results_guard

# Before any datasets/transformers import in a test module: fail fast instead of retrying the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent

_RESULTS_BEFORE: dict = {}


#: the slow test files that start first under `pytest -m slow -n 2 --dist loadfile` (CI's command), longest first
#: (their durations on the 2-core VM, 2026-12-06: the real-data run ~450 s, SLURM ~300 s, smoke ~105 s, the
#: shrunk paper configuration ~150 s), so the two workers end together instead of one running the two longest
#: last; every other test keeps its collection order after them
START_FIRST = ("test_workflow_e2e_local.py", "test_slurm.py", "test_workflow_e2e.py", "test_paper_shrunk.py")


def pytest_collection_modifyitems(session, config, items):
    """Move the tests of :data:`START_FIRST` to the front, in that order (a stable sort: nothing else moves)."""
    rank = {name: i for i, name in enumerate(START_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(START_FIRST)))


def pytest_sessionstart(session):
    """Snapshot of the watched files under the checkout's ``results/`` (see the module docstring)."""
    _RESULTS_BEFORE.clear()
    _RESULTS_BEFORE.update(results_guard.snapshot(REPO))


def pytest_sessionfinish(session, exitstatus):
    """Fail the session if a watched file under the checkout's ``results/`` was written or removed."""
    if getattr(session.config, "workerinput", None) is not None:  # an xdist worker: the controller checks
        return
    changed = results_guard.changes(_RESULTS_BEFORE, results_guard.snapshot(REPO))
    if not changed:
        return
    shown = changed[:20] + ([f"... and {len(changed) - 20} more"] if len(changed) > 20 else [])
    msg = ("tests wrote under the checkout's results/ (no test may: use a scratch --directory):\n  "
           + "\n  ".join(shown))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_sep("=", "results/ written by the tests", red=True)
        reporter.write_line(msg)
    else:
        print(msg)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data folder: ``$TACO_SHARED_DATA`` or ``<repo>/../shared/data``.

    Skips the test (with the path in the reason) where it is absent, e.g. on a fresh clone.
    """
    path = Path(os.environ.get("TACO_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found: `taco data-recipe --output {path}` fetches it "
                    "(docs/data.md), or set TACO_SHARED_DATA to a folder that holds glue/ and corpus/")
    return path


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """The ``torch.device`` a model, loss, sampling or training test runs on: ``cpu`` always, ``cuda``
    where a GPU is visible; the ``cuda`` variant is skipped with the reason on a machine without one."""
    torch = pytest.importorskip("torch")
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch (torch.cuda.is_available() is False); "
                    f"torch {torch.__version__}")
    return torch.device(request.param)
