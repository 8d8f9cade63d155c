"""Run logging for the Trainer-based runners: JSONL + TensorBoard, throughput, non-finite guard.

``RunLogCallback`` is a ``transformers.TrainerCallback``. At every Trainer log event it writes one
JSON line to ``<run_dir>/train_log.jsonl`` and the numeric values through its
:class:`taco.training.monitoring.Monitor` (TensorBoard scalars ``train/<key>``, W&B; ``taco pretrain
--report-to/--tensorboard-dir``); ``validation`` events go there too (``validation/<key>``). It adds
to the Trainer's own keys (``loss``, ``grad_norm``,
``learning_rate``) the throughput of the logging window: ``step_time_s`` (mean wall time of one
optimizer step, including data loading) and ``tokens_per_s``. The loss components (``mlm_loss``,
``tc_loss``, ``tp_loss``, ``nce_loss``, ``dim_loss``: ``taco.objectives.LOSS_TERMS``) are added by the pre-training Trainer (``taco.training.pretrain_trainer``) through
``LossComponents``.

``check_finite`` raises ``NonFiniteLossError`` naming the optimizer step and the component that is
not finite; ``taco.training.pretrain_trainer`` calls it on every micro-batch *before* the backward pass, so a NaN never
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

from taco.objectives import LOSS_TERMS

LOG_NAME = "train_log.jsonl"
#: the TensorBoard folder below the run directory when no other is given (``taco pretrain``'s default)
TB_DIR = "tensorboard"
#: the numbers of a ``validation`` event (and a checkpoint's ``eval.json``) that go to the monitor: the MLM loss
#: and accuracy and every other loss term some objective has (``<term>_loss``; ``taco.training.validation``)
VALIDATION_KEYS = ("mlm_loss", "mlm_accuracy", *(f"{t}_loss" for t in LOSS_TERMS if t != "mlm"))


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

    NAMES = LOSS_TERMS

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
    """JSONL writer with throughput, and the numbers to a monitor (see module docstring).

    Args:
        run_dir: directory for ``train_log.jsonl`` (created; appended to on a rerun).
        tokens_per_step: tokens consumed by one optimizer step (global batch x sequence length);
            None to skip ``tokens_per_s``.
        extra: constant keys written into every JSON line (e.g. the segment).
        monitor: where the numbers go (:class:`taco.training.monitoring.Monitor`); default: TensorBoard
            in ``<run_dir>/tensorboard/``. Closed by :meth:`close`.
    """

    def __init__(self, run_dir: str | os.PathLike, tokens_per_step: int | None = None,
                 extra: dict[str, Any] | None = None, monitor: Any = None):
        from taco.training.monitoring import Monitor

        self.run_dir = Path(run_dir)
        self.tokens_per_step = tokens_per_step
        self.extra = dict(extra or {})
        self.monitor = monitor if monitor is not None else Monitor(("tensorboard",), self.run_dir / TB_DIR)
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
        if event.get("event") == "validation" and "step" in event:
            self.monitor.log({f"validation/{k}": event.get(k) for k in VALIDATION_KEYS if k in event}, int(event["step"]))

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
        self.monitor.log({f"train/{key}": value for key, value in logs.items()}, state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        self.write_event({"event": "train_end", "step": state.global_step})

    def close(self) -> None:
        """Close the monitor's writers (a later event opens them again)."""
        self.monitor.close()


def format_duration(seconds: float) -> str:
    """``3725.0`` -> ``"1h02m"``, ``125`` -> ``"2m05s"``, ``9.4`` -> ``"9s"`` (``"?"`` if not finite)."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class ProgressCallback(TrainerCallback):
    """One human-readable progress line per Trainer log event, on stderr (the job's log file).

    ``<label>: step 120/800 (15%) | loss 7.1234 (mlm 7.1, tc 0.51) | 14.8 examples/s | elapsed 2m10s,
    left ~11m20s``. Examples per second and the time left come from the wall time since the previous
    line (so they reflect the current load, data loading included); the time left is
    ``(target - step) x seconds per step``, ``target`` being ``target_step`` (a segment's budget) or
    the Trainer's ``max_steps``. At most one line per ``min_interval_s`` seconds (the first and the
    last log events are always printed). Nothing is printed on processes other than world rank 0.
    """

    def __init__(self, label: str, target_step: int | None = None, min_interval_s: float = 10.0, stream=None):
        self.label = label
        self.target_step = target_step
        self.min_interval_s = float(min_interval_s)
        self.stream = stream
        self._t0: float | None = None
        self._last_t: float | None = None
        self._last_step = 0
        self._last_print: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        self._t0 = self._last_t = time.perf_counter()
        self._last_step = state.global_step

    def line(self, step: int, target: int, logs: dict[str, Any], examples_per_step: int, now: float) -> str:
        """The progress line for ``step`` of ``target`` (also used by tests)."""
        dt = now - (self._last_t if self._last_t is not None else now)
        dsteps = step - self._last_step
        sec_per_step = dt / dsteps if dsteps > 0 else math.nan
        parts = [f"{self.label}: step {step}/{target} ({100.0 * step / max(target, 1):.0f}%)"]
        if "loss" in logs:
            comps = ", ".join(f"{t} {float(logs[t + '_loss']):.4g}" for t in LOSS_TERMS
                              if logs.get(t + "_loss") is not None)
            parts.append(f"loss {float(logs['loss']):.4f}" + (f" ({comps})" if comps else ""))
        if "eval_loss" in logs:
            parts.append(f"eval loss {float(logs['eval_loss']):.4f}")
        if math.isfinite(sec_per_step) and sec_per_step > 0:
            parts.append(f"{examples_per_step / sec_per_step:.1f} examples/s")
        elapsed = now - (self._t0 if self._t0 is not None else now)
        left = (target - step) * sec_per_step if math.isfinite(sec_per_step) else math.nan
        parts.append(f"elapsed {format_duration(elapsed)}, left ~{format_duration(left)}")
        return " | ".join(parts)

    def on_log(self, args, state, control, logs=None, **kwargs):
        import sys

        if not state.is_world_process_zero or not logs or ("loss" not in logs and "eval_loss" not in logs):
            return  # the end-of-training summary (train_runtime, ...) is not a progress point
        now = time.perf_counter()
        target = int(self.target_step or state.max_steps or 0)
        final = state.global_step >= target
        if (self._last_print is not None and not final and now - self._last_print < self.min_interval_s):
            return
        examples_per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
        print(self.line(state.global_step, target, dict(logs), examples_per_step, now),
              file=self.stream or sys.stderr, flush=True)
        self._last_print = self._last_t = now
        self._last_step = state.global_step


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
