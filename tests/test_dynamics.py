"""Tests for ``taco.evaluation.dynamics`` and ``taco.report.dynamics_figures`` (learning dynamics, Figures 2 and 6)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from taco.evaluation import dynamics as dyn  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from shared_data import bert_tokenizer as _tokenizer  # noqa: E402
from taco.evaluation.similarities import anchor_cosines, bootstrap_summary, context_similarity, cosine_rows, gather_valid, sample_baseline_tokens, sample_pairs, valid_token_mask


# ---------------------------------------------------------------------------------------------
# similarity functions on constructed tensors
# ---------------------------------------------------------------------------------------------


def test_cosine_rows_known_answers():
    x = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    y = torch.tensor([[2.0, 4.0, 6.0], [0.0, 5.0, 0.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(cosine_rows(x, y).numpy(), [1.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(cosine_rows(x[:1], -x[:1]).numpy(), [-1.0], atol=1e-6)


def test_valid_mask_excludes_special_and_padding():
    ids = torch.tensor([[101, 5, 6, 102, 0, 0], [101, 7, 103, 8, 102, 9]])
    att = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]])
    valid = valid_token_mask(ids, att, [0, 101, 102, 103])
    assert valid.tolist() == [[False, True, True, False, False, False],
                              [False, True, False, True, False, True]]


def _constructed_batch(H=8, L=10):
    """Two blocks: block 0 rows all e0, block 1 rows all e1 (orthogonal); special/padding rows are
    garbage pointing elsewhere, so including them would change the answers."""
    ids = torch.tensor([[101] + [5] * 7 + [102, 0], [101, 6, 6, 103, 6, 6, 6, 6, 102, 0]])
    att = (ids != 0).long()
    hidden = torch.zeros(2, L, H)
    hidden[0, :, 0] = 3.0
    hidden[1, :, 1] = 0.5
    garbage = torch.randn(L, H) + 10.0
    for b in range(2):
        bad = ~valid_token_mask(ids[b : b + 1], att[b : b + 1], [0, 101, 102, 103])[0]
        hidden[b][bad] = garbage[bad]
    return ids, att, hidden


@pytest.mark.parametrize("seed", [0, 1])
def test_context_similarity_identical_rows_and_orthogonal_blocks(seed):
    ids, att, hidden = _constructed_batch()
    valid = valid_token_mask(ids, att, [0, 101, 102, 103])
    blocks = gather_valid(hidden, valid)
    assert [len(b) for b in blocks] == [7, 6]
    pairs = sample_pairs([len(b) for b in blocks], 50, np.random.default_rng(seed))
    sims = context_similarity(blocks, pairs)
    np.testing.assert_allclose(sims["intra"], [1.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(sims["inter"], [0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(sims["gap"], [1.0, 1.0], atol=1e-6)


def test_context_similarity_matches_exhaustive_average():
    """Sampled means converge to the exact all-pairs means (checked on a tiny random case)."""
    g = torch.Generator().manual_seed(0)
    blocks = [torch.randn(5, 4, generator=g) + torch.tensor([2.0, 0, 0, 0]), torch.randn(4, 4, generator=g)]
    pairs = sample_pairs([5, 4], 40_000, np.random.default_rng(0))
    sims = context_similarity(blocks, pairs)
    nb = [torch.nn.functional.normalize(b, dim=-1) for b in blocks]
    c00 = nb[0] @ nb[0].T
    exact_intra0 = (c00.sum() - c00.diag().sum()) / (5 * 4)
    exact_inter0 = (nb[0] @ nb[1].T).mean()
    assert abs(sims["intra"][0] - exact_intra0.item()) < 0.01
    assert abs(sims["inter"][0] - exact_inter0.item()) < 0.01


def test_sample_pairs_never_pairs_a_token_with_itself_or_crosses_blocks_wrongly():
    lengths = [3, 2, 5]
    p = sample_pairs(lengths, 500, np.random.default_rng(3))
    offsets = np.array([0, 3, 5])
    block_of = np.searchsorted(offsets, np.arange(10), side="right") - 1
    anchor = np.repeat(np.arange(3), 500)
    assert (p.intra_a != p.intra_b).all()
    assert (block_of[p.intra_a] == anchor).all() and (block_of[p.intra_b] == anchor).all()
    assert (block_of[p.inter_a] == anchor).all() and (block_of[p.inter_b] != anchor).all()
    with pytest.raises(ValueError):
        sample_pairs([3], 10, np.random.default_rng(0))
    with pytest.raises(ValueError):
        sample_pairs([3, 1], 10, np.random.default_rng(0))


def test_bootstrap_summary():
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.35, 0.25])
    s = bootstrap_summary(x, seed=0)
    assert s["n_blocks"] == 7 and s["ci_low"] < s["mean"] < s["ci_high"]
    assert s == bootstrap_summary(x, seed=0)
    const = bootstrap_summary(np.full(5, 0.7), seed=0)
    assert const["ci_low"] == const["ci_high"] == pytest.approx(0.7)
    assert bootstrap_summary(np.array([0.3]), seed=0)["ci_low"] is None


def test_anchor_cosines_known_answers():
    emb = torch.eye(6)  # orthogonal embeddings
    targets, base = np.array([1, 3, 5]), np.array([2, 4, 0])
    reps = 2.5 * emb[torch.as_tensor(targets)]  # states equal (up to scale) to their anchors
    aligned, rand = anchor_cosines(reps, emb, targets, base)
    np.testing.assert_allclose(aligned, 1.0, atol=1e-6)
    np.testing.assert_allclose(rand, 0.0, atol=1e-6)


def test_baseline_tokens_differ_from_targets():
    pool = np.array([1, 1, 1, 2, 3, 4])
    targets = np.array([1, 1, 2, 3, 4, 1])
    out = sample_baseline_tokens(targets, pool, np.random.default_rng(0))
    assert (out != targets).all() and np.isin(out, pool).all()


# ---------------------------------------------------------------------------------------------
# tiny checkpoint end to end
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny BERT checkpoint (2 layers, H=128) and packed blocks (train 4, validation 12, L=32;
    odd blocks end in padding)."""
    import datasets
    from transformers import BertConfig, BertForMaskedLM

    root = tmp_path_factory.mktemp("dyn")
    tok = _tokenizer()
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=512, max_position_embeddings=64)
    ck = root / "step-100"
    BertForMaskedLM(cfg).save_pretrained(ck)
    tok.save_pretrained(ck)
    (ck / "manifest.json").write_text(json.dumps(
        {"step": 100, "objective": "mlm", "size": "tiny", "fraction": 1.0}))
    rng = np.random.default_rng(0)
    L = 32

    def rows(n):
        out = []
        for _ in range(n):
            body = rng.integers(2000, 8000, size=L - 2).tolist()
            out.append([tok.cls_token_id] + body + [tok.sep_token_id])
        for row in out[1::2]:  # every other block padded: [SEP] then 5 x [PAD]
            row[-6:] = [tok.sep_token_id] + [tok.pad_token_id] * 5
        return {"input_ids": out}

    blocks = root / "blocks"
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows(4)),
                          "validation": datasets.Dataset.from_dict(rows(12))}).save_to_disk(str(blocks))
    return ck, blocks, root


def _run(ck, blocks, out, *extra):
    return dyn.main(["--checkpoint", str(ck), "--blocks", str(blocks), "--output", str(out),
                     "--num-blocks", "8", "--max-pairs", "800", "--device", "cpu", "--n-resamples", "999",
                     *extra])


def test_cli_end_to_end_and_reproducible(tiny, capsys):
    ck, blocks, root = tiny
    a, b, c = root / "a" / "dynamics.json", root / "b.json", root / "c.json"
    assert _run(ck, blocks, a, "--batch-size", "3") == 0
    assert _run(ck, blocks, b, "--batch-size", "8") == 0
    assert _run(ck, blocks, c, "--seed", "1") == 0
    ra, rb, rc = (json.loads(p.read_text()) for p in (a, b, c))
    assert ra["step"] == 100 and ra["objective"] == "mlm" and ra["size"] == "tiny" and ra["fraction"] == 1.0
    assert len(ra["checkpoint_manifest_sha256"]) == 64 and ra["num_blocks"] == 8 and ra["seed"] == 0
    for rep in ("h", "g"):
        for kind in ("intra", "inter", "gap"):
            s = ra[rep][kind]
            assert s["ci_low"] <= s["mean"] <= s["ci_high"]
            assert s["n_pairs"] == (1600 if kind == "gap" else 800)
        assert ra[rep]["gap"]["mean"] == pytest.approx(ra[rep]["intra"]["mean"] - ra[rep]["inter"]["mean"])
    an = ra["anchor_alignment"]
    assert an["n_masked"] > 0 and an["aligned"]["n_positions"] == an["n_masked"]
    assert an["n_selected"] >= an["n_masked"] and ra["masking"] == "taco.model.masking.mask_tokens"
    assert an["difference"]["mean"] == pytest.approx(an["aligned"]["mean"] - an["random_baseline"]["mean"])
    assert "anchor_alignment_head" in ra
    # no special or padding token counted: 30 body tokens per block, 25 in the odd (padded) blocks
    assert any(i % 2 for i in ra["block_indices"])
    n_tokens_expected = sum(25 if i % 2 else 30 for i in ra["block_indices"])
    assert ra["num_tokens"] == n_tokens_expected
    # same seed -> identical file (but for wall time); batch size changes nothing beyond round-off
    a2 = root / "a2.json"
    assert _run(ck, blocks, a2, "--batch-size", "3") == 0
    r1, r2 = json.loads(a.read_text()), json.loads(a2.read_text())
    for r in (r1, r2):
        r.pop("wall_time_s")
    assert r1 == r2
    for rep in ("h", "g"):
        for kind in ("intra", "inter", "gap"):
            assert ra[rep][kind]["mean"] == pytest.approx(rb[rep][kind]["mean"], abs=1e-6)
    assert ra["anchor_alignment"]["aligned"]["mean"] == pytest.approx(rb["anchor_alignment"]["aligned"]["mean"], abs=1e-6)
    assert rc["block_indices"] != ra["block_indices"] or rc["h"] != ra["h"]
    assert "intra" in capsys.readouterr().out


def test_cli_bad_inputs_name_the_path(tiny, tmp_path, capsys):
    ck, blocks, _ = tiny
    out = tmp_path / "x.json"
    bad_ck = tmp_path / "ck"
    bad_ck.mkdir()
    assert _run(bad_ck, blocks, out) == 2
    assert str(bad_ck / "manifest.json") in capsys.readouterr().err
    assert _run(ck, blocks, out, "--split", "test") == 2
    err = capsys.readouterr().err
    assert str(blocks) in err and "'test'" in err
    assert _run(ck, tmp_path / "nope", out) == 2
    assert str(tmp_path / "nope") in capsys.readouterr().err
    assert not out.exists()


# ---------------------------------------------------------------------------------------------
# figures from fabricated dynamics.json files
# ---------------------------------------------------------------------------------------------


def _fake_record(objective, step, intra, inter, aligned=None):
    def stat(m, n=1000):
        return {"mean": m, "ci_low": m - 0.02, "ci_high": m + 0.02, "n_pairs": n, "n_blocks": 64}

    def anchor(m):
        return {"mean": m, "ci_low": m - 0.01, "ci_high": m + 0.01, "n_positions": 2000, "n_blocks": 64}

    rec = {"step": step, "objective": objective, "size": "small", "fraction": 1.0, "seed": 0,
           "num_blocks": 64}
    for rep, shift in (("h", 0.0), ("g", -0.1)):
        rec[rep] = {"intra": stat(intra + shift), "inter": stat(inter + shift),
                    "gap": stat(intra - inter, 2000)}
    a = 0.3 if aligned is None else aligned
    rec["anchor_alignment"] = {"aligned": anchor(a), "random_baseline": anchor(0.02),
                               "difference": anchor(a - 0.02), "n_masked": 2000}
    return rec


def test_figures_from_fabricated_inputs(tmp_path):
    from taco.commands import dynamics_figures as dynamics_plots

    paths = []
    for obj, intra in (("mlm", [0.6, 0.45, 0.35]), ("taco", [0.6, 0.55, 0.55]), ("mlm_tp", [0.6, 0.4, 0.3])):
        for step, v in zip((10_000, 50_000, 250_000), intra):
            p = tmp_path / obj / f"step-{step}" / "dynamics.json"
            p.parent.mkdir(parents=True)
            p.write_text(json.dumps(_fake_record(obj, step, v, 0.2, aligned=0.1 + step / 1e6)))
            paths.append(str(p))
    out = tmp_path / "results"
    assert dynamics_plots.main(["--inputs", *paths, "--output-dir", str(out), "--dpi", "60"]) == 0
    for name in ("figure6.png", "figure6.pdf", "figure2.png", "figure2.pdf"):
        assert (out / name).stat().st_size > 1000, name


def test_figures_errors(tmp_path, capsys):
    from taco.commands import dynamics_figures as dynamics_plots

    p = tmp_path / "d.json"
    p.write_text(json.dumps(_fake_record("taco", 100, 0.5, 0.2)))
    # figure 2 needs MLM records
    assert dynamics_plots.main(["--inputs", str(p), "--output-dir", str(tmp_path / "o")]) == 2
    assert "mlm" in capsys.readouterr().err
    assert dynamics_plots.main(["--inputs", str(tmp_path / "missing.json"), "--output-dir",
                                str(tmp_path / "o")]) == 2
    assert "missing.json" in capsys.readouterr().err
    q = tmp_path / "dup.json"
    q.write_text(json.dumps(_fake_record("taco", 100, 0.4, 0.2)))
    assert dynamics_plots.main(["--inputs", str(p), str(q), "--output-dir", str(tmp_path / "o")]) == 2
    assert "dup.json" in capsys.readouterr().err


def test_weights_not_those_of_the_manifest_are_refused(tiny, tmp_path, capsys):
    """taco dynamics on a checkpoint whose model.safetensors is not the one its manifest recorded: exit 2
    naming the file, no output."""
    import shutil

    from taco.manifest import sha256_file

    ck, blocks, _ = tiny
    bad = tmp_path / "step-100"
    shutil.copytree(ck, bad)
    m = json.loads((bad / "manifest.json").read_text())
    m["model_sha256"] = sha256_file(bad / "model.safetensors")
    data = bytearray((bad / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (bad / "model.safetensors").write_bytes(bytes(data))
    (bad / "manifest.json").write_text(json.dumps(m))
    out = tmp_path / "d.json"
    assert _run(bad, blocks, out) == 2
    assert str(bad / "model.safetensors") in capsys.readouterr().err and not out.exists()


def test_the_masking_rate_is_the_runs_own(tiny, tmp_path):
    """``taco dynamics`` masks at the rate the checkpoint was pre-trained with (its manifest's
    ``parameters.mlm_probability``, what ``pretrain.mlm_probability`` set), not at a fixed 0.15; a
    manifest that does not say keeps 0.15, and ``--mlm-probability`` overrides both."""
    import shutil

    ck, blocks, _ = tiny
    ck30 = tmp_path / "step-100"
    shutil.copytree(ck, ck30)
    man = json.loads((ck / "manifest.json").read_text())
    (ck30 / "manifest.json").write_text(json.dumps({**man, "parameters": {"mlm_probability": 0.3}}))
    runs = {}
    for name, c, extra in (("own-0.3", ck30, ()), ("unsaid", ck, ()), ("flag", ck30, ("--mlm-probability", "0.15"))):
        assert _run(c, blocks, tmp_path / f"{name}.json", *extra) == 0
        runs[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert [runs[n]["mlm_probability"] for n in ("own-0.3", "unsaid", "flag")] == [0.3, 0.15, 0.15]
    # twice the rate selects about twice the positions (the same blocks, seed and masking code)
    sel = {n: r["anchor_alignment"]["n_selected"] for n, r in runs.items()}
    assert sel["flag"] == sel["unsaid"] and 1.5 * sel["unsaid"] < sel["own-0.3"] < 2.6 * sel["unsaid"]
