"""`taco plan`: FLOP counts against torch's own FLOP counter, costs against hand arithmetic, job
counts against Snakemake's DAG, measured throughput from a device-check file, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from taco import flops
from taco.workflow import config as wc
from taco.workflow.plan import command as plan, costs as plan_costs, inputs as plan_inputs, render as plan_render

REPO = Path(__file__).resolve().parent.parent


def test_parameter_count_equals_the_model():
    pytest.importorskip("torch")
    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config

    for preset, vocab in (("tiny", 1000), ("small", 30522)):
        model = PreTrainingModel(bert_config(preset, vocab))
        assert flops.parameter_count(preset, vocab) == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("objective", ["mlm", "taco"])
def test_pretrain_flops_equal_torch_flop_counter(objective):
    """torch.utils.flop_counter counts every matmul of forward + backward (eager attention, so the
    QK^T / AV bmm are counted too): equal to the formula with p_pred = selected share. It does not
    see the TC loss's custom sparse kernels, so for TACO the difference is exactly 4 (K+1) H per token."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config
    from taco.model.masking import mask_tokens

    V, B, L, K = 1000, 2, 64, 16
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, V, (B, L), generator=g)
    attn = torch.ones(B, L, dtype=torch.long)
    corrupted, labels = mask_tokens(ids, torch.zeros(B, L, dtype=torch.bool), attn, 4, V, 0.15, generator=g)
    model = PreTrainingModel(bert_config("tiny", V, attn_implementation="eager"), objective, tc_num_negatives=K)
    counter = FlopCounterMode(display=False)
    with counter:
        model(input_ids=corrupted, attention_mask=attn, labels=labels, original_input_ids=ids).loss.backward()
    T, n_sel = B * L, int((labels != -100).sum())
    formula = flops.pretrain_flops_per_token("tiny", L, objective, vocab_size=V,
                                             options={"tc_num_negatives": K, "mlm_probability": n_sel / T}) * T
    tc_term = 4 * (K + 1) * 128 * T if objective == "taco" else 0
    assert counter.get_total_flops() == pytest.approx(formula - tc_term, rel=1e-12)


def test_finetune_flops_equal_torch_flop_counter():
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BertForSequenceClassification

    from taco.model.configs import bert_config

    V, B, L = 1000, 2, 64
    ids = torch.randint(5, V, (B, L), generator=torch.Generator().manual_seed(0))
    model = BertForSequenceClassification(bert_config("tiny", V, attn_implementation="eager", num_labels=3))
    counter = FlopCounterMode(display=False)
    with counter:
        model(input_ids=ids, attention_mask=torch.ones(B, L, dtype=torch.long), labels=torch.tensor([0, 2])).loss.backward()
    assert counter.get_total_flops() == pytest.approx(flops.finetune_flops_per_token("tiny", L, 3) * B * L, rel=1e-12)


def test_flops_by_hand_for_tiny():
    # tiny: 2 layers, H 128, I 512; V 1000, L 64, K 16
    layers = 2 * (4 * 128 * 128 + 2 * 128 * 512)  # 393,216 matmul weights
    head = 128 * 128 + 128 * 1000  # transform + decoder
    attention = 12 * 2 * 128 * 64
    assert flops.pretrain_flops_per_token("tiny", 64, "mlm", vocab_size=1000) == pytest.approx(
        6 * layers + 6 * 0.15 * head + attention)
    assert flops.pretrain_flops_per_token("tiny", 64, "mlm_tp", vocab_size=1000) == pytest.approx(
        6 * layers + 6 * head + attention)
    assert flops.pretrain_flops_per_token("tiny", 64, "taco", vocab_size=1000, options={"tc_num_negatives": 16}) == pytest.approx(
        6 * layers + 6 * 0.15 * head + attention + 4 * 17 * 128)
    assert flops.mfu(1e6, 4e8, 989) == pytest.approx(1e6 * 4e8 / 989e12)
    with pytest.raises(ValueError, match="unknown model preset"):
        flops.pretrain_flops_per_token("large", 64)


def test_nce_flops_leave_out_the_no_gradient_diagnostic_by_hand():
    """BERT-NCE's head with gradient is the MLM head's count (candidates bounded by the vocabulary);
    its full-softmax diagnostic (under no_grad, 2 p H V per token) is no training compute. INFOWORD adds
    the n-gram's encoder pass: span_max + 2 = 7 tokens per block of L."""
    # tiny: 2 layers, H 128, I 512; V 1000, L 64
    layers = 2 * (4 * 128 * 128 + 2 * 128 * 512)
    head = 128 * 128 + 128 * 1000
    attention = 12 * 2 * 128 * 64
    mlm = 6 * layers + 6 * 0.15 * head + attention
    assert flops.pretrain_flops_per_token("tiny", 64, "bert_nce", vocab_size=1000) == pytest.approx(mlm)
    span = 7 / 64 * (6 * layers + 12 * 2 * 128 * 7)
    assert flops.pretrain_flops_per_token("tiny", 64, "infoword", vocab_size=1000) == pytest.approx(mlm + span)
    # config.yaml's 256-token blocks at the small preset (4 layers, H 512, I 2048, V 30522): INFOWORD is
    # 1.022x of MLM without the diagnostic (1.070x with it, BERT-NCE 1.049x)
    small_layers = 4 * (4 * 512 * 512 + 2 * 512 * 2048)
    small_mlm = 6 * small_layers + 6 * 0.15 * (512 * 512 + 512 * 30522) + 12 * 4 * 512 * 256
    small_span = 7 / 256 * (6 * small_layers + 12 * 4 * 512 * 7)
    ratio = flops.pretrain_flops_per_token("small", 256, "infoword") / flops.pretrain_flops_per_token("small", 256, "mlm")
    assert ratio == pytest.approx((small_mlm + small_span) / small_mlm)
    assert round(ratio, 3) == 1.022
    assert flops.pretrain_flops_per_token("small", 256, "bert_nce") == pytest.approx(small_mlm)


def test_nce_flops_are_torch_count_minus_the_no_gradient_diagnostic():
    """torch's FLOP counter sees every matmul of BERT-NCE's forward + backward, the no-gradient
    full-softmax diagnostic included (forward only: 2 P H V). With every vocabulary entry a candidate
    (K uniform draws that cover V), the formula is the counter's total less exactly that term."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    from taco.model.modeling import PreTrainingModel
    from taco.model.configs import bert_config
    from taco.model.masking import mask_tokens

    V, B, L, H = 200, 2, 64, 128
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, V, (B, L), generator=g)
    attn = torch.ones(B, L, dtype=torch.long)
    corrupted, labels = mask_tokens(ids, torch.zeros(B, L, dtype=torch.bool), attn, 4, V, 0.15, generator=g)
    torch.manual_seed(0)
    model = PreTrainingModel(bert_config("tiny", V, attn_implementation="eager"), "bert_nce",
                               nce_negatives="vocabulary", nce_num_negatives=20000)
    counter = FlopCounterMode(display=False)
    with counter:
        model(input_ids=corrupted, attention_mask=attn, labels=labels, original_input_ids=ids).loss.backward()
    T, n_sel = B * L, int((labels != -100).sum())
    train = flops.pretrain_flops_per_token("tiny", L, "bert_nce", vocab_size=V,
                                           options={"mlm_probability": n_sel / T}) * T
    diagnostic = 2 * n_sel * H * V
    assert counter.get_total_flops() == pytest.approx(train + diagnostic, rel=1e-12)


@pytest.fixture(scope="module")
def smoke():
    return plan.load_config([str(REPO / "configs" / "smoke.yaml")])


def test_smoke_plan_costs_by_hand(smoke):
    p = plan_costs.build_plan(smoke, device_check=None, peak_tflops=100.0, pretrain_utilization=0.5,
                        finetune_utilization=0.25, job_overhead_s=10.0, with_targets=False)
    # the smoke grid as configs/smoke.yaml sets it (tiny preset: 2 layers, H 128, I 512)
    tiny = smoke["pretrain"]["sizes"]["tiny"]
    assert tiny["preset"] == "tiny" and smoke["tokenizer"]["kind"] == "train"
    steps, batch, L = tiny["budgets"][-1], tiny["per_device_batch_size"] * tiny["grad_accum"], smoke["max_seq_length"]
    V = smoke["tokenizer"]["vocab_size"]
    per_token = (6 * 2 * (4 * 128**2 + 2 * 128 * 512) + 6 * 0.15 * (128**2 + 128 * V) + 12 * 2 * 128 * L)
    row = next(r for r in p["pretrain"] if r["objective"] == "mlm" and r["fraction"] == 1.0)
    assert row["tokens"] == steps * batch * L
    assert row["flops"] == pytest.approx(steps * batch * L * per_token)
    assert row["gpu_hours"] == pytest.approx(row["flops"] / (0.5 * 100e12) / 3600)
    budgets = tiny["budgets"]
    assert row["longest_segment_steps"] == max(b - a for a, b in zip([0] + budgets[:-1], budgets))
    # fine-tuning of synthetic SST-2, capped by max_train_samples / max_eval_samples
    ft = smoke["finetune"]
    Lf, epochs = ft["max_length"], ft["hyperparameters"]["tiny"]["epochs"]
    n_train, n_dev = min(1500, ft["max_train_samples"]), min(300, ft["max_eval_samples"])  # synthetic sizes
    per_ft_token = 6 * 2 * (4 * 128**2 + 2 * 128 * 512) + 12 * 2 * 128 * Lf
    sst2 = plan_costs.finetune_job_cost(smoke, "tiny", "sst2", plan_costs.Rates(None, 100.0, 0.5, 0.25, 10.0))
    assert (sst2["n_train"], sst2["n_dev"], sst2["epochs"]) == (n_train, n_dev, epochs)
    want = epochs * (n_train + n_dev / 3) * Lf * (per_ft_token + 6 * (128**2 + 128 * 2) / Lf)
    assert sst2["flops"] == pytest.approx(want)
    # jobs: runs x budgets, fine-tuned checkpoints x tasks (x seeds unless one job runs them all)
    runs = [(v, f) for r in smoke["pretrain"]["runs"] for v in r["objectives"] for f in r.get("fractions", [1.0])]
    n_pre = len(runs) * len(budgets)
    reduced_last = ft.get("reduced_data_budgets", "same") == "last"
    n_ckpt = sum(1 if (f < 1 and reduced_last) else len(budgets) for _, f in runs)
    per_ckpt = (1 if ft.get("tasks_per_job") == "all" else  # configs/smoke.yaml: one job per checkpoint
                len(smoke["glue"]["tasks"]) * (len(ft["seeds"]) if ft.get("seeds_per_job", "one") == "one" else 1))
    assert p["compute_jobs"]["pretrain"] == n_pre and p["compute_jobs"]["finetune"] == n_ckpt * per_ckpt
    # disk: a tiny checkpoint holds 12 bytes per parameter
    n = flops.parameter_count("tiny", V)
    assert p["disk"]["kinds"]["checkpoints"] == pytest.approx(n_pre * 12 * n)
    text = plan_render.render_markdown(p)
    assert f"| pretrain | {n_pre} |" in text and "assumed 50% of 100 TFLOP/s" in text
    # the count is labelled for what it is: model FLOPs (matmuls with gradient), not measured cost
    assert "| tokens | model FLOPs | GPU-h |" in text and "| model FLOPs | GPU-h |\n" in text
    assert f"**Total**: {p['totals']['flops']:.3g} model FLOPs;" in text
    assert f"{p['totals']['flops']:.3g} model FLOPs, " in plan_render.summary_line(p)


@pytest.mark.slow
def test_compute_jobs_equal_snakemakes_dag(smoke, tmp_path):
    """The grid's counts of the compute rules equal what `snakemake -n` plans (an independent DAG)."""
    pytest.importorskip("snakemake")
    stats = plan.snakemake_job_stats([str(REPO / "configs" / "smoke.yaml")], cwd=tmp_path)
    assert stats, "snakemake -n failed"
    finetune = stats.get("finetune", 0) + stats.get("finetune_seeds", 0) + stats.get("finetune_checkpoint", 0)
    got = {"pack": stats["pack"], "pretrain": stats["pretrain"], "pretrain_control": stats.get("pretrain_control", 0),
           "pretrain_trial": stats.get("pretrain_trial", 0), "finetune": finetune, "dynamics": stats["dynamics"],
           "finetune_trial": stats.get("finetune_trial", 0), "finetune_choice": stats.get("finetune_choice", 0)}
    assert got == plan_costs.compute_jobs(smoke)
    assert stats["plan"] == 1


@pytest.mark.slow
def test_tuning_trials_are_counted_and_priced_as_snakemake_plans_them(smoke, tmp_path):
    """pretrain.tuning: the same trials for every arm, one choice per arm; the plan counts them as `snakemake
    -n` does and adds their FLOPs to the totals."""
    import copy

    overlay = tmp_path / "tuning.yaml"
    # warm-up below the horizon: the default space's [200, 400] is refused at a 20-step horizon
    overlay.write_text("pretrain: {tuning: {enabled: true, trials: 3, horizon: 20, space: {learning_rate: "
                       "{log_uniform: [3.0e-4, 3.0e-3]}, warmup_steps: [2, 4]}}}\n")
    stats = plan.snakemake_job_stats([str(REPO / "configs" / "smoke.yaml"), str(overlay)], cwd=tmp_path)
    assert stats, "snakemake -n failed"
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"]["tuning"] = {"enabled": True, "trials": 3, "horizon": 20, "seed": 0,
                                 "space": {"learning_rate": {"log_uniform": [3e-4, 3e-3]}, "warmup_steps": [2, 4]}}
    jobs = plan_costs.compute_jobs(cfg)
    arms = {(r.size, r.objective) for r in wc.runs(cfg) if r.fraction == 1.0}
    assert jobs["pretrain_trial"] == stats["pretrain_trial"] == 3 * len(arms)
    assert stats["tuning_choice"] == len(arms)
    p = plan_costs.build_plan(cfg, device_check=None, profile=None, with_targets=False)
    assert len(p["tuning"]) == len(arms) and all(t["steps"] == 60 for t in p["tuning"])
    off = plan_costs.build_plan(smoke, device_check=None, profile=None, with_targets=False)
    assert p["totals"]["flops"] == pytest.approx(off["totals"]["flops"] + sum(t["flops"] for t in p["tuning"]))


@pytest.mark.slow
def test_compute_jobs_count_the_no_pretraining_controls(smoke, tmp_path):
    """With pretrain.control, replicate pre-training seeds and one fine-tuned seed (cpu-real's form), the
    plan counts the `taco init` jobs and the controls' fine-tuning as `snakemake -n` plans them."""
    import copy

    overlay = tmp_path / "control.yaml"
    overlay.write_text("pretrain: {control: true, seeds: [0, 1]}\nfinetune: {pretrain_seeds: [0]}\n")
    stats = plan.snakemake_job_stats([str(REPO / "configs" / "smoke.yaml"), str(overlay)], cwd=tmp_path)
    assert stats, "snakemake -n failed"
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"].update(control=True, seeds=[0, 1])
    cfg["finetune"]["pretrain_seeds"] = [0]
    jobs = plan_costs.compute_jobs(cfg)
    assert jobs["pretrain_control"] == stats["pretrain_control"] == 2
    assert jobs["finetune"] == (stats.get("finetune", 0) + stats.get("finetune_seeds", 0)
                                + stats.get("finetune_checkpoint", 0))


def test_the_controls_fine_tuning_is_priced_like_a_checkpoints(smoke):
    """The no-pre-training controls get a fine-tuning row of their own (one checkpoint per fine-tuned
    pre-training seed), priced exactly as one budget checkpoint of the same size; the totals include
    it, and claim S1 (final MLM against the control) prices both arms instead of "not priced"."""
    import copy

    kw = dict(device_check=None, peak_tflops=100.0, pretrain_utilization=0.5, finetune_utilization=0.25,
              job_overhead_s=10.0)
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"].update(control=True, seeds=[0, 1, 2])
    cfg["finetune"]["pretrain_seeds"] = [0, 2]
    with_control = plan_costs.build_plan(cfg, **kw)
    cfg["pretrain"]["control"] = False
    without = plan_costs.build_plan(cfg, **kw)
    rows = {(r["size"], r["objective"], r["fraction"]): r for r in with_control["finetune"]["rows"]}
    control = rows[("tiny", "control", 1.0)]
    mlm = rows[("tiny", "mlm", 1.0)]
    assert control["checkpoints"] == 2  # pre-training seeds 0 and 2 are fine-tuned
    per_ckpt = mlm["gpu_hours"] / mlm["checkpoints"]
    assert control["gpu_hours"] == pytest.approx(2 * per_ckpt, rel=1e-12)
    assert control["runs"] == 2 * len(with_control["tasks"]) * len(smoke["finetune"]["seeds"])
    assert ("tiny", "control", 1.0) not in {(r["size"], r["objective"], r["fraction"])
                                            for r in without["finetune"]["rows"]}
    assert with_control["totals"]["finetune_gpu_hours"] == pytest.approx(
        without["finetune"]["gpu_hours"] + control["gpu_hours"], rel=1e-12)
    s1 = next(v for k, v in with_control["targets"].items() if k.startswith("S1:"))
    s1_off = next(v for k, v in without["targets"].items() if k.startswith("S1:"))
    assert not s1["missing"] and s1["finetune_runs"] == 2 * s1_off["finetune_runs"]
    assert any("pretrain.control is off" in m for m in s1_off["missing"])


def _device_check(tmp_path, tokens_per_s=1e6):
    fpt = flops.pretrain_flops_per_token("tiny", 256, "mlm")
    data = {"schema": "taco-device-check/1", "device_mode": "cuda", "started_utc": "2026-01-01T00:00:00+00:00",
            "parts": {"env": {"result": {"gpu": "NVIDIA H200", "date_utc": "2026-01-01T00:00:00+00:00"}},
                      "mfu": {"result": {"runs": {"tiny/mlm": {"tokens_per_s": tokens_per_s,
                                                               "flops_per_token": fpt}}}}}}
    path = tmp_path / "device_check.json"
    path.write_text(json.dumps(data))
    return path, tokens_per_s * fpt


def test_measured_throughput_is_used_where_it_exists(smoke, tmp_path):
    path, rate = _device_check(tmp_path)
    p = plan_costs.build_plan(smoke, device_check=path, with_targets=False)
    mlm = next(r for r in p["pretrain"] if r["objective"] == "mlm" and r["fraction"] == 1.0)
    taco = next(r for r in p["pretrain"] if r["objective"] == "taco" and r["fraction"] == 1.0)
    assert mlm["gpu_hours"] == pytest.approx(mlm["flops"] / rate / 3600)
    assert mlm["rate_source"].startswith("measured tiny/mlm")
    assert taco["rate_source"].startswith("assumed")  # the TACO step of tiny was not measured
    assert p["throughput"]["measured"]["gpu"] == "NVIDIA H200"
    # a CPU device check is no GPU measurement
    data = json.loads(path.read_text())
    data["device_mode"] = "cpu"
    path.write_text(json.dumps(data))
    assert plan_inputs.load_device_check(path) is None


def test_time_limit_warning(smoke, tmp_path):
    profile = tmp_path / "profile.yaml"
    profile.write_text("set-resources:\n  pretrain:\n    runtime: 1\n  finetune:\n    runtime: 240\n")
    # 1e-9 of the peak: a 50-step tiny segment takes far longer than one minute
    p = plan_costs.build_plan(smoke, device_check=None, pretrain_utilization=1e-9, profile=profile, with_targets=False)
    pre = p["time_limits"][0]
    assert pre["rule"] == "pretrain" and pre["fits_profile"] is False and pre["profile_runtime_min"] == 1
    assert "WARNING: pretrain" in plan_render.summary_line(p)


def test_gpu_mini_fits_three_gpu_hours_by_the_plan():
    cfg = plan.load_config([str(REPO / "configs" / "gpu-mini.yaml")])
    p = plan_costs.build_plan(cfg, device_check=None)
    assert p["totals"]["gpu_hours"] <= 3.0
    assert {r["objective"] for r in p["pretrain"]} == {"mlm", "taco"}
    assert len(p["tasks"]) == 5 and len(p["seeds"]) == 3
    assert p["targets"]["figure5"]["missing"] == []


def test_paper_grid_targets_name_what_they_need():
    cfg = plan.load_config([str(REPO / "config.yaml")])
    p = plan_costs.build_plan(cfg, device_check=None)
    t1 = p["targets"]["table1"]
    assert t1["pretrain_steps"] == {"mlm (small, data 1)": 250000, "taco (small, data 1)": 250000}
    # three checkpoints (MLM-250k, TACO-50k, TACO-250k) x tasks x seeds
    assert t1["finetune_runs"] == 3 * len(cfg["glue"]["tasks"]) * len(cfg["finetune"]["seeds"])
    c1 = next(v for k, v in p["targets"].items() if k.startswith("C1:"))
    assert c1["pretrain_steps"] == {"taco (small, data 1)": 50000, "mlm (small, data 1)": 250000}
    assert c1["gpu_hours"] < t1["gpu_hours"]


def test_cli_errors_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("pretrain: {runs: [{size: nope, objectives: [mlm]}]}\n")
    r = subprocess.run([sys.executable, "-m", "taco", "plan", "--configfile", str(bad), "--no-snakemake"],
                       capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 2 and "taco plan: error" in r.stderr
    r = subprocess.run([sys.executable, "-m", "taco", "plan", "--configfile", str(tmp_path / "missing.yaml")],
                       capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 2 and "missing.yaml" in r.stderr


def test_configfiles_merge_nested_keys_as_snakemake(tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("pretrain:\n  sizes:\n    small: {max_steps: 100, warmup_steps: 10, budgets: [50, 100]}\n")
    cfg = plan.load_config([str(REPO / "config.yaml"), str(overlay)])
    small = cfg["pretrain"]["sizes"]["small"]
    assert small["budgets"] == [50, 100] and small["per_device_batch_size"] == 256  # kept from config.yaml
    assert cfg["pretrain"]["sizes"]["base"]["max_steps"] == 500000


def _cpu_real(root: Path) -> dict:
    """configs/cpu-real.yaml on a data root with empty stand-ins of the files it names (taco plan checks the
    corpus and the local GLUE folder as the workflow does: tests/test_finetune_tuning.py's ``_data_root``)."""
    from test_finetune_tuning import _data_root

    return plan.load_config([str(REPO / "configs" / "cpu-real.yaml")], _data_root(root))


def test_dynamics_run_on_the_first_pretraining_seed_only(tmp_path):
    """cpu-real: three replicates, dynamics on the first (the top-level seed's plain path) x 3 budgets
    x 2 objectives = 6 jobs, the count `taco plan` prints; with seeds that leave out the top-level seed,
    the first listed replicate is measured (not none)."""
    from taco.workflow import config as wc

    cfg = _cpu_real(tmp_path)
    got = wc.dynamics_checkpoints(cfg)
    assert sorted((r.objective, r.pretrain_seed, s) for r, s in got) == [
        ("mlm", None, 800), ("mlm", None, 2000), ("mlm", None, 4000), ("taco", None, 800), ("taco", None, 2000),
        ("taco", None, 4000)]
    assert plan_costs.compute_jobs(cfg)["dynamics"] == 6
    cfg["pretrain"]["seeds"] = [5, 6]
    assert {r.pretrain_seed for r, _ in wc.dynamics_checkpoints(cfg)} == {5}
    cfg["dynamics"]["enabled"] = False
    assert wc.dynamics_checkpoints(cfg) == [] and plan_costs.compute_jobs(cfg)["dynamics"] == 0


def test_plan_numbers_do_not_depend_on_the_hash_seed(tmp_path):
    """The fine-tuning cost summed a set of tasks in hash order, so plan.json's GPU-hours changed in
    their last digits from run to run (PYTHONHASHSEED); a rerun must print the same plan."""
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "2", "3"):
        out = tmp_path / f"plan-{seed}.json"
        subprocess.run([sys.executable, "-m", "taco", "plan", "--configfile", str(REPO / "config.yaml"),
                        "--no-snakemake", "--json", str(out), "--output", str(tmp_path / f"plan-{seed}.md")],
                       check=True, cwd=tmp_path, env=dict(os.environ, PYTHONHASHSEED=seed), capture_output=True)
        outs.append(out.read_text())
    assert outs[0] == outs[1] == outs[2]


def test_a_negative_finetune_seed_is_refused_naming_the_key(tmp_path):
    """`finetune.seeds: [-1, 2]` passed every check and `taco plan` exited 0 while `snakemake -n` stopped
    on a seed--1.zip it could not make: refused before the plan, with the file and line of the key."""
    overlay = tmp_path / "seeds.yaml"
    overlay.write_text("finetune:\n  seeds: [-1, 2]\n")
    r = subprocess.run([sys.executable, "-m", "taco", "plan", "--no-snakemake", "--configfile",
                        str(REPO / "configs" / "smoke.yaml"), str(overlay)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2, r.stdout[-500:]
    assert f"{overlay}:2: finetune.seeds[0]: -1 is not allowed; allowed: an integer, >= 0" in r.stderr, r.stderr


def test_a_failed_dry_run_raises_with_snakemakes_error(tmp_path):
    """snakemake_dry_run never returns nothing: a failing `snakemake -n` raises DryRunError with its exit
    status and error (here the workflow's own check of a bad seed), a dry run past its time limit too."""
    overlay = tmp_path / "seeds.yaml"
    overlay.write_text("finetune:\n  seeds: [-1, 2]\n")
    with pytest.raises(plan.DryRunError, match=r"^exit 1: WorkflowError .*finetune\.seeds\[0\]: -1 is not allowed"):
        plan.snakemake_dry_run([str(REPO / "configs" / "smoke.yaml"), str(overlay)], cwd=tmp_path)
    with pytest.raises(plan.DryRunError, match=r"^did not finish within 0\.01 s$"):
        plan.snakemake_dry_run([str(REPO / "configs" / "smoke.yaml")], cwd=tmp_path, timeout=0.01)


def test_the_plan_says_when_its_dry_run_section_is_missing(tmp_path, monkeypatch, capsys):
    """A failed `snakemake -n` is said in the plan (the section names the failure) and on stderr; the
    workflow's NOTE lines of a dry run that worked are listed under its table."""
    def failed(*args, **kwargs):
        raise plan.DryRunError("exit 1: MissingInputException in rule all: seed--1.zip")

    monkeypatch.setattr(plan, "snakemake_dry_run", failed)
    assert plan.main(["--configfile", str(REPO / "configs" / "smoke.yaml"), "--output", str(tmp_path / "p.md")]) == 0
    out, err = capsys.readouterr()
    assert ("Every rule, as `snakemake -n` plans it now: **not available**, `snakemake -n` failed "
            "(exit 1: MissingInputException in rule all: seed--1.zip)") in out
    assert out.strip() == (tmp_path / "p.md").read_text().strip()
    assert "taco plan: note: `snakemake -n` failed" in err and "seed--1.zip" in err
    monkeypatch.setattr(plan, "snakemake_dry_run", lambda *a, **k: ({"all": 1}, ['Snakemake\'s "Provided resources: '
                                                                                'gpu=8" is a limit ...']))
    assert plan.main(["--configfile", str(REPO / "configs" / "smoke.yaml")]) == 0
    out = capsys.readouterr().out
    assert "| all | 1 |" in out and '- Snakemake\'s "Provided resources: gpu=8" is a limit ...' in out


def test_the_dry_run_returns_the_workflows_notes(tmp_path):
    """What `taco plan` lists under its dry-run table: the workflow's NOTE lines as Snakemake prints them,
    with the default profile beside the Snakefile (resources: gpu: 8) and gpus: 0."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("glue:\n  tasks: [sst2]\n")
    jobs, notes = plan.snakemake_dry_run([str(REPO / "configs" / "smoke.yaml"), str(overlay)], cwd=tmp_path)
    assert jobs["all"] == 1 and jobs["pretrain"] > 0
    assert notes == ['Snakemake\'s "Provided resources: gpu=8" is a limit from the profile\'s resources (or '
                     '--resources), not GPUs found on this machine; with gpus: 0 no job requests a gpu'], notes


def test_a_cpu_only_configuration_is_priced_in_cpu_hours(smoke):
    """configs/smoke.yaml runs on CPU: its plan and start line give CPU-hours at the measured per-core rate,
    the reference GPU's hours beside them."""
    p = plan_costs.build_plan(smoke, device_check=None, profile=None, with_targets=False)
    assert p["cpu_only"]
    assert p["totals"]["cpu_hours"] == pytest.approx(p["totals"]["flops"] / plan_costs.CPU_MODEL_FLOPS_PER_CORE_S / 3600)
    line = plan_render.summary_line(p)
    assert "CPU-h on one core per job (on the reference GPU" in line
    assert "CPU-hours" in plan_render.render_markdown(p)


def test_a_large_synthetic_corpus_is_estimated_not_generated(smoke, monkeypatch):
    """corpus.num_documents 10^7 (the schema's maximum): the plan estimates the corpus from its first
    documents instead of generating all of them; small corpora are still counted exactly."""
    import copy

    from taco.data import synthetic

    calls = []
    real = synthetic.generate_documents
    monkeypatch.setattr(synthetic, "generate_documents", lambda n, seed, *a, **k: calls.append(n) or real(n, seed, *a, **k))
    cfg = copy.deepcopy(smoke)
    cfg["corpus"]["num_documents"] = 10_000_000
    words, how = plan_costs._corpus_words(cfg)
    assert calls == [plan_costs.SYNTHETIC_SAMPLE] and "estimated" in how
    small = copy.deepcopy(smoke)
    small["corpus"]["num_documents"] = 200
    exact, how_small = plan_costs._corpus_words(small)
    assert how_small.startswith("counted") and exact == sum(len(d.split()) for d in real(200, int(small["seed"])))
    assert words == pytest.approx(exact / 200 * 10_000_000, rel=0.1)


def test_the_plan_gives_wall_time_and_keeps_unavailable_targets_apart():
    """Issue 53.5: wall-clock hours on N GPUs (the GPU-hours over N, never below the longest chain: a run's
    segments in order plus one fine-tuning job, computed here by hand); unavailable targets in their own table,
    never priced at the top of the cheapest-first one; the data stage's download named."""
    from taco.workflow.plan.render import render_markdown

    cfg = plan.load_config([str(REPO / "configs" / "gpu-mini.yaml")])
    p = plan_costs.build_plan(cfg, device_check=None)
    chain = max(r["gpu_hours"] / r["gpus"] for r in p["pretrain"]) + p["finetune"]["longest_job_hours"]
    w = p["wall_hours"]
    assert w["critical_path"] == pytest.approx(chain)
    assert w["by_gpus"][1] == pytest.approx(max(p["totals"]["gpu_hours"], chain))
    assert w["by_gpus"][64] == pytest.approx(chain)  # 64 GPUs cannot beat the chain
    md = render_markdown(p)
    ready = md.split("## Cost of each table")[1].split("## Unavailable in this configuration")[0]
    assert "C1:" not in ready and "not a budget here" not in ready
    unavailable = md.split("## Unavailable in this configuration")[1]
    assert "C1: TACO-50k matches MLM-250k" in unavailable and "not a budget here" in unavailable
    assert "downloads" in md and "from the Hub" in md


def test_the_glue_probe_is_priced_by_its_points_and_examples(tmp_path):
    """cpu-real probes cola, sst2, mrpc, stsb, rte every 500 steps and at the budgets 800 / 2,000 / 4,000: 9 points a
    run, 6 runs, and one point per control (3); each point encodes and fits the capped train split (5,000) and the
    first dev split (2,000) of each task, GLUE's released sizes by hand. Without probe tasks it costs nothing."""
    cfg = _cpu_real(tmp_path)
    sizes = {"cola": (8551, 1043), "sst2": (67349, 872), "mrpc": (3668, 408), "stsb": (5749, 1500), "rte": (2490, 277)}
    examples = sum(min(n, 5000) + min(d, 2000) for n, d in sizes.values())
    assert plan_inputs.probe_examples(cfg) == examples == 25_258
    assert plan_inputs.probe_points(cfg, "tiny") == [500, 800, 1000, 1500, 2000, 2500, 3000, 3500, 4000]
    p = plan_costs.build_plan(cfg, device_check=None, profile=None, with_targets=False)
    point_h = examples * plan_costs.PROBE_SECONDS_PER_EXAMPLE / 3600
    assert p["totals"]["glue_probe_hours"] == pytest.approx((6 * 9 + 3) * point_h)
    run = p["pretrain"][0]
    assert run["glue_probe_points"] == 9 and run["glue_probe_hours"] == pytest.approx(9 * point_h)
    cfg["pretrain"]["glue_probe"] = {}
    bare = plan_costs.build_plan(cfg, device_check=None, profile=None, with_targets=False)
    assert bare["totals"]["glue_probe_hours"] == 0
    assert p["totals"]["cpu_hours"] - bare["totals"]["cpu_hours"] == pytest.approx((6 * 9 + 3) * point_h)
    assert "The frozen-feature GLUE probe" in plan_render.render_markdown(p)
    assert "frozen-feature GLUE probe" not in plan_render.render_markdown(bare)
