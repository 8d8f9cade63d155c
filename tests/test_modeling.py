"""PreTrainingModel: presets, loss components per objective, sparse == dense, TC gradients,
plain-BERT round trip, and use inside a Hugging Face Trainer."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers.utils import logging as hf_logging

from taco.model.modeling import PreTrainingModel
from taco.model.configs import SIZES, bert_config
from taco.model.masking import mask_tokens
from taco.registry import OBJECTIVES

hf_logging.set_verbosity_error()
V = 64


def _batch(B=4, L=24, seed=0, p=0.3):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, L), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    attn = torch.ones(B, L, dtype=torch.long)
    if B > 1:
        attn[1, L // 2 :] = 0
        ids[1, L // 2 :] = 0
    special = torch.zeros(B, L, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    corrupted, labels = mask_tokens(ids, special, attn, 4, V, p, generator=g)
    return dict(input_ids=corrupted, attention_mask=attn, labels=labels, original_input_ids=ids)


def _model(objective, **kw):
    torch.manual_seed(0)
    return PreTrainingModel(bert_config("tiny", V), objective, **kw)


def test_presets():
    assert SIZES == ("tiny", "small", "base")
    shapes = {s: (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size)
              for s in SIZES for c in [bert_config(s, 30522)]}
    assert shapes == {"tiny": (2, 128, 2, 512), "small": (4, 512, 8, 2048), "base": (12, 768, 12, 3072)}
    c = bert_config("small", 100, hidden_dropout_prob=0.0)
    assert c.max_position_embeddings == 512 and c.vocab_size == 100 and c.hidden_dropout_prob == 0.0
    with pytest.raises(ValueError, match="tiny, small, base"):
        bert_config("large", 100)


EXPECTED = {
    "mlm": {"mlm_loss"},
    "taco": {"mlm_loss", "tc_loss"},
    "taco_concentrated": {"mlm_loss", "tc_loss"},
    "taco_unmasked": {"mlm_loss", "tc_loss"},
    "mlm_tp": {"mlm_loss", "tp_loss"},
    "bert_nce": {"mlm_loss", "nce_loss"},
    "infoword": {"mlm_loss", "nce_loss"},  # no n-gram inputs in this batch: no span term
}


@pytest.mark.parametrize("objective", list(OBJECTIVES))
def test_loss_components_and_sparse_equals_dense(objective, device):
    model = _model(objective).eval().to(device)
    batch = {k: v.to(device) for k, v in _batch().items()}
    out = model(**batch, output_logits=True, generator=torch.Generator(device=device).manual_seed(1))
    assert out.loss.device.type == device.type
    present = {f"{t}_loss" for t in ("mlm", "tc", "tp", "nce", "dim") if getattr(out, f"{t}_loss") is not None}
    assert present == EXPECTED[objective]
    # sparse prediction equals the dense computation
    logits = out.logits
    assert logits.shape == (4, 24, V)
    sel = batch["labels"] != -100
    dense_mlm = F.cross_entropy(logits[sel], batch["labels"][sel])
    torch.testing.assert_close(out.mlm_loss, dense_mlm, rtol=1e-5, atol=1e-5)
    total = out.mlm_loss
    if objective == "mlm_tp":
        tp = batch["attention_mask"].bool() & ~sel
        dense_tp = F.cross_entropy(logits[tp], batch["original_input_ids"][tp])
        torch.testing.assert_close(out.tp_loss, dense_tp, rtol=1e-5, atol=1e-5)
        total = total + out.tp_loss
    if out.tc_loss is not None:
        total = total + out.tc_loss
    if out.nce_loss is not None:  # InfoNCE replaces the softmax; mlm_loss is its no-gradient diagnostic
        total = out.nce_loss
    torch.testing.assert_close(out.loss, total)
    # without output_logits no dense logits are produced
    assert model(**batch).logits is None


def test_tc_weight_and_reproducible_sampling():
    batch = _batch()
    m1 = _model("taco").eval()
    m2 = _model("taco", tc_weight=0.5).eval()
    o1 = m1(**batch, generator=torch.Generator().manual_seed(5))
    o1b = m1(**batch, generator=torch.Generator().manual_seed(5))
    o2 = m2(**batch, generator=torch.Generator().manual_seed(5))
    assert torch.equal(o1.tc_loss, o1b.tc_loss)
    torch.testing.assert_close(o2.tc_loss, o1.tc_loss)
    torch.testing.assert_close(o2.loss, o2.mlm_loss + 0.5 * o2.tc_loss)


def test_tc_alone_reaches_every_encoder_layer(device):
    model = _model("taco").to(device)
    out = model(**{k: v.to(device) for k, v in _batch().items()})
    out.tc_loss.backward()
    cfg = model.config
    for i in range(cfg.num_hidden_layers):
        layer = model.bert.encoder.layer[i]
        norm = sum(p.grad.abs().sum() for p in layer.parameters() if p.grad is not None)
        assert norm > 0, f"no TC gradient in encoder layer {i}"
    assert model.bert.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    head = model.cls.predictions.transform.dense.weight.grad
    assert head is None or torch.count_nonzero(head) == 0, "TC must not touch the MLM head"


def test_batch_of_one_sequence_under_taco_is_a_clear_error():
    model = _model("taco")
    with pytest.raises(ValueError, match="at least two sequences"):
        model(**_batch(B=1))
    model = _model("mlm")
    assert torch.isfinite(model(**_batch(B=1)).loss)


def test_no_selected_token_gives_finite_loss():
    model = _model("mlm_tp")
    batch = _batch()
    batch["labels"][:] = -100
    out = model(**batch)
    assert out.mlm_loss.item() == 0.0 and torch.isfinite(out.loss)
    out.loss.backward()


def test_bf16_autocast_forward(device):
    model = _model("taco").to(device)
    with torch.autocast(device.type, dtype=torch.bfloat16):
        out = model(**{k: v.to(device) for k, v in _batch().items()})
    assert out.tc_loss.dtype == torch.float32 and torch.isfinite(out.loss)
    out.loss.backward()


def test_objective_params_live_in_config_and_errors():
    cfg = bert_config("tiny", V)
    a = PreTrainingModel(cfg, "mlm")
    b = PreTrainingModel(cfg, "taco", tc_temperature=0.1, tc_num_negatives=7)
    assert a.config.taco_objective == "mlm" and b.config.taco_objective == "taco"
    assert not hasattr(cfg, "taco_objective"), "the caller's config must not be mutated"
    assert b.objective_params["tc_temperature"] == 0.1 and b.config.taco_tc_num_negatives == 7
    assert b.config.taco_tc_window == 5 and b.config.taco_tc_weight == 1.0
    with pytest.raises(ValueError, match="unknown objective"):
        PreTrainingModel(cfg, "electra")
    with pytest.raises(TypeError, match="unknown objective parameter"):
        PreTrainingModel(cfg, "taco", tau=0.1)
    with pytest.raises(ValueError, match="odd"):
        PreTrainingModel(cfg, "taco", tc_window=4)


def test_save_pretrained_loads_as_plain_bert(tmp_path):
    from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification, BertForMaskedLM

    model = _model("taco_concentrated", tc_temperature=0.05).eval()
    assert set(model.state_dict()) == set(BertForMaskedLM(bert_config("tiny", V)).state_dict())
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    model.save_pretrained(tmp_path)
    batch = _batch()
    kw = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    with torch.no_grad():
        ours = model.bert(**kw).last_hidden_state
        ours_logits = model(**kw).logits

        mlm = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
        assert type(mlm).__name__ == "BertForMaskedLM"
        assert torch.equal(mlm.bert(**kw).last_hidden_state, ours)
        assert torch.equal(mlm(**kw).logits, ours_logits)

        clf = AutoModelForSequenceClassification.from_pretrained(tmp_path, num_labels=3).eval()
        assert type(clf).__name__ == "BertForSequenceClassification"
        assert torch.equal(clf.bert(**kw).last_hidden_state, ours)

        back = PreTrainingModel.from_pretrained(tmp_path).eval()
        assert back.config.taco_objective == "taco_concentrated" and back.config.taco_tc_temperature == 0.05
        assert torch.equal(back.bert(**kw).last_hidden_state, ours)


def test_trainer_runs_with_collator(tmp_path, device):
    from transformers import BertTokenizerFast, Trainer, TrainingArguments

    from taco.model.collator import PreTrainingCollator

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    tok = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)})
    g = torch.Generator().manual_seed(0)
    data = [{"input_ids": [2] + torch.randint(5, V, (30,), generator=g).tolist() + [3]} for _ in range(16)]
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=8, report_to=[],
        save_strategy="no", logging_steps=1, use_cpu=device.type == "cpu", dataloader_num_workers=0,
        # the GPU path of pre-training: bf16 autocast inside the Trainer
        bf16=device.type == "cuda" and torch.cuda.is_bf16_supported(),
    )
    model = _model("taco")
    trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=PreTrainingCollator(tok))
    result = trainer.train()
    assert next(model.parameters()).device.type == device.type
    assert result.global_step == 2 and torch.isfinite(torch.tensor(result.training_loss))


def test_mlm_tp_weighting_modes():
    """tp_mode "separate": MLM mean + tp_weight x TP mean; "joint": one mean cross-entropy over every
    predicted position (selected and unselected), computed here densely from the logits."""
    batch = _batch()
    sel = batch["labels"] != -100
    tp = batch["attention_mask"].bool() & ~sel
    targets = torch.where(sel, batch["labels"], batch["original_input_ids"])
    sep = _model("mlm_tp", tp_weight=0.5).eval()
    out = sep(**batch, output_logits=True)
    torch.testing.assert_close(out.loss, out.mlm_loss + 0.5 * out.tp_loss)
    joint = _model("mlm_tp", tp_mode="joint").eval()
    out = joint(**batch, output_logits=True)
    predict = sel | tp
    dense = F.cross_entropy(out.logits[predict], targets[predict])
    torch.testing.assert_close(out.loss, dense, rtol=1e-5, atol=1e-5)
    n_mlm, n_tp = int(sel.sum()), int(tp.sum())  # the same loss as a count-weighted mix of the two parts
    torch.testing.assert_close(out.loss, (n_mlm * out.mlm_loss + n_tp * out.tp_loss) / (n_mlm + n_tp),
                               rtol=1e-5, atol=1e-5)
    assert joint.objective_params["tp_mode"] == "joint"
    with pytest.raises(ValueError, match="taco_tp_mode must be one of separate, joint"):
        _model("mlm_tp", tp_mode="sum")
    with pytest.raises(ValueError, match="taco_tp_weight: 2.0 has no effect with taco_tp_mode joint"):
        _model("mlm_tp", tp_mode="joint", tp_weight=2.0)


def test_checkpoint_names_bert_for_masked_lm_and_loads_without_taco(tmp_path):
    """config.json names BertForMaskedLM; a fill-mask pipeline and a save_pretrained round
    trip work in a process that never imports taco."""
    import json
    import subprocess
    import sys

    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]
    model = _model("taco")
    model.save_pretrained(tmp_path / "ckpt")
    BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}).save_pretrained(tmp_path / "ckpt")
    cfg = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert cfg["architectures"] == ["BertForMaskedLM"] and cfg["model_type"] == "bert"
    assert cfg["taco_objective"] == "taco"
    assert PreTrainingModel.from_pretrained(tmp_path / "ckpt").objective.name == "taco"
    code = f"""
import json, sys, torch
from transformers import AutoModelForMaskedLM, pipeline
fill = pipeline("fill-mask", model={str(tmp_path / 'ckpt')!r}, top_k=3)
preds = fill("w1 w2 [MASK] w4")
m = AutoModelForMaskedLM.from_pretrained({str(tmp_path / 'ckpt')!r})
m.save_pretrained({str(tmp_path / 'again')!r})
m2 = AutoModelForMaskedLM.from_pretrained({str(tmp_path / 'again')!r})
same = all(torch.equal(a, b) for a, b in zip(m.state_dict().values(), m2.state_dict().values()))
print(json.dumps({{"n": len(preds), "cls": type(m).__name__, "same": same, "taco": "taco" in sys.modules}}))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(run.stdout.strip().splitlines()[-1])
    assert res == {"n": 3, "cls": "BertForMaskedLM", "same": True, "taco": False}
    sd = PreTrainingModel.from_pretrained(tmp_path / "ckpt").state_dict()
    assert all(torch.equal(sd[k], v) for k, v in model.state_dict().items())
