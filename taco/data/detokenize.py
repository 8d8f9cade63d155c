"""Undo the WikiText tokenization (``wiki.*.tokens``), and a policy for its ``<unk>`` tokens.

WikiText (Merity et al. 2016) splits punctuation off words and escapes in-number symbols as
``@-@``, ``@,@``, ``@.@`` (``1 @,@ 000`` = ``1,000``; ``well @-@ known`` = ``well-known``). The
rules below follow the widely used detokenizer of Megatron-LM / lm-eval-harness
(``wikitext_detokenizer``), minus its PTB-only ``N`` rule.

``<unk>`` marks words outside the WikiText-2 vocabulary. Before WordPiece MLM it is either dropped
(``drop``) or mapped to the literal ``[UNK]`` (``keep_unk_token``), which a BERT fast tokenizer
matches as its special token.
"""

from __future__ import annotations

import re

UNK_POLICIES = ("drop", "keep_unk_token")
WIKITEXT_UNK = "<unk>"

_UNK_RE = re.compile(r"(?<!\S)<unk>(?!\S)")
_SPACES = re.compile(r"[ \t]{2,}")


def apply_unk_policy(text: str, policy: str) -> str:
    """Drop ``<unk>`` tokens (collapsing the spaces they leave) or map them to ``[UNK]``.

    Only whole whitespace-separated ``<unk>`` tokens are touched. ValueError for another policy.
    """
    if policy not in UNK_POLICIES:
        raise ValueError(f"unknown <unk> policy {policy!r}; expected one of {UNK_POLICIES}")
    if WIKITEXT_UNK not in text:
        return text
    if policy == "keep_unk_token":
        return _UNK_RE.sub("[UNK]", text)
    out = _UNK_RE.sub("", text)
    return "\n".join(_SPACES.sub(" ", line) for line in out.split("\n"))


def wikitext_detokenize(text: str) -> str:
    """Return ``text`` with WikiText's tokenization undone (one line or many).

    >>> wikitext_detokenize("the well @-@ known 1 @,@ 000 men ( at least ) , he said .")
    'the well-known 1,000 men (at least), he said.'
    """
    s = text
    # contractions and possessives
    s = s.replace("s '", "s'")
    s = re.sub(r"/' [0-9]/", r"/'[0-9]/", s)
    # number separators
    s = s.replace(" @-@ ", "-").replace(" @,@ ", ",").replace(" @.@ ", ".")
    # punctuation
    s = s.replace(" : ", ": ").replace(" ; ", "; ").replace(" . ", ". ")
    s = s.replace(" ! ", "! ").replace(" ? ", "? ").replace(" , ", ", ")
    # brackets and quotes
    s = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", s)
    s = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", s)
    s = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", s)
    s = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', s)
    s = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", s)
    # headings
    s = s.replace("= = = =", "====").replace("= = =", "===").replace("= =", "==")
    # miscellaneous
    s = s.replace(" " + chr(176) + " ", chr(176))
    s = s.replace(" \n", "\n").replace("\n ", "\n")
    s = s.replace(" 's", "'s")
    # a sentence-final period or comma at the end of a line
    s = re.sub(r" ([.,;:!?])(?=\s*$)", r"\1", s, flags=re.MULTILINE)
    return s
