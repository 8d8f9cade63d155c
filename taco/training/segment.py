"""The plan of one ``taco pretrain`` segment: everything checked and decided before any work
(:func:`taco.training.pretrain.make_segment_plan` builds it), read by the saved-state handling
(:mod:`taco.training.pretrain_state`) and the Trainer setup (:mod:`taco.training.pretrain_trainer`).
Its own module so that those two import it without importing the command."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class SegmentPlan:
    args: argparse.Namespace
    blocks: Path
    output: Path
    state_dir: Path
    resume_from: Path | None
    start_step: int
    until: int
    max_steps: int
    warmup_steps: int
    precision: str
    fraction: float
    size_name: str
    seq_len: int
    vocab_size: int
    objective_params: dict[str, Any]
    config_hash: str
    hash_inputs: dict[str, Any]
    blocks_manifest_sha256: str | None
    parent_manifest: dict[str, Any] | None = None
    parent_manifest_sha256: str | None = None
    #: identity of the parent's weights (its manifest's model_sha256; None from scratch): the states of
    #: this segment continue exactly that parent
    parent_lineage: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
