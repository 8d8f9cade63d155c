"""taco.tc.plugin: the TC loss on any Hugging Face masked-LM model's output, and TacoTrainer. On BERT it
gives exactly the suite's TACO loss; it trains a tiny RoBERTa and a tiny ModernBERT built from configs
(examples/tc_trainer.py, run as a user would); what it cannot work with is refused by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from transformers import AutoModel, AutoModelForMaskedLM, logging as hf_logging  # noqa: E402

from taco.model.masking import mask_tokens  # noqa: E402
from taco.model.configs import bert_config  # noqa: E402
from taco.model.modeling import PreTrainingModel  # noqa: E402
from taco.tc.plugin import TacoTrainer, tc_term  # noqa: E402

hf_logging.set_verbosity_error()
REPO = Path(__file__).resolve().parents[1]
V, B, L = 120, 4, 24


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, L), generator=g)
    attn = torch.ones(B, L, dtype=torch.long)
    attn[1, 18:] = 0  # one padded sequence
    ids[1, 18:] = 0
    corrupted, labels = mask_tokens(ids, None, attn, 4, V, 0.15, generator=g)
    return {"input_ids": corrupted, "attention_mask": attn, "labels": labels}


def test_on_bert_the_plugin_loss_is_the_suites_taco_loss(tmp_path):
    """The suite's TACO model and plain BertForMaskedLM with the same weights: MLM + TC agree to float
    precision when the TC draws use the same generator (the suite draws positives, then negatives)."""
    torch.manual_seed(0)
    suite = PreTrainingModel(bert_config("tiny", V, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                             "taco", tc_num_negatives=7).eval()
    suite.save_pretrained(tmp_path / "ckpt")
    plain = AutoModelForMaskedLM.from_pretrained(tmp_path / "ckpt").eval()
    assert type(plain).__name__ == "BertForMaskedLM"
    batch = _batch()
    with torch.no_grad():
        ours = suite(**batch, generator=torch.Generator().manual_seed(5))
        out = plain(**batch, output_hidden_states=True)
        tc = tc_term(out, batch["attention_mask"], num_negatives=7, generator=torch.Generator().manual_seed(5))
    assert float(out.loss) == pytest.approx(float(ours.mlm_loss), rel=1e-5)
    assert float(tc) == pytest.approx(float(ours.tc_loss), rel=1e-5)
    assert float(out.loss + tc) == pytest.approx(float(ours.loss), rel=1e-5)


def test_the_example_trains_a_tiny_roberta_and_a_tiny_modernbert_offline():
    """What a user runs: examples/tc_trainer.py, both families, from a fresh process, no Hub."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, str(REPO / "examples" / "tc_trainer.py"), "--steps", "6"],
                         capture_output=True, text=True, timeout=300, env=env, cwd=str(REPO))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [ln for ln in out.stdout.splitlines() if "nats after 6 steps" in ln]
    assert [ln.split(":")[0] for ln in lines] == ["roberta", "modernbert"], out.stdout
    for ln in lines:
        mlm, tc = (float(x.split()[0]) for x in ln.split(": MLM ")[1].split(" nats, TC "))
        assert 0 < mlm < 20 and 0 < tc < 10, ln


def test_modernbert_and_roberta_give_padded_states_and_take_the_tokenizers_ids():
    sys.path.insert(0, str(REPO / "examples"))
    try:
        from tc_trainer import tiny_model, toy_corpus, wordpiece_tokenizer
    finally:
        sys.path.pop(0)
    tok = wordpiece_tokenizer(toy_corpus(50))
    batch = tok(toy_corpus(4, seed=1), padding=True, return_tensors="pt")
    for family in ("roberta", "modernbert"):
        model = tiny_model(family, tok, 32).eval()
        assert model.config.pad_token_id == tok.pad_token_id  # not ModernBERT's default 50283
        assert model.get_input_embeddings().padding_idx == tok.pad_token_id
        with torch.no_grad():
            out = model(**batch, output_hidden_states=True)
        shape = (*batch["input_ids"].shape, 64)
        assert tuple(out.hidden_states[0].shape) == shape == tuple(out.hidden_states[-1].shape), family
        assert torch.isfinite(tc_term(out, batch["attention_mask"], generator=torch.Generator().manual_seed(0)))


def test_what_the_plugin_cannot_work_with_is_refused_by_name(tmp_path):
    torch.manual_seed(0)
    model = AutoModelForMaskedLM.from_config(bert_config("tiny", V))
    batch = _batch()
    out = model(**batch)  # no output_hidden_states
    with pytest.raises(ValueError, match="output_hidden_states=True"):
        tc_term(out, batch["attention_mask"])
    out = model(**batch, output_hidden_states=True)
    with pytest.raises(ValueError, match="window W must be an odd integer"):
        tc_term(out, batch["attention_mask"], window=4)
    with pytest.raises(ValueError, match="num_negatives K must be an integer"):
        tc_term(out, batch["attention_mask"], num_negatives=2.5)
    assert torch.isfinite(tc_term(out, batch["attention_mask"], num_negatives=np.int64(5)))  # a numpy K is fine
    one = model(input_ids=batch["input_ids"][:1], output_hidden_states=True)
    with pytest.raises(ValueError, match="sequence"):
        tc_term(one, batch["attention_mask"][:1])
    with pytest.raises(ValueError, match="does not match"):
        tc_term(out, batch["attention_mask"][:, :10])
    from transformers import TrainingArguments

    args = TrainingArguments(str(tmp_path), report_to=[], use_cpu=True)
    with pytest.raises(ValueError, match="no MLM head"):
        TacoTrainer(model=AutoModel.from_config(bert_config("tiny", V)), args=args)
    with pytest.raises(ValueError, match="tc_window"):
        TacoTrainer(model=model, args=args, tc_window=6)


def _mlm_data(n: int, seed: int = 0) -> list[dict]:
    g = np.random.default_rng(seed)
    return [{"input_ids": [2, *g.integers(5, V, size=14).tolist(), 3]} for _ in range(n)]


def _collator():
    from transformers import BertTokenizerFast, DataCollatorForLanguageModeling

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(words)})
    return DataCollatorForLanguageModeling(tok, mlm_probability=0.3)


def test_a_device_batch_of_one_is_refused_and_a_last_batch_of_one_is_dropped(tmp_path):
    """A device batch of 1 gives the TC loss no negatives: refused when the trainer is built (training and
    evaluation). A data set that leaves a last batch of 1 trains, evaluates and predicts with that one
    sequence left out, and says so; a run whose max_steps never reaches it is not refused."""
    import warnings

    from transformers import TrainingArguments

    model = AutoModelForMaskedLM.from_config(bert_config("tiny", V))
    one = TrainingArguments(str(tmp_path), report_to=[], use_cpu=True, per_device_train_batch_size=1)
    with pytest.raises(ValueError, match="per_device_train_batch_size 1"):
        TacoTrainer(model=model, args=one, train_dataset=_mlm_data(9))
    one_eval = TrainingArguments(str(tmp_path), report_to=[], use_cpu=True, per_device_eval_batch_size=1)
    with pytest.raises(ValueError, match="per_device_eval_batch_size 1"):
        TacoTrainer(model=model, args=one_eval)
    args = TrainingArguments(str(tmp_path), report_to=[], use_cpu=True, per_device_train_batch_size=4,
                             per_device_eval_batch_size=4, max_steps=3, logging_steps=1, eval_strategy="steps",
                             eval_steps=2, save_strategy="no")
    trainer = TacoTrainer(model=model, args=args, train_dataset=_mlm_data(9), eval_dataset=_mlm_data(5, 1),
                          data_collator=_collator())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.train()  # periodic evaluation on 5 sequences (4 + 1): the 1 is dropped, no crash
        metrics = trainer.evaluate()
        pred = trainer.predict(_mlm_data(9, 2))
    said = " ".join(str(w.message) for w in caught)
    assert "9 training sequences" in said and "5 evaluation sequences" in said and "9 prediction sequences" in said
    assert np.isfinite(metrics["eval_loss"])
    assert pred.predictions.shape[0] == 8  # the last single sequence left out; logits only, no hidden states
    assert not isinstance(pred.predictions, tuple)


def test_mlm_and_tc_are_logged_and_accumulation_keeps_the_scale(tmp_path):
    """mlm_loss and tc_loss reach the Trainer's log (so TensorBoard / W&B draw them); with gradient
    accumulation the logged loss and gradient norm are those of the mean over the accumulated micro-batches:
    1 x 8 and 4 x 2 agree within sampling noise instead of growing 4x (transformers' loss_is_scaled_for_ga)."""
    from transformers import TrainingArguments

    runs = {}
    for accum, batch in ((1, 8), (4, 2)):
        torch.manual_seed(0)
        model = AutoModelForMaskedLM.from_config(bert_config("tiny", V, hidden_dropout_prob=0.0,
                                                             attention_probs_dropout_prob=0.0))
        args = TrainingArguments(str(tmp_path / f"a{accum}"), report_to=[], use_cpu=True,
                                 per_device_train_batch_size=batch, gradient_accumulation_steps=accum, max_steps=3,
                                 logging_steps=1, learning_rate=1e-9, save_strategy="no", seed=0)
        trainer = TacoTrainer(model=model, args=args, train_dataset=_mlm_data(64), data_collator=_collator())
        trainer.train()
        logs = [h for h in trainer.state.log_history if "loss" in h]
        assert all({"mlm_loss", "tc_loss"} <= set(h) for h in logs)
        runs[accum] = logs
    for a, b in zip(runs[1], runs[4]):
        assert b["loss"] == pytest.approx(a["loss"], rel=0.25), (a, b)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=0.35), (a, b)
        assert a["loss"] == pytest.approx(a["mlm_loss"] + a["tc_loss"], rel=0.02)


def test_tuple_outputs_are_refused_by_name():
    model = AutoModelForMaskedLM.from_config(bert_config("tiny", V))
    out = model(**_batch(), output_hidden_states=True, return_dict=False)
    with pytest.raises(ValueError, match="return_dict=True"):
        tc_term(out, _batch()["attention_mask"])


def test_a_config_from_the_tokenizer_and_a_pad_id_that_disagrees(tmp_path):
    """config_from_tokenizer gives each family the tokenizer's special ids (RoBERTa's default pad 1 and a bare
    ModernBertConfig are the traps); TacoTrainer warns when the model's pad id is not the tokenizer's."""
    import warnings

    from transformers import AutoModelForMaskedLM, RobertaConfig, TrainingArguments

    from taco.model.configs import config_from_tokenizer

    tok = _collator().tokenizer
    for family in ("bert", "roberta", "modernbert"):
        cfg = config_from_tokenizer(tok, family)
        assert cfg.pad_token_id == tok.pad_token_id == 0 and cfg.vocab_size == len(tok)
        AutoModelForMaskedLM.from_config(cfg)  # builds (a bare ModernBertConfig(vocab_size=V) does not)
    model = AutoModelForMaskedLM.from_config(RobertaConfig(vocab_size=V, num_hidden_layers=1, hidden_size=32,
                                                           num_attention_heads=2, intermediate_size=64))
    args = TrainingArguments(str(tmp_path), report_to=[], use_cpu=True, per_device_train_batch_size=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TacoTrainer(model=model, args=args, processing_class=tok)
    assert any("pad_token_id 1 differs from the tokenizer's 0" in str(w.message) for w in caught)


def _fixed_masking(features: list[dict]) -> dict:
    """A collator whose masking depends on each sequence alone (not on the batch it lands in or on a generator):
    exactly two [MASK]ed positions per sequence, so every micro-batch holds the same number of MLM targets and
    the mean over 4 micro-batches of their means is the mean over the whole batch."""
    ids = torch.tensor([f["input_ids"] for f in features])
    labels = torch.full_like(ids, -100)
    corrupted = ids.clone()
    for row in range(ids.shape[0]):
        first = 1 + int(ids[row].sum()) % 7  # content positions 1..14; the two never coincide
        second = 8 + int(ids[row, 1]) % 7
        for pos in (first, second):
            labels[row, pos] = ids[row, pos]
            corrupted[row, pos] = 4  # [MASK]
    return {"input_ids": corrupted, "attention_mask": torch.ones_like(ids), "labels": labels}


def test_gradient_accumulation_gives_the_gradient_of_the_whole_batch(tmp_path):
    """Pure MLM (tc_weight 0), one step of plain SGD at lr 1 on 8 sequences: 1 x 8 and 4 micro-batches x 2 move
    every parameter by the same amount, minus the gradient of the whole batch's loss computed by hand
    (loss.backward on all 8 with the same masking). Without transformers' accumulation scaling
    (loss_is_scaled_for_ga) the 4 x 2 step would be 4 times the gradient."""
    import copy

    from transformers import TrainingArguments

    torch.manual_seed(0)
    start = AutoModelForMaskedLM.from_config(bert_config("tiny", V, hidden_dropout_prob=0.0,
                                                         attention_probs_dropout_prob=0.0))
    data = _mlm_data(8, seed=3)
    before = {n: p.detach().clone() for n, p in start.named_parameters()}

    by_hand = copy.deepcopy(start).train()
    by_hand(**_fixed_masking(data)).loss.backward()
    expected = {n: -(p.grad if p.grad is not None else torch.zeros_like(p)) for n, p in by_hand.named_parameters()}
    assert sum(float(g.abs().sum()) for g in expected.values()) > 0

    for accum, batch in ((1, 8), (4, 2)):
        model = copy.deepcopy(start)
        sgd = torch.optim.SGD(model.parameters(), lr=1.0)
        constant = torch.optim.lr_scheduler.LambdaLR(sgd, lambda _: 1.0)
        args = TrainingArguments(str(tmp_path / f"a{accum}"), report_to=[], use_cpu=True, max_steps=1,
                                 per_device_train_batch_size=batch, gradient_accumulation_steps=accum,
                                 max_grad_norm=0.0, save_strategy="no", logging_strategy="no", seed=0)
        trainer = TacoTrainer(model=model, args=args, train_dataset=data, data_collator=_fixed_masking,
                              optimizers=(sgd, constant), tc_weight=0.0)
        trainer.train()
        assert trainer.state.global_step == 1
        for name, p in model.named_parameters():
            torch.testing.assert_close(p.detach() - before[name], expected[name], rtol=1e-4, atol=1e-6,
                                       msg=lambda m, name=name, accum=accum: f"{name}, {accum} x {batch}: {m}")
