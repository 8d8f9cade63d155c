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
