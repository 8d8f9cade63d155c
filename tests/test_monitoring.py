"""Monitoring (item 6): TensorBoard event files of pre-training (one curve across a run's
budget segments) and fine-tuning (training loss and every epoch's dev scores) in the folder given,
the same weights and scores with or without them, and the optional Weights & Biases logger (offline
mode when ``wandb`` is installed; otherwise the clear error when it is asked for).

Tiny runs on CPU: the 256-word blocks of ``tests/test_train.py`` (6 steps, two segments) and a
tiny checkpoint fine-tuned on the synthetic RTE stand-in (32 examples, 2 epochs).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("datasets")

from taco.training import monitoring  # noqa: E402
from taco.training import pretrain as train  # noqa: E402
from taco.manifest import read_manifest  # noqa: E402

from test_train import MAX_STEPS, _args, _blocks  # noqa: E402


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] as TensorBoard shows a run folder (purged events hidden)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_report_to_values():
    assert monitoring.parse_report_to("tensorboard") == ("tensorboard",)
    assert monitoring.parse_report_to("wandb, tensorboard,wandb") == ("wandb", "tensorboard")
    assert monitoring.parse_report_to("none") == () == monitoring.parse_report_to("")
    with pytest.raises(argparse.ArgumentTypeError, match="'mlflow'"):
        monitoring.parse_report_to("tensorboard,mlflow")


def test_a_resumed_writer_hides_what_a_killed_attempt_logged_past_its_state(tmp_path):
    """``purge_step``: steps 1-10 logged, the segment killed, resumed from its state at step 6: the
    curve shows 1-6 of the first attempt and 7-9 of the second, once each."""
    first = monitoring.Monitor(("tensorboard",), tmp_path, purge_step=1)
    for step in range(1, 11):
        first.log({"train/loss": 10.0 - step}, step)
    first.close()
    again = monitoring.Monitor(("tensorboard",), tmp_path, purge_step=7)
    for step in range(7, 10):
        again.log({"train/loss": 100.0 + step, "train/flag": True, "train/nan": float("nan")}, step)
    again.close()
    loss = _scalars(tmp_path)["train/loss"]
    assert [s for s, _ in loss] == list(range(1, 10))
    assert [v for s, v in loss if s >= 7] == [107.0, 108.0, 109.0]
    assert set(_scalars(tmp_path)) == {"train/loss"}  # booleans and NaN are not curves
    monitoring.Monitor((), None).log({"train/loss": 1.0}, 1)  # report_to none: writes nothing


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    return _blocks(tmp_path_factory.mktemp("monitoring"))


def test_pretraining_segments_draw_one_curve_in_the_given_folder(blocks, tmp_path):
    """Two budget segments (0 -> 4 -> 6) log into one --tensorboard-dir: training scalars at every
    logged step of both, the validation MLM loss at each budget; nothing in the state folders."""
    tb = tmp_path / "tensorboard" / "pretrain" / "tiny" / "taco" / "data-1.0"
    first, second = tmp_path / "run" / "step-4", tmp_path / "run" / f"step-{MAX_STEPS}"
    assert train.main(_args(blocks, first, tmp_path / "s4", "--tensorboard-dir", str(tb), until=4)) == 0
    assert train.main(_args(blocks, second, tmp_path / "s6", "--tensorboard-dir", str(tb), "--resume-from",
                            str(first))) == 0
    scalars = _scalars(tb)
    assert [s for s, _ in scalars["train/loss"]] == [1, 2, 4, 6]  # logging_first_step, then every 2
    for tag in ("train/mlm_loss", "train/tc_loss", "train/learning_rate", "train/grad_norm", "train/tokens_per_s"):
        assert tag in scalars, tag
    val = dict(scalars["validation/mlm_loss"])
    assert sorted(val) == [4, MAX_STEPS]
    assert val[MAX_STEPS] == pytest.approx(read_manifest(second)["validation"]["mlm_loss"])
    assert not list((tmp_path / "s4").rglob("events.out.tfevents*"))
    assert "tensorboard_dir" not in read_manifest(second)["parameters"]  # not a result


def test_monitoring_changes_no_weight_and_no_hash(blocks, tmp_path):
    """The same segment with --report-to none: the same config hash and the same weights as with
    TensorBoard (the run above's first segment), and no event file anywhere."""
    a, b = tmp_path / "a" / "step-2", tmp_path / "b" / "step-2"
    assert train.main(_args(blocks, a, tmp_path / "sa", until=2)) == 0  # default: <state-dir>/logs/tensorboard
    assert train.main(_args(blocks, b, tmp_path / "sb", "--report-to", "none", until=2)) == 0
    ma, mb = read_manifest(a), read_manifest(b)
    assert ma["config_hash"] == mb["config_hash"] and ma["model_sha256"] == mb["model_sha256"]
    assert list((tmp_path / "sa" / "logs" / "tensorboard").glob("events.out.tfevents*"))
    assert not list(tmp_path.joinpath("sb").rglob("events.out.tfevents*"))


# ------------------------------------------------------------------------------------------------
# fine-tuning
# ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny pre-trained checkpoint whose tokenizer covers the synthetic tasks' words."""
    from transformers import BertTokenizerFast

    from taco.data.synthetic_language import vocabulary
    from taco.manifest import build_manifest, write_manifest
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + vocabulary()
    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(words)}, do_lower_case=True)
    path = tmp_path_factory.mktemp("ft") / "step-10"
    torch.manual_seed(0)
    PreTrainingModel(bert_config("tiny", len(tok)), objective="mlm").save_pretrained(str(path))
    tok.save_pretrained(str(path))
    write_manifest(path, build_manifest("pretrain", {}, step=10, objective="mlm", size="tiny", size_preset="tiny",
                                        fraction=1.0, config_hash="x", parent_checkpoint=None))
    return path


def _finetune(ckpt: Path, output: str, *extra: str) -> int:
    from taco.evaluation import finetune

    return finetune.main(["--checkpoint", str(ckpt), "--task", "rte", "--glue-source", "synthetic",
                          "--output", output, "--max-train-samples", "32", "--max-eval-samples", "16",
                          "--epochs", "2", "--max-length", "32", "--batch-size", "8", "--warmup-steps", "1",
                          "--logging-steps", "1", "--device", "cpu", "--no-progress", "--no-test-predictions",
                          *extra])


def test_finetuning_logs_training_and_every_epochs_dev_scores(checkpoint, tmp_path):
    """Default folder <output>/tensorboard (kept by the atomic write); --report-to none gives the same
    scores and no events; several seeds with a --tensorboard-dir without {seed}: one subfolder each."""
    out = tmp_path / "seed-3"
    assert _finetune(checkpoint, str(out), "--seed", "3") == 0
    scalars = _scalars(out / "tensorboard")
    assert [s for s, _ in scalars["train/loss"]] == [1, 2, 3, 4, 5, 6, 7, 8]  # 32 / 8 x 2 epochs
    assert "train/learning_rate" in scalars and "train/grad_norm" in scalars
    metrics = json.loads((out / "metrics.json").read_text())
    dev = scalars["dev/rte/accuracy"]
    assert dev == [(e["step"], pytest.approx(e["scores"]["rte"]["accuracy"])) for e in metrics["epochs"]]
    quiet = tmp_path / "quiet"
    assert _finetune(checkpoint, str(quiet), "--seed", "3", "--report-to", "none") == 0
    assert json.loads((quiet / "metrics.json").read_text())["epochs"] == metrics["epochs"]
    assert not list(quiet.rglob("events.out.tfevents*"))
    tb = tmp_path / "tb"
    assert _finetune(checkpoint, str(tmp_path / "many" / "seed-{seed}"), "--seed", "3", "4",
                     "--tensorboard-dir", str(tb)) == 0
    assert sorted(p.name for p in tb.iterdir()) == ["seed-3", "seed-4"]
    assert _scalars(tb / "seed-3")["dev/rte/accuracy"] == dev  # the same run as above
    assert not (tmp_path / "many" / "seed-3" / "tensorboard").exists()


# ------------------------------------------------------------------------------------------------
# Weights & Biases
# ------------------------------------------------------------------------------------------------
def test_wandb_asked_for_but_not_installed_is_a_clear_error(checkpoint, blocks, tmp_path, monkeypatch, capsys):
    """Exit 2 before any work, naming --report-to and how to install it (``wandb`` made unimportable)."""
    monkeypatch.setitem(sys.modules, "wandb", None)
    assert train.main(_args(blocks, tmp_path / "p" / "step-2", tmp_path / "s", "--report-to", "tensorboard,wandb",
                            until=2)) == 2
    err = capsys.readouterr().err
    assert "--report-to wandb" in err and "pip install wandb" in err and "monitoring.wandb" in err
    assert not (tmp_path / "s").exists()  # no work, no state folder
    assert _finetune(checkpoint, str(tmp_path / "f"), "--report-to", "wandb") == 2
    assert "--report-to wandb" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


def test_wandb_offline_run(checkpoint, tmp_path, monkeypatch):
    """With wandb installed: a fine-tuning run in offline mode writes its W&B run under --wandb-dir,
    beside the TensorBoard events, with the same scores."""
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var in ("WANDB_API_KEY", "WANDB_DIR", "WANDB_RUN_ID", "WANDB_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    out, wdir = tmp_path / "seed-3", tmp_path / "wandb"
    assert _finetune(checkpoint, str(out), "--seed", "3", "--report-to", "tensorboard,wandb",
                     "--wandb-dir", str(wdir), "--wandb-project", "taco-test") == 0
    runs = list((wdir / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb")), list(wdir.rglob("*"))[:20]
    assert monitoring.run_id("finetune", out.resolve()) in runs[0].name
    assert "dev/rte/accuracy" in _scalars(out / "tensorboard")


# ------------------------------------------------------------------------------------------------
# an unwritable TensorBoard folder
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def read_only_dir(tmp_path):
    """A folder nothing can be created in: a read-only tmpfs as root (EROFS: root ignores file modes),
    else a folder of mode 0555 (EACCES)."""
    import os
    import subprocess

    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(folder)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            pytest.skip(f"running as root and cannot mount a read-only tmpfs here: {r.stderr.strip()}")
        yield folder
        subprocess.run(["umount", "-l", str(folder)], check=False)
    else:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)


def test_unwritable_tensorboard_folder_is_refused_before_any_work(checkpoint, blocks, read_only_dir, tmp_path,
                                                                  capsys):
    """Pre-training and fine-tuning crashed at their first log step (OSError), on every retry; now exit 2
    before any work, naming --tensorboard-dir, the folder and the way out. A folder that does not exist
    yet below a writable one is fine (created at the first log step)."""
    tb = read_only_dir / "pretrain"
    out, state = tmp_path / "p" / "step-2", tmp_path / "s"
    assert train.main(_args(blocks, out, state, "--tensorboard-dir", str(tb), until=2)) == 2
    err = capsys.readouterr().err
    assert f"--tensorboard-dir {tb}" in err and str(read_only_dir) in err and "--report-to none" in err
    assert "Traceback" not in err and not state.exists() and not out.exists()
    assert train.main(_args(blocks, out, state, "--tensorboard-dir", str(tb), "--report-to", "none", until=2)) == 0

    assert _finetune(checkpoint, str(tmp_path / "f"), "--tensorboard-dir", str(read_only_dir)) == 2
    err = capsys.readouterr().err
    assert f"--tensorboard-dir {read_only_dir}" in err and not (tmp_path / "f").exists()
    assert monitoring.check_writable(tmp_path / "new" / "deeper") is None and not (tmp_path / "new").exists()
