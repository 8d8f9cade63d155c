"""Monitoring of training runs: TensorBoard event files and, optionally, Weights & Biases.

``taco pretrain`` and ``taco finetune`` take the same options (:func:`add_arguments`):

``--report-to LIST``
    Comma-separated: ``tensorboard`` (default), ``wandb``, or ``none``.
``--tensorboard-dir DIR``
    Where the TensorBoard event files go (pre-training default: ``<state-dir>/logs/tensorboard``;
    fine-tuning default: ``<output>/tensorboard``). The workflow passes
    ``<results_dir>/tensorboard/pretrain/<run>`` (one folder per pre-training run: its budget
    segments append to one curve, a resumed segment hides what a killed attempt logged past its
    state, ``SummaryWriter(purge_step=...)``) and ``<results_dir>/tensorboard/finetune/<run>/step-<N>/<task>/seed-<s>``,
    so ``tensorboard --logdir <results_dir>/tensorboard`` shows the whole run.
``--wandb-project NAME`` / ``--wandb-dir DIR``
    With ``wandb`` in ``--report-to``: the W&B project (default ``taco``) and the folder of W&B's
    local files (default: W&B's own, ``$WANDB_DIR`` or the working directory). The W&B run id is
    derived from the run (pre-training: its folder and config hash, so every segment continues one
    W&B run; fine-tuning: its output folder); ``WANDB_MODE=offline`` works as usual.

Nothing here changes a result: monitoring is not in any config hash, and the workflow passes these
options as settings that re-run nothing (``taco.workflow.commands``). ``wandb`` is imported only
when asked for; :func:`check` fails before any work (exit 2, naming ``--report-to``) when it is
not installed (``pip install wandb``, or the ``wandb`` extra of this package), and likewise (naming
``--tensorboard-dir`` and the folder) when the TensorBoard folder cannot be written (read-only file
system, no permission): refused rather than trained on without curves, as for ``wandb``, because the
curves were asked for and the way out (``--report-to none``, config ``monitoring.tensorboard: false``)
costs nothing before any work, while a writer failing at the first log step would stop the run.

The Trainer's own integrations stay off (``report_to="none"``): transformers 5 dropped
``TrainingArguments.logging_dir`` (its ``TensorBoardCallback`` reads ``$TENSORBOARD_LOGGING_DIR``
instead), so the folders are set here, on a ``SummaryWriter`` of our own, whatever the version.
Scalars are tagged ``train/<key>`` (the Trainer's log keys: ``loss``, ``learning_rate``,
``grad_norm``, pre-training's ``mlm_loss``/``tc_loss``/``tp_loss``, throughput), ``validation/<key>``
(pre-training's validation MLM loss) and ``dev/<score key>/<metric>`` (fine-tuning, per epoch).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
from pathlib import Path
from typing import Any

from taco.errors import UsageError

#: what ``--report-to`` may list
REPORT_TO_CHOICES = ("tensorboard", "wandb")
DEFAULT_REPORT_TO = "tensorboard"
DEFAULT_WANDB_PROJECT = "taco"


def parse_report_to(text: str) -> tuple[str, ...]:
    """``"tensorboard,wandb"`` -> ``("tensorboard", "wandb")``; ``"none"`` or ``""`` -> ``()``.

    Raises:
        argparse.ArgumentTypeError: an entry that is not in :data:`REPORT_TO_CHOICES` (nor ``none``).
    """
    items = [t.strip().lower() for t in str(text).split(",") if t.strip()]
    if items == ["none"]:
        return ()
    bad = [t for t in items if t not in REPORT_TO_CHOICES]
    if bad:
        raise argparse.ArgumentTypeError(
            f"{', '.join(map(repr, bad))}: expected a comma-separated list of {', '.join(REPORT_TO_CHOICES)}, "
            "or none")
    return tuple(dict.fromkeys(items))


def add_arguments(parser: argparse.ArgumentParser, tensorboard_default: str) -> None:
    """The monitoring options of a training command (see the module docstring); ``tensorboard_default``
    says in the help where the event files go without ``--tensorboard-dir``."""
    g = parser.add_argument_group("monitoring (changes no result)")
    g.add_argument("--report-to", type=parse_report_to, default=parse_report_to(DEFAULT_REPORT_TO),
                   metavar="LIST",
                   help="where training curves go: a comma-separated list of tensorboard, wandb; or none "
                        f"(default: {DEFAULT_REPORT_TO})")
    g.add_argument("--tensorboard-dir", default=None, metavar="DIR",
                   help=f"folder of the TensorBoard event files (default: {tensorboard_default})")
    g.add_argument("--wandb-project", default=DEFAULT_WANDB_PROJECT, metavar="NAME",
                   help="Weights & Biases project, with wandb in --report-to")
    g.add_argument("--wandb-dir", default=None, metavar="DIR",
                   help="folder of W&B's local files, with wandb in --report-to (default: $WANDB_DIR, else "
                        "the working directory)")


#: the options above: not results (left out of manifests and config hashes)
OPTION_NAMES = ("report_to", "tensorboard_dir", "wandb_project", "wandb_dir")


def check(args: argparse.Namespace, tensorboard_dir: str | os.PathLike | None = None) -> None:
    """Before any work: with ``wandb`` in ``--report-to``, the ``wandb`` package must import; with
    ``tensorboard`` and a ``tensorboard_dir`` (the folder the run will use), it must be writable
    (:func:`check_writable`).

    Raises:
        UsageError: naming ``--report-to`` and how to install it or leave it out, or naming
        ``--tensorboard-dir``, the folder and the OS error.
    """
    report_to = getattr(args, "report_to", ()) or ()
    if "tensorboard" in report_to and tensorboard_dir is not None:
        problem = check_writable(Path(tensorboard_dir))
        if problem:
            raise UsageError(
                f"--tensorboard-dir {tensorboard_dir}: cannot write the TensorBoard event files there ({problem}); "
                "make the folder writable, pass another --tensorboard-dir, or leave tensorboard out of --report-to "
                "(--report-to none; the workflow: monitoring.tensorboard: false)")
    if "wandb" not in report_to:
        return
    try:
        import wandb  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"--report-to wandb: the wandb package cannot be imported ({exc}); install it (pip install wandb, "
            "or pip install -e '.[wandb]') or leave wandb out of --report-to (the workflow: monitoring.wandb: "
            "false)") from None


def check_writable(folder: Path) -> str | None:
    """Why files cannot be created in ``folder`` (None: they can), without leaving anything behind.

    Probes the folder, or where it does not exist yet its nearest existing ancestor (where it would
    be created), by creating and removing a temporary directory: this catches a read-only file
    system (EROFS, also for root), a missing permission and a full disk. Returns the OS error's text
    naming the path probed.
    """
    import tempfile

    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".taco-write-check-", dir=probe))
    except OSError as exc:
        return f"{exc.strerror or exc}: {probe}"
    return None


def run_id(*parts: Any) -> str:
    """A W&B run id (16 hex digits) from what identifies the run."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:16]


class Monitor:
    """The writers of one run: TensorBoard (a ``SummaryWriter`` on ``tensorboard_dir``) and/or W&B.

    Both are opened at the first :meth:`log` (nothing is created for a run that logs nothing) and
    closed by :meth:`close` (a later :meth:`log` opens them again: TensorBoard then writes a new
    event file in the same folder, W&B resumes the same run id).

    Args:
        report_to: names from :data:`REPORT_TO_CHOICES` (empty: log nothing).
        tensorboard_dir: the event files' folder (needed with ``tensorboard``).
        purge_step: TensorBoard: hide the events a previous writer of this folder logged at this step
            or later (a segment resumed from a state at step T passes T + 1).
        wandb_project / wandb_dir / wandb_name / wandb_id / wandb_group / wandb_job_type /
            wandb_config: ``wandb.init`` arguments (``resume="allow"``: the same id continues a run).
        enabled: False on processes other than world rank 0 (they log nothing).
    """

    def __init__(self, report_to: tuple[str, ...] | list[str] = (), tensorboard_dir: str | os.PathLike | None = None,
                 *, purge_step: int | None = None, wandb_project: str = DEFAULT_WANDB_PROJECT,
                 wandb_dir: str | os.PathLike | None = None, wandb_name: str | None = None,
                 wandb_id: str | None = None, wandb_group: str | None = None, wandb_job_type: str | None = None,
                 wandb_config: dict[str, Any] | None = None, enabled: bool = True):
        self.report_to = tuple(report_to) if enabled else ()
        if "tensorboard" in self.report_to and tensorboard_dir is None:
            raise ValueError("report_to tensorboard needs a tensorboard_dir")
        self.tensorboard_dir = Path(tensorboard_dir) if tensorboard_dir is not None else None
        self.purge_step = purge_step
        self.wandb_kwargs = dict(project=wandb_project, dir=None if wandb_dir is None else str(wandb_dir),
                                 name=wandb_name, id=wandb_id, group=wandb_group, job_type=wandb_job_type,
                                 config=dict(wandb_config or {}), resume="allow")
        self._tb = None
        self._wandb_run = None

    def _writers(self):
        if "tensorboard" in self.report_to and self._tb is None:
            from torch.utils.tensorboard import SummaryWriter

            self.tensorboard_dir.mkdir(parents=True, exist_ok=True)
            self._tb = SummaryWriter(log_dir=str(self.tensorboard_dir), purge_step=self.purge_step)
            self.purge_step = None  # once per folder and process
        if "wandb" in self.report_to and self._wandb_run is None:
            import wandb

            if self.wandb_kwargs["dir"]:
                Path(self.wandb_kwargs["dir"]).mkdir(parents=True, exist_ok=True)
            self._wandb_run = wandb.init(**{k: v for k, v in self.wandb_kwargs.items() if v is not None})
        return self._tb, self._wandb_run

    def log(self, scalars: dict[str, Any], step: int) -> None:
        """Write the finite numeric values of ``scalars`` (tag -> value) at ``step``."""
        if not self.report_to:
            return
        values = {k: float(v) for k, v in scalars.items()
                  if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))}
        if not values:
            return
        tb, wb = self._writers()
        if tb is not None:
            for tag, value in values.items():
                tb.add_scalar(tag, value, int(step))
            tb.flush()
        if wb is not None:
            wb.log(values, step=int(step))

    def close(self) -> None:
        """Flush and close the writers (W&B: ``finish`` the run)."""
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb_run is not None:
            self._wandb_run.finish()
            self._wandb_run = None


def trainer_callback(monitor: Monitor, prefix: str = "train/"):
    """A ``transformers.TrainerCallback`` that writes every Trainer log event's numbers through
    ``monitor`` (tags ``<prefix><key>``) on world rank 0 and closes it at the end of training."""
    from transformers import TrainerCallback

    class MonitorCallback(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero and logs:
                monitor.log({f"{prefix}{k}": v for k, v in logs.items()}, state.global_step)

        def on_train_end(self, args, state, control, **kwargs):
            monitor.close()

    return MonitorCallback()
