"""Run logging for the Trainer-based runners: JSONL + TensorBoard, throughput, non-finite guard.

``RunLogCallback`` is a ``transformers.TrainerCallback``. At every Trainer log event it writes one
JSON line to ``<run_dir>/train_log.jsonl`` and the numeric values as TensorBoard scalars under
``<run_dir>/tensorboard/``. It adds to the Trainer's own keys (``loss``, ``grad_norm``,
``learning_rate``) the throughput of the logging window: ``step_time_s`` (mean wall time of one
optimizer step, including data loading) and ``tokens_per_s``. The loss components (``mlm_loss``,
``tc_loss``, ``tp_loss``) are added by the pre-training Trainer (``taco.training.pretrain``) through
``LossComponents``.

``check_finite`` raises ``NonFiniteLossError`` naming the optimizer step and the component that is
not finite; ``taco.training.pretrain`` calls it on every micro-batch *before* the backward pass, so a NaN never
reaches the weights and no checkpoint containing it is written.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

LOG_NAME = "train_log.jsonl"
TB_DIR = "tensorboard"


class NonFiniteLossError(RuntimeError):
    """The loss (or one of its components) is NaN or infinite at ``step``."""

    def __init__(self, step: int, component: str, values: dict[str, float]):
        self.step = step
        self.component = component
        self.values = values
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        super().__init__(
            f"non-finite loss at optimizer step {step}: component {component!r} is not finite "
            f"({shown}); the run is stopped and no checkpoint of this state is written"
        )


def check_finite(step: int, loss: Any, components: dict[str, Any]) -> None:
    """Raise ``NonFiniteLossError`` if ``loss`` or a component (tensor or float, None skipped) is not finite.

    The component named is the first non-finite one among ``components`` (then ``loss`` itself).
    Costs one device sync per call.
    """
    import torch

    items = {k: v for k, v in components.items() if v is not None}
    stacked = [loss.detach().float().reshape(())] + [
        (v.detach().float().reshape(()) if torch.is_tensor(v) else torch.tensor(float(v)))
        .to(loss.device) for v in items.values()
    ]
    finite = torch.isfinite(torch.stack(stacked))
    if bool(finite.all()):
        return
    values = {"loss": float(stacked[0])}
    values.update({k: float(t) for k, t in zip(items, stacked[1:])})
    bad = next((k for k, ok in zip(items, finite[1:].tolist()) if not ok), "loss")
    raise NonFiniteLossError(step, bad, values)


class LossComponents:
    """Sums of the loss components over the micro-batches of one logging window (kept on device)."""

    NAMES = ("mlm", "tc", "tp")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._sums: dict[str, Any] = {}
        self._count = 0

    def add(self, components: dict[str, Any]) -> None:
        self._count += 1
        for name, value in components.items():
            if value is None:
                continue
            v = value.detach().float()
            self._sums[name] = v if name not in self._sums else self._sums[name] + v

    def means(self) -> dict[str, float]:
        """``{"<name>_loss": mean}`` over the window, then reset."""
        out = {f"{k}_loss": float(v) / max(self._count, 1) for k, v in self._sums.items()}
        self.reset()
        return out


class RunLogCallback(TrainerCallback):
    """JSONL + TensorBoard writer with throughput (see module docstring).

    Args:
        run_dir: directory for ``train_log.jsonl`` and ``tensorboard/`` (created; appended to on a rerun).
        tokens_per_step: tokens consumed by one optimizer step (global batch x sequence length);
            None to skip ``tokens_per_s``.
        extra: constant keys written into every JSON line (e.g. the segment).
    """

    def __init__(self, run_dir: str | os.PathLike, tokens_per_step: int | None = None,
                 extra: dict[str, Any] | None = None):
        self.run_dir = Path(run_dir)
        self.tokens_per_step = tokens_per_step
        self.extra = dict(extra or {})
        self._writer = None
        self._window_start: float | None = None
        self._window_steps = 0
        self._is_world_zero = True

    # -- helpers -------------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.run_dir / LOG_NAME

    def write_event(self, event: dict[str, Any]) -> None:
        """Append one JSON line (non-numeric events: start, resume, stop, error)."""
        if not self._is_world_zero:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        record = {"time": round(time.time(), 3), **self.extra, **event}
        with open(self.log_path, "a") as fh:
            fh.write(json.dumps(record, default=_jsonable) + "\n")

    def _tb(self):
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=str(self.run_dir / TB_DIR))
        return self._writer

    # -- Trainer events ------------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        self._is_world_zero = state.is_world_process_zero
        self._window_start = time.perf_counter()
        self._window_steps = 0
        self.write_event({"event": "train_begin", "step": state.global_step, "max_steps": state.max_steps})

    def on_step_end(self, args, state, control, **kwargs):
        self._window_steps += 1

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self._is_world_zero or not logs:
            return
        logs = dict(logs)
        now = time.perf_counter()
        if self._window_start is not None and self._window_steps > 0 and "loss" in logs:
            elapsed = now - self._window_start
            logs["step_time_s"] = elapsed / self._window_steps
            if self.tokens_per_step:
                logs["tokens_per_s"] = self.tokens_per_step * self._window_steps / max(elapsed, 1e-9)
            self._window_start = now
            self._window_steps = 0
        self.write_event({"event": "log", "step": state.global_step, **logs})
        writer = self._tb()
        for key, value in logs.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                writer.add_scalar(f"train/{key}", value, state.global_step)
        writer.flush()

    def on_train_end(self, args, state, control, **kwargs):
        self.write_event({"event": "train_end", "step": state.global_step})
        self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def _jsonable(obj: Any) -> Any:
    try:
        return float(obj)
    except (TypeError, ValueError):
        return str(obj)


def read_log(run_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The JSON lines of ``<run_dir>/train_log.jsonl`` (empty list if absent)."""
    path = Path(run_dir) / LOG_NAME
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
