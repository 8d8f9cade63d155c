"""benchmarks/device_check.sh: the CPU toy mode end to end (slow), and its summary logic (fast)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
device_check = pytest.importorskip("device_check")


def test_weight_diff_against_hand_computed(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    a = {"w": torch.tensor([1.0, -2.0, 4.0]), "b": torch.tensor([0.5, 0.25])}
    b = {"w": torch.tensor([1.0, -2.5, 4.0]), "b": torch.tensor([0.5, 0.5])}
    for name, w in (("a", a), ("b", b)):
        (tmp_path / name).mkdir()
        save_file(w, str(tmp_path / name / "model.safetensors"))
    d = device_check.weight_diff(tmp_path / "a", tmp_path / "b")
    assert d["max_abs"] == pytest.approx(0.5)  # |-2 - -2.5|
    assert d["max_rel"] == pytest.approx(0.25 / 0.5)  # tensor b: 0.25 over max|a_b| = 0.5


def test_verdicts_and_markdown_from_a_partial_summary(tmp_path):
    summary = {
        "schema": device_check.SCHEMA, "device_mode": "cuda", "started_utc": "2026-01-01T00:00:00+00:00",
        "command": "bash benchmarks/device_check.sh", "budget_s": 285, "parts": {
            "env": {"status": "ok", "result": {"gpu": "NVIDIA H200", "driver": "580.1", "torch": "2.11.0",
                                                "torch_cuda": "13.0"}},
            "objectives": {"status": "ok", "result": {"taco_mlm_step_time_ratio": 1.08}},
            "pretrain_bench": {"status": "ok", "result": {"ratio": 1.31}},
            "mfu": {"status": "ok", "result": {"runs": {"base/mlm": {"mfu": 0.39}}}},
            "resume": {"status": "timeout", "reason": "ran past its 120 s limit", "result": {}},
        }}
    js, md = device_check.write_summary(tmp_path, summary)
    v = json.loads(js.read_text())["verdicts"]
    assert v == {"taco/mlm step time <= 1.05": False, "ours/official tokens/s >= 1.3": True,
                 "MFU base mlm >= 40%": False}
    text = md.read_text()
    assert "NVIDIA H200" in text and "driver 580.1" in text and "CUDA 13.0" in text
    assert "| resume | timeout |" in text and "ran past its 120 s limit" in text
    assert "taco/mlm step time ratio 1.08" in text and "ratio 1.31x" in text  # key figures, as measured


def test_bad_part_name_is_a_usage_error():
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "device_check.py"), "--parts", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "unknown part" in r.stderr


@pytest.mark.slow
def test_cpu_toy_mode_end_to_end(tmp_path):
    """The whole check at toy sizes on CPU: every part ok, the equalities hold, the files are there."""
    pytest.importorskip("datasets")
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out))
    r = subprocess.run(["bash", str(REPO / "benchmarks" / "device_check.sh"), "--device", "cpu"],
                       capture_output=True, text=True, env=env, cwd=str(REPO), timeout=1000)
    summary = json.loads((out / "device_check.json").read_text())
    parts = summary["parts"]
    assert r.returncode == 0, {k: (p["status"], p.get("reason"), p.get("log_tail", "")[-1500:])
                               for k, p in parts.items()}
    assert list(parts) == list(device_check.PARTS)
    assert all(p["status"] == "ok" for p in parts.values())
    assert parts["env"]["result"]["torch"] and parts["env"]["result"]["date_utc"]
    tc = parts["tc"]["result"]
    assert tc["fp32"]["equal"] and tc["bf16"]["equal"]
    assert tc["peak_extra_memory"]["tc_loss_fp32_mib"] < tc["peak_extra_memory"]["materialized_fp32_mib"]
    assert set(parts["objectives"]["result"]["step_time_ms"]) == {"mlm", "taco"}
    assert parts["pretrain_bench"]["result"]["ratio"] > 0
    runs = parts["mfu"]["result"]["runs"]
    assert runs["tiny/mlm"]["tokens_per_s"] > 0 and runs["tiny/mlm"]["mfu"] is None  # no peak on CPU
    res = parts["resume"]["result"]
    assert res["resume_verdict"]["equal"] is True and res["resumed_vs_uninterrupted"]["max_abs"] <= 1e-6
    assert [e["signal"] for e in res["interruptions"]] == ["SIGTERM", "SIGKILL"]
    assert res["log_events"]["resume_state"] == 2
    ft = parts["finetune"]["result"]
    assert ft["wall_s"] > 0 and ft["n_train"] == 64
    assert summary["verdicts"] == {"tc fp32 device == CPU": True, "tc bf16 device == CPU": True,
                                   "resume == uninterrupted": True}
    assert "# Device check (cpu)" in (out / "device_check.md").read_text()


@pytest.mark.slow
def test_without_datasets_the_other_parts_still_run(tmp_path):
    """The lent GPU machine has no `datasets`: env, tc, objectives, pretrain_bench and mfu never import
    it; resume and finetune are recorded as skipped with the way out (carried wheels)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['datasets'] = None  # absent, as there\n")
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), PYTHONPATH=str(site))
    r = subprocess.run(["bash", str(REPO / "benchmarks" / "device_check.sh"), "--device", "cpu"],
                       capture_output=True, text=True, env=env, cwd=str(REPO), timeout=1000)
    parts = json.loads((out / "device_check.json").read_text())["parts"]
    status = {k: p["status"] for k, p in parts.items()}
    assert status == {"env": "ok", "tc": "ok", "objectives": "ok", "pretrain_bench": "ok", "mfu": "ok",
                      "resume": "skipped", "finetune": "skipped"}, {k: p.get("reason") for k, p in parts.items()}
    assert r.returncode == 1  # not every part ran
    assert parts["env"]["result"]["datasets_importable"] is False
    assert "device_wheels.sh" in parts["resume"]["reason"]
