"""The workflow's config: schema defaults, semantic checks naming the key, the run grid.

Bad configurations must fail before any job runs, with the offending key named.
"""

import copy
import re
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest
import yaml

from shipped_configs import config_sets
from taco.workflow import config as wc
from taco.workflow import config_checks as wcc
from taco.registry import budget_name

REPO = Path(__file__).resolve().parent.parent


def load(*names):
    """The validated configuration of config files merged in order (Snakemake's ``update_config``)."""
    from snakemake.utils import update_config, validate
    from taco.workflow.schema import schema_file

    cfg: dict = {}
    for name in names:
        update_config(cfg, yaml.safe_load((REPO / name).read_text()))
    validate(cfg, str(schema_file(REPO / "workflow/schemas/config.schema.yaml")))
    return cfg


@pytest.fixture(scope="module")
def smoke():
    return load("configs/smoke.yaml")


def test_schema_fills_defaults(smoke):
    assert smoke["pretrain"]["mlm_probability"] == 0.15
    assert smoke["pretrain"]["tc"]["temperature"] == 0.07
    assert smoke["finetune"]["report_rule"] == "last"
    assert smoke["analysis"]["equivalence_margin"] == 0.5


def test_paper_grid():
    cfg = load("config.yaml")
    wcc.check_config(cfg)
    runs = wc.runs(cfg)
    assert wc.Run("small", "taco", 1.0) in runs and wc.Run("small", "mlm", 0.25) in runs
    assert {r.objective for r in runs if r.size == "small" and r.fraction == 1.0} == {
        "mlm", "taco", "mlm_tp", "taco_concentrated"}
    assert wc.budgets(cfg, "small") == [10000, 20000, 30000, 40000, 50000, 100000, 150000, 200000, 250000]
    assert wc.budgets(cfg, "base")[-1] == 500000
    assert len(cfg["finetune"]["seeds"]) == 5
    assert wc.finetune_hyperparameters(cfg, "base") == {"learning_rate": 3e-5, "epochs": 6}
    assert wc.previous_budget(cfg, "small", 10000) is None
    assert wc.previous_budget(cfg, "small", 100000) == 50000


def test_budget_names():
    assert budget_name(250000) == "250k"
    assert budget_name(2500) == "2.5k"
    assert budget_name(60) == "60"


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c["pretrain"]["runs"][0].update(size="huge"), "pretrain.runs[0].size"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(budgets=[100, 50, 150]), "pretrain.sizes.tiny.budgets"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(budgets=[50, 100, 900]), "pretrain.sizes.tiny.budgets"),
    (lambda c: c["pretrain"]["tc"].update(window=4), "pretrain.tc.window"),
    (lambda c: c["analysis"]["roles"].update(small="nope"), "analysis.roles.small"),
    (lambda c: c["corpus"].update(source="local", paths=["/does/not/exist"]), "corpus.paths"),
    (lambda c: c["glue"].update(source="local", data_dir="/does/not/exist"), "glue.data_dir"),
    (lambda c: c["tokenizer"].update(kind="vocab", vocab_file="{data_root}/v.txt"), "data_root"),
    (lambda c: c["pretrain"]["sizes"]["tiny"].update(per_device_batch_size=1),
     "pretrain.sizes.tiny.per_device_batch_size"),
    (lambda c: c["pretrain"].update(tp={"weight": 0.5, "mode": "joint"}), "pretrain.tp.weight"),
])
def test_semantic_errors_name_the_key(smoke, mutate, key):
    cfg = copy.deepcopy(smoke)
    mutate(cfg)
    with pytest.raises(wc.ConfigError) as err:
        wcc.check_config(cfg)
    assert str(err.value).startswith(key)


def dry_run(configfile, *extra):
    """``snakemake -n`` of the repository's Snakefile in a new scratch folder (``--directory``), so
    results already in the checkout's ``results/`` (a user's quick start) change nothing."""
    with tempfile.TemporaryDirectory(prefix="taco-dry-run-") as work:
        return subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
             "--configfile", str(configfile), "--directory", work, *extra],
            cwd=work, capture_output=True, text=True, timeout=300,
        )


def _set(path, value):
    def mutate(cfg):
        node = cfg
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return mutate


@pytest.mark.parametrize("mutate, needle", [
    (_set(["pretrain", "runs", 0, "objectives"], ["bert"]), "bert"),
    (_set(["pretrain", "runs", 0, "fractions"], [1.5]), "fractions"),
    (_set(["pretrain", "sizes", "tiny", "budgets"], [100, 50, 150]), "pretrain.sizes.tiny.budgets"),
    (_set(["pretrain", "sizes", "tiny", "budgets"], [50, 100, 151]), "beyond max_steps"),
    (_set(["pretrain", "sizes", "tiny", "preset"], "huge"), "huge"),
    (_set(["glue", "tasks"], ["squad"]), "squad"),
    (_set(["corpus", "source"], "local"), "corpus.paths"),
    (_set(["pretrain", "sizes", "tiny", "learning_rate"], "fast"), "learning_rate"),
    (_set(["pretrain", "sizes", "tiny", "per_device_batch_size"], 1), "pretrain.sizes.tiny.per_device_batch_size"),
])
def test_bad_config_fails_before_any_job(tmp_path, mutate, needle):
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    mutate(cfg)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    out = dry_run(bad)
    assert out.returncode != 0
    assert needle in out.stderr + out.stdout
    assert "Job stats" not in out.stdout


def test_smoke_dry_run_plans_every_stage():
    out = dry_run(REPO / "configs/smoke.yaml")
    assert out.returncode == 0, out.stderr
    for rule in ("corpus", "tokenizer", "pack", "pretrain", "finetune", "aggregate", "tables",
                 "figures", "claims", "dynamics", "dynamics_figures"):
        # finetune runs as `finetune_checkpoint` with finetune.tasks_per_job: all (configs/smoke.yaml)
        assert any(f"\n{rule}{s} " in out.stdout for s in ("", "_seeds", "_checkpoint")), rule


def test_local_config_reports_missing_tasks_once(shared_data):
    out = dry_run(REPO / "configs/local.yaml", "--config", f"data_root={shared_data}")
    assert out.returncode == 0, out.stderr
    text = out.stdout + out.stderr
    assert text.count("GLUE tasks absent from the local folder") == 1
    for task in ("mnli", "qqp", "qnli"):
        assert f"{task}: missing" in text
    assert "/rte/seed-1/metrics.json" in text and "/mnli/" not in text


def test_tc_batch_check_spares_objectives_without_tc(smoke):
    """One sequence per device batch is fine when no run of that size uses the TC loss."""
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"]["sizes"]["tiny"]["per_device_batch_size"] = 1
    for entry in cfg["pretrain"]["runs"]:
        entry["objectives"] = ["mlm"]
    wcc.check_config(cfg)


def test_results_dir_that_is_a_file_is_a_config_error(smoke, tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    for value in (str(blocker), str(blocker / "sub")):
        cfg = copy.deepcopy(smoke)
        cfg["results_dir"] = value
        with pytest.raises(wc.ConfigError) as err:
            wcc.check_config(cfg)
        assert str(err.value).startswith("results_dir:") and "existing file" in str(err.value)
    cfg = copy.deepcopy(smoke)
    cfg["results_dir"] = str(tmp_path / "new" / "results")  # not there yet: fine
    wcc.check_config(cfg)
    # the same through Snakemake: the key, not a NotADirectoryError traceback
    out = dry_run(REPO / "configs/smoke.yaml", "--config", f"results_dir={blocker}")
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert "results_dir:" in text and "existing file" in text
    assert "NotADirectoryError" not in text and "Traceback" not in text


def test_bad_analysis_setting_stops_before_any_job(tmp_path):
    """`analysis:` settings pass the analysis spec's own schema before any job runs."""
    overlay = tmp_path / "bad.yaml"
    overlay.write_text("analysis:\n  primary_metric: {qqp: auc}\n")
    out = dry_run(REPO / "configs/smoke.yaml", "--configfile", str(REPO / "configs/smoke.yaml"), str(overlay))
    assert out.returncode != 0
    text = out.stderr + out.stdout
    assert "primary_metric" in text and "qqp" in text and "Job stats" not in text


def test_slurm_profile_sizes_every_gpu_rule(tmp_path):
    """Each rule whose jobs ask for a GPU in the paper configuration (``gpu >= 1`` among the job's
    resources as Snakemake builds them; both fine-tuning forms, one job per seed and
    ``finetune.seeds_per_job: all``) has its own ``set-resources`` entry with ``gpu >= 1`` in the SLURM
    profile; otherwise SLURM would run it on a CPU node with the default resources."""
    from dag_jobs import list_jobs

    gpu_rules = set()
    for name, override in (("one", {"finetune": {"seeds_per_job": "one"}}), ("all", None),
                           ("checkpoint", {"finetune": {"tasks_per_job": "all"}})):
        jobs = list_jobs(tmp_path / name, [REPO / "config.yaml"], override)
        gpu_rules |= {j["rule"] for j in jobs if (j["resources"].get("gpu") or 0) >= 1}
    assert {"pretrain", "finetune", "finetune_seeds", "finetune_checkpoint"} <= gpu_rules, gpu_rules
    profile = yaml.safe_load((REPO / "workflow/profiles/slurm/config.v8+.yaml").read_text())
    sized = profile["set-resources"]
    missing = sorted(r for r in gpu_rules if r not in sized or sized[r].get("gpu", 0) < 1)
    assert not missing, f"GPU rules without a set-resources entry in the SLURM profile: {missing}"


# ---- item 5: cross-key requirements before the first job; results_dir ------------------
def _full_mlm_only_at_quarter(c):
    c["pretrain"]["runs"] = [{"size": "tiny", "objectives": ["taco"], "fractions": [1.0]},
                             {"size": "tiny", "objectives": ["mlm"], "fractions": [0.25]}]


@pytest.mark.parametrize("mutate, key, needles", [
    # figure 2 needs MLM checkpoints: the case, and MLM trained only on 25% of the data
    (lambda c: c["dynamics"].update(objectives=["taco"]), "dynamics.objectives", ["figure 2", "add mlm to"]),
    (_full_mlm_only_at_quarter, "dynamics.objectives", ["figure 2", "full-data mlm run to pretrain.runs"]),
    (lambda c: c["pretrain"].update(runs=[{"size": "tiny", "objectives": ["taco"]}]), "dynamics.objectives",
     ["figure 2", "dynamics.enabled: false"]),
    # dynamics enabled, but none of its objectives is trained on all data: no input for its figures
    (lambda c: c["dynamics"].update(objectives=["taco_unmasked"]), "dynamics.objectives", ["no full-data run"]),
    # aggregate needs at least one fine-tuned checkpoint
    (lambda c: c["finetune"].update(budgets={"tiny": []}), "finetune.budgets", ["aggregate", "tiny"]),
    (lambda c: c.update(results_dir=""), "results_dir", ["empty", "filesystem root"]),
    (lambda c: c.update(results_dir="  "), "results_dir", ["empty"]),
    (lambda c: c.update(results_dir="/"), "results_dir", ["filesystem root"]),
    (lambda c: c.update(results_dir="//"), "results_dir", ["filesystem root"]),
])
def test_cross_key_and_results_dir_errors_name_the_keys(smoke, mutate, key, needles):
    cfg = copy.deepcopy(smoke)
    mutate(cfg)
    with pytest.raises(wc.ConfigError) as err:
        wcc.check_config(cfg)
    assert str(err.value).startswith(f"{key}:"), str(err.value)
    for needle in needles:
        assert needle in str(err.value), str(err.value)


@pytest.mark.parametrize("mutate", [
    lambda c: c["dynamics"].update(enabled=False, objectives=["taco"]),  # no dynamics: no figure 2
    lambda c: c["dynamics"].update(objectives=["mlm"]),
    lambda c: c["finetune"].update(budgets={"tiny": [100]}),
])
def test_configs_whose_report_steps_can_run_pass(smoke, mutate):
    cfg = copy.deepcopy(smoke)
    mutate(cfg)
    wcc.check_config(cfg)


def test_every_shipped_configuration_passes_the_cross_key_checks():
    for names in config_sets():
        cfg = load(*names)
        cfg["corpus"]["source"], cfg["glue"]["source"] = "synthetic", "synthetic"  # no local files needed
        cfg["tokenizer"]["kind"] = "train"
        wcc.check_config(cfg)


@pytest.mark.parametrize("given, normal", [
    ("results/tiny/", "results/tiny"), ("./results//tiny/", "results/tiny"), ("results", "results"),
    ("/data/runs/x/", "/data/runs/x"),
])
def test_results_dir_has_one_spelling(smoke, given, normal):
    cfg = copy.deepcopy(smoke)
    cfg["results_dir"] = given
    wcc.check_config(cfg)
    assert cfg["results_dir"] == normal


def _dry_run_in(workdir, cfg):
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
         "--configfile", str(path), "--directory", str(workdir)],
        cwd=workdir, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("mutate, needles", [
    (lambda c: c["dynamics"].update(objectives=["taco"]), ["dynamics.objectives", "figure 2"]),
    (lambda c: c.update(results_dir=""), ["results_dir", "empty"]),
])
def test_cross_key_errors_stop_snakemake_before_any_job(tmp_path, mutate, needles):
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    mutate(cfg)
    out = _dry_run_in(tmp_path, cfg)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    for needle in needles:
        assert needle in text, text[-2000:]
    assert "Job stats" not in text and "Traceback" not in text


def test_trailing_slash_gives_the_same_paths(tmp_path):
    """results/smoke/ plans the very jobs and paths of results/smoke (no double slash anywhere)."""
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    plain = _dry_run_in(tmp_path, cfg)
    cfg["results_dir"] = "results/smoke/"
    slash = _dry_run_in(tmp_path, cfg)
    assert plain.returncode == 0 and slash.returncode == 0, slash.stderr[-2000:]
    assert "results/smoke/plan.md" in slash.stdout and "//" not in slash.stdout.replace("://", "")
    paths = lambda s: sorted({w.strip(",;'\"()[]") for line in s.splitlines() if "reason:" not in line  # noqa: E731
                              for w in line.split() if "results/" in w})
    assert len(paths(plain.stdout)) > 100 and paths(plain.stdout) == paths(slash.stdout)


def test_two_pretraining_seeds_are_noted_before_the_first_job():
    """pretrain.seeds of length 2 can never decide a claim (smallest p 1/6): a note; three
    seeds or none give none."""
    cfg = load("configs/smoke.yaml")
    cfg["pretrain"]["seeds"] = [0, 1]
    wcc.check_config(cfg)
    notes = wcc.config_notes(cfg)
    assert len(notes) == 1 and re.match(r"pretrain\.seeds: 2 pre-training runs .* 1 / C\(4, 2\) = 0\.167", notes[0])
    for seeds in ([0, 1, 2], None):
        cfg["pretrain"]["seeds"] = seeds
        assert wcc.config_notes(cfg) == []


def test_snakemake_prints_the_notes_once_before_the_first_job(tmp_path):
    """The pre-training-seed note reaches the user of `snakemake` (a Python warning never did), printed
    as the other notes; so does what Snakemake's `Provided resources: gpu=8` (the default profile's
    limit) means with gpus: 0."""
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    cfg["pretrain"]["seeds"] = [0, 1]
    cfg["glue"]["tasks"] = ["sst2"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = subprocess.run(  # Snakemake finds profiles/default (resources: gpu: 8) beside the Snakefile
        [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--cores", "1", "--snakefile", str(REPO / "Snakefile"),
         "--configfile", str(path), "--directory", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
        timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.count("NOTE: pretrain.seeds: 2 pre-training runs per arm") == 1, out.stderr
    assert out.stderr.count('NOTE: Snakemake\'s "Provided resources: gpu=8" is a limit from the profile\'s resources '
                            '(or --resources), not GPUs found on this machine; with gpus: 0 no job requests a gpu') == 1


@pytest.mark.parametrize("provided, gpus, needle", [
    (8, 0, 'Provided resources: gpu=8" is a limit'), (None, 0, None), (4, 4, None),
    (8, 4, "a gpu limit of 8"), (None, 2, "no gpu limit"),
])
def test_gpu_resource_note_says_what_snakemake_counts(provided, gpus, needle):
    note = wcc.gpu_resource_note(provided, gpus)
    assert (note is None) if needle is None else (needle in note), note


@pytest.mark.parametrize("key, value", [
    (["finetune", "seeds"], [-1, 2]), (["pretrain", "seeds"], [-1, 0, 1]), (["finetune", "pretrain_seeds"], [-1]),
    (["seed"], -1), (["finetune", "seeds"], [2 ** 32]), (["seed"], 2 ** 32),
])
def test_every_seed_key_is_a_seed_numpy_accepts(key, value):
    """A negative seed fails late (a seed-<n> path the wildcard [0-9]+ never matches, transformers.set_seed's
    ValueError): the schema refuses it, and one beyond 2**32 - 1, naming the key."""
    from taco.workflow.schema import schema_errors

    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    _set(key, value)(cfg)
    lines = schema_errors(cfg)
    assert lines and lines[0].startswith(".".join(key)), lines


def test_negative_finetune_seed_stops_snakemake_naming_the_key(tmp_path):
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    cfg["finetune"]["seeds"] = [-1, 2]
    out = _dry_run_in(tmp_path, cfg)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "Job stats" not in text
    assert "finetune.seeds[0]: -1 is not allowed; allowed: an integer, >= 0 and <= 4294967295" in text, text[-2000:]
    assert "MissingInputException" not in text


@pytest.mark.parametrize("results_dir", ["results/<name>", "results/{x}", "a>b"])
def test_results_dir_with_snakemake_path_syntax_is_refused(smoke, results_dir):
    cfg = copy.deepcopy(smoke)
    cfg["results_dir"] = results_dir
    with pytest.raises(wc.ConfigError, match=r"^results_dir: .* which Snakemake reads in every output path"):
        wcc.check_config(cfg)


def test_results_dir_with_angle_brackets_stops_snakemake_naming_the_key(tmp_path):
    """Snakemake 9 reads <name> as a path variable (UndefinedPathvarException); refused before it."""
    cfg = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    cfg["results_dir"] = "results/<name>"
    out = _dry_run_in(tmp_path, cfg)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "UndefinedPathvarException" not in text
    assert "results_dir: 'results/<name>' contains < >" in text, text[-2000:]


def test_size_names_match_the_size_wildcard(smoke):
    """A size key is part of every run path; one the {size} wildcard cannot match would stop Snakemake
    with a MissingInputException naming no key."""
    cfg = copy.deepcopy(smoke)
    cfg["pretrain"]["sizes"]["ti-ny"] = copy.deepcopy(cfg["pretrain"]["sizes"]["tiny"])
    with pytest.raises(wc.ConfigError, match=r"^pretrain\.sizes: size name 'ti-ny' .* must match \[A-Za-z0-9_\]\+"):
        wcc.check_config(cfg)


def test_finetune_pretrain_seeds_selects_the_replicates_that_are_fine_tuned():
    """cpu-real pre-trains three replicates per objective and fine-tunes only the first (issues 20.5, 29.7, 51.4)."""
    from taco.workflow import control as wctl

    cfg = load("configs/cpu-real.yaml")
    runs = wc.runs(cfg)
    assert len(runs) == 6 and sum(wc.finetuned(cfg, r) for r in runs) == 2
    assert {r.pretrain_seed for r in runs if wc.finetuned(cfg, r)} == {None}  # the top-level seed's runs
    controls = wctl.finetune_targets(cfg, ["cola"])
    assert controls and all("pretrain-seed" not in t for t in controls)
    bad = copy.deepcopy(cfg)
    bad["finetune"]["pretrain_seeds"] = [7]
    with pytest.raises(wc.ConfigError, match=r"finetune.pretrain_seeds: \[7\] not among pretrain.seeds"):
        wcc.check_config(bad)
    every = copy.deepcopy(cfg)
    every["finetune"]["pretrain_seeds"] = "all"
    assert all(wc.finetuned(every, r) for r in wc.runs(every))


def test_tasks_per_job_with_mnli_start_falls_back_and_says_so():
    from taco.workflow.config_checks import config_notes
    from taco.workflow.plan.command import load_config

    cfg = load_config([str(REPO / "configs/smoke.yaml")], {"finetune": {"mnli_start": True}})
    (note,) = [n for n in config_notes(cfg) if n.startswith("finetune.tasks_per_job")]
    assert "not used with finetune.mnli_start" in note
    assert not [n for n in config_notes(load_config([str(REPO / "configs/smoke.yaml")], {})) if "tasks_per_job" in n]


def test_a_profile_gpu_count_that_disagrees_with_the_config_is_named():
    """Issue 53.5: the SLURM profile's set-resources (pretrain gpu: 2) on gpu-mini (num_gpus 1) would allocate
    2 GPUs and run on 1, silently: named per rule and key; agreeing or absent overrides say nothing."""
    cfg = load("configs/gpu-mini.yaml")
    notes = wcc.profile_gpu_notes({"pretrain": {"gpu": 2}, "finetune": {"gpu": 1}}, cfg)
    assert notes == ["the profile's set-resources gives rule pretrain gpu=2, but pretrain.sizes.small.num_gpus is 1: "
                     "the cluster allocates 2 GPU(s) and the job uses 1; set one to the other"]
    assert wcc.profile_gpu_notes({"pretrain": {"gpu": "1"}}, cfg) == []
    assert wcc.profile_gpu_notes(None, cfg) == [] and wcc.profile_gpu_notes({"pretrain": {"mem_mb": 9}}, cfg) == []
    cpu = load("configs/cpu-real.yaml")  # no GPU configured: a profile's gpu is not this check's business
    assert wcc.profile_gpu_notes({"pretrain": {"gpu": 2}}, cpu) == []


def test_a_small_local_corpus_is_noted_before_any_job(tmp_path):
    """Issue 53.6: from the bytes of corpus.paths (BYTES_PER_TOKEN word pieces per byte), a corpus the validation
    blocks would eat, or one a size's schedule reads more than 10 times, is noted with the numbers; cpu-real's own
    corpus (~3.4 M word pieces, ~5 passes) is not."""
    cfg = load("configs/cpu-real.yaml")
    text = tmp_path / "my-corpus"
    text.mkdir()
    (text / "a.txt").write_bytes(b"word " * 84_000)  # 420,000 bytes: ~100,000 word pieces
    cfg["corpus"].update(paths=[str(text)], split_by=["blank_line"])
    notes = wcc.config_notes(cfg)
    val = next(n for n in notes if n.startswith("validation_blocks:"))
    assert "~98% of the corpus" in val  # 768 x 128 = 98,304 of ~100,000
    passes = next(n for n in notes if n.startswith("pretrain.sizes.tiny:"))
    # 4,000 x 32 x 128 tokens over the ~1,696 word pieces left for training
    assert f"~{4000 * 32 * 128 / (100_000 - 768 * 128):.0f} passes" in passes
    (text / "a.txt").write_bytes(b"word " * 4_000_000)  # 20 MB: ~4.8 M word pieces, ~3.4 passes
    assert not [n for n in wcc.config_notes(cfg) if n.startswith(("validation_blocks:", "pretrain.sizes"))]
