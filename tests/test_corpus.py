"""Corpus artifacts: synthetic, local (WikiText-2 from shared data), Hub path on local parquet."""

from __future__ import annotations

import json

import pytest

from pathlib import Path

import numpy as np

from taco.data.corpus import ArtifactMismatchError, build_corpus, document_ids, load_documents, main
from taco.data.local_text import split_documents
from taco.data.corpus_store import CorpusFileError, CorpusReader
from taco.data.detokenize import apply_unk_policy, wikitext_detokenize
from taco.data.synthetic import generate_documents


def test_detokenizer_rules():
    assert wikitext_detokenize("a well @-@ known 1 @,@ 000 ( 2 @.@ 5 % ) , he said .") == \
        "a well-known 1,000 (2.5 %), he said."
    assert wikitext_detokenize('the " best " players \' home') == 'the "best" players\' home'
    assert wikitext_detokenize(" = = History = = ") == " == History == "
    assert wikitext_detokenize("John 's dog") == "John's dog"
    assert apply_unk_policy("a <unk> b <unk>", "drop") == "a b "
    assert apply_unk_policy("<unk> x <unk>y", "keep_unk_token") == "[UNK] x <unk>y"
    with pytest.raises(ValueError, match="unknown <unk> policy"):
        apply_unk_policy("x", "map")


def test_split_documents():
    text = "a\nb\n \n\nc\n  \nd"
    assert split_documents(text, "blank_line") == ["a\nb", "c", "d"]
    assert split_documents(text, "line") == ["a", "b", "c", "d"]
    wt = " \n = T1 = \n \n p1 \n \n = = S = = \n \n p2 \n = T2 = \n p3 \n"
    assert split_documents(wt, "wikitext_article") == ["= T1 =\np1\n= = S = =\np2", "= T2 =\np3"]


def test_synthetic_corpus_artifact(tmp_path):
    out = build_corpus("synthetic", tmp_path / "c", num_documents=50, seed=1)
    ds = load_documents(out)
    assert ds["text"] == generate_documents(50, seed=1)
    m = json.loads((out / "manifest.json").read_text())
    assert m["kind"] == "corpus" and m["counts"]["documents"] == 50
    assert m["parameters"] == {"source": "synthetic", "num_documents": 50, "seed": 1}
    stamp = (out / "manifest.json").stat().st_mtime_ns
    build_corpus("synthetic", out, num_documents=50, seed=1)  # same parameters: reused
    assert (out / "manifest.json").stat().st_mtime_ns == stamp
    with pytest.raises(ArtifactMismatchError, match="other parameters"):
        build_corpus("synthetic", out, num_documents=50, seed=2)
    build_corpus("synthetic", out, num_documents=50, seed=2, overwrite=True)
    assert load_documents(out)["text"] == generate_documents(50, seed=2)


def test_local_wikitext2(shared_data, tmp_path):
    src = shared_data / "corpus" / "wikitext-2" / "valid.txt"
    lines = src.read_text(encoding="utf-8").splitlines()
    # independent counts: a block starts at a non-blank line after a blank one (or the file start)
    n_blocks = sum(1 for i, ln in enumerate(lines) if ln.strip() and (i == 0 or not lines[i - 1].strip()))
    n_articles = sum(1 for ln in lines if ln.startswith(" = ") and not ln.startswith(" = = "))
    n_unk = sum(ln.split().count("<unk>") for ln in lines)
    assert n_unk > 0

    blocks = load_documents(build_corpus("local", tmp_path / "b", paths=[src], unk_policy="keep_unk_token"))
    assert len(blocks) == n_blocks
    assert sum(d.split().count("[UNK]") for d in blocks["text"]) == n_unk

    art = build_corpus("local", tmp_path / "a", paths=[src], split_by="wikitext_article",
                       wikitext_detokenize=True, unk_policy="drop")
    docs = load_documents(art)["text"]
    assert len(docs) == n_articles
    assert not any("<unk>" in d or " @-@ " in d or " @,@ " in d for d in docs)
    assert docs[0].startswith("= Homarus gammarus =\nHomarus gammarus, known as the European lobster")
    m = json.loads((art / "manifest.json").read_text())
    # sha256 as recorded in shared/data/SOURCES.md
    assert list(m["inputs"].values()) == ["f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"]
    # a folder input: every *.txt/*.tokens/*.raw file in it, sorted
    folder = load_documents(build_corpus("local", tmp_path / "f", paths=[src.parent], split_by="line"))
    assert len(folder) > n_blocks


def test_local_errors(tmp_path, capsys):
    assert main(["--source", "local", "--paths", str(tmp_path / "nope.txt"), "--output", str(tmp_path / "o")]) == 2
    assert "nope.txt" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no"):
        build_corpus("local", tmp_path / "o", paths=[tmp_path / "empty"])
    with pytest.raises(ValueError, match="unknown corpus source"):
        build_corpus("web", tmp_path / "o")


def test_hub_source_on_local_parquet(tmp_path):
    """The Hub code path (load_dataset(id, config, split)) on folders laid out like Hub repos."""
    from datasets import Dataset

    wiki, books = tmp_path / "wiki", tmp_path / "books"
    (wiki / "20231101.en").mkdir(parents=True)
    Dataset.from_dict({"id": ["1", "2", "3"], "title": ["A", "B", "C"], "text": ["alpha doc", "  ", "gamma doc"]}) \
        .to_parquet(str(wiki / "20231101.en" / "train-00000-of-00001.parquet"))
    (wiki / "README.md").write_text("---\nconfigs:\n- config_name: 20231101.en\n  data_files:\n"
                                    "  - split: train\n    path: 20231101.en/train-*\n---\n")
    (books / "data").mkdir(parents=True)
    Dataset.from_dict({"text": ["book one", "book two"]}).to_parquet(str(books / "data" / "train-00000-of-00001.parquet"))
    out = build_corpus("hub", tmp_path / "hub", hub_datasets=[str(wiki), str(books)],
                       hub_configs=["20231101.en", "none"], hub_splits=["train"],
                       cache_dir=str(tmp_path / "cache"))
    # the Hub cache files are read in place (no copy): empty rows stay, the packer skips them
    assert load_documents(out)["text"] == ["alpha doc", "  ", "gamma doc", "book one", "book two"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["parameters"]["hub"][0] == [str(wiki), "20231101.en", "train", None]
    assert len(m["hub_fingerprints"]) == 2
    assert [p["in_place"] for p in m["parts"]] == [True, True]
    assert all(f["path"].startswith(str((tmp_path / "cache").resolve())) for p in m["parts"] for f in p["files"])
    assert m["counts"]["bytes_in_artifact"] == 0 and not any((out / "data").iterdir())
    assert document_ids(out).tolist() == [0, 1, 2, 3, 4]
    # BookCorpus-like sentence rows: documents are spans of span_rows contiguous rows
    spans = build_corpus("hub", tmp_path / "hub2", hub_datasets=[str(wiki), str(books)],
                         hub_configs=["20231101.en", "none"], hub_rows=["document", "sentence"], span_rows=2,
                         cache_dir=str(tmp_path / "cache"))
    assert document_ids(spans).tolist() == [0, 1, 2, 3, 3]
    # a changed cache file is caught before anything reads it
    cache_file = Path(m["parts"][1]["files"][0]["path"])
    cache_file.write_bytes(cache_file.read_bytes()[:-40])
    with pytest.raises(CorpusFileError, match=str(cache_file)):
        CorpusReader(out)


def test_sentence_rows_spans(tmp_path):
    src = tmp_path / "book.txt"
    src.write_text("".join(f"sentence {i} .\n" for i in range(10)))
    out = build_corpus("local", tmp_path / "c", paths=[src], split_by="line", rows="sentence", span_rows=4)
    reader = CorpusReader(out)
    starts, stops = reader.documents()
    assert starts.tolist() == [0, 4, 8] and stops.tolist() == [4, 8, 10]
    assert document_ids(out).tolist() == [i // 4 for i in range(10)]
    assert reader.texts(np.arange(3, 6)) == ["sentence 3 .", "sentence 4 .", "sentence 5 ."]
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"] == {**m["counts"], "rows": 10, "documents": 3}
    with pytest.raises(ArtifactMismatchError, match="span_rows"):
        build_corpus("local", out, paths=[src], split_by="line", rows="sentence", span_rows=5)


def test_local_workers_same_artifact(shared_data, tmp_path):
    """Files read by 2 worker processes give the same text file, byte for byte, as 1."""
    src = shared_data / "corpus" / "wikitext-2"
    a = build_corpus("local", tmp_path / "a", paths=[src / "valid.txt", src / "test.txt"], workers=1)
    b = build_corpus("local", tmp_path / "b", paths=[src / "valid.txt", src / "test.txt"], workers=2)
    assert (a / "data" / "text.arrow").read_bytes() == (b / "data" / "text.arrow").read_bytes()
    assert len(load_documents(a)) > 1000


def test_bad_parquet_shard_named(tmp_path, capsys):
    """A truncated shard or one without the text column stops the step naming the shard."""
    from datasets import Dataset

    shards = tmp_path / "shards"
    shards.mkdir()
    for i in range(3):
        Dataset.from_dict({"text": [f"doc {i} {j}" for j in range(50)]}).to_parquet(str(shards / f"s{i}.parquet"))
    ok = build_corpus("local", tmp_path / "ok", paths=[shards])
    assert load_documents(ok)["text"][:2] == ["doc 0 0", "doc 0 1"] and len(load_documents(ok)) == 150
    bad = shards / "s1.parquet"
    bad.write_bytes(bad.read_bytes()[:100])
    with pytest.raises(CorpusFileError, match="s1.parquet"):
        build_corpus("local", tmp_path / "o1", paths=[shards])
    assert not (tmp_path / "o1").exists()
    Dataset.from_dict({"body": ["x"]}).to_parquet(str(bad))
    assert main(["--source", "local", "--paths", str(shards), "--output", str(tmp_path / "o2")]) == 2
    err = capsys.readouterr().err
    assert "s1.parquet" in err and "no text column 'text'" in err
    assert not (tmp_path / "o2").exists()


def test_local_corpus_mixes_wikitext_and_latin1_books(tmp_path):
    """WikiText files are detokenized, plain books are not; with encoding utf-8-or-latin-1 a Latin-1
    book is read (and listed), with the strict default it stops the step naming file and line."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(" The well @-@ known ship , he said . \n \n", encoding="utf-8")
    book = tmp_path / "book.txt"
    # 0xE6 is "æ" in Latin-1 and not valid UTF-8 on its own; ' , ' must survive in a book
    book.write_bytes(b"[C\xe6sar 1599]\n\nThey say ' so ' , and go .\r\n")
    with pytest.raises(ValueError, match=r"book\.txt:1: not UTF-8 text: byte\(s\) b'\\xe6' at column 3"):
        build_corpus("local", tmp_path / "strict", paths=[wiki, book], wikitext_detokenize=True)
    assert not (tmp_path / "strict").exists()
    out = build_corpus("local", tmp_path / "c", paths=[wiki, book], wikitext_detokenize=True,
                       encoding="utf-8-or-latin-1")
    assert load_documents(out)["text"] == ["The well-known ship, he said.", "[C\u00e6sar 1599]",
                                           "They say ' so ' , and go ."]
    m = json.loads((out / "manifest.json").read_text())
    assert m["local_files"] == {"latin1_files": ["book.txt"], "detokenized_files": ["wiki.txt"]}


def test_reader_texts_any_order_across_chunks(tmp_path):
    """CorpusReader.texts: rows in any order, across Arrow chunks (one per input file here)."""
    files = []
    for k in range(3):
        f = tmp_path / f"f{k}.txt"
        f.write_text("".join(f"file {k} line {i}\n" for i in range(7)))
        files.append(f)
    out = build_corpus("local", tmp_path / "c", paths=files, split_by="line")
    reader = CorpusReader(out)
    assert reader.column.num_chunks == 3
    rows = np.array([20, 0, 7, 13, 6, 6, 14])
    expected = [f"file {r // 7} line {r % 7}" for r in rows]
    assert reader.texts(rows) == expected
    assert reader.texts(np.arange(5, 9)) == [f"file {r // 7} line {r % 7}" for r in range(5, 9)]
    with pytest.raises(IndexError):
        reader.texts(np.array([3, 21]))


def test_split_by_paragraph_spans():
    text = "p1a\np1b\n\np2\n\n\np3\n\np4\n\np5\n"
    assert split_documents(text, "paragraphs:2") == ["p1a\np1b\np2", "p3\np4", "p5"]
    assert split_documents(text, "paragraphs:1") == split_documents(text, "blank_line")
    assert split_documents(text, "paragraphs:10") == ["p1a\np1b\np2\np3\np4\np5"]
    for bad in ("paragraphs:0", "paragraphs:x", "paragraphs", "sentence"):
        with pytest.raises(ValueError, match="unknown --split-by"):
            split_documents(text, bad)


def test_each_path_has_its_own_split(tmp_path):
    """WikiText by article and a folder of books in spans of 2 paragraphs, in one corpus; a single
    split for every path keeps the artifact key of a corpus built before per-path splits existed."""
    wiki = tmp_path / "wiki.txt"
    wiki.write_text(" = A = \n \n a1 \n \n a2 \n = B = \n \n b1 \n")
    books = tmp_path / "books"
    books.mkdir()
    (books / "x.txt").write_text("x1\n\nx2\n\nx3\n")
    (books / "y.txt").write_text("y1\n\ny2\n")
    out = build_corpus("local", tmp_path / "c", paths=[wiki, books], split_by=["wikitext_article", "paragraphs:2"])
    assert load_documents(out)["text"] == ["= A =\na1\na2", "= B =\nb1", "x1\nx2", "x3", "y1\ny2"]
    m = json.loads((out / "manifest.json").read_text())
    assert m["parameters"]["split_by"] == ["wikitext_article", "paragraphs:2"]  # one per path
    # one split for all paths: the string, as before (same parameters, so the same artifact key)
    one = build_corpus("local", tmp_path / "d", paths=[wiki, books], split_by=["blank_line"])
    old = build_corpus("local", tmp_path / "e", paths=[wiki, books], split_by="blank_line")
    mo, me = (json.loads((p / "manifest.json").read_text()) for p in (one, old))
    assert mo["parameters"]["split_by"] == "blank_line" and mo["artifact_key"] == me["artifact_key"]
    with pytest.raises(ValueError, match="3 values for 2 paths"):
        build_corpus("local", tmp_path / "f", paths=[wiki, books], split_by=["line", "line", "line"])


def test_cli_split_by_once_or_per_path(tmp_path):
    from taco.data.corpus import build_parser, main

    ns = build_parser().parse_args(["--output", "o", "--paths", "a", "b", "--split-by", "wikitext_article",
                                    "paragraphs:20"])
    assert ns.split_by == ["wikitext_article", "paragraphs:20"]
    assert build_parser().parse_args(["--output", "o"]).split_by == ["blank_line"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--output", "o", "--split-by", "paragraphs:0"])
    src = tmp_path / "t.txt"
    src.write_text("a\n\nb\n\nc\n")
    assert main(["--source", "local", "--paths", str(src), "--split-by", "paragraphs:2", "--output",
                 str(tmp_path / "c")]) == 0
    assert load_documents(tmp_path / "c")["text"] == ["a\nb", "c"]


# ---------------------------------------------------------------------------------------------
# the cap on a document's length (corpus.max_document_chars)
# ---------------------------------------------------------------------------------------------
def test_cap_document_cuts_at_lines_into_pieces_of_about_equal_length():
    from taco.data.local_text import cap_document

    lines = [f"line {i:04d} " + "word " * (i % 7 + 3) for i in range(1000)]  # verse: many short lines
    text = "\n".join(ln.strip() for ln in lines)
    pieces = cap_document(text, 5000)
    n = -(-len(text) // 5000)
    assert n <= len(pieces) <= n + 1  # ceil(len / cap) pieces, one more where the lines leave no slack
    assert all(len(p) <= 5000 for p in pieces)
    assert min(len(p) for p in pieces) > 0.4 * 5000  # no short remainder
    assert len(cap_document(text, 6000)) == -(-len(text) // 6000)
    assert "\n".join(pieces) == text  # cut at line boundaries only, nothing lost or reordered
    assert cap_document("short\ntext", 5000) == ["short\ntext"]
    # a line longer than the cap is cut at whitespace; a run without whitespace at the cap
    long_line = " ".join(f"w{i}" for i in range(400))
    cut = cap_document(long_line, 100)
    assert all(len(p) <= 100 for p in cut) and " ".join(cut) == long_line
    assert cap_document("x" * 250, 100) == ["x" * 100, "x" * 100, "x" * 50]
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="max-document-chars"):
            cap_document(text, bad)


def test_local_corpus_caps_long_documents_and_records_them(tmp_path):
    src = tmp_path / "book.txt"
    verse = "\n".join(f"verse line {i} of the long poem" for i in range(600))  # one blank-line paragraph
    src.write_text(f"a short paragraph\n\n{verse}\n\nanother short one\n")
    whole = build_corpus("local", tmp_path / "whole", paths=[src])
    assert len(load_documents(whole)["text"]) == 3
    capped = build_corpus("local", tmp_path / "capped", paths=[src], max_document_chars=2000)
    docs = load_documents(capped)["text"]
    assert docs[0] == "a short paragraph" and docs[-1] == "another short one"
    assert len(docs) - 2 in (-(-len(verse) // 2000), -(-len(verse) // 2000) + 1)
    assert all(len(d) <= 2000 for d in docs)
    assert "\n".join(docs[1:-1]) == verse
    m = json.loads((capped / "manifest.json").read_text())
    assert m["parameters"]["max_document_chars"] == 2000
    assert m["local_files"]["capped_documents"] == [{"file": "book.txt", "documents": 1, "pieces": len(docs) - 2,
                                                      "longest_chars": len(verse)}]
    mw = json.loads((whole / "manifest.json").read_text())
    assert "max_document_chars" not in mw["parameters"] and mw["artifact_key"] != m["artifact_key"]
    assert main(["--source", "local", "--paths", str(src), "--max-document-chars", "2000", "--output",
                 str(tmp_path / "cli")]) == 0
    assert load_documents(tmp_path / "cli")["text"] == docs
    with pytest.raises(ValueError, match="--source local only"):
        build_corpus("synthetic", tmp_path / "s", max_document_chars=2000)
    with pytest.raises(ValueError, match="max-document-chars"):
        build_corpus("local", tmp_path / "bad", paths=[src], max_document_chars=0)


def test_gutenberg_paradise_lost_is_capped(shared_data):
    """Paradise Lost's whitespace-only lines leave it 29 blank-line paragraphs, under the books' span of
    60: without a cap one ~457k-character document; with configs/cpu-real.yaml's cap pieces of at most
    that many characters."""
    import yaml

    from taco.data.local_text import read_local_documents

    book = shared_data / "corpus" / "gutenberg" / "milton-paradise.txt"
    if not book.is_file():
        pytest.skip(f"{book} absent")
    corpus = yaml.safe_load((Path(__file__).resolve().parent.parent / "configs" / "cpu-real.yaml").read_text())["corpus"]
    cap, split = corpus["max_document_chars"], corpus["split_by"][-1]
    whole = read_local_documents([book], split, encoding="utf-8-or-latin-1")
    assert len(whole) == 1 and len(whole[0]) > 400_000
    report: dict = {}
    pieces = read_local_documents([book], split, encoding="utf-8-or-latin-1", max_document_chars=cap, report=report)
    assert len(pieces) - -(-len(whole[0]) // cap) in (0, 1) and all(len(p) <= cap for p in pieces)
    assert "\n".join(pieces) == whole[0]
    assert report["capped_documents"][0]["pieces"] == len(pieces)
