"""The suite's facts, each defined once: objectives, model presets, GLUE tasks and metrics, budgets.

Torch-free and dependency-free, so the workflow (``taco.workflow``), the statistics environment
(``taco.report``), the data stage and the runners all import the same names. Everything else
(the JSON-schema enums aside, which a test compares with this module) derives from here.

Sources: the paper (Fu et al., ACL 2022; ``docs/paper-facts.md``), the official code
(github.com/FUZHIYI/TACO: ``train_small.sh``/``train_base.sh``, ``run_glue.sh``), the GLUE
benchmark (Wang et al., 2019).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taco.objectives import OBJECTIVE_SPECS
from taco.paper import PAPER_BUDGETS, PAPER_TASKS

# ---- pre-training objectives (a run's path names its objective: <size>/<objective>/data-<fraction>) --

# every pre-training objective (OBJECTIVE_SPECS, in the order tables list them) is one module under
# ``taco/objectives/`` (found by a package scan, taco.objectives); the workflow, the schema checks,
# the model, the plan and the report read them from here.
#: objective names (in run paths and in pretrain.runs[].objectives)
OBJECTIVES: tuple[str, ...] = tuple(OBJECTIVE_SPECS)

#: objectives that add the token-alignment contrastive (TC) loss: they need >= 2 sequences per
#: device batch (negatives come from the other sequences; paper Sec. 3.2)
TC_OBJECTIVES: tuple[str, ...] = tuple(n for n, o in OBJECTIVE_SPECS.items() if "tc" in o.terms)

#: the no-pre-training control: the same architecture from random initialisation (not an objective)
CONTROL = "control"

#: printed names (paper's wording)
OBJECTIVE_LABELS: dict[str, str] = {
    **{n: o.label or n for n, o in OBJECTIVE_SPECS.items()},
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


def finetune_hyperparameters(preset: str, overrides: dict[str, Any] | None = None) -> dict[str, float]:
    """Fine-tuning ``learning_rate`` and ``epochs`` for a model of ``preset``: the preset's defaults
    (:data:`FINETUNE_HYPERPARAMETERS`) updated by ``overrides`` (a config's
    ``finetune.hyperparameters``, keyed by preset, never by the run's size key). The one place the
    workflow's command builder, ``taco finetune``'s defaults and the deviations report look it up.

    Raises:
        KeyError: naming the preset and the known ones, for a preset without defaults.
    """
    if preset not in FINETUNE_HYPERPARAMETERS:
        raise KeyError(f"no fine-tuning defaults for preset {preset!r} (known: {', '.join(FINETUNE_HYPERPARAMETERS)})")
    return {**FINETUNE_HYPERPARAMETERS[preset], **((overrides or {}).get(preset) or {})}

# ---- GLUE -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GlueTask:
    """One GLUE task: format, label space, splits and metrics.

    Attributes:
        name: Hub config / task name (``sst2``).
        dir_name: folder name in the original GLUE layout (``SST-2``).
        text_fields: Hub column names of the text inputs (1 or 2).
        num_labels: number of classes (1 for the regression task STS-B).
        is_regression: True for STS-B (label is a float 0-5).
        label_names: Hub ``ClassLabel`` names in id order (empty for STS-B).
        dev_splits: names of the dev split(s) in the returned DatasetDict.
        score_keys: one score key per dev split, same order (``mnli_m``, ``mnli_mm`` for MNLI).
        metrics: metric names computed by ``taco.data.glue_metrics.compute_glue_metrics``.
        train_file: local train file name; dev_files: local dev file per dev split.
        local_columns: Hub column -> column name in the local file header, or index when the file
            has no header (CoLA). ``label`` included.
        local_num_fields: field count of a no-header file (CoLA: 4); None when a header exists.
        local_labels: label string in the local file -> Hub id (None: float label).
        sizes: (train, dev) examples of the released splits (dev: all dev splits together), for the
            compute plan (GLUE paper, Wang et al. 2019, Table 1; the Hub ``nyu-mll/glue`` card);
            ``None`` when unknown (the plan then says so).
        primary_metric: the number that stands for each of its score keys in tables, averages, figures
            and claims (one of ``metrics``; docs/metrics.md says why for each task).
        labels: printed name of each score key, same order (the paper's column headers).
        synthetic_rows: ``"module:function"`` of its synthetic stand-in's rows, ``f(rng, n, split) -> [row]``
            (imported only when synthetic data are built; ``taco.data.synthetic`` holds the nine GLUE ones), and
        synthetic_sizes: its (train, dev per dev split) rows (``--glue-source synthetic``). ``None``: no
            stand-in, and ``glue.source: synthetic`` refuses the task by name.
    """

    name: str
    dir_name: str
    text_fields: tuple[str, ...]
    num_labels: int
    is_regression: bool
    label_names: tuple[str, ...]
    dev_splits: tuple[str, ...]
    score_keys: tuple[str, ...]
    metrics: tuple[str, ...]
    train_file: str = "train.tsv"
    dev_files: Mapping[str, str] = field(default_factory=lambda: {"validation": "dev.tsv"})
    local_columns: Mapping[str, str | int] = field(default_factory=dict)
    local_num_fields: int | None = None
    local_labels: Mapping[str, int] | None = None
    sizes: tuple[int, int] | None = None
    primary_metric: str = ""
    labels: tuple[str, ...] = ()
    synthetic_rows: str | None = None
    synthetic_sizes: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.primary_metric not in self.metrics:
            raise ValueError(f"GlueTask {self.name!r}: primary_metric {self.primary_metric!r} is not one of its "
                             f"metrics {self.metrics}")
        if len(self.labels) != len(self.score_keys):
            raise ValueError(f"GlueTask {self.name!r}: one label per score key {self.score_keys}, got {self.labels}")

    @property
    def splits(self) -> tuple[str, ...]:
        """All splits ``load_glue_task`` returns: ``("train", *dev_splits)``."""
        return ("train",) + self.dev_splits

    def features(self):
        """``datasets.Features`` identical to the Hub dataset's (text strings, label, idx int32)."""
        from datasets import ClassLabel, Features, Value

        feats: dict[str, Any] = {f: Value("string") for f in self.text_fields}
        feats["label"] = Value("float32") if self.is_regression else ClassLabel(names=list(self.label_names))
        feats["idx"] = Value("int32")
        return Features(feats)


_BIN01 = {"0": 0, "1": 1}
_ENT2 = {"entailment": 0, "not_entailment": 1}

#: every GLUE task: format, labels, dev splits, score keys, metrics, primary metric, printed labels, synthetic
#: sizes. Adding a task is one entry here (the loaders, the workflow, the metrics, the analysis spec and the
#: tables read it; ``tests/test_registry.py`` adds one in a copy of the suite and finds it in Table 1).
GLUE_TASK_SPECS: dict[str, GlueTask] = {
    t.name: t
    for t in [
        GlueTask("cola", "CoLA", ("sentence",), 2, False, ("unacceptable", "acceptable"),
                 ("validation",), ("cola",), ("matthews_correlation",),
                 # source, label, original judgement, sentence; no header
                 local_columns={"sentence": 3, "label": 1}, local_num_fields=4, local_labels=_BIN01,
                 sizes=(8551, 1043), primary_metric="matthews_correlation", labels=("CoLA",),
                 synthetic_rows="taco.data.synthetic:cola_rows",
                 synthetic_sizes=(1000, 300)),
        GlueTask("sst2", "SST-2", ("sentence",), 2, False, ("negative", "positive"),
                 ("validation",), ("sst2",), ("accuracy",),
                 local_columns={"sentence": "sentence", "label": "label"}, local_labels=_BIN01,
                 sizes=(67349, 872), primary_metric="accuracy", labels=("SST-2",), synthetic_rows="taco.data.synthetic:sst2_rows",
                 synthetic_sizes=(1500, 300)),
        GlueTask("mrpc", "MRPC", ("sentence1", "sentence2"), 2, False, ("not_equivalent", "equivalent"),
                 ("validation",), ("mrpc",), ("accuracy", "f1"),
                 local_columns={"sentence1": "#1 String", "sentence2": "#2 String", "label": "Quality"},
                 local_labels=_BIN01,
                 sizes=(3668, 408), primary_metric="f1", labels=("MRPC",), synthetic_rows="taco.data.synthetic:mrpc_rows",
                 synthetic_sizes=(1000, 300)),
        GlueTask("stsb", "STS-B", ("sentence1", "sentence2"), 1, True, (),
                 ("validation",), ("stsb",), ("pearson", "spearmanr"),
                 local_columns={"sentence1": "sentence1", "sentence2": "sentence2", "label": "score"},
                 local_labels=None,
                 sizes=(5749, 1500), primary_metric="spearmanr", labels=("STS-B",), synthetic_rows="taco.data.synthetic:stsb_rows",
                 synthetic_sizes=(1000, 300)),
        GlueTask("qqp", "QQP", ("question1", "question2"), 2, False, ("not_duplicate", "duplicate"),
                 ("validation",), ("qqp",), ("accuracy", "f1"),
                 local_columns={"question1": "question1", "question2": "question2", "label": "is_duplicate"},
                 local_labels=_BIN01,
                 sizes=(363846, 40430), primary_metric="f1", labels=("QQP",), synthetic_rows="taco.data.synthetic:qqp_rows",
                 synthetic_sizes=(2000, 400)),
        GlueTask("mnli", "MNLI", ("premise", "hypothesis"), 3, False, ("entailment", "neutral", "contradiction"),
                 ("validation_matched", "validation_mismatched"), ("mnli_m", "mnli_mm"),
                 ("accuracy",),
                 dev_files={"validation_matched": "dev_matched.tsv",
                            "validation_mismatched": "dev_mismatched.tsv"},
                 local_columns={"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"},
                 local_labels={"entailment": 0, "neutral": 1, "contradiction": 2},
                 sizes=(392702, 9815 + 9832), primary_metric="accuracy", labels=("MNLI-m", "MNLI-mm"),
                 synthetic_rows="taco.data.synthetic:mnli_rows",
                 synthetic_sizes=(2000, 400)),
        GlueTask("qnli", "QNLI", ("question", "sentence"), 2, False, ("entailment", "not_entailment"),
                 ("validation",), ("qnli",), ("accuracy",),
                 local_columns={"question": "question", "sentence": "sentence", "label": "label"},
                 local_labels=_ENT2,
                 sizes=(104743, 5463), primary_metric="accuracy", labels=("QNLI",), synthetic_rows="taco.data.synthetic:qnli_rows",
                 synthetic_sizes=(1500, 400)),
        GlueTask("rte", "RTE", ("sentence1", "sentence2"), 2, False, ("entailment", "not_entailment"),
                 ("validation",), ("rte",), ("accuracy",),
                 local_columns={"sentence1": "sentence1", "sentence2": "sentence2", "label": "label"},
                 local_labels=_ENT2,
                 sizes=(2490, 277), primary_metric="accuracy", labels=("RTE",), synthetic_rows="taco.data.synthetic:rte_rows",
                 synthetic_sizes=(600, 200)),
        # WNLI's GLUE files use 1 = entailment, as the Hub ClassLabel does
        GlueTask("wnli", "WNLI", ("sentence1", "sentence2"), 2, False, ("not_entailment", "entailment"),
                 ("validation",), ("wnli",), ("accuracy",),
                 local_columns={"sentence1": "sentence1", "sentence2": "sentence2", "label": "label"},
                 local_labels=_BIN01,
                 sizes=(635, 71), primary_metric="accuracy", labels=("WNLI",), synthetic_rows="taco.data.synthetic:wnli_rows",
                 synthetic_sizes=(400, 100)),
    ]
}

#: task -> the score keys it contributes (MNLI has two dev sets)
TASK_SCORE_KEYS: dict[str, tuple[str, ...]] = {n: t.score_keys for n, t in GLUE_TASK_SPECS.items()}
GLUE_TASK_NAMES: tuple[str, ...] = tuple(GLUE_TASK_SPECS)
#: the tasks that ``finetune.mnli_start`` starts from the MNLI fine-tuned model of the same checkpoint and
#: seed, as MosaicBERT (Portes et al., 2023) and ModernBERT (Warner et al., 2024) evaluate
MNLI_START_TASKS: tuple[str, ...] = ("rte", "mrpc", "stsb")

#: task names in the paper's table order (tasks the paper does not print come last, WNLI among them)
PAPER_TASK_ORDER: tuple[str, ...] = tuple(
    sorted(GLUE_TASK_SPECS, key=lambda n: PAPER_TASKS.index(n) if n in PAPER_TASKS else len(PAPER_TASKS))
)

#: how a capped set is drawn, in words (fine-tuning records, table notes, deviations;
#: :func:`taco.data.glue.sample_indices` draws it)
CAP_SAMPLING = ("a seeded random sample (stratified by label for classification tasks; drawn with the "
                "data seed, each split on its own stream)")

#: metric names computed per task name and per score key (GLUE paper; HF ``evaluate`` ``glue``)
METRICS_BY_SCORE_KEY: dict[str, tuple[str, ...]] = {
    **{n: t.metrics for n, t in GLUE_TASK_SPECS.items()},
    **{k: t.metrics for t in GLUE_TASK_SPECS.values() for k in t.score_keys},
}

#: every metric name ``compute_glue_metrics`` can return; "mean" (analysis only) is the mean of all
ALL_METRICS: tuple[str, ...] = ("accuracy", "f1", "matthews_correlation", "pearson", "spearmanr")
KNOWN_METRICS: tuple[str, ...] = ALL_METRICS + ("mean",)

#: the nine score keys of the paper's GLUE average, in the paper's column order (WNLI excluded)
AVERAGE_KEYS: tuple[str, ...] = ("mnli_m", "mnli_mm", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte")
SCORE_KEYS: tuple[str, ...] = AVERAGE_KEYS + ("wnli",)

def _score_key_order(keys) -> list[str]:
    """The paper's score keys in the paper's column order (:data:`SCORE_KEYS`), then the others in registry order."""
    keys = list(keys)
    return [k for k in SCORE_KEYS if k in keys] + [k for k in keys if k not in SCORE_KEYS]


#: score key -> (its task, its label): every task's score keys, in :func:`_score_key_order`
_ENTRIES = {k: (t, lab) for t in GLUE_TASK_SPECS.values() for k, lab in zip(t.score_keys, t.labels)}
_SCORE_KEY_ENTRIES: dict[str, tuple[GlueTask, str]] = {k: _ENTRIES[k] for k in _score_key_order(_ENTRIES)}

#: the number that stands for a score key in tables, averages, figures and claims (each task's
#: ``primary_metric``). The paper does not name its metrics; see docs/metrics.md for the evidence behind
#: each choice: F1 for QQP and MRPC (its MLM-250k test row fits only the F1 of Google's BERT-Small GLUE
#: scores), Spearman for STS-B (the BERT paper's convention; weaker evidence). Every metric stays in the CSVs.
DEFAULT_PRIMARY_METRIC: dict[str, str] = {k: t.primary_metric for k, (t, _) in _SCORE_KEY_ENTRIES.items()}

#: printed score-key names (paper's column headers; each task's ``labels``)
SCORE_KEY_LABELS: dict[str, str] = {k: lab for k, (_, lab) in _SCORE_KEY_ENTRIES.items()}

# ---- budgets ----------------------------------------------------------------------------------------


def budget_name(step: int) -> str:
    """Paper-style budget name of a step count: 250000 -> "250k", 1500 -> "1.5k", 60 -> "60"."""
    if step >= 1000 and step % 100 == 0:
        return f"{step / 1000:g}k"
    return str(step)


#: paper budget name -> step per role (``{"small": {"10k": 10000, ...}, "base": {...}}``)
PAPER_BUDGET_NAMES: dict[str, dict[str, int]] = {
    role: {budget_name(s): s for s in steps} for role, steps in PAPER_BUDGETS.items()
}
