"""``taco data-recipe``: fetch and check the real-data folder that ``configs/cpu-real.yaml`` reads.

The folder (``data_root``) holds::

    corpus/wikitext-2/{valid,test}.txt   WikiText-2 (tokenized release), one Hub row per line
    corpus/gutenberg/*.txt               NLTK's 18 ``gutenberg`` texts (BookCorpus's stand-in)
    glue/<TASK>/{train,dev}.tsv          GLUE in the original layout (CoLA, SST-2, MRPC, STS-B, RTE, WNLI)
    bert/vocab.txt                       bert-base-uncased's WordPiece vocabulary (the paper configuration's)

What is fetched from where, and what is checked, is data: ``taco/resources/data_sources.json`` (every
caveat in ``docs/data.md``). WikiText-2 and GLUE come from the Hugging Face Hub through ``datasets``
(``HF_ENDPOINT`` / ``HF_HOME`` as usual; the tests serve a local stand-in), the books from NLTK's
``gutenberg.zip`` (``--books-url``; a ``file://`` URL takes a local copy). GLUE rows are written with
:data:`taco.registry.GLUE_TASK_SPECS`' local columns and label strings, so :func:`taco.data.glue.read_glue_tsv`
reads them back into the Hub's rows; the bytes are not those of the GLUE script (byte equality with
another copy is not the aim: ``<output>/SOURCES.json`` records the sha256 of every file written, with the
Hub revision of each dataset).

``--check`` fetches nothing: it lists each missing or wrong file with what to do (the command that fetches
it, or where to put it), exit 1 if any. A file that exists is never overwritten: the recipe fetches only
what is missing, so a folder filled by hand (``../shared/data``) is checked, not replaced.

Checks: each book's sha256 with CRLF turned into LF (NLTK ships three with CRLF and copies differ only in
that) equals the recorded one; each GLUE split has the released row count; each WikiText file is UTF-8
with its article count (``" = Title = "`` lines).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import zipfile
from importlib import resources
from pathlib import Path
from typing import Any

from taco.errors import UsageError

__all__ = ["sources", "check_folder", "checksum_problems", "fetch", "main"]


def sources() -> dict[str, Any]:
    """The recipe's data (``taco/resources/data_sources.json``)."""
    return json.loads(resources.files("taco.resources").joinpath("data_sources.json").read_text())


def _sha256_lf(data: bytes) -> str:
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()


def _articles(text: str) -> int:
    """WikiText top-level headings: ``" = Title = "`` lines (not ``" = = Section = = "``)."""
    return sum(1 for line in text.split("\n") if line.startswith(" = ") and not line.startswith(" = = "))


def check_folder(root: str | Path, *, offline: bool = False) -> list[str]:
    """Problems of the folder ``root`` against the recipe (module docstring): one line per file, naming it
    and what to do (``offline``: where to put it, not the command that fetches it); empty when the folder is
    complete. Every file's bytes are verified (:func:`checksum_problems`)."""
    content = _content_problems(root, offline)
    named = {line.split(": ", 1)[0] for line in content}
    return content + [line for line in checksum_problems(root)[0] if line.split(": ", 1)[0] not in named]


def checksum_problems(root: str | Path) -> tuple[list[str], list[str]]:
    """(problems, unverified) of the folder's checksums: a file recorded in ``<root>/SOURCES.json`` must have the
    sha256 recorded there (it was fetched with it); another file with a release checksum pinned in
    ``data_sources.json`` (``release_sha256``: a folder filled by hand) must have that one; a file with neither is
    listed as unverified. A file that is missing is left to :func:`check_folder`'s other lines."""
    root, src = Path(root), sources()
    record_path = root / "SOURCES.json"
    try:
        recorded = json.loads(record_path.read_text())["files"] if record_path.is_file() else {}
    except (ValueError, KeyError, TypeError) as exc:
        return [f"{record_path}: not a record of taco data-recipe ({exc!r}); delete it to check against the "
                "release checksums"], []
    pins = {k: v for k, v in src.get("release_sha256", {}).items() if "/" in k}
    problems, unverified = [], []
    for rel in sorted(set(recorded) | set(pins)):
        p = root / rel
        if not p.is_file():
            continue
        found = hashlib.sha256(p.read_bytes()).hexdigest()
        if rel in recorded:
            if found != recorded[rel].get("sha256"):
                problems.append(f"{p}: sha256 {found[:12]}... differs from {record_path}'s {str(recorded[rel].get('sha256'))[:12]}... "
                                "(changed since it was fetched); delete it and fetch it again")
        elif found != pins[rel]:
            problems.append(f"{p}: sha256 {found[:12]}... is not the released file's {pins[rel][:12]}... (pinned in "
                            "taco/resources/data_sources.json: damaged or another version); replace it (docs/data.md)")
    for rel in sorted(src["wikitext"]["files"]):
        if rel not in recorded and rel not in pins and (root / rel).is_file():
            unverified.append(str(root / rel))
    return problems, unverified


def _content_problems(root: str | Path, offline: bool) -> list[str]:
    from taco.data.glue import local_files, read_glue_tsv

    root, src = Path(root), sources()
    out = []
    fetch = (f"put the file there (where each comes from: docs/data.md; offline, nothing can be fetched)" if offline
             else f"run `taco data-recipe --output {root}` (network: the Hub and {src['books']['url'].split('/')[2]})")
    for rel, spec in src["wikitext"]["files"].items():
        p = root / rel
        if not p.is_file():
            out.append(f"{p}: missing (WikiText-2 {spec['split']}, {src['wikitext']['hub_id']} "
                       f"{src['wikitext']['config']}); {fetch}")
            continue
        try:
            n = _articles(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            out.append(f"{p}: not UTF-8 ({exc}); delete it and {fetch}")
            continue
        if n != spec["articles"]:
            out.append(f"{p}: {n} articles, expected {spec['articles']} (another WikiText split?); delete it and {fetch}")
    books = root / src["books"]["folder"]
    for name, want in src["books"]["sha256_lf"].items():
        p = books / name
        if not p.is_file():
            out.append(f"{p}: missing (NLTK gutenberg: {name}); {fetch}")
        elif _sha256_lf(p.read_bytes()) != want:
            out.append(f"{p}: not NLTK's text (sha256 with LF line endings differs); delete it and {fetch}")
    bert = src["bert"]
    p = root / bert["path"]
    if not p.is_file():
        out.append(f"{p}: missing ({bert['hub_id']} {bert['file']}); {fetch}")
    elif hashlib.sha256(p.read_bytes()).hexdigest() != bert["sha256"]:
        out.append(f"{p}: not {bert['hub_id']}'s {bert['file']} (sha256 differs); delete it and {fetch}")
    for task in src["glue"]["tasks"]:
        for split, p in local_files(task, root / "glue").items():
            want = src["glue"]["rows"][task][split]
            if not p.is_file():
                out.append(f"{p}: missing (GLUE {task} {split}, {want} rows); {fetch}")
                continue
            try:
                n = len(read_glue_tsv(p, task)["label"])
            except ValueError as exc:
                out.append(f"{p}: unreadable ({exc}); delete it and {fetch}")
                continue
            if n != want:
                out.append(f"{p}: {n} rows, expected {want} (GLUE's released {split} split); delete it and {fetch}")
    return out


def _clean(text: str) -> str:
    """A field for a GLUE TSV: no tab or line break inside (the format has no quoting)."""
    return " ".join(str(text).replace("\t", " ").splitlines())


def _glue_lines(task: str, rows: Any) -> list[str]:
    """The rows of one Hub split (``datasets.Dataset``) as lines of the task's local GLUE file: a header
    of the local column names (an ``index`` first) or, for a headerless task (CoLA), its field count with
    the text and label at their positions; labels as the local strings."""
    import numpy as np

    from taco.registry import GLUE_TASK_SPECS

    t = GLUE_TASK_SPECS[task]
    label_str = ({v: k for k, v in t.local_labels.items()} if t.local_labels is not None else None)
    cols = [*t.text_fields, "label"]

    def label(v: Any) -> str:  # a score as the shortest text of its float32 (the Hub's type): exact round trip
        return str(np.float32(v)) if label_str is None else label_str[int(v)]

    if t.local_num_fields is not None:
        lines = []
        for r in rows:
            fields = ["hub"] * t.local_num_fields
            for c in cols:
                fields[int(t.local_columns[c])] = label(r[c]) if c == "label" else _clean(r[c])
            lines.append("\t".join(fields))
        return lines
    lines = ["\t".join(["index", *(str(t.local_columns[c]) for c in cols)])]
    for i, r in enumerate(rows):
        lines.append("\t".join([str(i), *(_clean(r[c]) for c in t.text_fields), label(r["label"])]))
    return lines


def _write_new(path: Path, data: bytes, written: dict[str, Any], root: Path, origin: str) -> None:
    """Write ``data`` to ``path`` atomically (never over an existing file) and record it; OSError naming the file
    (a full disk, a read-only folder) with the ``.part`` removed."""
    tmp = path.with_name(path.name + ".part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise OSError(exc.errno, f"{path}: cannot be written ({exc.strerror or exc})") from None
    written[path.relative_to(root).as_posix()] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                                                  "source": origin}


def _hub_revision(hub_id: str) -> str | None:
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(hub_id).sha
    except Exception:  # noqa: BLE001 - the revision is a record, not a requirement
        return None


def fetch(root: str | Path, *, books_url: str | None = None) -> dict[str, Any]:
    """Fetch every missing file of the folder ``root`` (module docstring); returns the record written to
    ``<root>/SOURCES.json`` (merged with an earlier one). Raises OSError / ``datasets`` errors naming the
    source when a download fails; what was written before stays."""
    import urllib.request

    from datasets import load_dataset

    from taco.data.glue import load_glue_task, local_files

    root, src = Path(root), sources()
    record_path = root / "SOURCES.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {"files": {}, "revisions": {}}
    written = record["files"]
    before = dict(written)
    wt = src["wikitext"]
    for rel, spec in wt["files"].items():
        if not (root / rel).exists():
            ds = load_dataset(wt["hub_id"], wt["config"], split=spec["split"])
            text = "".join(line if line.endswith("\n") else line + "\n" for line in ds["text"])
            _write_new(root / rel, text.encode("utf-8"), written, root, f"{wt['hub_id']} {wt['config']} {spec['split']}")
            record["revisions"][wt["hub_id"]] = _hub_revision(wt["hub_id"])
    books = root / src["books"]["folder"]
    names = src["books"]["sha256_lf"]
    if any(not (books / n).exists() for n in names):
        url = books_url or src["books"]["url"]
        with urllib.request.urlopen(url, timeout=120) as resp:  # noqa: S310 - a URL the user gives or the recorded one
            archive = zipfile.ZipFile(io.BytesIO(resp.read()))
        members = {Path(m).name: m for m in archive.namelist() if m.endswith(".txt")}
        absent = sorted(set(names) - set(members))
        if absent:
            raise OSError(f"{url}: the archive lacks {', '.join(absent)} (not NLTK's gutenberg.zip?)")
        for name in names:
            if not (books / name).exists():
                _write_new(books / name, archive.read(members[name]), written, root, f"{url} : {members[name]}")
    for task in src["glue"]["tasks"]:
        files = local_files(task, root / "glue")
        if all(p.exists() for p in files.values()):
            continue
        ds = load_glue_task(task, "hub", hub_id=src["glue"]["hub_id"])
        for split, p in files.items():
            if not p.exists():
                data = ("\n".join(_glue_lines(task, ds[split])) + "\n").encode("utf-8")
                _write_new(p, data, written, root, f"{src['glue']['hub_id']} {task} {split}")
        record["revisions"][src["glue"]["hub_id"]] = _hub_revision(src["glue"]["hub_id"])
    bert = src["bert"]
    if not (root / bert["path"]).exists():
        from huggingface_hub import hf_hub_download

        local = hf_hub_download(bert["hub_id"], bert["file"])
        _write_new(root / bert["path"], Path(local).read_bytes(), written, root, f"{bert['hub_id']} {bert['file']}")
    if written != before:  # a complete folder (read-only, perhaps) is not written to
        record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def build_parser() -> argparse.ArgumentParser:
    from taco.cli_parts import HelpFormatter

    p = argparse.ArgumentParser(prog="taco data-recipe", formatter_class=HelpFormatter,
                                description="Fetch the real-data folder of configs/cpu-real.yaml (WikiText-2 and "
                                            "GLUE from the Hub, NLTK's gutenberg texts) and check it; docs/data.md.")
    p.add_argument("--output", required=True, help="the folder (the config's data_root); existing files are kept")
    p.add_argument("--check", action="store_true", help="fetch nothing: list what is missing or wrong (exit 1 if any)")
    p.add_argument("--books-url", default=None,
                   help="where gutenberg.zip comes from (default: NLTK's, in data_sources.json; file:// for a local copy)")
    return p


def main(argv: list[str] | None = None) -> int:
    from taco.cli_parts import cli_error

    args = build_parser().parse_args(argv)
    root = Path(args.output)
    if root.exists() and not root.is_dir():
        return cli_error("data-recipe", UsageError(f"--output {root}: exists and is not a folder"))
    import os

    offline = any(os.environ.get(v, "0") not in ("0", "", "false", "False") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    if not args.check and check_folder(root):  # a complete folder needs nothing fetched
        try:
            rec = fetch(root, books_url=args.books_url)
        except Exception as exc:  # noqa: BLE001 - a download failure of any library: say what and go on to the check
            offline = True
            print(f"taco data-recipe: fetching failed, what was written stays: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
        else:
            print(f"taco data-recipe: {len(rec['files'])} file(s) recorded in {root / 'SOURCES.json'}")
    problems = check_folder(root, offline=offline)
    for path in checksum_problems(root)[1]:
        print(f"taco data-recipe: note: {path}: no checksum to verify it against (neither in SOURCES.json nor "
              "pinned)", file=sys.stderr)
    for line in problems:
        print(f"taco data-recipe: {line}", file=sys.stderr)
    if problems:
        print(f"taco data-recipe: {len(problems)} problem(s) in {root}", file=sys.stderr)
        return 1
    print(f"taco data-recipe: {root} is complete (WikiText-2 valid/test, 18 books, GLUE "
          f"{', '.join(sources()['glue']['tasks'])}, BERT's vocabulary)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
