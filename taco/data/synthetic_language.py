"""The synthetic language: its lexicon, sentence structures, their rendering and a sampler.

The grammar under ``taco.data.synthetic`` (which draws the pre-training corpus and the GLUE-format
tasks from it; every name here is also importable from there). ``vocabulary()`` lists every word
form it can produce.

The language (fixed lexicon; the seed only drives sampling):

- **Topics** (6): each has 8 noun lemmas and 4 transitive-verb lemmas. A document has one topic,
  and 85% of its content words come from it (topics shape word choice).
- **Synonyms**: every lemma has two surface forms used interchangeably (``dog``/``hound``). Only
  distributional learning tells that two forms mean the same; the paraphrase, similarity and
  entailment tasks depend on it.
- **Sentiment**: 12 positive and 12 negative adjective lemmas, paired as antonyms. A document has
  one polarity and 90% of its adjectives carry it (``x is not ADJ`` takes an adjective of the
  other polarity, so the meaning stays coherent). The SST-2-like task depends on it.
- **Agreement**: number (singular/plural) agrees between determiner and noun, subject and verb
  (``the dog runs`` / ``the dogs run``, ``does not`` / ``do not``, ``is`` / ``are``), and a pronoun
  with its antecedent (``it`` / ``they``). The CoLA-like and WNLI-like tasks depend on it.
- **Nesting**: noun phrases take subject- or object-relative clauses (``the dog that the cats
  chase``), up to depth 2, which put attractor nouns between a subject and its verb.

Surface text is lower case, space-separated, with ``.`` and ``?`` as separate tokens. Every lemma form
is a whole word of the bert-base-uncased vocabulary (tested; some plurals split into pieces), so
both a trained and the BERT WordPiece tokenizer work.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# Lexicon (each entry a lemma: its two synonymous surface forms)

TOPICS: tuple[dict, ...] = (
    {"name": "animals",
     "nouns": [("dog", "hound"), ("cat", "kitten"), ("horse", "mule"), ("bird", "robin"),
               ("rabbit", "hare"), ("frog", "toad"), ("goat", "lamb"), ("duck", "swan")],
     "verbs": [("chase", "follow"), ("feed", "nurse"), ("find", "spot"), ("bite", "kick")]},
    {"name": "food",
     "nouns": [("apple", "pear"), ("cake", "pie"), ("bread", "roll"), ("soup", "stew"),
               ("cookie", "snack"), ("carrot", "onion"), ("plate", "bowl"), ("cook", "baker")],
     "verbs": [("boil", "roast"), ("eat", "taste"), ("cut", "slice"), ("serve", "offer")]},
    {"name": "city",
     "nouns": [("car", "truck"), ("street", "road"), ("shop", "store"), ("bank", "office"),
               ("driver", "pilot"), ("tower", "building"), ("bridge", "tunnel"), ("train", "tram")],
     "verbs": [("build", "raise"), ("visit", "enter"), ("paint", "repair"), ("block", "close")]},
    {"name": "sea",
     "nouns": [("ship", "boat"), ("wave", "tide"), ("sailor", "captain"), ("island", "coast"),
               ("shark", "whale"), ("anchor", "rope"), ("shell", "pearl"), ("storm", "wind")],
     "verbs": [("sail", "steer"), ("pull", "drag"), ("hit", "strike"), ("sink", "wreck")]},
    {"name": "music",
     "nouns": [("song", "tune"), ("singer", "player"), ("drum", "bell"), ("guitar", "piano"),
               ("band", "choir"), ("note", "chord"), ("concert", "show"), ("record", "album")],
     "verbs": [("play", "perform"), ("hear", "enjoy"), ("write", "compose"), ("sing", "hum")]},
    {"name": "school",
     "nouns": [("student", "pupil"), ("teacher", "tutor"), ("book", "novel"), ("lesson", "lecture"),
               ("desk", "chair"), ("exam", "test"), ("pen", "pencil"), ("school", "college")],
     "verbs": [("read", "review"), ("grade", "mark"), ("explain", "describe"), ("learn", "master")]},
)

#: adjective lemmas by polarity (0 negative, 1 positive); lemma i of one polarity is the antonym
#: of lemma i of the other
ADJECTIVES: tuple[list, list] = (
    [("bad", "poor"), ("sad", "unhappy"), ("cruel", "harsh"), ("dirty", "messy"), ("dark", "grim"),
     ("weak", "frail"), ("shy", "nervous"), ("angry", "noisy"), ("cursed", "doomed"),
     ("dangerous", "risky"), ("stupid", "dumb"), ("ugly", "awful")],
    [("good", "fine"), ("happy", "glad"), ("kind", "gentle"), ("clean", "tidy"), ("bright", "sunny"),
     ("strong", "tough"), ("brave", "bold"), ("calm", "quiet"), ("lucky", "fortunate"),
     ("safe", "secure"), ("smart", "clever"), ("beautiful", "lovely")],
)

#: intransitive verb lemmas, shared by all topics
INTRANSITIVE: list = [("sleep", "rest"), ("wait", "stay"), ("smile", "laugh"), ("jump", "dance")]

DET_SG = ("the", "each", "this", "every", "one")
DET_PL = ("the", "some", "these", "many", "two")

N_TOPICS = len(TOPICS)
N_NOUNS = len(TOPICS[0]["nouns"])
N_VERBS = len(TOPICS[0]["verbs"])
N_ADJ = len(ADJECTIVES[0])


def vocabulary() -> list[str]:
    """Every word form the language can produce (nouns with plurals, verbs with -s), sorted."""
    words = set(DET_SG + DET_PL) | {"that", "is", "are", "not", "does", "do", "it", "they",
                                   "because", "and", "what", ".", "?"}
    for t in TOPICS:
        for a, b in t["nouns"]:
            words |= {a, b, a + "s", b + "s"}
        for a, b in t["verbs"]:
            words |= {a, b, a + "s", b + "s"}
    for a, b in INTRANSITIVE:
        words |= {a, b, a + "s", b + "s"}
    for pol in ADJECTIVES:
        for a, b in pol:
            words |= {a, b}
    return sorted(words)


# --------------------------------------------------------------------------------------------
# Structures


@dataclass(frozen=True)
class NP:
    """A noun phrase: noun (topic, lemma), number, determiner, optional adjective and clause.

    ``adj`` is (polarity, lemma); ``adj_rel`` renders it as ``that is ADJ`` after the noun.
    ``rel`` is ("subj", verb, NP) -> ``that chases NP``, or ("obj", verb, NP) -> ``that NP chases``;
    verb is (topic, lemma).
    """

    noun: tuple[int, int]
    plural: bool
    det: str
    adj: tuple[int, int] | None = None
    adj_rel: bool = False
    rel: tuple | None = None


@dataclass(frozen=True)
class Clause:
    """A clause: subject NP and a predicate: ``trans`` (verb, obj), ``cop`` (adj) or ``intr`` (verb)."""

    subj: NP
    kind: str
    verb: tuple[int, int] | None = None  # (topic, lemma) for trans; (-1, lemma) for intr
    obj: NP | None = None
    adj: tuple[int, int] | None = None
    negated: bool = False


@dataclass(frozen=True)
class Flaws:
    """Agreement errors to inject when rendering (CoLA-like negatives)."""

    main_verb: bool = False  # main verb/auxiliary takes the wrong number
    rel_verb: bool = False  # verb of the subject's relative clause takes the wrong number
    det: bool = False  # the subject's determiner takes the wrong number


def _form(pair: tuple[str, str], rng: random.Random | None) -> str:
    return pair[0] if rng is None else pair[rng.randrange(2)]


def _verb_pair(verb: tuple[int, int]) -> tuple[str, str]:
    t, i = verb
    return INTRANSITIVE[i] if t < 0 else TOPICS[t]["verbs"][i]


def _verb(verb: tuple[int, int], plural_subject: bool, rng) -> str:
    w = _form(_verb_pair(verb), rng)
    return w if plural_subject else w + "s"


def render_np(np_: NP, rng: random.Random | None, flaws: Flaws = Flaws(), out: list | None = None) -> list[str]:
    """Tokens of a noun phrase; ``rng`` picks synonym forms (None: first form)."""
    out = [] if out is None else out
    det = np_.det
    if flaws.det:
        det = _wrong_det(np_, rng)
    out.append(det)
    if np_.adj is not None and not np_.adj_rel:
        out.append(_form(ADJECTIVES[np_.adj[0]][np_.adj[1]], rng))
    noun = _form(TOPICS[np_.noun[0]]["nouns"][np_.noun[1]], rng)
    out.append(noun + "s" if np_.plural else noun)
    if np_.adj is not None and np_.adj_rel:
        out += ["that", "are" if np_.plural else "is", _form(ADJECTIVES[np_.adj[0]][np_.adj[1]], rng)]
    if np_.rel is not None:
        kind, verb, inner = np_.rel
        out.append("that")
        if kind == "subj":
            out.append(_verb(verb, np_.plural != flaws.rel_verb, rng))
            render_np(inner, rng, out=out)
        else:
            render_np(inner, rng, out=out)
            out.append(_verb(verb, inner.plural != flaws.rel_verb, rng))
    return out


def _wrong_det(np_: NP, rng) -> str:
    opts = [d for d in (DET_SG if np_.plural else DET_PL) if d != "the"]
    return opts[0] if rng is None else rng.choice(opts)


def render_clause(c: Clause, rng: random.Random | None, flaws: Flaws = Flaws(), end: str = ".") -> list[str]:
    """Tokens of a declarative clause, with ``end`` appended (None: no end token)."""
    out = render_np(c.subj, rng, Flaws(rel_verb=flaws.rel_verb, det=flaws.det))
    pl = c.subj.plural != flaws.main_verb
    if c.kind == "cop":
        out.append("are" if pl else "is")
        if c.negated:
            out.append("not")
        out.append(_form(ADJECTIVES[c.adj[0]][c.adj[1]], rng))
    else:
        assert c.verb is not None
        if c.negated:
            out += ["do" if pl else "does", "not", _form(_verb_pair(c.verb), rng)]
        else:
            out.append(_verb(c.verb, pl, rng))
        if c.kind == "trans":
            render_np(c.obj, rng, out=out)
    if end:
        out.append(end)
    return out


def render_question(c: Clause, rng: random.Random | None) -> list[str]:
    """``does the dog chase the cat ?`` (trans) / ``is the dog happy ?`` (cop) / ``do the dogs sleep ?``."""
    if c.kind == "cop":
        out = ["are" if c.subj.plural else "is"]
        render_np(c.subj, rng, out=out)
        if c.negated:
            out.append("not")
        out.append(_form(ADJECTIVES[c.adj[0]][c.adj[1]], rng))
    else:
        out = ["do" if c.subj.plural else "does"]
        render_np(c.subj, rng, out=out)
        if c.negated:
            out.append("not")
        out.append(_form(_verb_pair(c.verb), rng))
        if c.kind == "trans":
            render_np(c.obj, rng, out=out)
    out.append("?")
    return out


def text(tokens: list[str]) -> str:
    return " ".join(tokens)


# --------------------------------------------------------------------------------------------
# Sampling


class Sampler:
    """Draws structures for one document/row: a topic and a polarity shape word choice."""

    def __init__(self, rng: random.Random, topic: int, polarity: int,
                 p_topic: float = 0.85, p_polarity: float = 0.9):
        self.rng, self.topic, self.polarity = rng, topic, polarity
        self.p_topic, self.p_polarity = p_topic, p_polarity

    def topic_of_word(self) -> int:
        return self.topic if self.rng.random() < self.p_topic else self.rng.randrange(N_TOPICS)

    def noun(self, exclude: tuple[int, int] | None = None) -> tuple[int, int]:
        while True:
            n = (self.topic_of_word(), self.rng.randrange(N_NOUNS))
            if n != exclude:
                return n

    def verb(self, exclude: tuple[int, int] | None = None) -> tuple[int, int]:
        while True:
            v = (self.topic_of_word(), self.rng.randrange(N_VERBS))
            if v != exclude:
                return v

    def adj(self, polarity: int | None = None) -> tuple[int, int]:
        if polarity is None:
            polarity = self.polarity if self.rng.random() < self.p_polarity else 1 - self.polarity
        return (polarity, self.rng.randrange(N_ADJ))

    def np(self, p_adj: float = 0.4, p_rel: float = 0.0, depth: int = 0, plural: bool | None = None,
           det: str | None = None) -> NP:
        rng = self.rng
        pl = rng.random() < 0.5 if plural is None else plural
        det = det or rng.choice(DET_PL if pl else DET_SG)
        adj = self.adj() if rng.random() < p_adj else None
        rel = None
        if depth < 2 and rng.random() < p_rel:
            inner = self.np(p_adj=0.2, p_rel=p_rel * 0.3, depth=depth + 1)
            rel = ("subj" if rng.random() < 0.5 else "obj", self.verb(), inner)
        return NP(self.noun(), pl, det, adj, False, rel)

    def clause(self, kind: str | None = None, p_adj: float = 0.4, p_rel: float = 0.25,
               p_neg: float = 0.1) -> Clause:
        rng = self.rng
        if kind is None:
            r = rng.random()
            kind = "trans" if r < 0.65 else ("cop" if r < 0.85 else "intr")
        subj = self.np(p_adj=p_adj if kind != "cop" else 0.0, p_rel=p_rel)
        neg = rng.random() < p_neg
        if kind == "trans":
            return Clause(subj, "trans", self.verb(), self.np(p_adj=p_adj, p_rel=p_rel * 0.6), negated=neg)
        if kind == "cop":
            a = self.adj()
            if neg:  # "is not ADJ" says the document's polarity with an adjective of the other one
                a = (1 - a[0], a[1])
            return Clause(subj, "cop", adj=a, negated=neg)
        return Clause(subj, "intr", (-1, rng.randrange(len(INTRANSITIVE))), negated=neg)
