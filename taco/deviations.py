"""Every difference between a run configuration and the paper's setup: ``deviations.md`` (+ ``.html``).

``taco deviations --config RUN_CONFIG --analysis analysis.json --output results/deviations.md``
reads the resolved run configuration (the workflow's config with the schema's defaults filled in,
as the workflow writes it to ``run_config.json``; any YAML/JSON file of that form works) and,
optionally, the analysis spec (for the GLUE tasks that could not be run and their reasons), and
writes one table per kind:

- **method**: differences that hold for every configuration of this suite (precision, dev numbers
  beside published test numbers, corpus versions, the definition of e, the positive window, the TC
  negative pool across GPUs, MLM+TP's weighting, fine-tuning seeds and reporting, pre-training
  replicates, INFOWORD's extra MLM targets);
- **configuration**: what this configuration changes from the paper's recipe (model shape, steps,
  warmup, global batch, learning rate, budgets, sequence length, TC settings, runs, tasks,
  fine-tuning settings, seeds, capped sets, corpus and tokenizer source), one row per difference.

Each row: the setting, the paper's / official code's value (with its source), this run's value,
the reason, and the expected effect. "Expected" effects are expectations, not measurements. A claim
about the official code cites ``file:line`` of the official repository; every citation is a fact of
the machine-readable block in ``docs/paper-facts.md`` (checked by ``tests/test_deviations.py``).

The paper's setup (sources: the paper, Fu et al. ACL 2022, and the official code,
github.com/FUZHIYI/TACO: ``train_small.sh``, ``train_base.sh``, ``finetune_small.sh``,
``scripts/run_mlm_with_contrastive.py``) is :data:`taco.paper.PAPER_SETUP`. Torch-free (statistics environment).

Errors (exit 2, message names the file and key): a missing or unparsable file, a configuration
without ``pretrain.sizes`` / ``pretrain.runs``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taco.families import DEFAULT_FAMILY, get_family
from taco.objectives.base import MLM_PROBABILITY
from taco.objectives import OBJECTIVE_SPECS, options_of
from taco.paper import PAPER_BUDGETS, PAPER_GRID, PAPER_SETUP, PAPER_TASKS
from taco.registry import (FINETUNE_HYPERPARAMETERS, MNLI_START_TASKS, PRESET_SHAPES,
                           PRETRAIN_SCHEDULE, finetune_hyperparameters)

OFFICIAL = "official code"

class DeviationsInputError(ValueError):
    """A run configuration or analysis spec that cannot be read; the message names file and key."""


@dataclass(frozen=True)
class Deviation:
    """One difference from the paper's setup.

    ``kind``: ``"method"`` (every configuration of this suite) or ``"configuration"`` (set by this
    run's configuration, ``key``). ``topic``, ``paper``, ``here``, ``reason`` and ``effect`` are
    plain text, the configuration's values as written: the page (:mod:`taco.report.deviations_page`) escapes
    every cell for Markdown.
    """

    topic: str
    paper: str
    here: str
    reason: str
    effect: str
    kind: str = "configuration"
    key: str = ""


def _fmt(x: Any) -> str:
    """A value in a cell: floats as ``%g``, lists joined by commas, strings as written."""
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, (list, tuple)):
        return ", ".join(_fmt(v) for v in x)
    return str(x)


def _steps(n: int) -> str:
    return f"{n / 1000:g}k" if n >= 1000 and n % 100 == 0 else str(n)


def _role_of(config: Mapping[str, Any], size: str) -> str | None:
    """The paper size (``small``/``base``) that run size ``size`` plays: ``analysis.roles`` when it
    names the size, else its preset when that is a paper size; None for a size that plays neither."""
    roles = (config.get("analysis") or {}).get("roles") or {}
    for role in ("small", "base"):
        if roles.get(role) == size:
            return role
    preset = config["pretrain"]["sizes"][size].get("preset")
    return preset if preset in ("small", "base") else None


def _paths(config: Mapping[str, Any], paths: Sequence[str]) -> str:
    """Paths as the run used them (``{data_root}`` filled in when the configuration sets it), comma-joined."""
    root = config.get("data_root")
    return ", ".join(str(p.replace("{data_root}", str(root)) if root else p) for p in paths)


# ---------------------------------------------------------------------------------------------
# method-level differences (every configuration)
# ---------------------------------------------------------------------------------------------
def _corpus_here(config: Mapping[str, Any]) -> str:
    """The configuration's corpus in one line (Hub datasets with config and split, local files, or the source)."""
    corpus = config.get("corpus", {})
    if corpus.get("source") == "hub":
        return "; ".join(f"{str(d['name'])} ({str(d.get('config') or 'no config')}, "
                         f"split {str(d.get('split', 'train'))})" for d in corpus.get("hub_datasets", []))
    if corpus.get("source") == "local":
        return "local text files: " + _paths(config, corpus.get("paths", []))
    return f"{str(corpus.get('source', 'n/a'))} corpus"


def _negative_pool_deviation(config: Mapping[str, Any]) -> Deviation:
    """Where the TC negatives come from with several GPUs (``pretrain.tc.negative_pool``): the official
    code's one-process DataParallel pool against this suite's one process per GPU; listed whatever the
    value, with each size's pool (sequences per micro-batch)."""
    pre = config["pretrain"]
    pool = (pre.get("tc") or {}).get("negative_pool", "rank")
    tc_sizes = sorted({r["size"] for r in pre["runs"] if any("tc" in OBJECTIVE_SPECS[o].terms for o in r["objectives"]
                                                            if o in OBJECTIVE_SPECS)})
    per_size = []
    for name in tc_sizes:
        s = pre["sizes"].get(name, {})
        per, gpus = int(s.get("per_device_batch_size", 32)), max(int(s.get("num_gpus", 1)), 1)
        n = per * gpus if pool == "all_ranks" else per
        per_size.append(f"{name}: {n} sequences ({per} per process x {gpus if pool == 'all_ranks' else 1})")
    return Deviation(
        "TC negative pool (several GPUs)",
        f"{OFFICIAL}: 2 GPUs (CUDA_VISIBLE_DEVICES=6,7, train_small.sh:3) in one plain python3 process "
        "(train_small.sh:70), so the Trainer wraps the model in torch.nn.DataParallel (trainer.py:896-897) and "
        "compute_loss sees the outputs gathered from both GPUs (run_mlm_with_contrastive.py:70): the negatives "
        "are drawn from all 512 sequences of a micro-batch, 256 per GPU (run_mlm_with_contrastive.py:85)",
        f"pretrain.tc.negative_pool = {pool}: negatives from "
        + ("every process's device batch (an all-gather of the detached keys)" if pool == "all_ranks"
           else "the process's own device batch") + (f"; {'; '.join(per_size)}" if per_size else ""),
        "one process per GPU (torch.distributed.run, DDP) instead of DataParallel; all_ranks gathers the "
        "keys, which need no gradient, so the pool is the official one",
        "rank with several GPUs: each anchor's negatives come from a pool num_gpus times smaller (256 "
        "instead of 512 sequences), less diverse negatives, expected small; all_ranks: the official pool "
        "(DDP averages the ranks' gradients: DataParallel's mean when the ranks hold equal anchor counts); "
        "one GPU: the pool is the device batch either way", "method", "pretrain.tc.negative_pool")


def method_deviations(config: Mapping[str, Any]) -> list[Deviation]:
    """Differences that hold whatever the configuration says (with this configuration's values)."""
    sizes = config["pretrain"]["sizes"]
    precisions = sorted({str(s.get("precision", "auto")) for s in sizes.values()})
    tp = config["pretrain"].get("tp") or {}
    tp_mode, tp_weight = tp.get("mode", "separate"), float(tp.get("weight", 1.0))
    window = int((config["pretrain"].get("tc") or {}).get("window", 5))
    ft = config.get("finetune", {})
    corpus = config.get("corpus", {})
    corpus_here = _corpus_here(config)
    pre_seeds = config["pretrain"].get("seeds")
    out = [
        Deviation(
            "precision", f"pre-training fp16, fine-tuning fp32 ({OFFICIAL}: FP16=True in train_small.sh:26 "
            "and train_base.sh:26; no --fp16 in finetune_small.sh:35)",
            f"pre-training precision: {_fmt(precisions)} (auto = bf16 on GPUs that support it, else fp16; "
            "fp32 on CPU); fine-tuning: auto = bf16 on GPUs that support it, else fp32",
            "bf16 has fp32's range: no loss scaling and no fp16 overflow in the TC logits (cos / 0.07)",
            "small: bf16 rounds more coarsely than fp16 (8 vs 11 mantissa bits), which adds noise of the "
            "order of run-to-run variation; not measured here", "method", "pretrain.sizes.*.precision"),
        Deviation(
            "dev beside published test numbers", "Table 1 prints GLUE dev and test (test from the GLUE server)",
            "dev sets only; the tables print the published test row beside no reproduced number",
            "the test labels are not public (GLUE server only)",
            "compare dev with dev only: test scores are typically lower than dev scores", "method"),
        Deviation(
            "definition of e (global part g = h - e)",
            f"paper: the token embedding; {OFFICIAL}: hidden_states[0] (run_mlm_with_contrastive.py:80), the "
            "embedding layer's output (word + position + token type, LayerNorm, dropout; at masked positions "
            "the corrupted input)",
            "hidden_states[0], as the official code", "the code defines what was run",
            "none against the official code; against the paper's text, g also removes position information",
            "method"),
        Deviation(
            "positive window", f"{OFFICIAL}: offsets +-1..+-floor(W/2) = +-2 for W = 5 (sampler.py:43); its "
            "README (README.md:43): 0 < |t1 - t2| < W, i.e. up to +-4",
            f"W = {window}: offsets +-1..+-{window // 2} (as the official code)",
            "the code defines what was run; the README's wording disagrees with it",
            "none against the official code", "method", "pretrain.tc.window"),
        _negative_pool_deviation(config),
        Deviation(
            "MLM+TP weighting", f"not published; the {OFFICIAL} has no MLM+TP (train_small.sh:86: modes mlm "
            "and taco only)",
            f"pretrain.tp.mode = {str(tp_mode)}" + (f", weight {tp_weight:g}: MLM mean + {tp_weight:g} x "
                                                "token-prediction mean" if tp_mode == "separate"
                                                else ": one cross-entropy over all predicted positions"),
            "the default mirrors TACO's MLM + 1.0 x TC (each part a mean); 'joint' is the other common reading",
            "'joint' weights the ~85% unmasked positions about 5.7 : 1 over the masked ones, which may "
            "lower MLM+TP's scores; only the MLM+TP ablation (claims C6, C7) is affected",
            "method", "pretrain.tp"),
        Deviation(
            "fine-tuning seeds and reported epoch",
            f"{OFFICIAL}: seed 123 (finetune_small.sh:18), evaluated every epoch (finetune_small.sh:36); how "
            "many seeds and which epoch the paper reports: not published",
            f"seeds {_fmt(list(ft.get('seeds', [])))}; reported epoch: {_fmt(ft.get('report_rule', 'last'))}",
            "several seeds give the uncertainty the claims are tested with",
            "means over seeds are less noisy than one seed; the 'last' rule avoids picking the best "
            "epoch on the dev set (which inflates dev scores)", "method", "finetune.seeds"),
        Deviation(
            "pre-training replicates", "one pre-training run per arm",
            f"pretrain.seeds = {_fmt(pre_seeds)}" if pre_seeds else "one pre-training run per arm (as the paper)",
            "pre-training is the expensive step",
            "with one run per arm, every CI covers fine-tuning variance only", "method", "pretrain.seeds"),
        Deviation(
            "held-out validation blocks",
            f"{OFFICIAL}: trains on everything: validation_split_percentage defaults to 0 "
            "(run_mlm_with_contrastive.py:262-263, 467-477) and train_small.sh:59 runs --do_train only",
            f"{int(config.get('validation_blocks', 256))} blocks of whole documents, drawn with the data seed "
            f"({config.get('seed', 0)}), held out of pre-training",
            "a validation MLM / TC loss and the learning dynamics (Figures 2 and 6) need text the model has "
            "not trained on", "pre-training sees slightly less text (those blocks' documents); negligible "
            "against the full corpus, a few percent of a small local corpus", "method", "validation_blocks"),
    ]
    if corpus.get("source") == "hub":  # only a Hub corpus has versions to compare
        out.append(Deviation(
            "corpus versions", f"paper: not published; {OFFICIAL}: Hub datasets bookcorpus (split train) and "
            "wikipedia config 20220301.en (run_mlm_with_contrastive.py:471-472), no revision pinned",
            corpus_here, "the script-based bookcorpus and wikipedia loaders the official code calls do not "
            "run on current datasets releases; the configuration names current Hub copies",
            "a newer Wikipedia dump and a BookCorpus replica change the text distribution slightly; "
            "absolute scores may shift, comparisons between objectives on the same corpus should not",
            "method", "corpus.hub_datasets"))
    fractions = sorted({float(f) for r in config["pretrain"]["runs"] for f in r.get("fractions", [1.0]) if float(f) < 1})
    if fractions:
        out.append(Deviation(
            "how the reduced-data subset is drawn",
            f"paper: {', '.join(f'{f * 100:g}%' for f in fractions)} of the data, how it was drawn not published; "
            f"{OFFICIAL}: no data-fraction option (DataTrainingArguments, run_mlm_with_contrastive.py:220-305); "
            "its only subset option, max_train_samples, keeps the first N texts "
            "(run_mlm_with_contrastive.py:507) of BookCorpus + Wikipedia concatenated BookCorpus first "
            "(run_mlm_with_contrastive.py:477)",
            f"a seeded random draw (data seed {config.get('seed', 0)}) of whole documents (a Wikipedia article or a "
            "span of contiguous BookCorpus sentences) after the validation documents; each smaller fraction's "
            "set is a subset of the larger ones'",
            "the official code cannot draw it; its first N texts would be BookCorpus sentences only (BookCorpus "
            "comes first and has ~74M of the ~80M texts), while a random draw of documents keeps both sources "
            "in proportion", "the reduced-data runs see a different subset from the paper's (unknown) one; "
            "their absolute scores may differ, MLM and TACO share the same subset", "method", "seed"))
    return out


# ---------------------------------------------------------------------------------------------
# configuration differences
# ---------------------------------------------------------------------------------------------
def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return a != b


def size_deviations(config: Mapping[str, Any], name: str) -> list[Deviation]:
    """Differences of one ``pretrain.sizes.<name>`` recipe from the paper's size it plays
    (``analysis.roles``; a size that plays no paper size is compared with nothing but its shape)."""
    s = config["pretrain"]["sizes"][name]
    key = f"pretrain.sizes.{name}"
    shown = name  # the size's name as the rows print it
    preset = s["preset"]
    role = _role_of(config, name)
    out: list[Deviation] = []
    family = get_family(s.get("architecture", DEFAULT_FAMILY))
    if family.name != DEFAULT_FAMILY:
        out.append(Deviation(
            f"{shown}: encoder family", "BERT (the paper trains BERT only)",
            f"{family.label} (transformers' {family.native_class}; the preset's layers, H and "
            "heads)", "tests the paper's plug-and-play claim on another encoder (docs/families.md)",
            "a result about this family, not the paper's BERT", key=f"{key}.architecture"))
        out.append(Deviation(
            f"{shown}: the family's own recipe",
            family.recipe or f"{family.label}'s own (taco/families/{family.name}.py declares none)",
            "BERT-tiny's: AdamW, linear warmup and "
            "decay, this size's learning rate and batch, 15% masking, the run's WordPiece",
            "isolates the architecture: only the encoder differs from the BERT run", "each family may train "
            "better with its own recipe; the comparison MLM vs TACO within a family is like for like",
            key=f"{key}.architecture"))
    if preset != role:
        shape = PRESET_SHAPES.get(preset, {})
        paper_shape = "BERT-small L4/H512/A8" if role == "small" else "BERT-base L12/H768/A12" if role == "base" \
            else "BERT-small L4/H512/A8 and BERT-base L12/H768/A12"
        out.append(Deviation(
            f"{shown}: model shape" + (f" (plays BERT-{role})" if role else ""), paper_shape,
            f"preset {preset!r}" + (f" (L{shape['num_hidden_layers']}/H{shape['hidden_size']}/"
                                     f"A{shape['num_attention_heads']})" if shape else ""),
            "a model this configuration's hardware can train", "much lower absolute scores; whether "
            "the paper's differences between objectives hold at this size is what the run shows",
            key=f"{key}.preset"))
    if role is None:
        return out
    paper_steps = PRETRAIN_SCHEDULE[role]
    gpus = max(int(s.get("num_gpus", 1)), 1)
    batch = int(s.get("per_device_batch_size", 32)) * int(s.get("grad_accum", 1)) * gpus
    checks = [
        ("max_steps", "pre-training steps", paper_steps["max_steps"], s["max_steps"],
         "compute budget of this configuration", "fewer steps: lower scores at the last budget"),
        ("warmup_steps", "warmup steps", paper_steps["warmup_steps"], s.get("warmup_steps") if s.get("warmup_steps") is not None else
         PRETRAIN_SCHEDULE[s.get("preset", role)]["warmup_steps"], "scaled with the run length", "minor"),
        ("global batch", "global batch (sequences per step)", PAPER_SETUP["global_batch"], batch,
         "memory / GPUs of this configuration", "a smaller batch sees fewer sequences per step and "
         "gives TACO fewer in-batch negatives to draw from; scores per step are lower"),
        ("learning_rate", "learning rate", PAPER_SETUP["learning_rate"], s.get("learning_rate", 1e-4),
         "tuned for this configuration's batch and length", "changes the training trajectory"),
        ("weight_decay", "weight decay", PAPER_SETUP["weight_decay"], s.get("weight_decay", 0.01),
         "set in the configuration", "minor"),
    ]
    lines = {"max_steps": "23", "warmup_steps": "24", "global batch": "20-21", "learning_rate": "62",
             "weight_decay": "65"}  # train_small.sh and train_base.sh alike (docs/paper-facts.md)
    for k, label, paper, here, reason, effect in checks:
        if _differs(paper, here):
            src = f"{OFFICIAL} train_{role}.sh:{lines[k]}"
            out.append(Deviation(
                f"{shown}: {label}", f"{_fmt(paper)} ({src}" + (f": 256 per GPU x 4 accumulation x 2 GPUs, "
                                                               f"train_{role}.sh:3)" if k == "global batch" else ")"),
                f"{_fmt(here)}" + (f" ({_fmt(s.get('per_device_batch_size'))} x {s.get('grad_accum', 1)} x {gpus})"
                                   if k == "global batch" else ""),
                reason, effect, key=f"{key}.{k}" if k != "global batch" else
                f"{key}.per_device_batch_size/grad_accum/num_gpus"))
    paper_budgets = PAPER_BUDGETS[role]
    if tuple(s["budgets"]) != tuple(paper_budgets):
        out.append(Deviation(
            f"{shown}: budgets (checkpoints fine-tuned)", ", ".join(_steps(b) for b in paper_budgets),
            ", ".join(_steps(int(b)) for b in s["budgets"]), "the configuration's budgets",
            "claims and figures at budgets not run print as not run", key=f"{key}.budgets"))
    return out


def recipe_deviations(config: Mapping[str, Any]) -> list[Deviation]:
    """Differences of the shared pre-training recipe (sequence length, MLM rate, TC settings)."""
    out: list[Deviation] = []
    pre = config["pretrain"]
    seq = config.get("max_seq_length", 256)
    if _differs(PAPER_SETUP["max_seq_length"], seq):
        out.append(Deviation("sequence length (packed block)", f"{PAPER_SETUP['max_seq_length']} tokens "
                             f"({OFFICIAL} train_small.sh:22)", f"{seq} tokens", "memory / compute of this configuration",
                             "shorter contexts: fewer tokens per sequence for MLM and TC", key="max_seq_length"))
    block_format = (config.get("pack") or {}).get("format", "framed")
    if block_format != "official":
        out.append(Deviation(
            "block format (packed sequences)",
            f"{OFFICIAL} (scripts/run_mlm_with_contrastive.py:566-591): every text (a Wikipedia article, a "
            "BookCorpus sentence) tokenized as [CLS] text [SEP], concatenated, cut into raw 256-token "
            "slices: ~2 special tokens per ~15-token sentence, a block rarely starts with [CLS]",
            f"{str(block_format)}: every block [CLS] + {int(seq) - 2} tokens + [SEP] over the stream of documents "
            "(and sentence spans), [SEP] after each document",
            "the suite's default format (pack.format: official gives the official one); it keeps the "
            "blocks of earlier runs of this configuration",
            "more text per block (for BookCorpus sentences ~12% of the official block's positions are "
            "[CLS]/[SEP]) and one [CLS] at position 0; special tokens are never masked and are TC "
            "anchors, positives and negatives in both formats; effect on scores not measured",
            key="pack.format"))
    mlm = pre.get("mlm_probability", MLM_PROBABILITY)
    if _differs(PAPER_SETUP["mlm_probability"], mlm):
        out.append(Deviation("MLM probability", f"0.15 ({OFFICIAL} train_small.sh:63)", _fmt(mlm), "set in the configuration",
                             "changes MLM's supervision density", key="pretrain.mlm_probability"))
    tc = pre.get("tc") or {}
    for k, label, line in (("weight", "TC weight", 33), ("temperature", "TC temperature tau", 32),
                           ("window", "positive window W", 31), ("num_negatives", "negatives K", 30)):
        paper = PAPER_SETUP["tc"][k]
        here = tc.get(k, paper)
        if _differs(paper, here):
            out.append(Deviation(label, f"{_fmt(paper)} ({OFFICIAL} train_small.sh:{line})", _fmt(here), "set in the configuration",
                                 "changes the TC loss and so TACO's results", key=f"pretrain.tc.{k}"))
    return out


def runs_deviations(config: Mapping[str, Any]) -> list[Deviation]:
    """Which of the paper's (size, objective, data fraction) runs this configuration has, and extras."""
    sizes = config["pretrain"]["sizes"]
    have: dict[str, dict[float, set[str]]] = {}
    for entry in config["pretrain"]["runs"]:
        preset = sizes.get(entry["size"], {}).get("preset", "")
        role = (_role_of(config, entry["size"]) if entry["size"] in sizes else None) \
            or f"{str(entry['size'])} (preset {str(preset)})"
        for f in entry.get("fractions", [1.0]):
            have.setdefault(role, {}).setdefault(round(float(f), 6), set()).update(entry["objectives"])
    missing = []
    for role, by_frac in PAPER_GRID.items():
        for frac, objs in by_frac.items():
            absent = [o for o in objs if o not in have.get(role, {}).get(frac, set())]
            if absent:
                missing.append(f"BERT-{role} {frac * 100:g}% data: {', '.join(absent)}")
    out = []
    if missing:
        out.append(Deviation(
            "pre-training runs not in this configuration", "small: MLM, TACO, concentrated TACO, MLM+TP "
            "(100% data), MLM and TACO (25%); base: MLM and TACO", "; ".join(missing),
            "compute budget of this configuration (or a size not played)",
            "the claims and table rows that need them print as not run", key="pretrain.runs"))
    extra = [f"{role}: {', '.join(sorted(objs))} ({frac * 100:g}% data)"
             for role, by_frac in have.items() for frac, objs in by_frac.items() if role not in PAPER_GRID]
    if extra:
        out.append(Deviation("runs at a size the paper does not have", "BERT-small and BERT-base",
                             "; ".join(extra), "a size this configuration's hardware can train",
                             "see the model-shape row", key="pretrain.runs"))
    return out


def reimplementation_deviations(config: Mapping[str, Any]) -> list[Deviation]:
    """Table 4's baselines this configuration trains as this suite's reimplementations (objectives whose
    declaration names ``reimplemented_from``: BERT-NCE, INFOWORD): one row for the method and one per
    option (``pretrain.<group>.<key>``), each a choice made where the cited paper's details were not
    available, "reimplemented from the description". Kind ``method``: a choice of this suite wherever the
    objective is trained, not a change a configuration makes to the paper's recipe."""
    trained = {v for entry in config["pretrain"]["runs"] for v in entry["objectives"]}
    out = []
    for name, obj in OBJECTIVE_SPECS.items():
        if name not in trained or not obj.reimplemented_from:
            continue
        out.append(Deviation(
            f"{obj.label}: the objective", f"cited from {obj.reimplemented_from.split(',')[0]} (Table 4's numbers)",
            f"trained by this suite: {obj.description}", "reimplemented from the description; the published "
            "numbers are not available to this project", "Table 4's row is this suite's measurement, not the "
            "published one", kind="method", key="pretrain.runs"))
        if name == "infoword":
            out.append(_infoword_targets_deviation(config))
        for opt in options_of(obj):
            value = (config["pretrain"].get(opt.group) or {}).get(opt.key, opt.default)
            out.append(Deviation(
                f"{obj.label}: {opt.help}", "not available in the texts at hand",
                f"{opt.config_key} = {_fmt(value)}" + (" (default)" if value == opt.default else ""),
                "reimplemented from the description: exposed as an option",
                f"{obj.label}'s Table 4 row depends on it", kind="method", key=opt.config_key))
    return out


def _infoword_targets_deviation(config: Mapping[str, Any]) -> Deviation:
    """INFOWORD's masked n-gram joins the MLM (BERT-NCE) targets: more targets per block than the
    other objectives at the same steps, from this configuration's block length, MLM rate and spans."""
    from taco.objectives import OPTIONS

    iw = config["pretrain"].get("infoword") or {}
    lo = int(iw.get("span_min", OPTIONS["infoword_span_min"].default))
    hi = int(iw.get("span_max", OPTIONS["infoword_span_max"].default))
    p = float(config["pretrain"].get("mlm_probability", MLM_PROBABILITY))
    length = int(config.get("max_seq_length", 256))
    extra = (1 - p) * (lo + hi) / 2  # n-gram tokens BERT masking had not selected already
    base = p * length
    return Deviation(
        "INFOWORD: MLM targets per block", "not available in the texts at hand",
        f"BERT masking's {p:g} of the tokens plus the masked n-gram ({lo}-{hi} tokens) as BERT-NCE targets: up "
        f"to {hi} more targets per {length}-token block than the other objectives ({hi / length:.1%} of the "
        f"block), about {extra:.1f} on average over ~{base:.0f}",
        "this suite's reading of Kong et al.: the n-gram is masked in the sentence and its tokens join the "
        "masked tokens BERT-NCE predicts (taco/objectives/infoword.py); kept so: the MLM targets are not made equal",
        f"a confound at equal steps: INFOWORD's masked-token term sees about {extra / base:.0%} more targets "
        "per block than BERT-NCE's and the others' MLM, which can favour its Table 4 row beyond the span term",
        kind="method", key="pretrain.infoword.span_max")


def finetune_deviations(config: Mapping[str, Any], spec: Mapping[str, Any] | None) -> list[Deviation]:
    """GLUE fine-tuning differences: tasks, missing tasks, data source, caps, hyper-parameters."""
    out: list[Deviation] = []
    ft = config.get("finetune", {})
    glue = config.get("glue", {})
    tasks = list(glue.get("tasks", PAPER_TASKS))
    absent = [t for t in PAPER_TASKS if t not in tasks]
    if absent:
        out.append(Deviation("GLUE tasks not fine-tuned", ", ".join(PAPER_TASKS) + " (WNLI not in the average)",
                             "not configured: " + _fmt(absent), "set in the configuration",
                             "averages cover fewer scores and are labelled partial; not comparable with the "
                             "paper's nine-score average", key="glue.tasks"))
    missing = dict((spec or {}).get("missing_tasks") or {})
    if missing:
        out.append(Deviation("GLUE tasks skipped (data absent)", "all eight tasks",
                             "; ".join(f"{str(t)}: {str(why)}" for t, why in missing.items()),
                             "their files are absent from the local GLUE folder",
                             "averages cover fewer scores and are labelled partial", key="glue.data_dir"))
    if glue.get("source", "synthetic") == "synthetic":
        out.append(Deviation("GLUE tasks", "the GLUE tasks (HF run_glue.py --task_name, finetune_small.sh)",
                             "SYNTHETIC GLUE-format tasks generated offline (same files and metrics, artificial "
                             "sentences and labels)", "a smoke test of the pipeline",
                             "scores say nothing about GLUE or the paper's claims; no table, figure or claim "
                             "compares them with the paper's numbers", key="glue.source"))
    if glue.get("source") == "local":
        out.append(Deviation("GLUE data source", "GLUE distribution (via the Hub glue loader in HF run_glue.py)",
                             f"local TSV files ({_paths(config, [glue.get('data_dir', '')])})", "offline machine",
                             "none if the files are the original GLUE release", key="glue.source"))
    if ft.get("mnli_start"):
        started = [t for t in MNLI_START_TASKS if t in tasks]
        out.append(Deviation("fine-tuning start of " + ", ".join(t.upper() for t in started),
                             "every task from the pre-trained checkpoint (the paper's fine-tuning scripts)",
                             "from the MNLI fine-tuned model of the same checkpoint and seed (its encoder, a new head), "
                             "as MosaicBERT and ModernBERT evaluate", "set in the configuration",
                             "usually higher scores on these small tasks (intermediate-task transfer); their "
                             "columns and the averages are not comparable with the paper's (marked † in the tables)",
                             key="finetune.mnli_start"))
    tuning = ft.get("tuning") or {}
    if tuning.get("enabled"):
        space = ", ".join(f"{k} {v}" for k, v in (tuning.get("space") or {}).items())
        out.append(Deviation("fine-tuning settings chosen per task",
                             "one setting per model size (finetune_small.sh / finetune_base.sh)",
                             f"every checkpoint, the no-pre-training control included, runs the same grid ({space}) "
                             f"with its own seeds {tuning.get('seeds')}; per task the setting with the highest mean "
                             "primary dev metric is used by the reported seeds (chosen on dev, as the paper's "
                             "tables report dev)", "equal fine-tuning budgets: a checkpoint fine-tuned at a setting "
                             "chosen for another is compared unfairly",
                             "dev scores are optimistic by the selection among the trials, equally for every arm",
                             key="finetune.tuning"))
    dropout = ft.get("dropout", 0.1)
    if _differs(0.1, dropout):
        out.append(Deviation("fine-tuning dropout", "0.1 (BERT's, kept by run_glue.py)", _fmt(dropout),
                             "set in the configuration", "changes fine-tuning", key="finetune.dropout"))
    caps = [(k, label) for k, label in (("max_train_samples", "training"), ("max_eval_samples", "dev"))
            if ft.get(k)]
    for k, label in caps:
        out.append(Deviation(f"capped {label} sets", f"full {label} sets",
                             f"a seeded random sample of {ft[k]} {label} examples per task (stratified by "
                             f"label for classification; data seed {config.get('seed', 0)}; tasks with fewer "
                             "keep all), not the first rows of the file", "CPU-sized configuration",
                             f"noisier and lower scores than on the full sets ({ft[k]} {label} examples per "
                             "task); dev CIs widen", key=f"finetune.{k}"))
    for k, label, line in (("max_length", "fine-tuning max length", 13), ("batch_size", "fine-tuning batch size", 14),
                           ("warmup_steps", "fine-tuning warmup steps", 17)):
        paper, here = PAPER_SETUP["finetune"][k], ft.get(k, PAPER_SETUP["finetune"][k])
        if _differs(paper, here):
            out.append(Deviation(label, f"{paper} ({OFFICIAL} finetune_small.sh:{line})", _fmt(here), "set in the configuration",
                                 "changes fine-tuning", key=f"finetune.{k}"))
    hps = ft.get("hyperparameters", {}) or {}
    for name, s in config["pretrain"]["sizes"].items():
        role = _role_of(config, name)
        paper = FINETUNE_HYPERPARAMETERS.get(role or "", None)
        # what the workflow runs (taco.registry.finetune_hyperparameters, also the workflow's): the preset's defaults,
        # overridden by finetune.hyperparameters.<preset>; keyed by preset, not by the size key
        preset = s["preset"]
        here = finetune_hyperparameters(preset, hps) if preset in FINETUNE_HYPERPARAMETERS else {}
        if paper is None or not here:
            continue
        for k, line in (("learning_rate", 15), ("epochs", 16)):
            if k in here and _differs(paper[k], here[k]):
                out.append(Deviation(f"{name}: fine-tuning {k.replace('_', ' ')}",
                                     f"{_fmt(paper[k])} ({OFFICIAL} finetune_{role}.sh:{line})",
                                     _fmt(here[k]), "set in the configuration", "changes fine-tuning",
                                     key=f"finetune.hyperparameters.{preset}.{k}"))
    return out


def corpus_deviations(config: Mapping[str, Any]) -> list[Deviation]:
    """Corpus and tokenizer sources that are not the paper's."""
    out: list[Deviation] = []
    corpus, tok = config.get("corpus", {}), config.get("tokenizer", {})
    official_corpus = (f"BookCorpus + English Wikipedia ({OFFICIAL}: Hub bookcorpus and wikipedia "
                       "20220301.en, run_mlm_with_contrastive.py:471-472)")
    if corpus.get("source") == "synthetic":
        out.append(Deviation("corpus", official_corpus, "synthetic documents",
                             "a smoke test of the pipeline", "scores say nothing about the paper's claims",
                             key="corpus.source"))
    elif corpus.get("source") == "local":
        out.append(Deviation("corpus", official_corpus, "local text: " + _paths(config, corpus.get("paths", [])),
                             "offline machine", "a much smaller corpus: pre-training sees repeated text",
                             key="corpus.paths"))
    official_vocab = f"bert-base-uncased vocabulary (30522; {OFFICIAL} train_small.sh:58)"
    if tok.get("kind") == "hub" and tok.get("hub_id") not in (None, "bert-base-uncased"):
        out.append(Deviation("tokenizer", official_vocab, f"Hub tokenizer {str(tok['hub_id'])}",
                             "set in the configuration", "a different vocabulary", key="tokenizer.hub_id"))
    elif tok.get("kind") not in (None, "hub", "vocab"):
        size = tok.get("vocab_size", "n/a")
        reason = ("the synthetic corpus's own small vocabulary (a smoke test)" if corpus.get("source") == "synthetic"
                  else f"speed, not availability (tokenizer.kind vocab or hub would use bert-base-uncased's): "
                       f"{size} entries shrink the embedding and MLM output layers, so a pre-training step costs less")
        out.append(Deviation("tokenizer", official_vocab,
                             f"a WordPiece vocabulary trained on this corpus ({_fmt(size)} tokens)", reason,
                             "a different vocabulary: token counts, masking units and scores are not the paper's",
                             key="tokenizer.kind"))
    return out


def find_deviations(config: Mapping[str, Any], spec: Mapping[str, Any] | None = None) -> list[Deviation]:
    """Every difference of a resolved run configuration (and its analysis spec) from the paper's setup."""
    check_config(config)
    out = method_deviations(config)
    for name in config["pretrain"]["sizes"]:
        out += size_deviations(config, name)
    out += recipe_deviations(config) + runs_deviations(config) + reimplementation_deviations(config)
    out += finetune_deviations(config, spec)
    out += corpus_deviations(config)
    return out


def check_config(config: Any, source: str = "run configuration") -> None:
    """Raise :class:`DeviationsInputError` naming the key when the configuration lacks what the
    comparison needs (``pretrain.sizes`` with presets, ``pretrain.runs``)."""
    if not isinstance(config, Mapping):
        raise DeviationsInputError(f"{source}: expected a mapping at top level")
    pre = config.get("pretrain")
    if not isinstance(pre, Mapping) or not isinstance(pre.get("sizes"), Mapping) or not pre["sizes"]:
        raise DeviationsInputError(f"{source}: key 'pretrain.sizes' missing or empty")
    if not isinstance(pre.get("runs"), list):
        raise DeviationsInputError(f"{source}: key 'pretrain.runs' missing")
    for name, s in pre["sizes"].items():
        for k in ("preset", "max_steps", "budgets"):
            if not isinstance(s, Mapping) or k not in s:
                raise DeviationsInputError(f"{source}: key 'pretrain.sizes.{name}.{k}' missing")
