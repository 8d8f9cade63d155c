"""The objective modules (taco/objectives/): BERT-NCE and INFOWORD computed independently, the n-gram
masking, the options declared once (CLI, schema, checks, hash), and the torch-free declarations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from transformers.utils import logging as hf_logging

from taco.model.collator import PreTrainingCollator
from taco.model.modeling import PreTrainingModel
from taco.model.configs import bert_config
from taco.objectives import OBJECTIVE_SPECS, OPTIONS, check_options, hashed_options, schema_sections

hf_logging.set_verbosity_error()
REPO = Path(__file__).resolve().parent.parent
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(59)]
V = len(VOCAB)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import BertTokenizerFast

    return BertTokenizerFast(vocab={t: i for i, t in enumerate(VOCAB)})


def _batch(tokenizer, objective=None, seed=0, B=4, L=20, **params):
    g = torch.Generator().manual_seed(seed)
    rows = []
    for b in range(B):
        n = L - 2 - (6 if b == 1 else 0)  # row 1 is shorter: padding
        rows.append({"input_ids": [2] + torch.randint(5, V, (n,), generator=g).tolist() + [3]})
    collator = PreTrainingCollator(tokenizer, mlm_probability=0.3, generator=torch.Generator().manual_seed(seed + 1),
                            objective=objective, objective_params=params)
    return collator(rows)


def _model(objective, **params):
    torch.manual_seed(0)
    return PreTrainingModel(bert_config("tiny", V), objective=objective, **params)


def _independent_nce(model, batch, candidates, temperature):
    """Per selected position: -log softmax over the candidates of (t(h) . E_c + b_c) / tau, in float64."""
    with torch.no_grad():
        h = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    head = model.cls.predictions
    losses = []
    for b, i in (batch["labels"] != -100).nonzero().tolist():
        t = head.transform(h[b, i]).double()
        scores = torch.stack([(t @ head.decoder.weight[c].double() + head.decoder.bias[c].double()) / temperature
                              for c in candidates])
        y = candidates.index(int(batch["labels"][b, i]))
        losses.append(torch.logsumexp(scores, 0) - scores[y])
    return torch.stack(losses).mean()


def test_bert_nce_in_batch_negatives_equal_an_independent_computation(tokenizer):
    model = _model("bert_nce", nce_temperature=0.5).eval()
    batch = _batch(tokenizer)
    out = model(**batch)
    candidates = sorted(set(batch["labels"][batch["labels"] != -100].tolist()))
    expected = _independent_nce(model, batch, candidates, 0.5)
    torch.testing.assert_close(out.nce_loss.double(), expected, rtol=1e-5, atol=1e-6)
    assert out.loss is out.nce_loss or torch.equal(out.loss, out.nce_loss)
    # the logged mlm_loss is the full-softmax cross-entropy of the same head, without gradient
    logits = model(**batch, output_logits=True).logits
    sel = batch["labels"] != -100
    torch.testing.assert_close(out.mlm_loss, torch.nn.functional.cross_entropy(logits[sel], batch["labels"][sel]))
    assert not out.mlm_loss.requires_grad and out.nce_loss.requires_grad


def test_bert_nce_vocabulary_negatives_add_the_drawn_tokens(tokenizer):
    model = _model("bert_nce", nce_negatives="vocabulary", nce_num_negatives=7).eval()
    batch = _batch(tokenizer, seed=3)
    out = model(**batch, generator=torch.Generator().manual_seed(11))
    drawn = torch.randint(V, (7,), generator=torch.Generator().manual_seed(11)).tolist()
    candidates = sorted(set(batch["labels"][batch["labels"] != -100].tolist()) | set(drawn))
    torch.testing.assert_close(out.nce_loss.double(), _independent_nce(model, batch, candidates, 1.0),
                               rtol=1e-5, atol=1e-6)


def test_nce_with_every_token_a_candidate_is_the_full_softmax(tokenizer):
    """With all V ids drawn as candidates and temperature 1, InfoNCE over the vocabulary is MLM's CE."""
    model = _model("bert_nce", nce_negatives="vocabulary", nce_num_negatives=50_000).eval()
    batch = _batch(tokenizer, seed=5)
    out = model(**batch, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(out.nce_loss, out.mlm_loss, rtol=1e-5, atol=1e-6)


def test_infoword_masks_one_ngram_per_row_and_frames_it(tokenizer):
    plain = _batch(tokenizer, seed=2)
    batch = _batch(tokenizer, "infoword", seed=2, infoword_span_min=2, infoword_span_max=4)
    assert batch["span_input_ids"].shape == (4, 6) and batch["span_attention_mask"].shape == (4, 6)
    for b in range(4):
        changed = (batch["input_ids"][b] != plain["input_ids"][b]) | (batch["labels"][b] != plain["labels"][b])
        span_len = int(batch["span_attention_mask"][b].sum()) - 2
        assert 2 <= span_len <= 4
        span = batch["span_input_ids"][b, 1:1 + span_len]
        # the n-gram is a contiguous stretch of the original row, all [MASK] and labelled in the sentence view
        orig = batch["original_input_ids"][b]
        starts = [s for s in range(orig.numel() - span_len + 1) if torch.equal(orig[s:s + span_len], span)
                  and bool((batch["input_ids"][b, s:s + span_len] == 4).all())]
        assert starts, (b, span)
        s = starts[0]
        assert torch.equal(batch["labels"][b, s:s + span_len], span)
        assert not changed[:s].any() and not changed[s + span_len:].any()  # nothing else touched
        assert batch["span_input_ids"][b, 0] == 2 and batch["span_input_ids"][b, 1 + span_len] == 3
        assert bool(batch["attention_mask"][b, s:s + span_len].all()) and int(orig[s:s + span_len].min()) >= 5
    again = _batch(tokenizer, "infoword", seed=2, infoword_span_min=2, infoword_span_max=4)
    assert all(torch.equal(batch[k], again[k]) for k in batch)  # the collator's generator decides


def test_infoword_span_term_equals_an_independent_computation(tokenizer):
    model = _model("infoword", infoword_weight=0.3, infoword_temperature=2.0).eval()
    batch = _batch(tokenizer, "infoword", seed=4)
    out = model(**batch)
    with torch.no_grad():
        sent = model.bert(batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state[:, 0]
        ngram = model.bert(batch["span_input_ids"], attention_mask=batch["span_attention_mask"]).last_hidden_state[:, 0]
    scores = sent.double() @ ngram.double().t() / 2.0
    dim = torch.stack([torch.logsumexp(scores[b], 0) - scores[b, b] for b in range(4)]).mean()
    torch.testing.assert_close(out.dim_loss.double(), dim, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out.loss, out.nce_loss + 0.3 * out.dim_loss)
    out.loss.backward()
    assert model.bert.embeddings.word_embeddings.weight.grad is not None


def test_options_are_checked_once_with_the_callers_names():
    assert check_options({"tc_temperature": 0.0}, {"tc_temperature": "--tc-temperature"}) == [
        "--tc-temperature must be > 0, got 0.0"]
    assert check_options({"tc_window": 4}) == ["tc_window must be odd, got 4"]
    assert check_options({"nce_negatives": "unigram"})[0].startswith("nce_negatives must be one of batch, vocabulary")
    assert check_options({"infoword_span_min": 6, "infoword_span_max": 5}) == [
        "infoword_span_min: 6 exceeds infoword_span_max 5"]
    with pytest.raises(ValueError, match="taco_nce_temperature must be > 0"):
        _model("bert_nce", nce_temperature=0.0)


def test_hash_keeps_old_runs_and_separates_new_options():
    defaults = {n: o.default for n, o in OPTIONS.items()}
    # the five options that existed when the hash was introduced appear for every objective, at their
    # defaults where unused; tp_mode only when not the default; the new groups only where used
    assert set(hashed_options("mlm", defaults)) == {"tc_weight", "tc_temperature", "tc_window", "tc_num_negatives",
                                                    "tp_weight"}
    assert hashed_options("mlm", {**defaults, "tc_temperature": 0.5})["tc_temperature"] == 0.07
    assert "tp_mode" in hashed_options("mlm_tp", {**defaults, "tp_mode": "joint"})
    assert set(hashed_options("infoword", defaults)) >= {"nce_negatives", "infoword_weight", "infoword_span_max"}
    assert "infoword_weight" not in hashed_options("bert_nce", defaults)


def test_the_option_groups_are_written_once_and_added_to_the_workflow_schema():
    """The YAML schema file holds no option group (declared once, in the objective modules); the schema the
    workflow validates against has each, with the declarations' properties and no other key."""
    from taco.workflow.schema import workflow_schema

    on_file = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())["properties"]["pretrain"]
    assert not set(schema_sections()) & set(on_file["properties"])
    pretrain = workflow_schema()["properties"]["pretrain"]["properties"]
    for group, props in schema_sections().items():
        assert pretrain[group]["properties"] == props, group
        assert pretrain[group]["additionalProperties"] is False


def test_every_option_is_a_pretrain_flag_and_bad_values_exit_2_before_any_work(tmp_path):
    from taco.training.pretrain import build_parser

    parser = build_parser()
    flags = {a for action in parser._actions for a in action.option_strings}
    assert {o.flag for o in OPTIONS.values()} <= flags
    run = subprocess.run([sys.executable, "-m", "taco", "pretrain", "--blocks", str(tmp_path / "missing"),
                          "--objective", "taco", "--size", "tiny", "--output", str(tmp_path / "out"),
                          "--tc-temperature", "0"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert run.returncode == 2, run.stderr
    assert "--tc-temperature must be > 0" in run.stderr and "missing" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_declarations_import_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from taco.objectives import OBJECTIVE_SPECS\nfrom taco.report.style import OBJECTIVE_STYLE\n"
            "from taco.flops import pretrain_flops_per_token\n"
            "print(sorted(OBJECTIVE_SPECS) == sorted(k for k in OBJECTIVE_STYLE if k != 'control'), "
            "pretrain_flops_per_token('base', 128, 'infoword') > pretrain_flops_per_token('base', 128, 'bert_nce'))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True"]
    assert {o.reimplemented_from != "" for n, o in OBJECTIVE_SPECS.items() if n in ("bert_nce", "infoword")} == {True}
