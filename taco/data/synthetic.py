"""A corpus and GLUE-format tasks drawn from a synthetic language with learnable structure.

The offline default of the suite: pre-training corpus and all nine GLUE task names are generated
here in seconds, deterministically from a seed, with no download.

The language (lexicon, agreement, synonyms, sentiment, nesting; its rendering and the
``Sampler`` that draws its structures) is ``taco.data.synthetic_language``, re-exported here; this
module draws text from it: documents (``generate_documents``) and task rows.

Tasks (``build_glue_task``): same columns, label ids/names and metric as the GLUE task of the same
name; train and dev splits (MNLI: ``validation_matched`` on the training topics 0-3,
``validation_mismatched`` on topics 4-5, as MNLI's genres).
"""

from __future__ import annotations

import random
from dataclasses import replace

from taco.data.synthetic_language import (
    ADJECTIVES, N_ADJ, N_TOPICS, Clause, Flaws, Sampler,
    _form, _verb_pair, render_clause, render_np, render_question, text)
from taco.registry import GLUE_TASK_SPECS

# --------------------------------------------------------------------------------------------
# Documents


def _because(s: Sampler) -> list[str]:
    """``the dog chases the cats because they are hungry .`` (pronoun agrees with one NP)."""
    rng = s.rng
    pl = rng.random() < 0.5
    c = Clause(s.np(p_adj=0.3, plural=pl), "trans", s.verb(), s.np(p_adj=0.3, plural=not pl))
    ref_plural = rng.random() < 0.5
    a = s.adj()
    out = render_clause(c, rng, end=None)
    out += ["because", "they" if ref_plural else "it", "are" if ref_plural else "is",
            _form(ADJECTIVES[a[0]][a[1]], rng), "."]
    return out


def generate_document(rng: random.Random, min_sentences: int = 4, max_sentences: int = 10) -> str:
    """One document: a topic and a polarity, then sentences (clauses, conjunctions, because-clauses)."""
    s = Sampler(rng, rng.randrange(N_TOPICS), rng.randrange(2))
    sentences = []
    for _ in range(rng.randint(min_sentences, max_sentences)):
        r = rng.random()
        if r < 0.72:
            toks = render_clause(s.clause(), rng)
        elif r < 0.84:
            toks = render_clause(s.clause(), rng, end=None) + ["and"] + render_clause(s.clause(p_rel=0.1), rng)
        else:
            toks = _because(s)
        sentences.append(text(toks))
    return " ".join(sentences)


def generate_documents(num_documents: int = 4000, seed: int = 0, min_sentences: int = 4,
                       max_sentences: int = 10) -> list[str]:
    """``num_documents`` documents (about 75 words each at the defaults: 4000 docs ~ 1.8 MB).

    Deterministic in (num_documents, seed, min/max_sentences); document i does not depend on
    ``num_documents`` (a larger corpus extends a smaller one).
    """
    if num_documents < 1:
        raise ValueError(f"num_documents must be >= 1, got {num_documents}")
    if not 1 <= min_sentences <= max_sentences:
        raise ValueError(f"need 1 <= min_sentences <= max_sentences, got {min_sentences}, {max_sentences}")
    rng = random.Random(f"taco-synthetic-corpus/{seed}")
    return [generate_document(rng, min_sentences, max_sentences) for _ in range(num_documents)]


# --------------------------------------------------------------------------------------------
# GLUE-format tasks

#: (train rows, dev rows per dev split) by task: the registry entries' ``synthetic_sizes``
DEFAULT_SIZES: dict[str, tuple[int, int]] = {
    n: t.synthetic_sizes for n, t in GLUE_TASK_SPECS.items() if t.synthetic_sizes and t.synthetic_rows}

MATCHED_TOPICS = (0, 1, 2, 3)
MISMATCHED_TOPICS = (4, 5)


def _sampler(rng: random.Random, topics=tuple(range(N_TOPICS)), polarity: int | None = None) -> Sampler:
    return Sampler(rng, rng.choice(topics), rng.randrange(2) if polarity is None else polarity)


def _paraphrase(c: Clause, rng: random.Random) -> Clause:
    """Same meaning: maybe move an attributive adjective into ``that is ADJ`` (or back)."""
    subj, obj = c.subj, c.obj
    if subj.adj is not None and subj.rel is None and rng.random() < 0.5:
        subj = replace(subj, adj_rel=not subj.adj_rel)
    if obj is not None and obj.adj is not None and obj.rel is None and rng.random() < 0.5:
        obj = replace(obj, adj_rel=not obj.adj_rel)
    return replace(c, subj=subj, obj=obj)


def _change_meaning(c: Clause, s: Sampler) -> Clause:
    """One content change: subject or object noun, verb, an adjective, or subject/object swap."""
    rng = s.rng
    opts = ["subj", "verb"]
    if c.obj is not None:
        opts += ["obj", "swap"]
    if c.subj.adj is not None:
        opts.append("adj")
    what = rng.choice(opts)
    if what == "subj":
        return replace(c, subj=replace(c.subj, noun=s.noun(exclude=c.subj.noun)))
    if what == "obj":
        return replace(c, obj=replace(c.obj, noun=s.noun(exclude=c.obj.noun)))
    if what == "verb":
        return replace(c, verb=s.verb(exclude=c.verb))
    if what == "adj":
        a = c.subj.adj
        return replace(c, subj=replace(c.subj, adj=(1 - a[0], a[1])))  # antonym
    if c.subj.noun == c.obj.noun:
        return replace(c, verb=s.verb(exclude=c.verb))
    return replace(c, subj=replace(c.obj, rel=None), obj=replace(c.subj, rel=None))


def _pair_different(render, a: Clause, b: Clause, rng: random.Random) -> tuple[str, str]:
    """Render two clauses; re-draw synonyms (a few tries) so the two texts differ."""
    t1 = text(render(a, rng))
    t2 = text(render(b, rng))
    for _ in range(5):
        if t1 != t2:
            break
        t2 = text(render(b, rng))
    return t1, t2


def _row_cola(rng):
    s = _sampler(rng)
    c = s.clause(p_adj=0.3, p_rel=0.5, p_neg=0.15)
    if rng.random() < 0.65:
        return {"sentence": text(render_clause(c, rng)), "label": 1}
    kinds = ["main_verb", "main_verb", "order"]
    if c.subj.rel is not None:
        kinds += ["rel_verb", "rel_verb"]
    if c.subj.det != "the":
        kinds.append("det")
    kind = rng.choice(kinds)
    good = render_clause(c, rng)
    if kind == "order":
        toks = list(good)
        while True:
            i = rng.randrange(len(toks) - 2)  # never the final "."
            if toks[i] != toks[i + 1]:
                toks[i], toks[i + 1] = toks[i + 1], toks[i]
                break
    else:
        toks = render_clause(c, rng, Flaws(**{kind: True}))
    return {"sentence": text(toks), "label": 0}


def _row_sst2(rng):
    label = rng.randrange(2)
    s = _sampler(rng, polarity=label)
    s.p_polarity = 1.0
    if rng.random() < 0.5:
        neg = rng.random() < 0.3
        adj = s.adj(label if not neg else 1 - label)
        c = Clause(s.np(p_adj=0.0, p_rel=0.2), "cop", adj=adj, negated=neg)
    else:
        c = Clause(s.np(p_adj=1.0, p_rel=0.15), "trans", s.verb(), s.np(p_adj=0.4))
    return {"sentence": text(render_clause(c, rng)), "label": label}


def _row_paraphrase(rng, question: bool, p_pos: float, fields: tuple[str, str]):
    s = _sampler(rng)
    c = s.clause(kind="trans", p_adj=0.5, p_rel=0.3 if not question else 0.15, p_neg=0.1)
    label = int(rng.random() < p_pos)
    other = _paraphrase(c, rng) if label else _paraphrase(_change_meaning(c, s), rng)
    render = render_question if question else render_clause
    t1, t2 = _pair_different(render, c, other, rng)
    return {fields[0]: t1, fields[1]: t2, "label": label}


def _row_stsb(rng):
    s = _sampler(rng)
    c = Clause(s.np(p_adj=1.0), "trans", s.verb(), s.np(p_adj=1.0))
    keep = rng.randint(0, 5)
    slots = rng.sample(["subj", "sadj", "verb", "obj", "oadj"], 5 - keep)
    sim = 5.0 - len(slots)
    subj, obj, verb = c.subj, c.obj, c.verb
    for slot in slots:
        if slot == "subj":
            subj = replace(subj, noun=s.noun(exclude=subj.noun))
        elif slot == "obj":
            obj = replace(obj, noun=s.noun(exclude=obj.noun))
        elif slot == "verb":
            verb = s.verb(exclude=verb)
        else:
            np_ = subj if slot == "sadj" else obj
            a = np_.adj
            new = (rng.randrange(2), rng.randrange(N_ADJ))
            while new == a:
                new = (rng.randrange(2), rng.randrange(N_ADJ))
            if new[0] == a[0]:
                sim += 0.5  # same polarity: half similar
            np_ = replace(np_, adj=new)
            if slot == "sadj":
                subj = np_
            else:
                obj = np_
    other = Clause(subj, "trans", verb, obj)
    t1, t2 = _pair_different(render_clause, c, _paraphrase(other, rng), rng)
    return {"sentence1": t1, "sentence2": t2, "label": float(sim)}


def _row_mnli(rng, topics):
    s = _sampler(rng, topics)
    c = Clause(s.np(p_adj=1.0, p_rel=0.3), "trans", s.verb(), s.np(p_adj=0.0))
    label = rng.randrange(3)  # entailment, neutral, contradiction
    h = replace(c, subj=replace(c.subj, rel=None))
    if rng.random() < 0.5:
        h = replace(h, subj=replace(h.subj, adj=None))
    if label == 0:
        rel = c.subj.rel
        if rel is not None and rng.random() < 0.4:
            kind, verb, inner = rel
            head = replace(c.subj, rel=None, adj=None)
            h = Clause(head, "trans", verb, inner) if kind == "subj" else Clause(inner, "trans", verb, head)
    elif label == 1:
        if rng.random() < 0.5:
            h = replace(h, obj=replace(h.obj, adj=s.adj()))
        else:
            h = replace(h, obj=replace(h.obj, noun=s.noun(exclude=h.obj.noun)))
    else:
        if rng.random() < 0.5 or h.subj.adj is None:
            h = replace(h, negated=True)
        else:
            a = h.subj.adj
            h = replace(h, subj=replace(h.subj, adj=(1 - a[0], a[1])))
    t1, t2 = _pair_different(render_clause, c, _paraphrase(h, rng), rng)
    return {"premise": t1, "hypothesis": t2, "label": label}


def _row_qnli(rng):
    s = _sampler(rng)
    c = Clause(s.np(p_adj=0.3), "trans", s.verb(), s.np(p_adj=0.3, p_rel=0.3))
    label = rng.randrange(2)  # 0 entailment: the sentence answers the question
    q = c
    if label == 1:
        r = rng.random()
        if r < 0.4:
            q = replace(q, verb=s.verb(exclude=c.verb))
        elif r < 0.8:
            q = replace(q, subj=replace(q.subj, noun=s.noun(exclude=c.subj.noun)))
        else:
            q = replace(q, negated=True)
    qs = replace(q.subj, adj=None if rng.random() < 0.5 else q.subj.adj, rel=None)
    toks = ["what", "do" if qs.plural else "does"] + render_np(qs, rng)
    if q.negated:
        toks.append("not")
    toks += [_form(_verb_pair(q.verb), rng), "?"]
    return {"question": text(toks), "sentence": text(render_clause(c, rng)), "label": label}


def _row_rte(rng):
    s = _sampler(rng)
    c1 = Clause(s.np(p_adj=0.5), "trans", s.verb(), s.np(p_adj=0.3))
    c2 = s.clause(p_adj=0.3, p_rel=0.0, p_neg=0.0)
    premise = text(render_clause(c1, rng, end=None) + ["and"] + render_clause(c2, rng))
    label = rng.randrange(2)  # 0 entailment
    base = c1 if (c2.kind != "trans" or rng.random() < 0.5) else c2
    h = replace(base, subj=replace(base.subj, adj=base.subj.adj if rng.random() < 0.5 else None))
    if label == 1:
        r = rng.random()
        if r < 0.35:
            h = replace(h, negated=True)
        elif r < 0.7 and c2.kind == "trans":
            other = c2 if base is c1 else c1
            h = replace(h, obj=other.obj)  # mixes the two clauses
            if h.obj == base.obj:
                h = replace(h, negated=True)
        else:
            h = _change_meaning(h, s)
    return {"sentence1": premise, "sentence2": text(render_clause(_paraphrase(h, rng), rng)), "label": label}


def _row_wnli(rng):
    s = _sampler(rng)
    pl = rng.random() < 0.5
    subj, obj = s.np(p_adj=0.0, plural=pl), s.np(p_adj=0.0, plural=not pl)
    while obj.noun == subj.noun:
        obj = replace(obj, noun=s.noun())
    c = Clause(subj, "trans", s.verb(), obj)
    ref = subj if rng.random() < 0.5 else obj
    adj = s.adj()
    a = _form(ADJECTIVES[adj[0]][adj[1]], rng)
    s1 = render_clause(c, rng, end=None) + ["because", "they" if ref.plural else "it",
                                           "are" if ref.plural else "is", a, "."]
    label = rng.randrange(2)  # 1 entailment
    target = ref if label == 1 else (obj if ref is subj else subj)
    h = Clause(replace(target, det="the"), "cop", adj=adj)
    return {"sentence1": text(s1), "sentence2": text(render_clause(h, rng)), "label": label}


def cola_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic CoLA rows (acceptable / unacceptable clauses)."""
    return [_row_cola(rng) for _ in range(n)]


def sst2_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic SST-2 rows (polarity of the clause's adjectives)."""
    return [_row_sst2(rng) for _ in range(n)]


def mrpc_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic MRPC rows (paraphrase or not, 65% paraphrases)."""
    return [_row_paraphrase(rng, False, 0.65, ("sentence1", "sentence2")) for _ in range(n)]


def qqp_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic QQP rows (question paraphrases, 40% duplicates)."""
    return [_row_paraphrase(rng, True, 0.4, ("question1", "question2")) for _ in range(n)]


def stsb_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic STS-B rows (graded similarity 0-5)."""
    return [_row_stsb(rng) for _ in range(n)]


def mnli_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic MNLI rows; the mismatched dev split draws from topics the others never use."""
    topics = MISMATCHED_TOPICS if split == "validation_mismatched" else MATCHED_TOPICS
    return [_row_mnli(rng, topics) for _ in range(n)]


def qnli_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic QNLI rows."""
    return [_row_qnli(rng) for _ in range(n)]


def rte_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic RTE rows."""
    return [_row_rte(rng) for _ in range(n)]


def wnli_rows(rng: random.Random, n: int, split: str) -> list[dict]:
    """``n`` synthetic WNLI rows."""
    return [_row_wnli(rng) for _ in range(n)]


def _stand_in(task: str):
    """(row function, (train, dev) sizes) of ``task``'s synthetic stand-in, from its registry entry
    (``GlueTask.synthetic_rows``, ``"module:function"``, imported here; ``synthetic_sizes``). Raises
    ValueError naming the task when it is unknown or has none."""
    import importlib

    spec = GLUE_TASK_SPECS.get(task)
    if spec is None:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_SPECS)}")
    if not spec.synthetic_rows or not spec.synthetic_sizes:
        raise ValueError(f"GLUE task {task!r} has no synthetic stand-in: its GlueTask entry (taco/registry.py) "
                         "sets no synthetic_rows / synthetic_sizes; use glue.source local or hub")
    module, _, name = spec.synthetic_rows.partition(":")
    return getattr(importlib.import_module(module), name), spec.synthetic_sizes


def _rows(task: str, rng: random.Random, n: int, split: str) -> list[dict]:
    return _stand_in(task)[0](rng, n, split)


def build_glue_task(task: str, seed: int = 0, num_train: int | None = None,
                    num_dev: int | None = None) -> dict[str, list[dict]]:
    """Rows of the synthetic task ``task``: split -> list of {text fields..., "label"}.

    Splits are those of ``taco.registry.GLUE_TASK_SPECS[task]`` (``train`` plus the dev split(s)).
    Labels use the Hub ids of the real task (STS-B: float 0-5). Each split is drawn from its own
    stream seeded by (task, split, seed), so changing ``num_train`` leaves dev unchanged.
    Sizes default to ``DEFAULT_SIZES[task]``.
    """
    t = GLUE_TASK_SPECS[task]
    n_train, n_dev = _stand_in(task)[1]
    n_train = n_train if num_train is None else num_train
    n_dev = n_dev if num_dev is None else num_dev
    if n_train < 1 or n_dev < 1:
        raise ValueError(f"{task}: num_train and num_dev must be >= 1, got {n_train}, {n_dev}")
    out = {}
    for split in t.splits:
        rng = random.Random(f"taco-synthetic-glue/{task}/{split}/{seed}")
        out[split] = _rows(task, rng, n_train if split == "train" else n_dev, split)
    return out


#: test split name -> the dev split whose distribution it follows (MNLI: matched/mismatched
#: topics; ``ax``, the diagnostic set predicted by the MNLI model, follows the matched one)
_TEST_LIKE = {"test": "validation", "test_matched": "validation_matched",
              "test_mismatched": "validation_mismatched", "ax": "validation_matched"}


def build_glue_test_split(task: str, split: str, seed: int = 0, num: int | None = None) -> list[dict]:
    """Rows of an unlabelled test split of the synthetic task ``task`` (text fields only).

    ``split`` is one of ``test``, ``test_matched``, ``test_mismatched``, ``ax`` (the names of
    ``taco.data.glue.glue_test_splits``); the rows are drawn like the matching dev split from a stream
    of their own (seeded by task, split and seed), so they never repeat a train or dev row's draw.
    ``num`` defaults to the dev size of ``DEFAULT_SIZES[task]``. Raises ValueError for an unknown
    task or split, or ``num < 1``.
    """
    if task not in GLUE_TASK_SPECS:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {sorted(GLUE_TASK_SPECS)}")
    if split not in _TEST_LIKE:
        raise ValueError(f"{task}: unknown test split {split!r}; expected one of {sorted(_TEST_LIKE)}")
    n = _stand_in(task)[1][1] if num is None else num
    if n < 1:
        raise ValueError(f"{task}/{split}: num must be >= 1, got {n}")
    rng = random.Random(f"taco-synthetic-glue/{task}/{split}/{seed}")
    fields = GLUE_TASK_SPECS[task].text_fields
    return [{f: r[f] for f in fields} for r in _rows(task, rng, n, _TEST_LIKE[split])]
