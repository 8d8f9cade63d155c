"""``taco data-recipe`` (issue 53.1): the real-data folder of configs/cpu-real.yaml fetched from a local stand-in
Hub (``tests/hub_standin.py``: WikiText-2, GLUE, BERT's vocabulary) and a local HTTP copy of NLTK's
gutenberg.zip, checked, read back as the workflow reads it; offline it names what is missing."""

from __future__ import annotations

import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from taco.data.recipe import check_folder, sources


def _run(args, env_extra, cwd):
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-m", "taco", "data-recipe", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=900)


@pytest.fixture(scope="module")
def books_server(shared_data, tmp_path_factory):
    """NLTK's gutenberg.zip layout (``gutenberg/<name>.txt`` and a README) over HTTP on 127.0.0.1; three texts
    with CRLF line endings, as NLTK ships some of them."""
    root = tmp_path_factory.mktemp("books")
    with zipfile.ZipFile(root / "gutenberg.zip", "w") as z:
        z.writestr("gutenberg/README", "Project Gutenberg Selections\n")
        for i, p in enumerate(sorted((shared_data / "corpus" / "gutenberg").glob("*.txt"))):
            data = p.read_bytes()
            z.writestr(f"gutenberg/{p.name}", data.replace(b"\n", b"\r\n") if i % 6 == 0 and b"\r\n" not in data else data)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/gutenberg.zip"
    server.shutdown()
    server.server_close()


def test_the_recipe_fetches_a_folder_the_workflow_reads_and_checks_it(shared_data, books_server, tmp_path):
    from hub_standin import build_bert, build_glue, build_wikitext, serve

    from taco.data.glue import local_files, read_glue_tsv

    src = sources()
    hub = tmp_path / "hub"
    build_glue(hub / "datasets" / "nyu-mll" / "glue", shared_data / "glue", src["glue"]["tasks"])
    build_wikitext(hub / "datasets" / "Salesforce" / "wikitext", shared_data / "corpus" / "wikitext-2")
    build_bert(hub / "models" / "bert-base-uncased", shared_data / "bert" / "vocab.txt",
               shared_data / "bert" / "uncased_L-12_H-768_A-12" / "bert_config.json")
    out = tmp_path / "data"
    # a file that is already there is kept, never overwritten (and then named by the check)
    mine = out / "corpus" / "gutenberg" / "blake-poems.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own copy\n")
    with serve(hub) as server:
        env = {"HF_ENDPOINT": server.endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
               "HF_DATASETS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"}
        res = _run(["--output", str(out), "--books-url", books_server], env, tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert mine.read_text() == "my own copy\n"
    assert f"{mine}: not NLTK's text" in res.stderr and "1 problem(s)" in res.stderr, res.stderr
    mine.write_bytes((shared_data / "corpus" / "gutenberg" / "blake-poems.txt").read_bytes())
    assert check_folder(out) == []
    # what the workflow reads: every GLUE split's rows equal the original TSVs' (text and label)
    for task in src["glue"]["tasks"]:
        for split, path in local_files(task, out / "glue").items():
            got, want = read_glue_tsv(path, task), read_glue_tsv(local_files(task, shared_data / "glue")[split], task)
            assert got["label"] == pytest.approx(want["label"]), (task, split)
            for field in got:
                assert field == "label" or got[field] == want[field], (task, split, field)
    for name in ("valid.txt", "test.txt"):
        assert (out / "corpus" / "wikitext-2" / name).read_text() == \
            (shared_data / "corpus" / "wikitext-2" / name).read_text()
    record = json.loads((out / "SOURCES.json").read_text())
    assert "bert/vocab.txt" in record["files"] and "glue/SST-2/train.tsv" in record["files"]
    assert "corpus/gutenberg/blake-poems.txt" not in record["files"]  # not fetched: it was there
    assert record["revisions"]["nyu-mll/glue"]  # the Hub revision of what was fetched
    assert not list(out.rglob("*.part"))
    # run again: nothing left to fetch, complete
    with serve(hub) as server:
        again = _run(["--output", str(out)], {"HF_ENDPOINT": server.endpoint, "HF_HOME": str(tmp_path / "hf")}, tmp_path)
    assert again.returncode == 0 and "is complete" in again.stdout, again.stderr


def test_offline_it_names_what_is_missing_and_where_it_goes(tmp_path):
    out = tmp_path / "data"
    res = _run(["--output", str(out), "--books-url", "http://127.0.0.1:9/none.zip"],
               {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}, tmp_path)
    assert res.returncode == 1
    assert "fetching failed, what was written stays" in res.stderr
    assert f"{out}/corpus/wikitext-2/valid.txt: missing" in res.stderr
    assert f"{out}/glue/CoLA/train.tsv: missing (GLUE cola train, 8551 rows)" in res.stderr
    # offline (the fetch failed): where to put each file, not the command that just failed (fault sweep V.4)
    assert "put the file there" in res.stderr and f"run `taco data-recipe --output {out}`" not in res.stderr
    check = _run(["--check", "--output", str(out)], {"HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"}, tmp_path)
    assert check.returncode == 1 and f"run `taco data-recipe --output {out}`" in check.stderr
    assert not list(out.rglob("*.part"))


def test_the_check_names_a_wrong_file(shared_data, tmp_path):
    """A GLUE split with a row too few and a WikiText file of another split are named, with the fix."""
    import shutil

    out = tmp_path / "data"
    shutil.copytree(shared_data, out, ignore=shutil.ignore_patterns("QNLI", "SOURCES.md"))
    assert check_folder(out) == []
    rte = out / "glue" / "RTE" / "dev.tsv"
    rte.write_text("\n".join(rte.read_text().split("\n")[:-2]) + "\n")
    (out / "corpus" / "wikitext-2" / "valid.txt").write_bytes((out / "corpus" / "wikitext-2" / "test.txt").read_bytes())
    problems = check_folder(out)
    assert any(p.startswith(f"{rte}: 276 rows, expected 277") for p in problems), problems
    assert any("valid.txt: 64 articles, expected 60" in p for p in problems), problems
    assert len(problems) == 2


def test_damage_that_keeps_the_counts_is_found_by_its_checksum(shared_data, tmp_path):
    """Fault sweep V, item 4: a GLUE label flipped, one letter changed in WikiText, WikiText's validation file cut
    short: `--check` said "complete". A folder filled by hand is verified against the release checksums the recipe
    pins; a fetched one against its SOURCES.json; a complete read-only folder is not written to."""
    import shutil

    out = tmp_path / "data"
    shutil.copytree(shared_data, out, ignore=shutil.ignore_patterns("QNLI", "SOURCES.md"))
    assert check_folder(out) == []
    sst = out / "glue" / "SST-2" / "train.tsv"
    lines = sst.read_text().split("\n")
    lines[1] = lines[1][:-1] + ("1" if lines[1].endswith("0") else "0")
    sst.write_text("\n".join(lines))
    wiki = out / "corpus" / "wikitext-2" / "test.txt"
    text = wiki.read_text()
    wiki.write_text(text.replace(" the ", " thx ", 1))
    problems = check_folder(out)
    assert any(p.startswith(f"{sst}: sha256") and "not the released file's" in p for p in problems), problems
    assert any(p.startswith(f"{wiki}: sha256") for p in problems) and len(problems) == 2, problems
    # a folder with SOURCES.json: its record decides
    shutil.copy(shared_data / "glue" / "SST-2" / "train.tsv", sst)
    wiki.write_text(text)
    rec = {"files": {"glue/SST-2/train.tsv": {"sha256": "0" * 64}}, "revisions": {}}
    (out / "SOURCES.json").write_text(json.dumps(rec))
    assert [p for p in check_folder(out) if "SOURCES.json" in p and str(sst) in p]
    (out / "SOURCES.json").unlink()
    valid = out / "corpus" / "wikitext-2" / "valid.txt"
    valid.write_bytes(valid.read_bytes()[:-2000])
    assert any(p.startswith(f"{valid}: sha256") for p in check_folder(out))
    shutil.copy(shared_data / "corpus" / "wikitext-2" / "valid.txt", valid)
    # complete and read-only: nothing fetched, nothing written, no "fetching failed"
    os.chmod(out, 0o555)
    try:
        res = _run(["--output", str(out)], {"HF_HUB_OFFLINE": "1"}, tmp_path)
    finally:
        os.chmod(out, 0o755)
    assert res.returncode == 0 and "is complete" in res.stdout and "fetching failed" not in res.stderr, res.stderr
