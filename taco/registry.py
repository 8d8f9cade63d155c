"""The suite's facts, each defined once: objectives, model presets, GLUE tasks and metrics, budgets.

Torch-free and dependency-free, so the workflow (``taco.workflow``), the statistics environment
(``taco.report``), the data stage and the runners all import the same names. Everything else
(the JSON-schema enums aside, which a test compares with this module) derives from here.

Sources: the paper (Fu et al., ACL 2022; ``docs/paper-facts.md``), the official code
(github.com/FUZHIYI/TACO: ``train_small.sh``/``train_base.sh``, ``run_glue.sh``), the GLUE
benchmark (Wang et al., 2019).
"""

from __future__ import annotations

# ---- pre-training objectives (the run "variant" in paths is the objective name) ------------------

#: every pre-training objective, in the order tables list them. The behaviour of each lives in
#: ``taco.model.objectives.OBJECTIVES`` (keys equal this tuple; tested).
OBJECTIVES: tuple[str, ...] = ("mlm", "taco", "taco_concentrated", "taco_unmasked", "mlm_tp")

#: objectives that add the token-alignment contrastive (TC) loss: they need >= 2 sequences per
#: device batch (negatives come from the other sequences; paper Sec. 3.2)
TC_OBJECTIVES: tuple[str, ...] = ("taco", "taco_concentrated", "taco_unmasked")

#: the no-pre-training control: the same architecture from random initialisation (not an objective)
CONTROL = "control"

#: printed names (paper's wording)
OBJECTIVE_LABELS: dict[str, str] = {
    "mlm": "MLM",
    "taco": "TACO",
    "taco_concentrated": "TACO (concentrated)",
    "taco_unmasked": "TACO (unmasked)",
    "mlm_tp": "MLM+TP",
    CONTROL: "No pre-training",
}

# ---- model presets ---------------------------------------------------------------------------------

#: preset -> BERT shape. small/base as in the official code (BERT-small L4/H512/A8/I2048, BERT-base
#: L12/H768/A12/I3072); tiny is this suite's CPU preset.
PRESET_SHAPES: dict[str, dict[str, int]] = {
    "tiny": dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512),
    "small": dict(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048),
    "base": dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12, intermediate_size=3072),
}
PRESETS: tuple[str, ...] = tuple(PRESET_SHAPES)

#: pre-training schedule per preset when a command is run without a configuration
#: (official ``train_small.sh``: 250k steps, 2.5k warmup; ``train_base.sh``: 500k, 10k warmup)
PRETRAIN_SCHEDULE: dict[str, dict[str, int]] = {
    "tiny": {"max_steps": 1000, "warmup_steps": 10},
    "small": {"max_steps": 250_000, "warmup_steps": 2_500},
    "base": {"max_steps": 500_000, "warmup_steps": 10_000},
}

#: fine-tuning learning rate and epochs per preset (official ``run_glue.sh``; tiny as small)
FINETUNE_HYPERPARAMETERS: dict[str, dict[str, float]] = {
    "tiny": {"learning_rate": 5e-5, "epochs": 4},
    "small": {"learning_rate": 5e-5, "epochs": 4},
    "base": {"learning_rate": 3e-5, "epochs": 6},
}

# ---- GLUE -------------------------------------------------------------------------------------------

#: the GLUE tasks this suite knows (Hub config names), each with the score keys it contributes
#: (MNLI has two dev sets). Formats and files: ``taco.data.glue.GLUE_TASKS``.
TASK_SCORE_KEYS: dict[str, tuple[str, ...]] = {
    "cola": ("cola",),
    "sst2": ("sst2",),
    "mrpc": ("mrpc",),
    "stsb": ("stsb",),
    "qqp": ("qqp",),
    "mnli": ("mnli_m", "mnli_mm"),
    "qnli": ("qnli",),
    "rte": ("rte",),
    "wnli": ("wnli",),
}
GLUE_TASK_NAMES: tuple[str, ...] = tuple(TASK_SCORE_KEYS)

#: metric names computed per score key (GLUE paper; Hugging Face ``evaluate`` ``glue`` metric)
METRICS_BY_SCORE_KEY: dict[str, tuple[str, ...]] = {
    "cola": ("matthews_correlation",),
    "sst2": ("accuracy",),
    "mrpc": ("accuracy", "f1"),
    "stsb": ("pearson", "spearmanr"),
    "qqp": ("accuracy", "f1"),
    "mnli": ("accuracy",),
    "mnli_m": ("accuracy",),
    "mnli_mm": ("accuracy",),
    "qnli": ("accuracy",),
    "rte": ("accuracy",),
    "wnli": ("accuracy",),
}

#: every metric name ``compute_glue_metrics`` can return; "mean" (analysis only) is the mean of all
ALL_METRICS: tuple[str, ...] = ("accuracy", "f1", "matthews_correlation", "pearson", "spearmanr")
KNOWN_METRICS: tuple[str, ...] = ALL_METRICS + ("mean",)

#: the nine score keys of the paper's GLUE average, in the paper's column order (WNLI excluded)
AVERAGE_KEYS: tuple[str, ...] = ("mnli_m", "mnli_mm", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte")
SCORE_KEYS: tuple[str, ...] = AVERAGE_KEYS + ("wnli",)

#: the number that stands for a score key in tables, averages, figures and claims. The paper does
#: not name its metrics; see docs/metrics.md for the evidence behind each choice: F1 for QQP and
#: MRPC (its MLM-250k test row fits only the F1 of Google's BERT-Small GLUE scores), Spearman for
#: STS-B (the BERT paper's convention; weaker evidence). Every metric stays in the CSVs.
DEFAULT_PRIMARY_METRIC: dict[str, str] = {
    "mnli_m": "accuracy",
    "mnli_mm": "accuracy",
    "qqp": "f1",
    "qnli": "accuracy",
    "sst2": "accuracy",
    "cola": "matthews_correlation",
    "stsb": "spearmanr",
    "mrpc": "f1",
    "rte": "accuracy",
    "wnli": "accuracy",
}

#: printed score-key names (paper's column headers)
SCORE_KEY_LABELS: dict[str, str] = {
    "mnli_m": "MNLI-m", "mnli_mm": "MNLI-mm", "qqp": "QQP", "qnli": "QNLI", "sst2": "SST-2",
    "cola": "CoLA", "stsb": "STS-B", "mrpc": "MRPC", "rte": "RTE", "wnli": "WNLI",
}

# ---- budgets ----------------------------------------------------------------------------------------


def budget_name(step: int) -> str:
    """Paper-style budget name of a step count: 250000 -> "250k", 1500 -> "1.5k", 60 -> "60"."""
    if step >= 1000 and step % 100 == 0:
        return f"{step / 1000:g}k"
    return str(step)


#: the paper's budgets (pre-training steps) per model role: BERT-small is fine-tuned at 10k..50k
#: every 10k and every 50k to 250k (Figure 5, Tables 1-3); BERT-base every 50k to 500k (Table 1).
PAPER_BUDGETS: dict[str, tuple[int, ...]] = {
    "small": (10_000, 20_000, 30_000, 40_000, 50_000, 100_000, 150_000, 200_000, 250_000),
    "base": tuple(range(50_000, 500_001, 50_000)),
}

#: paper budget name -> step per role (``{"small": {"10k": 10000, ...}, "base": {...}}``)
PAPER_BUDGET_NAMES: dict[str, dict[str, int]] = {
    role: {budget_name(s): s for s in steps} for role, steps in PAPER_BUDGETS.items()
}
