"""``benchmarks/step_time.py``: the side-by-side Trainer-step benchmark runs on the smoke shapes and writes
the documented JSON (no timing is asserted: the numbers depend on the machine)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _module():
    spec = importlib.util.spec_from_file_location("step_time", REPO / "benchmarks" / "step_time.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_schedule_alternates_blocks_and_reverses_the_order_every_round():
    st = _module()
    assert st.schedule(["mlm", "taco"], steps=5, warmup=1, block=2) == [
        ("mlm", 1, False), ("taco", 1, False),
        ("mlm", 2, True), ("taco", 2, True), ("taco", 2, True), ("mlm", 2, True), ("mlm", 1, True), ("taco", 1, True)]


def test_step_time_on_the_smoke_shapes_writes_the_documented_json(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("datasets")
    from taco.flops import pretrain_flops_per_token

    st = _module()
    out = tmp_path / "step_times.json"
    rc = st.main(["--configfile", str(REPO / "configs" / "smoke.yaml"), "--objectives", "mlm,taco", "--steps", "2",
                  "--warmup", "1", "--block", "1", "--device", "cpu", "--output", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert {"config", "size", "device", "threads", "objectives", "wall_ratio", "model_flops_ratio"} <= set(res)
    assert res["size"] == "tiny" and res["threads"] == 1 and res["device"].startswith("cpu")
    assert set(res["objectives"]) == {"mlm", "taco"}
    for o in ("mlm", "taco"):
        r = res["objectives"][o]
        assert set(r) == {"step_s_median", "step_s_q25", "step_s_q75", "n_steps"}
        assert r["n_steps"] == 2 and 0 < r["step_s_q25"] <= r["step_s_median"] <= r["step_s_q75"]
        assert len(res["details"]["step_s"][o]) == len(res["details"]["step_cpu_s"][o]) == 2
    assert set(res["wall_ratio"]) == set(res["model_flops_ratio"]) == {"taco/mlm"}
    assert res["wall_ratio"]["taco/mlm"] == pytest.approx(
        res["objectives"]["taco"]["step_s_median"] / res["objectives"]["mlm"]["step_s_median"])
    # smoke: tiny, 64-token blocks, a 1,000-entry vocabulary, K = 16 negatives; TC adds 4 (K+1) H per token
    mlm = pretrain_flops_per_token("tiny", 64, "mlm", vocab_size=1000)
    assert res["model_flops_ratio"]["taco/mlm"] == pytest.approx((mlm + 4 * 17 * 128) / mlm)


def test_bad_counts_and_sizes_are_named_before_any_work(tmp_path, capsys):
    st = _module()
    smoke = str(REPO / "configs" / "smoke.yaml")
    assert st.main(["--configfile", smoke, "--steps", "0", "--output", str(tmp_path / "x.json")]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    assert st.main(["--configfile", smoke, "--size", "huge", "--output", str(tmp_path / "x.json")]) == 2
    assert "--size 'huge': not a key of pretrain.sizes" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
