"""benchmarks/device_check.sh: the CPU toy mode of both parts end to end (slow); the summary logic,
the reproduction's statistics, report and plan against its time boxes (fast)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
device_check = pytest.importorskip("device_check")
device_repro = pytest.importorskip("device_repro")
from shared_data import SHARED  # noqa: E402


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


def test_gpu_plan_fits_its_time_boxes():
    """At the throughput the plan assumes, the GPU reproduction fits its box, the check's parts fit
    theirs, each part is about 3 minutes, both about 6, and the shell's hard stop comes after them and
    before the device call's timeout."""
    budgets = device_check.GROUP_BUDGETS["cuda"]
    assert sum(device_check.TIME_BOXES[p] for p in device_check.CHECK_PARTS) <= budgets["check"] <= 190
    assert device_check.TIME_BOXES["repro"] <= budgets["repro"] <= 190
    assert sum(budgets.values()) <= 6 * 60 + 10
    plan = device_repro.repro_plan("cuda", budgets["repro"])  # assumed throughput
    assert plan["fits"] and plan["time_s"]["total"] <= budgets["repro"], plan["time_s"]
    assert plan["throughput_source"].startswith("assumed")
    assert plan["steps"] >= 500 and plan["steps"] % len(plan["budgets"]) == 0
    assert plan["budgets"][-1] == plan["steps"] and len(plan["budgets"]) >= 3  # several points of the curve
    assert len(plan["tasks"]) in (2, 3) and plan["seeds"] == [1, 2, 3]
    # a measured raw throughput (the check's mfu part), scaled by the Trainer factor, also fits
    raw = {"mlm": 2.5e6, "taco": 2.0e6}
    measured = device_repro.repro_plan("cuda", budgets["repro"], measured_tokens_per_s=raw)
    assert measured["fits"] and measured["throughput_source"].startswith("measured")
    # the corpus is a few million tokens: the plan is several epochs or more (stated as a limit)
    assert plan["tokens_per_objective"] > 5 * 3.0e6
    hard = int(re.search(r"^HARD=(\d+)", (REPO / "benchmarks" / "device_check.sh").read_text(), re.M).group(1))
    assert sum(budgets.values()) + 20 <= hard <= 450


def test_repro_statistics_against_hand_computed():
    ci = device_repro.mean_ci([80.0, 82.0, 84.0])
    assert ci["mean"] == pytest.approx(82.0)
    assert ci["hi"] - ci["mean"] == pytest.approx(4.303 * 2.0 / 3**0.5, rel=1e-3)  # t(0.975, 2) sd / sqrt(n)
    d = device_repro.diff_ci([80.0, 82.0, 84.0], [83.0, 85.0, 87.0])
    assert d["diff"] == pytest.approx(3.0) and d["df"] == pytest.approx(4.0)  # equal variances: Welch df = 4
    assert d["hi"] - d["diff"] == pytest.approx(2.776 * (8 / 3) ** 0.5, rel=1e-3)
    mlm = [{"step": 100, "mlm_loss": 7.0}, {"step": 200, "mlm_loss": 6.5}, {"step": 400, "mlm_loss": 6.0}]
    taco = [{"step": 100, "mlm_loss": 6.8}, {"step": 200, "mlm_loss": 6.2}, {"step": 400, "mlm_loss": 5.6}]
    st = device_repro.steps_to_target(mlm, taco)
    # 6.0 lies 1/3 of the way from 6.2 (step 200) to 5.6 (step 400) on a log-step axis
    assert st["k_star"] == pytest.approx(200 * 2 ** (1 / 3), abs=0.1)
    assert st["speedup"] == pytest.approx(400 / (200 * 2 ** (1 / 3)), abs=1e-3)
    assert st["interval"] is None and "one pre-training run" in st["why_no_interval"]
    assert device_repro.steps_to_target(taco, mlm)["status"] == "not reached"


def _fake_repro():
    row = lambda vals: {"values": vals, **device_repro.mean_ci(vals), "degenerate_seeds": 0}  # noqa: E731
    return {"cannot_answer": device_repro.CANNOT_ANSWER,
            "plan": device_repro.repro_plan("cuda", 185.0),
            "curves": {"mlm": [{"step": 100, "mlm_loss": 7.0}, {"step": 200, "mlm_loss": 6.5}],
                       "taco": [{"step": 100, "mlm_loss": 6.8}, {"step": 200, "mlm_loss": 6.2, "tc_loss": 1.5}]},
            "steps_to_target": {"target_step": 200, "target_value": 6.5, "status": "reached", "k_star": 150.0,
                                "speedup": 1.33, "interval": None, "why_no_interval": "one pre-training run per objective"},
            "glue": {"sst2": {"metric": "accuracy", "step": 200, "mlm": row([80.0, 81.0, 82.0]),
                              "taco": row([82.0, 83.0, 84.0]),
                              "taco_minus_mlm": device_repro.diff_ci([80.0, 81.0, 82.0], [82.0, 83.0, 84.0])},
                     "mrpc": {"metric": "f1", "step": 200, "mlm": row([80.0, 81.0, 82.0]),
                              "taco": {"skipped": "no time left in the box"}}}}


def test_repro_report_json_markdown_and_figure(tmp_path):
    """A partial reproduction (one task skipped) still gives the three files; the Markdown holds the
    curve table, the speedup, the GLUE table with intervals and what it cannot answer."""
    pytest.importorskip("matplotlib")
    summary = {"schema": device_check.SCHEMA, "device_mode": "cuda", "started_utc": "2026-01-01T00:00:00+00:00",
               "command": "bash benchmarks/device_check.sh --part repro", "budget_s": 185, "budgets": {"repro": 185},
               "parts": {"repro": {"status": "timeout", "reason": "ran past its 185 s limit", "result": _fake_repro()}}}
    js, md = device_check.write_summary(tmp_path, summary)
    assert json.loads(js.read_text())["figure"] == "device_check.png"
    assert (tmp_path / "device_check.png").stat().st_size > 5000
    text = md.read_text()
    assert "| 200 | 6.500 | 6.200 |" in text
    assert "speedup 1.33x" in text and "no interval" in text
    assert "| sst2 (accuracy, step 200) | 81.0 [78.5, 83.5] | 83.0 [80.5, 85.5] | +2.0 [-0.3, +4.3] |" in text
    assert "no time left in the box" in text and "not the paper's regime" in text
    assert "repro sst2 accuracy: mlm 81.0" in text  # key figures


def test_dry_run_lists_what_travels():
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "device_check.py"), "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    assert "working tree (tracked + untracked not ignored)" in r.stdout and "of 64 MiB" in r.stdout
    assert 'carry=[".whl", "benchmarks/carry"]' in r.stdout
    d = device_repro.dry_run([".whl", "benchmarks/carry"])
    assert d["total_bytes"] >= d["working_tree_bytes"] > 0 and d["limit_bytes"] == 64 * 2**20


def _toy_carry(tmp_path):
    if not (SHARED / "corpus" / "wikitext-2" / "valid.txt").is_file() or not (SHARED / "glue").is_dir():
        pytest.skip(f"{SHARED} absent: the reproduction needs the real corpus and GLUE (set TACO_SHARED_DATA)")
    carry = tmp_path / "carry"
    r = subprocess.run([sys.executable, str(REPO / "benchmarks" / "device_check.py"), "--prepare", "--toy",
                        "--carry", str(carry), "--data-root", str(SHARED)],
                       capture_output=True, text=True, cwd=str(REPO), timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return carry


@pytest.mark.slow
def test_cpu_toy_mode_end_to_end(tmp_path):
    """Both parts at toy sizes on CPU, as the GPU runs them: every check part ok, the equalities hold,
    the reproduction gives both curves at the same steps, GLUE with 3 seeds and intervals, and the
    three files."""
    pytest.importorskip("datasets")
    pytest.importorskip("matplotlib")
    carry = _toy_carry(tmp_path)
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out))
    r = subprocess.run(["bash", str(REPO / "benchmarks" / "device_check.sh"), "--device", "cpu", "--part", "both",
                        "--carry", str(carry)], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=1300)
    summary = json.loads((out / "device_check.json").read_text())
    parts = summary["parts"]
    assert r.returncode == 0, {k: (p["status"], p.get("reason"), p.get("log_tail", "")[-1500:])
                               for k, p in parts.items()}
    assert list(parts) == [*device_check.CHECK_PARTS, "repro"]
    assert all(p["status"] == "ok" for p in parts.values())
    assert parts["env"]["result"]["torch"] and parts["env"]["result"]["date_utc"]
    tc = parts["tc"]["result"]
    assert tc["fp32"]["equal"] and tc["bf16"]["equal"]
    assert set(parts["objectives"]["result"]["step_time_ms"]) == {"mlm", "taco"}
    assert parts["pretrain_bench"]["result"]["ratio"] > 0
    runs = parts["mfu"]["result"]["runs"]
    assert runs["tiny/mlm"]["tokens_per_s"] > 0 and runs["tiny/mlm"]["mfu"] is None  # no peak on CPU
    ca = parts["compile_attn"]["result"]["ratios"]["mlm"]
    assert ca["sdpa_over_eager_attention"] > 0 and ca["compile_over_eager"] > 0
    rep = parts["repro"]["result"]
    plan = rep["plan"]
    assert plan["throughput_source"].startswith("measured")  # sized from this command's mfu part
    steps = [[c["step"] for c in rep["curves"][o]] for o in ("mlm", "taco")]
    assert steps[0] == steps[1] == plan["budgets"]
    assert all(c["mlm_loss"] > 0 for o in ("mlm", "taco") for c in rep["curves"][o])
    assert all(c["tc_loss"] is not None for c in rep["curves"]["taco"])
    assert rep["steps_to_target"]["status"]
    assert set(rep["glue"]) == set(plan["tasks"])
    for row in rep["glue"].values():
        for o in ("mlm", "taco"):
            assert len(row[o]["values"]) == 3 and row[o]["lo"] is not None
        assert row["taco_minus_mlm"]["diff"] is not None
    assert summary["verdicts"] == {"tc fp32 device == CPU": True, "tc bf16 device == CPU": True}
    assert (out / "device_check.png").stat().st_size > 5000
    md = (out / "device_check.md").read_text()
    assert "# Device check (cpu)" in md and "not the paper's regime" in md and "TACO - MLM" in md


@pytest.mark.slow
def test_without_datasets_the_check_runs_and_the_repro_says_why(tmp_path):
    """The lent GPU machine has no `datasets`: the check's parts never import it; the reproduction is
    recorded as skipped with the way out (carried wheels)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.modules['datasets'] = None  # absent, as there\n")
    out = tmp_path / "out"
    env = dict(os.environ, OUT=str(out), PYTHONPATH=str(site))
    r = subprocess.run(["bash", str(REPO / "benchmarks" / "device_check.sh"), "--device", "cpu", "--part", "both",
                        "--parts", "env,tc", "--carry", str(tmp_path / "no-carry")],
                       capture_output=True, text=True, env=env, cwd=str(REPO), timeout=1000)
    parts = json.loads((out / "device_check.json").read_text())["parts"]
    status = {k: p["status"] for k, p in parts.items()}
    assert status == {"env": "ok", "tc": "ok", "repro": "skipped"}, {k: p.get("reason") for k, p in parts.items()}
    assert r.returncode == 1  # not every part ran
    assert parts["env"]["result"]["datasets_importable"] is False
    assert "device_wheels.sh" in parts["repro"]["reason"]
    assert "not the paper's regime" in (out / "device_check.md").read_text()
