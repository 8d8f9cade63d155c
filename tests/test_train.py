"""`taco pretrain`: budget segments, resume after SIGTERM / SIGKILL, immutability, errors, NaN guard.

Tiny preset on CPU, blocks built here (small WordPiece vocabulary, 40 blocks of 32 tokens).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
datasets = pytest.importorskip("datasets")

from taco.training import pretrain as train  # noqa: E402
from taco.manifest import read_manifest, sha256_tree  # noqa: E402
from taco.training.runlog import read_log  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tiny_blocks import write_blocks  # noqa: E402
from taco.training.pretrain_state import EXIT_INTERRUPTED, EXIT_NONFINITE, EXPORT_RECORD, STATE_MARKER, valid_states
from taco.errors import EXIT_NO_SPACE

REPO = Path(__file__).resolve().parent.parent
MAX_STEPS = 6


def _blocks(root: Path) -> Path:
    return write_blocks(root)


def _args(blocks, output, state, *extra, until=MAX_STEPS):
    return ["--blocks", str(blocks), "--objective", "taco", "--size", "tiny", "--max-steps", str(MAX_STEPS),
            "--warmup-steps", "2", "--until", str(until), "--output", str(output), "--state-dir", str(state),
            "--per-device-batch-size", "4", "--save-every", "2", "--logging-steps", "2", "--seed", "7",
            "--device", "cpu", "--no-progress", "--tc-negatives", "8", *extra]


def _weights(ckpt: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(ckpt / "model.safetensors"))


def _max_diff(a: Path, b: Path) -> float:
    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys()
    return max((wa[k].float() - wb[k].float()).abs().max().item() for k in wa)


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """0 -> MAX_STEPS in one segment."""
    root = tmp_path_factory.mktemp("pretrain")
    blocks = _blocks(root)
    out = root / "full" / f"step-{MAX_STEPS}"
    assert train.main(_args(blocks, out, root / "full" / "state")) == 0
    return root, blocks, out


def test_budget_checkpoint_layout_and_logs(full):
    root, blocks, out = full
    m = read_manifest(out)
    for key in ("step", "tokens_seen", "objective", "size", "fraction", "config_hash", "parent_checkpoint",
                "wall_time_s", "code_version", "packages"):
        assert key in m, key
    assert m["step"] == MAX_STEPS and m["tokens_seen"] == MAX_STEPS * 4 * 32
    assert m["objective"] == "taco" and m["size"] == "tiny" and m["fraction"] == 1.0
    assert m["parent_checkpoint"] is None
    ts = out / "trainer_state"
    for f in ("optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"):
        assert (ts / f).is_file(), f
    assert json.loads((ts / "trainer_state.json").read_text())["global_step"] == MAX_STEPS
    # a plain BERT: loadable without this package's model class
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    AutoModelForMaskedLM.from_pretrained(str(out))
    assert len(AutoTokenizer.from_pretrained(str(out))) == 256
    # logs: loss components, lr, grad norm, throughput; JSONL + TensorBoard; scratch removed
    logs = [r for r in read_log(out.parent / "state" / "logs") if r.get("event") == "log" and "loss" in r]
    assert logs and all(k in logs[-1] for k in ("loss", "mlm_loss", "tc_loss", "learning_rate", "grad_norm",
                                                "tokens_per_s", "step_time_s"))
    assert list((out.parent / "state" / "logs" / "tensorboard").glob("events.out.tfevents*"))
    # intermediate states removed; the final one kept, its files hard links of the budget's (no copy)
    kept = sorted((out.parent / "state").glob("checkpoint-*"))
    assert [p.name for p in kept] == [f"checkpoint-{MAX_STEPS}"]
    assert m["retained_state"] == str(kept[0].resolve())
    assert os.stat(kept[0] / "model.safetensors").st_ino == os.stat(out / "model.safetensors").st_ino
    assert os.stat(kept[0] / "optimizer.pt").st_ino == os.stat(ts / "optimizer.pt").st_ino


def test_segments_equal_one_run_and_budget_untouched(full):
    root, blocks, out_full = full
    a = root / "seg" / "step-3"
    b = root / "seg" / f"step-{MAX_STEPS}"
    assert train.main(_args(blocks, a, root / "seg" / "state-3", until=3)) == 0
    before = sha256_tree(a, exclude=())
    assert train.main(_args(blocks, b, root / "seg" / f"state-{MAX_STEPS}", "--resume-from", str(a))) == 0
    assert sha256_tree(a, exclude=()) == before  # resuming never touches the parent budget
    assert _max_diff(out_full, b) <= 1e-6
    mb = read_manifest(b)
    assert mb["parent_checkpoint"] == str(a) and mb["step"] == MAX_STEPS
    assert mb["config_hash"] == read_manifest(out_full)["config_hash"]
    # a finished budget is never rewritten
    assert train.main(_args(blocks, b, root / "seg" / "again", "--resume-from", str(a))) == 2
    assert train.main(_args(blocks, a, root / "seg" / "again", until=3)) == 2
    assert sha256_tree(a, exclude=()) == before


def _spawn(args, log):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "taco", "pretrain", *args], stdout=log, stderr=subprocess.STDOUT,
                            env=env, cwd=str(REPO))


def _wait_for_state(state: Path, step_at_least: int, proc, timeout=120.0) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        steps = [int(p.parent.name.split("-")[1]) for p in state.glob("checkpoint-*/taco_state.json")]
        if steps and max(steps) >= step_at_least:
            return max(steps)
        if proc.poll() is not None:
            raise AssertionError(f"the run ended (rc {proc.returncode}) before a state was saved")
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("no intermediate state appeared in time")


#: the device variant: a GPU run (fp32) instead of the CPU, and its tolerance. On CUDA the backward of
#: embedding look-ups and the TC gather accumulates with atomics (not bitwise reproducible), so two
#: uninterrupted GPU runs may differ in the last bits too; 1e-6 holds on the CPU.
_ON_CUDA = ["--device", "auto", "--precision", "fp32"]
_RESUME_TOL = {"cpu": 1e-6, "cuda": 1e-4}


def _on(device, args):
    return args if device.type == "cpu" else [a for a in args if a != "cpu" and a != "--device"] + _ON_CUDA


def test_sigterm_then_sigkill_resume_equals_uninterrupted(full, tmp_path, device):
    """SLURM's time limit: SIGTERM -> state saved, exit 143; a later SIGKILL -> rerun resumes."""
    root, blocks, out_full = full
    if device.type != "cpu":  # the uninterrupted reference on the same device
        out_full = tmp_path / "full" / f"step-{MAX_STEPS}"
        assert train.main(_on(device, _args(blocks, out_full, tmp_path / "full" / "state"))) == 0
    out, state = tmp_path / f"step-{MAX_STEPS}", tmp_path / "state"
    args = _on(device, _args(blocks, out, state, "--debug-step-sleep", "0.4"))
    with open(tmp_path / "run1.log", "w") as log:
        p = _spawn(args, log)
        _wait_for_state(state, 1, p)  # first periodic state (step 2) is written
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=120)
    assert rc == EXIT_INTERRUPTED, (tmp_path / "run1.log").read_text()[-3000:]
    assert not out.exists()
    saved = max(s for s, _ in valid_states(state, read_manifest(out_full)["config_hash"]))
    assert 2 <= saved < MAX_STEPS
    with open(tmp_path / "run2.log", "w") as log:
        p = _spawn(args, log)
        _wait_for_state(state, saved + 1, p)  # resumed and saved again
        p.kill()  # SIGKILL: no chance to save
        p.wait(timeout=60)
    assert not out.exists()
    assert train.main(_on(device, _args(blocks, out, state))) == 0
    events = [r["event"] for r in read_log(state / "logs")]
    assert events.count("resume_state") == 2 and "interrupted" in events
    assert _max_diff(out_full, out) <= _RESUME_TOL[device.type]


def test_errors_before_work(full, tmp_path):
    root, blocks, out_full = full
    st = tmp_path / "st"
    # budgets must increase and stay within the run
    assert train.main(_args(blocks, tmp_path / "x", st, "--resume-from", str(out_full), until=MAX_STEPS)) == 2
    assert train.main(_args(blocks, tmp_path / "x", st, until=MAX_STEPS + 1)) == 2
    # missing / incomplete checkpoint, unknown objective, missing blocks
    assert train.main(_args(blocks, tmp_path / "x", st, "--resume-from", str(tmp_path / "nope"))) == 2
    (tmp_path / "partial").mkdir()
    assert train.main(_args(blocks, tmp_path / "x", st, "--resume-from", str(tmp_path / "partial"))) == 2
    bad = _args(blocks, tmp_path / "x", st)
    bad[bad.index("--objective") + 1] = "bogus"
    assert train.main(bad) == 2
    assert train.main(_args(tmp_path / "noblocks", tmp_path / "x", st)) == 2
    # continuing a checkpoint with other settings (different lr) is refused
    a = root / "seg" / "step-3"
    if a.exists():
        assert train.main(_args(blocks, tmp_path / "x", st, "--resume-from", str(a), "--lr", "3e-4")) == 2
    assert not (tmp_path / "x").exists() and not st.exists()


def test_nonfinite_loss_stops_without_checkpoint(full, tmp_path, monkeypatch, capsys):
    from taco.model import modeling

    root, blocks, _ = full
    orig = modeling.PreTrainingModel.forward
    calls = {"n": 0}

    def poisoned(self, *a, **kw):
        out = orig(self, *a, **kw)
        calls["n"] += 1
        if calls["n"] >= 3:  # optimizer step 3 (no accumulation): TC becomes NaN
            out.tc_loss = out.tc_loss * float("nan")
            out.loss = out.mlm_loss + out.tc_loss
        return out

    monkeypatch.setattr(modeling.PreTrainingModel, "forward", poisoned)
    out, state = tmp_path / "out", tmp_path / "state"
    assert train.main(_args(blocks, out, state)) == EXIT_NONFINITE
    err = capsys.readouterr().err
    assert "step 3" in err and "'tc'" in err
    assert not out.exists()
    steps = sorted(int(p.name.split("-")[1]) for p in state.glob("checkpoint-*"))
    assert steps == [2]  # the last good state only; nothing saved after the NaN
    ev = [r for r in read_log(state / "logs") if r.get("event") == "nonfinite_loss"]
    assert ev and ev[0]["step"] == 3 and ev[0]["component"] == "tc"


def test_second_trainer_of_a_segment_waits_for_the_first(full, tmp_path):
    """A rerun while an orphaned trainer still holds the segment waits, then accepts its result."""
    import subprocess
    import sys
    import time

    _, blocks, _ = full
    out = tmp_path / "step-6"
    state = tmp_path / ".state" / "step-6"
    state.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, json, os, sys, time\n"
        f"fh = open({str(state / '.lock')!r}, 'a+'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
        "print('locked', flush=True); time.sleep(2)\n"
        f"os.makedirs({str(out)!r}); open(os.path.join({str(out)!r}, 'manifest.json'), 'w').write(json.dumps({{'step': {MAX_STEPS}}}))\n"
    )], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    t0 = time.monotonic()
    assert train.main(_args(blocks, out, state)) == 0
    assert time.monotonic() - t0 > 1.0
    holder.wait()
    # without a holder, an existing finished output is still refused (never modified)
    assert train.main(_args(blocks, out, state)) == 2


# ---- no lost compute, bad input named (items 4 and 6) ----------------------------------------
def _train_events(state: Path) -> list[str]:
    return [r["event"] for r in read_log(state / "logs")]


def test_finished_segment_deleted_as_incomplete_is_exported_again_not_retrained(full, tmp_path):
    """kill -9 of Snakemake while the trainer runs on and finishes: the next `snakemake`
    (rerun-incomplete) deletes the budget and reruns the same command, which must export the kept
    final state instead of training the segment again."""
    import shutil

    root, blocks, out_full = full
    out, state = tmp_path / "step-3", tmp_path / ".state" / "step-3"
    assert train.main(_args(blocks, out, state, until=3)) == 0
    first = _weights(out)
    first_manifest = read_manifest(out)
    assert _train_events(state).count("train_begin") == 1
    shutil.rmtree(out)  # what Snakemake does with an incomplete output before rerunning the job
    assert train.main(_args(blocks, out, state, until=3)) == 0
    events = _train_events(state)
    assert events.count("train_begin") == 1 and events.count("reexport") == 1  # no second training
    assert events[-2:] == ["resume_state", "reexport"]
    second = _weights(out)
    assert first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)
    m = read_manifest(out)
    assert m["step"] == 3 and m["model_sha256"] == first_manifest["model_sha256"]
    assert m["config_hash"] == first_manifest["config_hash"]
    assert json.loads((out / "trainer_state" / "trainer_state.json").read_text())["global_step"] == 3
    # the next segment continues it exactly and then drops the state its parent kept
    nxt, nxt_state = tmp_path / f"step-{MAX_STEPS}", tmp_path / ".state" / f"step-{MAX_STEPS}"
    assert train.main(_args(blocks, nxt, nxt_state, "--resume-from", str(out))) == 0
    assert not (state / "checkpoint-3").exists() and (out / "model.safetensors").is_file()
    assert _max_diff(out_full, nxt) <= 1e-6


def test_kept_final_state_of_another_parent_is_not_exported(full, tmp_path):
    """A kept final state continues one parent (by its weights' sha256): with another parent it is
    stale, and the segment trains."""
    root, blocks, out_full = full
    out, state = tmp_path / f"step-{MAX_STEPS}", tmp_path / "state"
    assert train.main(_args(blocks, out, state, until=MAX_STEPS)) == 0  # from scratch: lineage None
    marker = json.loads((state / f"checkpoint-{MAX_STEPS}" / STATE_MARKER).read_text())
    assert marker["parent_lineage"] is None
    cfg = marker["config_hash"]
    assert [s for s, _ in valid_states(state, cfg, None)] == [MAX_STEPS]
    assert valid_states(state, cfg, "0" * 64) == []


def test_tc_objective_needs_two_sequences_per_device_batch(full, tmp_path, capsys):
    root, blocks, _ = full
    for objective in ("taco", "taco_concentrated", "taco_unmasked"):
        args = _args(blocks, tmp_path / "x", tmp_path / "st", "--per-device-batch-size", "1")
        args[args.index("--objective") + 1] = objective
        assert train.main(args) == 2
        err = capsys.readouterr().err
        assert "--per-device-batch-size 1" in err and "TC loss" in err and objective in err
    assert not (tmp_path / "x").exists() and not (tmp_path / "st").exists()
    # MLM has no TC loss: one sequence per device batch is a valid plan
    args = _args(blocks, tmp_path / "x", tmp_path / "st", "--per-device-batch-size", "1")
    args[args.index("--objective") + 1] = "mlm"
    assert train.make_segment_plan(train.build_parser().parse_args(args)).args.per_device_batch_size == 1


def test_no_space_while_saving_a_state_names_the_path_and_keeps_the_earlier_state(full, tmp_path, monkeypatch,
                                                                                  capsys):
    import errno

    from transformers import Trainer

    root, blocks, out_full = full
    out, state = tmp_path / "out", tmp_path / "state"
    orig = Trainer._save_optimizer_and_scheduler

    def full_disk(self, output_dir):
        if Path(output_dir).name == "checkpoint-4":
            raise OSError(errno.ENOSPC, "No space left on device")
        return orig(self, output_dir)

    monkeypatch.setattr(Trainer, "_save_optimizer_and_scheduler", full_disk)
    assert train.main(_args(blocks, out, state)) == EXIT_NO_SPACE
    err = capsys.readouterr().err
    assert "no space left on device" in err and str(state / "checkpoint-4") in err
    assert str(state / "checkpoint-2") in err  # the state that stays valid is named
    assert not out.exists() and not (state / "checkpoint-4").exists()  # the half-written save is removed
    cfg = read_manifest(out_full)["config_hash"]
    assert [s for s, _ in valid_states(state, cfg)] == [2]
    monkeypatch.setattr(Trainer, "_save_optimizer_and_scheduler", orig)
    assert train.main(_args(blocks, out, state)) == 0
    events = [r for r in read_log(state / "logs") if r["event"] == "resume_state"]
    assert [e["step"] for e in events] == [2]
    assert _max_diff(out_full, out) <= 1e-6


def test_no_space_while_writing_the_budget_keeps_the_final_state(full, tmp_path, monkeypatch, capsys):
    import errno

    root, blocks, _ = full
    out, state = tmp_path / "step-2", tmp_path / "state"

    def full_disk(directory, manifest):
        raise OSError(errno.ENOSPC, "No space left on device")

    from taco.training import pretrain_state

    monkeypatch.setattr(pretrain_state, "write_manifest", full_disk)  # export_budget lives there
    assert train.main(_args(blocks, out, state, until=2)) == EXIT_NO_SPACE
    err = capsys.readouterr().err
    assert "no space left on device" in err and str(out) in err
    assert not out.exists() and not list(tmp_path.glob("step-2.tmp-*"))
    monkeypatch.undo()
    assert train.main(_args(blocks, out, state, until=2)) == 0
    assert _train_events(state).count("train_begin") == 1  # exported again, not retrained


def test_tp_mode_option(tmp_path):
    """--tp-mode reaches the plan (and the config hash only when not the default 'separate', so
    checkpoints trained before the option existed keep their hash); joint with a weight is refused."""
    from taco.errors import UsageError
    from taco.training.pretrain import build_parser, make_segment_plan

    blocks = _blocks(tmp_path)
    base = ["--blocks", str(blocks), "--objective", "mlm_tp", "--size", "tiny", "--max-steps", "4",
            "--until", "4", "--per-device-batch-size", "4", "--device", "cpu"]
    sep = make_segment_plan(build_parser().parse_args(base + ["--output", str(tmp_path / "a")]))
    assert "tp_mode" not in sep.objective_params and "tp_mode" not in sep.hash_inputs["objective_params"]
    joint = make_segment_plan(build_parser().parse_args(base + ["--output", str(tmp_path / "b"), "--tp-mode", "joint"]))
    assert joint.objective_params["tp_mode"] == "joint" and joint.config_hash != sep.config_hash
    with pytest.raises(UsageError, match="no effect with --tp-mode joint"):
        make_segment_plan(build_parser().parse_args(base + ["--output", str(tmp_path / "c"), "--tp-mode", "joint",
                                                    "--tp-weight", "2"]))


def test_kept_final_state_that_differs_from_its_export_record_is_trained_again(full, tmp_path):
    """The export record (the budget's manifest) guards the re-export: damaged weights in the kept
    state are not exported; the segment trains again, to the same weights."""
    import shutil

    root, blocks, _ = full
    out, state = tmp_path / "step-2", tmp_path / "state"
    assert train.main(_args(blocks, out, state, until=2)) == 0
    first = _weights(out)
    kept = state / "checkpoint-2"
    record = json.loads((kept / EXPORT_RECORD).read_text())
    assert record == read_manifest(out)  # the record is the budget's manifest
    shutil.rmtree(out)
    blob = (kept / "model.safetensors").read_bytes()
    (kept / "model.safetensors").unlink()  # a hard link: replace it, do not write through it
    (kept / "model.safetensors").write_bytes(blob[:-8] + b"\0" * 8)
    assert train.main(_args(blocks, out, state, until=2)) == 0
    events = _train_events(state)
    assert events.count("stale_final_state") == 1 and events.count("train_begin") == 2
    assert "reexport" not in events
    second = _weights(out)
    assert all(torch.equal(first[k], second[k]) for k in first)


def _two_states(blocks, root: Path) -> Path:
    """A state folder holding complete states at steps 2 and 4 of the MAX_STEPS run."""
    import shutil

    state = root / "state"
    assert train.main(_args(blocks, root / "o2", state, until=2)) == 0
    shutil.copytree(state / "checkpoint-2", root / "keep-2")
    assert train.main(_args(blocks, root / "o4", state, until=4)) == 0  # resumes from checkpoint-2
    shutil.copytree(root / "keep-2", state / "checkpoint-2")
    return state


def test_state_without_optimizer_falls_back_or_is_refused(full, tmp_path, capsys):
    """a state lacking optimizer.pt gave exit 0 with a fresh optimizer (other weights).
    A state whose marker lists its files falls back to the state before (exact); one with an older
    marker (no file list) is refused, exit 2 naming the file, unless --fresh-optimizer (recorded)."""
    import json

    root, blocks, out_full = full
    state = _two_states(blocks, tmp_path)
    (state / "checkpoint-4" / "optimizer.pt").unlink()
    assert train.main(_args(blocks, tmp_path / "a6", state)) == 0
    assert "optimizer.pt is missing" in capsys.readouterr().err
    assert _max_diff(out_full, tmp_path / "a6") == 0.0

    state = _two_states(blocks, tmp_path / "old")
    ckpt = state / "checkpoint-4"
    (ckpt / "optimizer.pt").unlink()
    marker = json.loads((ckpt / STATE_MARKER).read_text())
    marker.pop("files")  # as written before markers listed their files
    (ckpt / STATE_MARKER).write_text(json.dumps(marker))
    assert train.main(_args(blocks, tmp_path / "b6", state)) == 2
    err = capsys.readouterr().err
    assert "optimizer.pt" in err and "checkpoint-4" in err and not (tmp_path / "b6").exists()
    assert train.main(_args(blocks, tmp_path / "b6", state, "--fresh-optimizer")) == 0
    assert read_manifest(tmp_path / "b6")["fresh_optimizer"] is True


def test_parent_budget_without_optimizer_is_refused(full, tmp_path, capsys):
    root, blocks, _ = full
    a = tmp_path / "step-3"
    assert train.main(_args(blocks, a, tmp_path / "s3", until=3)) == 0
    (a / "trainer_state" / "scheduler.pt").unlink()
    assert train.main(_args(blocks, tmp_path / "step-6", tmp_path / "s6", "--resume-from", str(a))) == 2
    assert "trainer_state/scheduler.pt is missing" in capsys.readouterr().err


def test_truncated_newest_state_falls_back_to_the_previous_one(full, tmp_path, capsys):
    """a truncated model.safetensors in the newest state was picked on every rerun and
    crashed; now the marker's file sizes reject it and the run continues from the state before,
    to the weights of the uninterrupted run."""
    root, blocks, out_full = full
    state = _two_states(blocks, tmp_path)
    model = state / "checkpoint-4" / "model.safetensors"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    out = tmp_path / "o6"
    assert train.main(_args(blocks, out, state)) == 0
    err = capsys.readouterr().err
    assert "skipping the damaged state" in err and "checkpoint-4" in err and "truncated" in err
    assert _max_diff(out_full, out) == 0.0


def test_config_hash_ignores_options_of_losses_the_objective_does_not_use(full, tmp_path):
    """TC options must not change an MLM run's config hash (its weights cannot change),
    and must change TACO's."""
    root, blocks, _ = full

    def plan_hash(objective, *extra):
        args = [a if a != "taco" else objective for a in _args(blocks, tmp_path / "x", tmp_path / "s", *extra)]
        return train.make_segment_plan(train.build_parser().parse_args(args)).config_hash

    assert plan_hash("mlm", "--tc-temperature", "0.5") == plan_hash("mlm", "--tc-temperature", "0.07")
    assert plan_hash("mlm", "--tp-weight", "2.0") == plan_hash("mlm")
    assert plan_hash("taco", "--tc-temperature", "0.5") != plan_hash("taco", "--tc-temperature", "0.07")
    assert plan_hash("mlm_tp", "--tp-weight", "2.0") != plan_hash("mlm_tp")


def test_tc_temperature_zero_is_a_usage_error(full, tmp_path, capsys):
    root, blocks, _ = full
    assert train.main(_args(blocks, tmp_path / "x", tmp_path / "s", "--tc-temperature", "0")) == 2
    assert "--tc-temperature must be > 0" in capsys.readouterr().err


def test_validation_points_inside_a_segment_change_no_weight(full, tmp_path):
    """--eval-every N adds validation points at steps N, 2N, ... below the budget to
    eval.json ('points') and the log, and leaves the weights bit-identical; after a resume the
    points are at the same steps, and each equals a fresh evaluation of that state."""
    root, blocks, out_full = full
    out = tmp_path / "e6"
    assert train.main(_args(blocks, out, tmp_path / "se6", "--eval-every", "2")) == 0
    assert _max_diff(out_full, out) == 0.0
    ev = json.loads((out / "eval.json").read_text())
    assert [p["step"] for p in ev["points"]] == [2, 4] and ev["step"] == MAX_STEPS
    assert all(p["mlm_loss"] > 0 for p in ev["points"])
    # a chain 0 -> 3 -> 6 evaluates at the same steps, each in its own segment
    a, b = tmp_path / "c3", tmp_path / "c6"
    assert train.main(_args(blocks, a, tmp_path / "sc3", "--eval-every", "2", until=3)) == 0
    assert train.main(_args(blocks, b, tmp_path / "sc6", "--eval-every", "2", "--resume-from", str(a))) == 0
    assert [p["step"] for p in json.loads((a / "eval.json").read_text())["points"]] == [2]
    chain_points = json.loads((b / "eval.json").read_text())["points"]
    assert [p["step"] for p in chain_points] == [4]
    assert chain_points[0]["mlm_loss"] == pytest.approx(ev["points"][1]["mlm_loss"], abs=1e-6)
    assert _max_diff(out_full, b) == 0.0


def test_same_taco_segment_twice_gives_bit_identical_weights(full, tmp_path):
    """what reproduces exactly. The same TACO segment run again in a new process (same
    seed, same thread count, CPU) gives the same bytes; docs/reproducibility.md ('What is bit-for-bit
    reproducible') says under which conditions this holds."""
    import hashlib

    root, blocks, out_full = full
    out = tmp_path / "again"
    with open(tmp_path / "log.txt", "w") as log:
        proc = _spawn(_args(blocks, out, tmp_path / "state"), log)
        assert proc.wait(timeout=300) == 0, (tmp_path / "log.txt").read_text()[-2000:]
    sha = [hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest() for d in (out_full, out)]
    assert sha[0] == sha[1]


def test_rerun_finding_the_orphans_output_already_written_waits_and_accepts_it(full, tmp_path):
    """the orphan of a killed Snakemake has written --output but still holds the segment
    (it is cleaning its states); a rerun started now used to fail its first attempt ('--output
    exists', checked before the lock). It waits for the orphan and accepts the budget, exit 0."""
    import subprocess
    import sys
    import time

    _, blocks, _ = full
    out = tmp_path / "step-6"
    state = tmp_path / ".state" / "step-6"
    state.mkdir(parents=True)
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"step": MAX_STEPS}))
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, time\n"
        f"fh = open({str(state / '.lock')!r}, 'a+'); fcntl.flock(fh, fcntl.LOCK_EX)\n"
        "print('locked', flush=True); time.sleep(2)\n")], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    t0 = time.monotonic()
    assert train.main(_args(blocks, out, state)) == 0
    assert time.monotonic() - t0 > 1.0
    holder.wait()


def test_damaged_parent_budget_is_refused_naming_the_file(full, tmp_path, capsys):
    """A parent budget whose model.safetensors no longer has its manifest's model_sha256 (one flipped
    bit, same size; a truncated file) or whose manifest.json is not JSON: exit 2 naming the file, before
    any work (no output, no state folder), instead of training on or a raw traceback."""
    import shutil

    root, blocks, _ = full
    good = tmp_path / "step-3"
    assert train.main(_args(blocks, good, tmp_path / "s3", until=3)) == 0

    def damaged(name, change):
        parent = tmp_path / name
        shutil.copytree(good, parent)  # copies: the kept state's hard links stay intact
        change(parent)
        out, state = tmp_path / f"{name}-step-6", tmp_path / f"{name}-s6"
        assert train.main(_args(blocks, out, state, "--resume-from", str(parent))) == 2
        assert not out.exists() and not state.exists()
        return parent, capsys.readouterr().err

    def flip_bit(parent):
        model = parent / "model.safetensors"
        blob = bytearray(model.read_bytes())
        blob[len(blob) // 2] ^= 1
        model.write_bytes(bytes(blob))

    parent, err = damaged("flipped", flip_bit)
    assert str(parent / "model.safetensors") in err and "model_sha256" in err and "Traceback" not in err

    def truncate(parent):
        model = parent / "model.safetensors"
        model.write_bytes(model.read_bytes()[:1000])

    parent, err = damaged("truncated", truncate)
    assert str(parent / "model.safetensors") in err and "model_sha256" in err

    def old_manifest_truncated(parent):  # a manifest written before model_sha256: the header is parsed
        manifest = json.loads((parent / "manifest.json").read_text())
        manifest.pop("model_sha256")
        (parent / "manifest.json").write_text(json.dumps(manifest))
        truncate(parent)

    parent, err = damaged("old", old_manifest_truncated)
    assert str(parent / "model.safetensors") in err and "not a readable safetensors file" in err

    def corrupt_manifest(parent):
        text = (parent / "manifest.json").read_text()
        (parent / "manifest.json").write_text(text[: len(text) // 2])

    parent, err = damaged("manifest", corrupt_manifest)
    assert str(parent / "manifest.json") in err and "not valid JSON" in err
    # the intact budget still continues, and its weights are recorded in the child's manifest
    assert train.main(_args(blocks, tmp_path / "step-6", tmp_path / "s6", "--resume-from", str(good))) == 0
    assert read_manifest(tmp_path / "step-6")["parent_model_sha256"] == read_manifest(good)["model_sha256"]
    assert read_manifest(good)["parent_model_sha256"] is None  # from scratch


def test_more_tc_negatives_than_tokens_in_a_device_batch_trains(full, tmp_path):
    """Negatives are drawn with replacement: K = 200 > B x L = 4 x 32 trains on the CPU (the sampled
    matmul could not hold the pattern) and logs a finite TC loss."""
    root, blocks, _ = full
    args = _args(blocks, tmp_path / "step-2", tmp_path / "st", until=2)
    args[args.index("--tc-negatives") + 1] = "200"
    assert train.main(args) == 0
    losses = [r["tc_loss"] for r in read_log(tmp_path / "st" / "logs") if "tc_loss" in r]
    assert losses and all(math.isfinite(x) for x in losses)


def test_blocks_longer_than_the_positions_are_refused_before_training(tmp_path, capsys):
    """taco pretrain by hand on 600-token blocks (every family has 512 positions): exit 2 naming the blocks."""
    import datasets

    blocks = write_blocks(tmp_path)
    long = tmp_path / "long"
    rows = {"input_ids": [[2] + [5 + (i % 200) for i in range(598)] + [3] for _ in range(8)]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows),
                          "validation": datasets.Dataset.from_dict(rows)}).save_to_disk(str(long))
    import shutil

    shutil.copytree(blocks / "tokenizer", long / "tokenizer")
    rc = train.main(["--blocks", str(long), "--objective", "mlm", "--size", "tiny", "--max-steps", "2",
                     "--until", "2", "--output", str(tmp_path / "out"), "--state-dir", str(tmp_path / "st"),
                     "--per-device-batch-size", "2", "--device", "cpu", "--no-progress", "--report-to", "none"])
    err = capsys.readouterr().err
    assert rc == 2 and str(long) in err and "600 tokens" in err and "512" in err
    assert not (tmp_path / "out").exists()


def test_a_segment_trains_from_typed_settings_and_records_its_command_line(full, tmp_path):
    """``SegmentPlan.args`` is the typed :class:`SegmentArgs` (no argparse Namespace reaches the trainer), every
    field set from the flags; the manifest's record is the command line without the monitoring options."""
    import argparse
    import dataclasses

    from taco.training.segment import SegmentArgs
    from taco.training.validation import GlueProbeOptions

    root, blocks, _ = full
    args = _args(blocks, tmp_path / "x", tmp_path / "st", "--eval-every", "5", "--report-to", "none",
                 "--glue-probe-tasks", "sst2, cola", "--glue-source", "synthetic")
    ns = train.build_parser().parse_args(args)
    plan = train.make_segment_plan(ns)
    a = plan.args
    assert isinstance(a, SegmentArgs) and not any(isinstance(v, argparse.Namespace) for v in vars(plan).values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.lr = 1.0
    for f in dataclasses.fields(SegmentArgs):
        if f.name not in ("glue_probe", "glue_probe_every", "tensorboard_dir", "report_to"):
            assert getattr(a, f.name) == getattr(ns, f.name), f.name
    assert a.glue_probe == GlueProbeOptions(tasks=("sst2", "cola"), glue_source="synthetic", glue_dir=None,
                                            max_train_samples=5000, max_eval_samples=2000)
    assert a.glue_probe_every == 5  # --glue-probe-every 0: every validation point
    assert a.report_to == () and a.tensorboard_dir == tmp_path / "st" / "logs" / "tensorboard"
    # the record: every flag but the monitoring options and the testing hook, the schedule resolved
    assert not {"report_to", "tensorboard_dir", "wandb_project", "wandb_dir", "debug_step_sleep"} & set(plan.parameters)
    assert plan.parameters["lr"] == ns.lr and plan.parameters["glue_probe_tasks"] == "sst2, cola"
    assert (plan.parameters["max_steps"], plan.parameters["until"]) == (plan.max_steps, plan.until)
    assert plan.parameters["precision"] == plan.precision == "fp32"
