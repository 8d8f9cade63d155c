"""Shared pytest fixtures. Tests never touch the network: the Hub is switched off here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Before any datasets/transformers import in a test module: fail fast instead of retrying the Hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared real-data folder: ``$TACO_SHARED_DATA`` or ``<repo>/../shared/data``.

    Skips the test (with the path in the reason) where it is absent, e.g. on a fresh clone.
    """
    path = Path(os.environ.get("TACO_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found (set TACO_SHARED_DATA to the folder "
                    "that holds glue/, corpus/ and bert/)")
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
