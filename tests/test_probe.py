"""The frozen-feature probe (issue 51 item 3; taco.training.glue_probe): the linear models recover a known answer,
the command writes a deterministic record, and bad input is named before any work."""

from __future__ import annotations

import json

import numpy as np
import pytest

from taco.training import glue_probe as probe


def test_a_separable_task_is_learned_and_noise_is_not():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 8))
    y = (x[:, 0] + 0.1 * x[:, 1] > 0).astype(int)
    good = probe.fit_probe("sst2", x[:300], y[:300], x[300:], y[300:])
    assert good["metrics"]["accuracy"] > 0.9
    noise = probe.fit_probe("sst2", rng.normal(size=(300, 8)), y[:300], rng.normal(size=(100, 8)), y[300:])
    assert 0.3 < noise["metrics"]["accuracy"] < 0.7
    target = 2.5 + x[:, 2]
    reg = probe.fit_probe("stsb", x[:300], target[:300], x[300:], target[300:])
    assert reg["primary"] > 0.95 and reg["choice"] in probe.ALPHA_GRID


def _checkpoint(tmp_path, sha: bool, objective: str = "mlm"):
    """A tiny BERT checkpoint (random weights, seed 0) with its tokenizer and manifest; ``sha``: the manifest
    records the weights' sha256, as taco pretrain's do."""
    pytest.importorskip("torch")
    import torch

    from taco.manifest import build_manifest, sha256_file, write_manifest
    from taco.model.configs import bert_config
    from taco.model.modeling import PreTrainingModel
    from shared_data import bert_tokenizer

    tok = bert_tokenizer()
    ckpt = tmp_path / "ckpt"
    torch.manual_seed(0)
    PreTrainingModel(bert_config("tiny", len(tok)), objective="mlm").save_pretrained(str(ckpt))
    tok.save_pretrained(str(ckpt))
    extra = {"model_sha256": sha256_file(ckpt / "model.safetensors")} if sha else {}
    write_manifest(ckpt, build_manifest("pretrain", {}, step=0, objective=objective, size="tiny",
                                        size_preset="tiny", **extra))
    return ckpt


def test_the_command_writes_a_deterministic_record(tmp_path, capsys):
    ckpt = _checkpoint(tmp_path, sha=False, objective="control")
    args = ["--checkpoint", str(ckpt), "--task", "sst2", "stsb", "--glue-source", "synthetic",
            "--max-train-samples", "200", "--max-eval-samples", "100"]
    assert probe.main([*args, "--output", str(tmp_path / "a.json")]) == 0
    assert probe.main([*args, "--output", str(tmp_path / "b.json")]) == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    for rec in (a, b):
        rec.pop("cpu_seconds")
    assert a == b
    assert set(a["tasks"]) == {"sst2", "stsb"} and a["step"] == 0 and a["objective"] == "control"
    assert a["average"]["mean"] == pytest.approx((a["tasks"]["sst2"]["mean"]["primary"]
                                                   + a["tasks"]["stsb"]["mean"]["primary"]) / 2)
    assert probe.main([*args, "--output", str(tmp_path / "a.json")]) == 2  # never overwritten
    assert "refusing to overwrite" in capsys.readouterr().err
    assert probe.main(["--checkpoint", str(ckpt), "--task", "nope", "--output", str(tmp_path / "c.json")]) == 2
    assert "unknown GLUE task" in capsys.readouterr().err


def test_damaged_weights_and_unusable_data_are_named_before_any_task(tmp_path, capsys):
    """Fault sweep V, item 3: a flipped bit against the manifest's model_sha256, no weights file, a truncated
    weights file, a task missing from the data folder, a one-class training set: each exit 2 naming the file or
    task, no traceback, nothing written."""
    out = tmp_path / "p.json"
    ckpt = _checkpoint(tmp_path / "a", sha=True)
    synth = ["--task", "sst2", "--glue-source", "synthetic", "--max-train-samples", "50", "--max-eval-samples", "20"]
    w = ckpt / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-5] ^= 1
    w.write_bytes(bytes(data))
    assert probe.main(["--checkpoint", str(ckpt), *synth, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{w}: sha256" in err and "Traceback" not in err
    w.unlink()
    assert probe.main(["--checkpoint", str(ckpt), *synth, "--output", str(out)]) == 2
    assert f"{w}: no weights file" in capsys.readouterr().err
    ckpt = _checkpoint(tmp_path / "b", sha=False)  # no sha recorded: the file itself is read
    w = ckpt / "model.safetensors"
    w.write_bytes(w.read_bytes()[:40])
    assert probe.main(["--checkpoint", str(ckpt), *synth, "--output", str(out)]) == 2
    assert f"{w}: not a readable safetensors file" in capsys.readouterr().err
    good = _checkpoint(tmp_path / "c", sha=True)
    glue = tmp_path / "glue"
    (glue / "SST-2").mkdir(parents=True)
    (glue / "SST-2" / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"good film {i}\t1\n" for i in range(30)))
    (glue / "SST-2" / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"bad film {i}\t0\n" for i in range(10)))
    local = ["--glue-source", "local", "--glue-dir", str(glue), "--output", str(out)]
    assert probe.main(["--checkpoint", str(good), "--task", "sst2", *local]) == 2
    assert "task sst2: every training example has the label 1" in capsys.readouterr().err
    assert probe.main(["--checkpoint", str(good), "--task", "cola", "sst2", *local]) == 2
    err = capsys.readouterr().err
    assert "task cola: its data cannot be read" in err and "Traceback" not in err
    assert not out.exists()
