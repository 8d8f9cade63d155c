"""The synthetic language, its corpus and its GLUE-format tasks."""

from __future__ import annotations

import random

import pytest

from taco.data import synthetic as S
from taco.registry import GLUE_TASK_SPECS
from taco.data.glue import load_glue_task
from taco.data.synthetic_language import ADJECTIVES, Clause, DET_PL, DET_SG, Flaws, INTRANSITIVE, NP, TOPICS, render_clause, render_question, text, vocabulary

POLARITY = {w: pol for pol, lemmas in enumerate(ADJECTIVES) for pair in lemmas for w in pair}
NOUN_TOPIC = {}
for _t, _topic in enumerate(TOPICS):
    for _pair in _topic["nouns"]:
        for _w in _pair:
            NOUN_TOPIC[_w] = NOUN_TOPIC[_w + "s"] = _t


def test_corpus_deterministic_and_small():
    """Deterministic and small (speed lives in benchmarks, not in a timed test)."""
    docs = S.generate_documents(1000, seed=3)
    assert docs == S.generate_documents(1000, seed=3)
    assert docs != S.generate_documents(1000, seed=4)
    assert S.generate_documents(10, seed=3) == docs[:10]  # a larger corpus extends a smaller one
    size = sum(len(d) + 1 for d in docs)
    assert 150_000 < size < 600_000  # ~ 0.33 MB per 1000 documents: a few MB at most by default
    vocab = set(vocabulary())
    assert all(w in vocab for d in docs[:50] for w in d.split())


def test_lexicon_in_bert_vocab(shared_data):
    vocab = set((shared_data / "bert" / "vocab.txt").read_text().split("\n"))
    lemmas = set(DET_SG + DET_PL)
    for topic in TOPICS:
        lemmas |= {w for pair in topic["nouns"] + topic["verbs"] for w in pair}
    lemmas |= {w for pair in INTRANSITIVE for w in pair} | set(POLARITY)
    assert sorted(w for w in lemmas if w not in vocab) == []


def test_agreement_rendering():
    rng = random.Random(0)
    dog = NP((0, 0), False, "the")
    cats = NP((0, 1), True, "some")
    chase = (0, 0)
    c = Clause(NP((0, 0), False, "the", rel=("obj", chase, cats)), "trans", chase, cats)
    assert text(render_clause(c, None)) == "the dog that some cats chase chases some cats ."
    assert text(render_clause(c, None, Flaws(main_verb=True))) == "the dog that some cats chase chase some cats ."
    assert text(render_clause(c, None, Flaws(rel_verb=True))) == "the dog that some cats chases chases some cats ."
    neg = Clause(cats, "trans", chase, dog, negated=True)
    assert text(render_clause(neg, None)) == "some cats do not chase the dog ."
    assert text(render_question(Clause(dog, "cop", adj=(1, 1)), None)) == "is the dog happy ?"
    assert render_clause(c, rng)[-1] == "."


@pytest.mark.parametrize("task", sorted(GLUE_TASK_SPECS))
def test_every_glue_task_has_a_synthetic_twin(task):
    t = GLUE_TASK_SPECS[task]
    ds = load_glue_task(task, "synthetic", seed=0)
    train, dev = S.DEFAULT_SIZES[task]
    assert list(ds) == list(t.splits)
    assert len(ds["train"]) == train and all(len(ds[s]) == dev for s in t.dev_splits)
    assert ds["train"].features == t.features()  # Hub columns, ClassLabel / float32, idx int32
    labels = ds["train"]["label"]
    if t.is_regression:
        assert min(labels) >= 0 and max(labels) <= 5 and len(set(labels)) > 5
    else:
        counts = [labels.count(i) for i in range(t.num_labels)]
        assert min(counts) > 0.2 * len(labels) / t.num_labels, counts
    again = load_glue_task(task, "synthetic", seed=0, num_train=20)
    assert again["train"][:20] == ds["train"][:20] and again[t.dev_splits[0]][:] == ds[t.dev_splits[0]][:]
    other = load_glue_task(task, "synthetic", seed=1, num_train=20, num_dev=5)
    assert other["train"][:]["label"] != ds["train"][:20]["label"] or other["train"][:] != ds["train"][:20]


def test_wnli_label_follows_pronoun_agreement():
    # independent oracle: the hypothesis subject agrees in number with the pronoun iff entailment
    rows = S.build_glue_task("wnli", seed=0, num_train=200, num_dev=1)["train"]
    for r in rows:
        pron = "they" if " because they " in r["sentence1"] else "it"
        plural = r["sentence2"].split()[2] == "are"
        assert r["label"] == int(plural == (pron == "they")), r


def test_sst2_label_follows_adjective_polarity():
    rows = S.build_glue_task("sst2", seed=0, num_train=300, num_dev=1)["train"]
    for r in rows:
        words = r["sentence"].split()
        pols = [POLARITY[w] for w in words if w in POLARITY]
        if " not " in r["sentence"]:
            assert r["label"] == 1 - pols[-1], r
        else:
            assert set(pols) == {r["label"]}, r


def test_mnli_mismatched_uses_held_out_topics():
    ds = S.build_glue_task("mnli", seed=0, num_train=200, num_dev=200)

    def subject_topic(row):
        # the premise's first noun is the subject's head noun (only det/adj precede it)
        return next(NOUN_TOPIC[w] for w in row["premise"].split() if w in NOUN_TOPIC)

    # 85% of nouns come from the row's topic, so subject topics are mostly, not only, the split's
    m, mm = ds["validation_matched"], ds["validation_mismatched"]
    share_mm = sum(subject_topic(r) in S.MISMATCHED_TOPICS for r in mm) / len(mm)
    share_m = sum(subject_topic(r) in S.MISMATCHED_TOPICS for r in m) / len(m)
    assert share_mm > 0.8 and share_m < 0.2


def test_cola_negatives_break_agreement_or_order():
    rows = S.build_glue_task("cola", seed=0, num_train=300, num_dev=1)["train"]
    good = {r["sentence"] for r in rows if r["label"] == 1}
    bad = [r["sentence"] for r in rows if r["label"] == 0]
    assert 0.2 < len(bad) / len(rows) < 0.5
    assert not good & set(bad)
