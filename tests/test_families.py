"""Encoder families (taco/families/, taco.model.configs, taco.model.modeling): RoBERTa and ModernBERT
built from transformers' own classes, their known traps, the TACO family on each, BERT-only objectives
refused by name, and checkpoints that plain transformers loads as the native class."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from transformers import (AutoModelForMaskedLM, BertTokenizerFast, ModernBertForMaskedLM,  # noqa: E402
                          RobertaForMaskedLM, logging as hf_logging)

from taco.families import FAMILIES  # noqa: E402
from taco.families.modernbert import INTERMEDIATE as MODERNBERT_INTERMEDIATE  # noqa: E402
from taco.model.configs import bert_config, encoder_config, special_token_ids  # noqa: E402
from taco.model.masking import mask_tokens  # noqa: E402
from taco.model.modeling import (ModernBertPreTrainingModel, PreTrainingModel, RobertaPreTrainingModel,  # noqa: E402
                                 load_pretraining_model, pretraining_model_class)
from taco.registry import PRESET_SHAPES  # noqa: E402

hf_logging.set_verbosity_error()
V, B, L = 120, 4, 24
#: the suite's WordPiece order: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4
IDS = {"pad": 0, "cls": 2, "sep": 3}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(V - 5)]


def _tokenizer():
    return BertTokenizerFast(vocab={t: i for i, t in enumerate(VOCAB)})


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, L), generator=g)
    attn = torch.ones(B, L, dtype=torch.long)
    attn[1, 18:] = 0  # one padded sequence
    ids[1, 18:] = 0
    corrupted, labels = mask_tokens(ids, None, attn, 4, V, 0.15, generator=g)
    return {"input_ids": corrupted, "attention_mask": attn, "labels": labels, "original_input_ids": ids}


def _model(family, objective="taco", seed=0, **kw):
    torch.manual_seed(seed)
    return pretraining_model_class(family)(encoder_config("tiny", V, family, IDS), objective=objective, **kw)


def test_modernbert_special_ids_come_from_the_tokenizer_not_its_defaults():
    """ModernBertConfig's defaults are its own tokenizer's ids (pad 50283, cls/bos 50281, sep/eos 50282);
    pad_token_id is the embedding's padding_idx, so it must be the run's [PAD]."""
    ids = special_token_ids(_tokenizer())
    assert ids == IDS
    config = encoder_config("tiny", V, "modernbert", ids)
    assert (config.pad_token_id, config.cls_token_id, config.sep_token_id, config.bos_token_id,
            config.eos_token_id) == (0, 2, 3, 2, 3)
    model = ModernBertForMaskedLM(config)
    assert model.model.embeddings.tok_embeddings.padding_idx == 0
    with pytest.raises(ValueError, match="needs special_ids with pad, cls and sep"):
        encoder_config("tiny", V, "modernbert")


@pytest.mark.parametrize("size", list(PRESET_SHAPES))
def test_modernbert_shapes_set_layer_types_and_local_attention(size):
    """Every third layer global from the first (ModernBERT's global_attn_every_n_layers=3), a local window
    of 128; layers, H and heads are the BERT preset's, the GeGLU FFN 2/3 of BERT's width."""
    shape = PRESET_SHAPES[size]
    c = encoder_config(size, V, "modernbert", IDS)
    n = shape["num_hidden_layers"]
    assert c.layer_types == ["full_attention" if i % 3 == 0 else "sliding_attention" for i in range(n)]
    assert c.local_attention == 128 and c.sliding_window == 64
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) == (
        n, shape["hidden_size"], shape["num_attention_heads"])
    assert c.intermediate_size == MODERNBERT_INTERMEDIATE[size]
    assert abs(3 * c.intermediate_size - 2 * shape["intermediate_size"]) <= 3 * 8  # FFN weights within 8 rows


def test_roberta_positions_start_after_the_padding_index():
    """RoBERTa numbers positions from padding_idx + 1: a 512-token input needs 512 + pad + 1 positions."""
    c = encoder_config("tiny", V, "roberta", IDS)
    assert c.max_position_embeddings == 512 + 0 + 1 and c.pad_token_id == 0 and c.type_vocab_size == 2
    model = RobertaForMaskedLM(c).eval()
    ids = torch.randint(5, V, (1, 512))
    with torch.no_grad():
        assert model(input_ids=ids).logits.shape == (1, 512, V)  # the longest input fits
    pad_one = encoder_config("tiny", V, "roberta", {"pad": 1, "cls": 0, "sep": 2})
    assert pad_one.max_position_embeddings == 514  # RoBERTa's own 514 with its pad id 1


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_hidden_states_first_is_the_embedding_output_last_the_encoder_output(family):
    """hidden_states[0] is the embedding layer's output (the TC loss's e) and the last entry equals
    last_hidden_state (for ModernBERT: after final_norm), each (B, L, H) with padding kept."""
    model = _model(family, "mlm").eval()
    b = _batch()
    with torch.no_grad():
        out = model.encode(b["input_ids"], b["attention_mask"], None, True)
        emb = model.get_input_embeddings()(b["input_ids"])
        if family == "modernbert":
            expected0 = model.model.embeddings(input_ids=b["input_ids"])
            final = model.model.final_norm
            assert torch.equal(out.last_hidden_state, out.hidden_states[-1])
            assert final is not None
        else:
            expected0 = model.roberta.embeddings(input_ids=b["input_ids"])
        assert torch.allclose(out.hidden_states[0], expected0)
        assert not torch.allclose(out.hidden_states[0], emb)  # a normed (and, for RoBERTa, positioned) output
    assert out.last_hidden_state.shape == (B, L, 128)
    assert all(h.shape == (B, L, 128) for h in out.hidden_states)


def test_unpadded_encoder_output_is_refused_by_name(monkeypatch):
    """A FlashAttention ModernBERT has returned unpadded (total_tokens, H) states (transformers#38499):
    the model says so instead of computing a wrong loss."""
    model = _model("modernbert")
    b = _batch()
    real = model.encode

    def unpadded(*a, **kw):
        out = real(*a, **kw)
        out.last_hidden_state = out.last_hidden_state[b["attention_mask"].bool()]
        return out

    monkeypatch.setattr(model, "encode", unpadded)
    with pytest.raises(ValueError, match=r"not \(B, L, H\)"):
        model(**b)


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
@pytest.mark.parametrize("objective", ["mlm", "taco", "mlm_tp", "taco_concentrated", "taco_unmasked"])
def test_the_taco_family_trains_every_encoder(family, objective):
    """Finite losses, the logged terms, and gradient reaching the embeddings; TACO's loss is MLM + TC with
    the family's own sparse head (its MLM term equals the native class's dense loss at the selected
    positions)."""
    model = _model(family, objective)
    b = _batch()
    out = model(**b, generator=torch.Generator().manual_seed(1))
    assert torch.isfinite(out.loss)
    out.loss.backward()
    assert model.get_input_embeddings().weight.grad.abs().sum() > 0
    if objective != "mlm_tp":
        with torch.no_grad():
            native = AutoModelForMaskedLM.from_config(model.config)
            native.load_state_dict(model.state_dict())
            native.eval(), model.eval()
            dense = native(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]).loss
            ours = model(**b, generator=torch.Generator().manual_seed(1)).mlm_loss
        assert torch.allclose(ours, dense, rtol=1e-5, atol=1e-6)
    if "tc" in model.objective.terms:
        assert torch.allclose(out.loss, out.mlm_loss + out.tc_loss)


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
@pytest.mark.parametrize("objective", ["bert_nce", "infoword"])
def test_bert_only_objectives_are_refused_for_other_families(family, objective):
    with pytest.raises(ValueError, match=f"objective '{objective}' works on bert only, not on {family}"):
        _model(family, objective)


def test_bert_only_objectives_are_refused_by_the_config_check_and_the_cli(tmp_path):
    """Before any job: the workflow's config check names pretrain.runs[i] and the size's architecture key;
    taco pretrain names --architecture."""
    from taco.errors import UsageError
    from taco.training.pretrain import _check_schedule, build_parser
    from taco.workflow.plan.command import load_config
    from taco.workflow.plan.inputs import PlanError

    with pytest.raises(PlanError, match=r"pretrain.runs\[1\]: bert_nce on size 'mb'.*pretrain.sizes.mb.architecture "
                                          r"is modernbert"):
        load_config(["configs/smoke.yaml"], {"pretrain": {
            "runs": [{"size": "tiny", "objectives": ["mlm"]}, {"size": "mb", "objectives": ["mlm", "bert_nce"]}],
            "sizes": {"mb": {"architecture": "modernbert", "preset": "tiny", "max_steps": 100, "budgets": [100]}}}})
    args = build_parser().parse_args(["--blocks", "b", "--objective", "infoword", "--size", "tiny",
                                      "--architecture", "roberta", "--output", str(tmp_path / "o")])
    with pytest.raises(UsageError, match="--architecture roberta: objective 'infoword' works on bert only"):
        _check_schedule(args)


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_checkpoint_is_the_native_class_and_loads_without_taco(tmp_path, family):
    """config.json names RobertaForMaskedLM / ModernBertForMaskedLM; AutoModelForMaskedLM,
    AutoModelForSequenceClassification and a fill-mask pipeline load it in a process that never imports
    taco (AutoTokenizer gives ModernBERT no token_type_ids: it has no segment embedding);
    load_pretraining_model restores the objective and the weights."""
    model = _model(family, "taco", tc_temperature=0.05)
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt)
    _tokenizer().save_pretrained(ckpt)
    cfg = json.loads((ckpt / "config.json").read_text())
    assert cfg["architectures"] == [FAMILIES[family].native_class] and cfg["taco_objective"] == "taco"
    back = load_pretraining_model(ckpt)
    assert type(back) is pretraining_model_class(family) and back.config.taco_tc_temperature == 0.05
    assert all(torch.equal(back.state_dict()[k], v) for k, v in model.state_dict().items())
    code = f"""
import json, sys, torch
from transformers import AutoModelForMaskedLM, AutoModelForSequenceClassification, AutoTokenizer, pipeline
path = {str(ckpt)!r}
fill = pipeline("fill-mask", model=path, top_k=3)
preds = fill("w1 w2 [MASK] w4")
m = AutoModelForMaskedLM.from_pretrained(path)
clf = AutoModelForSequenceClassification.from_pretrained(path, num_labels=2)
tok = AutoTokenizer.from_pretrained(path)
enc = tok(["w1 w2 w3", "w4"], ["w5", "w6 w7"], padding=True, return_tensors="pt")
logits = clf(**enc).logits
print(json.dumps({{"n": len(preds), "mlm": type(m).__name__, "clf": type(clf).__name__,
                  "shape": list(logits.shape), "types": "token_type_ids" in enc, "taco": "taco" in sys.modules}}))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(run.stdout.strip().splitlines()[-1])
    prefix = FAMILIES[family].native_class.replace("ForMaskedLM", "")
    assert res == {"n": 3, "mlm": FAMILIES[family].native_class, "clf": f"{prefix}ForSequenceClassification",
                   "shape": [2, 2], "types": family != "modernbert", "taco": False}


def test_bert_stays_the_suites_bert():
    """The BERT family is bert_config and PreTrainingModel (BertForMaskedLM's modules), unchanged."""
    assert tuple(FAMILIES)[0] == "bert"
    assert encoder_config("tiny", V, "bert").to_dict() == bert_config("tiny", V).to_dict()
    assert pretraining_model_class("bert") is PreTrainingModel
    assert set(_model("bert").state_dict()) == set(AutoModelForMaskedLM.from_config(bert_config("tiny", V)).state_dict())
    assert issubclass(RobertaPreTrainingModel, RobertaForMaskedLM)
    assert issubclass(ModernBertPreTrainingModel, ModernBertForMaskedLM)
    with pytest.raises(ValueError, match="unknown architecture 'electra'"):
        encoder_config("tiny", V, "electra", IDS)


def _hash_inputs(architecture):
    from taco.training.pretrain import _BlocksInfo, _hash_inputs, _Schedule, build_parser

    args = build_parser().parse_args(["--blocks", "b", "--objective", "taco", "--size", "tiny", "--output", "o",
                                      "--architecture", architecture])
    return _hash_inputs(args, _Schedule(100, 10, 100), _BlocksInfo(128, V, 1.0, None, "tree"), "fp32")


def test_the_family_is_in_the_config_hash_only_when_not_bert():
    """BERT's config hash is that of the runs made before the families existed (no architecture key);
    RoBERTa's and ModernBERT's differ from it and from each other."""
    bert = _hash_inputs("bert")
    assert "architecture" not in bert
    assert _hash_inputs("roberta")["architecture"] == "roberta"
    assert {json.dumps(_hash_inputs(a), sort_keys=True) for a in tuple(FAMILIES)}.__len__() == 3


def test_the_workflow_writes_the_family_only_for_other_families(shared_data):
    """configs/cpu-real-families.yaml: --architecture on the ModernBERT and RoBERTa sizes' pretrain and init
    commands, never on BERT's (their commands, hence their finished runs, stay the same); a run's own
    seeds (pretrain.runs[].seeds) give its replicates and its controls."""
    from taco.workflow import config as wc
    from taco.workflow.commands import Commands
    from taco.workflow.control import checkpoints, init_args
    from taco.workflow.plan.command import load_config

    class W:  # the wildcards of one pretrain job
        def __init__(self, size):
            self.size, self.objective, self.fraction, self.step, self.pseed = size, "taco", "1.0", "2000", ""

    cfg = load_config(["configs/cpu-real.yaml", "configs/cpu-real-families.yaml"], {"data_root": str(shared_data)})
    cmd = Commands(cfg)
    for size, family in (("tiny", None), ("modernbert_tiny", "modernbert"), ("roberta_tiny", "roberta")):
        for words in (cmd.pretrain_args(W(size)), init_args(cfg, size)):
            if family is None:
                assert "--architecture" not in words
            else:
                assert words[words.index("--architecture") + 1] == family
    seeds = {(r.size, r.objective): [] for r in wc.runs(cfg)}
    for r in wc.runs(cfg):
        seeds[(r.size, r.objective)].append(r.pretrain_seed)
    assert seeds[("tiny", "taco")] == [None, 1, 2]
    assert seeds[("modernbert_tiny", "mlm")] == [None, 1, 2] and seeds[("roberta_tiny", "taco")] == [None]
    controls = checkpoints(cfg)
    assert sum("/modernbert_tiny/" in c for c in controls) == 3 and sum("/roberta_tiny/" in c for c in controls) == 1


def test_modernbert_flops_count_its_geglu_ffn():
    """taco.flops: ModernBERT's encoder weights are 4 H^2 + 3 H I' per layer, which equals the model's own
    matrix weights (the Linear layers of its encoder, biases off), like BERT's 4 H^2 + 2 H I."""
    from taco.flops import encoder_matmul_params, pretrain_flops_per_token

    for family in tuple(FAMILIES):
        model = _model(family, "mlm")
        encoder = model.base_model
        layers = encoder.layers if family == "modernbert" else encoder.encoder.layer
        weights = sum(m.weight.numel() for m in layers.modules() if isinstance(m, torch.nn.Linear))
        assert weights == encoder_matmul_params("tiny", family), family
    mb = pretrain_flops_per_token("tiny", 128, "mlm", vocab_size=V, architecture="modernbert")
    bert = pretrain_flops_per_token("tiny", 128, "mlm", vocab_size=V)
    assert mb == pytest.approx(bert, rel=0.01) and mb != bert


def test_the_curves_figure_tells_the_families_apart():
    """pretrain_curves: with several sizes on one data fraction each size gets its own line style (the
    objective keeps its colour and marker) and the legend says so; with several fractions the fraction's
    style stays."""
    from taco.report.pretrain_curves import SIZE_LINESTYLES, legend_title, run_styles

    runs = [("modernbert_tiny", "mlm", 1.0), ("modernbert_tiny", "taco", 1.0), ("tiny", "mlm", 1.0),
            ("tiny", "taco", 1.0)]
    st = run_styles(runs)
    assert st[runs[0]]["linestyle"] == st[runs[1]]["linestyle"] == SIZE_LINESTYLES[0]
    assert st[runs[2]]["linestyle"] == SIZE_LINESTYLES[1]
    assert st[runs[0]]["color"] == st[runs[2]]["color"] != st[runs[1]]["color"]
    assert "line: size" in legend_title(runs)
    mixed = [("tiny", "mlm", 1.0), ("tiny", "mlm", 0.25), ("modernbert_tiny", "mlm", 1.0)]
    assert "data fraction" in legend_title(mixed)
    assert run_styles(mixed)[mixed[0]]["linestyle"] != run_styles(mixed)[mixed[1]]["linestyle"]


def test_the_families_overlay_given_alone_names_its_base():
    """configs/cpu-real-families.yaml is an overlay of configs/cpu-real.yaml (its usage line): given alone,
    the workflow's configuration error says which file to give before it."""
    from pathlib import Path

    from taco.workflow.config_source import missing_bases_note, overlay_bases

    assert overlay_bases(Path("configs/cpu-real-families.yaml")) == ["configs/cpu-real.yaml"]
    assert overlay_bases(Path("configs/cpu-real.yaml")) == []
    assert "give configs/cpu-real.yaml before it" in missing_bases_note(["configs/cpu-real-families.yaml"])
    assert missing_bases_note(["configs/cpu-real.yaml", "configs/cpu-real-families.yaml"]) == ""


DEBERTA_MODULE = '''"""``deberta_v2``: DeBERTa-v2 (He et al. 2021) as transformers' ``DebertaV2ForMaskedLM`` (a newcomer's
test-only family): disentangled relative attention, eager kernel only."""

from taco.families.base import MAX_POSITIONS, Family


def _config(preset, shape, vocab_size, special_ids):
    return dict(shape, vocab_size=vocab_size, max_position_embeddings=MAX_POSITIONS, relative_attention=True,
                pos_att_type=["p2c", "c2p"], position_biased_input=False, type_vocab_size=2,
                pad_token_id=int(special_ids["pad"]), bos_token_id=int(special_ids["cls"]),
                eos_token_id=int(special_ids["sep"]))


def _encode(model, input_ids, attention_mask, token_type_ids, output_hidden_states, **kwargs):
    return model.deberta(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         output_hidden_states=output_hidden_states, return_dict=True, **kwargs)


def _mlm_logits(model, hidden):
    return model.cls(hidden)


DECLARED = Family(
    name="deberta_v2", label="DeBERTa-v2", model_type="deberta-v2", native_class="DebertaV2ForMaskedLM",
    config_kwargs=_config, dropout_fields=("hidden_dropout_prob", "attention_probs_dropout_prob"),
    encode=_encode, mlm_logits=_mlm_logits, model_class_name="DebertaV2PreTrainingModel",
    recipe="DeBERTa-v2 (He et al. 2021): its SentencePiece of 128k, lr 1e-4 (base), batch 2k",
    attention_kernels=("eager",))
'''


def test_adding_a_family_is_one_module(tmp_path):
    """A newcomer adds DeBERTa-v2 as one module (``taco/families/deberta_v2.py``, in a copy of the suite), found
    by the package scan, and nothing else: ``taco pretrain --architecture deberta_v2`` trains it with TACO under
    its own attention kernel (eager: sdpa is refused by name) and saves the native class; the schema, the
    configuration check, the FLOPs count, the deviations page and a dry run of the smoke DAG with a
    DeBERTa size accept it."""
    import os
    import yaml
    from scratch_suite import REPO as repo, copy_suite
    from tiny_blocks import write_blocks

    dst = copy_suite(tmp_path / "suite")
    (dst / "taco/families/deberta_v2.py").write_text(DEBERTA_MODULE)
    env = {"PYTHONPATH": str(dst), "PATH": os.environ["PATH"], "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}

    blocks = write_blocks(tmp_path)
    words = ["-m", "taco", "pretrain", "--blocks", str(blocks), "--objective", "taco", "--size", "tiny",
             "--architecture", "deberta_v2", "--max-steps", "4", "--warmup-steps", "1", "--until", "4",
             "--per-device-batch-size", "4", "--logging-steps", "2", "--seed", "0", "--device", "cpu",
             "--no-progress", "--report-to", "none"]
    refused = subprocess.run([sys.executable, *words, "--output", str(tmp_path / "sdpa"), "--attn-implementation",
                              "sdpa"], cwd=dst, capture_output=True, text=True, timeout=300, env=env)
    assert refused.returncode == 2 and "deberta_v2 family runs under eager" in refused.stderr, refused.stderr[-2000:]
    out = tmp_path / "step-4"
    run = subprocess.run([sys.executable, *words, "--output", str(out)], cwd=dst, capture_output=True, text=True,
                         timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads((out / "config.json").read_text())["architectures"] == ["DebertaV2ForMaskedLM"]
    assert json.loads((out / "manifest.json").read_text())["architecture"] == "deberta_v2"

    smoke = yaml.safe_load((repo / "configs/smoke.yaml").read_text())
    smoke["pretrain"]["sizes"]["deberta_tiny"] = {**smoke["pretrain"]["sizes"]["tiny"], "architecture": "deberta_v2"}
    smoke["pretrain"]["runs"].append({"size": "deberta_tiny", "objectives": ["mlm", "taco"], "fractions": [1.0]})
    cfg = tmp_path / "deberta.yaml"
    cfg.write_text(yaml.safe_dump(smoke))
    code = f"""
import json, yaml
from snakemake.utils import validate
from taco.workflow import config_checks as wcc
from taco.workflow.schema import schema_file
from taco.flops import pretrain_flops_per_token
from taco.deviations import find_deviations
cfg = yaml.safe_load(open({str(cfg)!r}))
validate(cfg, str(schema_file("workflow/schemas/config.schema.yaml")))
wcc.check_config(cfg)
rows = [d.paper + " | " + d.here for d in find_deviations(cfg) if d.key == "pretrain.sizes.deberta_tiny.architecture"]
print(json.dumps({{"flops": pretrain_flops_per_token("tiny", 64, "taco", architecture="deberta_v2"),
                  "bert": pretrain_flops_per_token("tiny", 64, "taco"), "rows": rows}}))
"""
    res = subprocess.run([sys.executable, "-c", code], cwd=dst, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["flops"] == got["bert"]  # the default count: BERT's matmuls (the module declares no other)
    assert any("DeBERTa-v2 (transformers' DebertaV2ForMaskedLM" in r for r in got["rows"]), got["rows"]
    assert any("He et al. 2021" in r for r in got["rows"]), got["rows"]
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(dst / "Snakefile"),
                          "--directory", str(tmp_path / "work"), "--configfile", str(cfg), "--cores", "1"],
                         cwd=dst, capture_output=True, text=True, timeout=600, env=env)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "--architecture deberta_v2" in dry.stdout + dry.stderr


def test_an_installed_package_adds_a_family_through_the_entry_point_group(tmp_path):
    """``[project.entry-points."taco.families"]`` of another distribution adds its module's family without a
    file in taco: the family table, the schema's architecture values and the model classes see it."""
    import os

    from entry_points import install_entry_point

    site = install_entry_point(tmp_path / "site", "debpkg", "deberta_v2", DEBERTA_MODULE, "taco.families")
    code = """
import json
from taco.families import FAMILIES
from taco.workflow.schema import workflow_schema
from taco.model.modeling import pretraining_model_class
size = workflow_schema()["properties"]["pretrain"]["properties"]["sizes"]["additionalProperties"]
print(json.dumps({"families": list(FAMILIES), "enum": size["properties"]["architecture"]["enum"],
                  "cls": pretraining_model_class("deberta_v2").__name__}))
"""
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo)])})
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["families"] == ["bert", "roberta", "modernbert", "deberta_v2"] == res["enum"]
    assert res["cls"] == "DebertaV2PreTrainingModel"
