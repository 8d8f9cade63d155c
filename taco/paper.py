"""The paper's facts that decide what the suite runs and tabulates, in one place (Fu et al., ACL 2022;
official code ``FUZHIYI/TACO``; ``docs/paper-facts.md`` gives the sources).

Everything that names the paper's grid, its GLUE tasks, its budgets or which objectives a table or
figure compares reads it from here: the analysis spec's defaults (``taco.stats.analysis_config``),
the tables and figures (``taco.report``), the compute plan's per-table costs
(``taco.workflow.plan.costs``) and the deviations report. ``config.yaml`` writes the same grid as the
default configuration (YAML cannot import; ``tests/test_paper.py`` checks that they agree).

A new objective shows in a paper table by one line here (e.g. its name in :data:`ABLATION_OBJECTIVES`);
an objective that no table names is listed in the ablation table's "other objectives" section, and
in the plan, the pre-training curves and the efficiency page like every objective. Pure data, no imports.
"""

from __future__ import annotations

#: the order the paper's tables list objectives in (the official code's ``taco_unmasked`` after its
#: family); objectives not listed come after these, by name
OBJECTIVE_ORDER: tuple[str, ...] = ("mlm", "taco", "taco_concentrated", "taco_unmasked", "mlm_tp", "bert_nce",
                                    "infoword")

#: the 8 GLUE tasks of the paper's average, in its table order (WNLI is not fine-tuned)
PAPER_TASKS: tuple[str, ...] = ("mnli", "qqp", "qnli", "sst2", "cola", "stsb", "mrpc", "rte")

#: the paper's pre-training grid: model role -> {data fraction: objectives}
PAPER_GRID: dict[str, dict[float, tuple[str, ...]]] = {
    "small": {1.0: ("mlm", "taco", "taco_concentrated", "mlm_tp"), 0.25: ("mlm", "taco")},
    "base": {1.0: ("mlm", "taco")},
}

#: the paper's budgets (pre-training steps) per model role: BERT-small is fine-tuned at 10k..50k
#: every 10k and every 50k to 250k (Figure 5, Tables 1-3); BERT-base every 50k to 500k (Table 1).
PAPER_BUDGETS: dict[str, tuple[int, ...]] = {
    "small": (10_000, 20_000, 30_000, 40_000, 50_000, 100_000, 150_000, 200_000, 250_000),
    "base": tuple(range(50_000, 500_001, 50_000)),
}

#: the main comparison, reference first: Tables 1-3, Figure 5, the data-efficiency figure and the
#: efficiency claims (TACO's speedup over MLM)
COMPARISON: tuple[str, str] = ("mlm", "taco")

#: the ablation (paper Sec. 5 and Figure 5's extra curves), in the table's row order
ABLATION_OBJECTIVES: tuple[str, ...] = ("taco", "taco_concentrated", "mlm", "mlm_tp")

#: Table 4: MLM and TACO beside the baselines this suite reimplements from Kong et al. (ICLR 2020)
TABLE4_OBJECTIVES: tuple[str, ...] = ("mlm", "taco", "bert_nce", "infoword")

#: the paper's tables this suite rebuilds, each file name -> its short name (the report's "Tables" rows; the
#: titles, with what each compares: taco.stats.table_data.TITLES)
PAPER_TABLES: dict[str, str] = {"table1": "Table 1", "table2": "Table 2", "table3": "Table 3", "table4": "Table 4",
                                "ablation": "Ablation"}

#: Table 2's score columns (25% of the data): MNLI-m/mm, QQP, QNLI, SST-2 (also the data-efficiency figure's
#: panels and claim C3's keys)
TABLE2_KEYS: tuple[str, ...] = ("mnli_m", "mnli_mm", "qqp", "qnli", "sst2")

#: every objective some paper table names; the others are "other objectives"
TABLE_OBJECTIVES: frozenset[str] = frozenset((*COMPARISON, *ABLATION_OBJECTIVES, *TABLE4_OBJECTIVES))

#: the paper's recipe (values and where each comes from), which the deviations report compares with
PAPER_SETUP: dict[str, object] = {
    "global_batch": 2048,  # train_small.sh / train_base.sh: 256 per GPU x 4 accumulation x 2 GPUs
    "learning_rate": 1e-4, "weight_decay": 0.01, "max_seq_length": 256, "mlm_probability": 0.15,
    "tc": {"weight": 1.0, "temperature": 0.07, "window": 5, "num_negatives": 50},
    "finetune": {"max_length": 128, "batch_size": 32, "warmup_steps": 100, "seed": 123},
}
