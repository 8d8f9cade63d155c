"""A stand-in for the Hugging Face Hub on the loopback address, serving small copies of the paper's data.

``datasets.load_dataset`` and ``AutoTokenizer.from_pretrained`` talk to the Hub through
``huggingface_hub`` over HTTP at ``HF_ENDPOINT``. Pointing ``HF_ENDPOINT`` at this server makes them
run exactly as on a networked machine (repository info, file listings, HEAD for the ETag and commit
of each file, downloads into a fresh cache, then loading from it), while the bytes are small files
built from the real data in ``../shared/data``:

``datasets/nyu-mll/glue``
    ``<task>/{train,validation,test}-00000-of-00001.parquet`` per task, written by ``datasets`` from
    the original GLUE TSVs with the Hub dataset's columns, ``ClassLabel`` names and ``idx`` (the
    unlabelled test split cut to its first 200 rows), and a ``README.md`` whose YAML declares each
    config's data files and features (the Hub's layout).
``datasets/wikimedia/wikipedia``
    ``20231101.en/train-0000{0,1}-of-00002.parquet`` with the columns ``id, url, title, text``
    (articles of the WikiText-2 raw test split) and the ``configs:`` README of the Hub repository.
``datasets/rojagtap/bookcorpus``
    ``books_large_p1.txt`` and ``books_large_p2.txt`` (one lower-cased sentence per line, from the
    Gutenberg texts) and a README without data configs: as on the Hub, ``datasets`` reads the text
    files with its ``text`` builder (config ``default``, one column ``text``).
``bert-base-uncased``
    ``config.json``, ``tokenizer_config.json``, ``vocab.txt`` (the real one) and ``tokenizer.json``
    built from it with the BERT pipeline (no model weights: the workflow only takes the tokenizer).

The HTTP API implemented is the part ``huggingface_hub`` 1.x/2.x calls for these (see
``huggingface_hub.hf_api`` and ``file_download``): ``GET /api/{models,datasets}/<id>[/revision/<rev>]``
(info with ``sha``, ``siblings``, ``cardData``), ``GET .../tree/<rev>[/<path>]`` (``recursive``,
``expand``), ``POST .../paths-info/<rev>``, and ``HEAD``/``GET`` of ``[datasets/]<id>/resolve/<rev>/<file>``
with ``ETag``, ``X-Repo-Commit``, ``Content-Length`` and byte ranges; unknown repositories, revisions
and files answer 404 with the Hub's ``X-Error-Code``. Every request is recorded (``requests``).

Not exercised without a network: the real Hub's redirects (``bert-base-uncased`` ->
``google-bert/bert-base-uncased``, LFS files served from a CDN or Xet storage), authentication and
rate limits, and the full-size data (the real corpora are tens of GB).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LFS_SUFFIXES = (".parquet", ".arrow", ".safetensors", ".bin")
DATE = "2024-01-01T00:00:00.000Z"


# ------------------------------------------------------------------------------------ repositories
@dataclass
class Repo:
    """One repository: its files (relative POSIX paths) and the hashes the Hub reports for them."""

    kind: str  # "model" or "dataset"
    repo_id: str
    root: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    sha: str = ""

    def __post_init__(self):
        for p in sorted(self.root.rglob("*")):
            if p.is_file():
                data = p.read_bytes()
                rel = p.relative_to(self.root).as_posix()
                self.files[rel] = {
                    "size": len(data),
                    "oid": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "lfs": rel.endswith(LFS_SUFFIXES),
                }
        self.sha = hashlib.sha1(json.dumps({k: v["oid"] for k, v in self.files.items()},
                                           sort_keys=True).encode()).hexdigest()

    def etag(self, path: str) -> str:
        f = self.files[path]
        return f["sha256"] if f["lfs"] else f["oid"]

    def dirs(self) -> set[str]:
        out = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            out.update("/".join(parts[:i + 1]) for i in range(len(parts)))
        return out

    def entry(self, path: str, expand: bool) -> dict[str, Any]:
        if path in self.files:
            f = self.files[path]
            e: dict[str, Any] = {"type": "file", "oid": f["oid"], "size": f["size"], "path": path}
            if f["lfs"]:
                e["lfs"] = {"oid": f["sha256"], "size": f["size"], "pointerSize": 134}
        else:
            e = {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0, "path": path}
        if expand:
            e["lastCommit"] = {"id": self.sha, "title": "stand-in", "date": DATE}
        return e

    def card_data(self) -> dict[str, Any]:
        readme = self.files.get("README.md") and (self.root / "README.md").read_text()
        m = re.match(r"^---\n(.*?)\n---\n", readme or "", re.S)
        if not m:
            return {}
        import yaml

        return yaml.safe_load(m.group(1)) or {}

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "_id": self.sha[:24], "id": self.repo_id, "sha": self.sha, "lastModified": DATE, "createdAt": DATE,
            "private": False, "gated": False, "disabled": False, "downloads": 0, "likes": 0, "tags": [],
            "cardData": self.card_data(), "siblings": [{"rfilename": f} for f in self.files],
            "usedStorage": sum(f["size"] for f in self.files.values()),
        }
        if "/" in self.repo_id:
            info["author"] = self.repo_id.split("/")[0]
        if self.kind == "model":
            info.update(modelId=self.repo_id, library_name="transformers", pipeline_tag="fill-mask")
            cfg = self.root / "config.json"
            if cfg.is_file():
                c = json.loads(cfg.read_text())
                info["config"] = {"model_type": c.get("model_type"), "architectures": c.get("architectures")}
        return info


# ------------------------------------------------------------------------------------ server
class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    # -- helpers
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/json", head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def _json(self, obj: Any, head: bool = False) -> None:
        self._send(200, json.dumps(obj).encode(), head=head)

    def _error(self, status: int, code: str, message: str, head: bool = False) -> None:
        self._send(status, json.dumps({"error": message}).encode(),
                   {"X-Error-Code": code, "X-Error-Message": message}, head=head)

    def _repo(self, kind: str, segments: list[str]) -> tuple[Repo | None, list[str]]:
        """The repository named by the first one or two segments, and the segments after it."""
        for n in (2, 1):
            rid = "/".join(segments[:n])
            repo = self.server.repos.get((kind, rid))
            if repo is not None:
                return repo, segments[n:]
        return None, segments

    def _revision_ok(self, repo: Repo, rev: str) -> bool:
        return rev in ("main", repo.sha)

    # -- verbs
    def do_HEAD(self):
        self._handle("HEAD")

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def _handle(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        segments = [urllib.parse.unquote(s) for s in url.path.strip("/").split("/")]
        self.server.requests.append((method, self.path))
        head = method == "HEAD"
        body = b""
        if method == "POST":
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if segments[:1] == ["api"] and len(segments) >= 3 and segments[1] in ("models", "datasets"):
            return self._api("model" if segments[1] == "models" else "dataset", segments[2:], query, body, head)
        kind = "model"
        if segments[:1] == ["datasets"]:
            kind, segments = "dataset", segments[1:]
        repo, rest = self._repo(kind, segments)
        if repo is None:
            return self._error(404, "RepoNotFound", f"Repository {'/'.join(segments[:2])} not found", head)
        if len(rest) >= 3 and rest[0] == "resolve":
            return self._resolve(repo, rest[1], "/".join(rest[2:]), head)
        return self._error(404, "EntryNotFound", f"no route {url.path}", head)

    def _api(self, kind: str, segments: list[str], query: dict, body: bytes, head: bool) -> None:
        repo, rest = self._repo(kind, segments)
        if repo is None:
            return self._error(404, "RepoNotFound", f"Repository {'/'.join(segments[:2])} not found", head)
        if not rest or rest[0] == "revision":
            rev = rest[1] if len(rest) > 1 else "main"
            if not self._revision_ok(repo, rev):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
            return self._json(repo.info(), head)
        if rest[0] == "tree" and len(rest) >= 2:
            rev, path = rest[1], "/".join(rest[2:]).strip("/")
            if not self._revision_ok(repo, rev):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            expand = query.get("expand", ["false"])[0].lower() in ("1", "true")
            if path and path not in repo.dirs():
                return self._error(404, "EntryNotFound", f"{path} does not exist on {rev}", head)
            prefix = f"{path}/" if path else ""
            names = sorted(set(repo.files) | repo.dirs())
            items = [n for n in names if n.startswith(prefix) and (recursive or "/" not in n[len(prefix):])]
            return self._json([repo.entry(n, expand) for n in items], head)
        if rest[0] == "paths-info" and len(rest) >= 2:
            rev = rest[1]
            if not self._revision_ok(repo, rev):
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
            ctype = self.headers.get("Content-Type", "")
            if "json" in ctype:
                form = json.loads(body or b"{}")
                paths, expand = form.get("paths", []), bool(form.get("expand"))
            else:
                form = urllib.parse.parse_qs(body.decode())
                paths = form.get("paths", [])
                expand = form.get("expand", ["false"])[0].lower() in ("1", "true")
            known = set(repo.files) | repo.dirs()
            return self._json([repo.entry(p.strip("/"), expand) for p in paths if p.strip("/") in known], head)
        return self._error(404, "EntryNotFound", f"no API route {'/'.join(rest)}", head)

    def _resolve(self, repo: Repo, rev: str, path: str, head: bool) -> None:
        if not self._revision_ok(repo, rev):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
        if path not in repo.files:
            return self._error(404, "EntryNotFound", f"{path} does not exist on {rev}", head)
        data = (repo.root / path).read_bytes()
        headers = {"ETag": f'"{repo.etag(path)}"', "X-Repo-Commit": repo.sha, "Accept-Ranges": "bytes"}
        status = 200
        rng = self.headers.get("Range")
        if rng and not head:
            m = re.match(r"bytes=(\d*)-(\d*)$", rng.strip())
            if m:
                n = len(data)
                if m.group(1) == "":
                    start, end = max(0, n - int(m.group(2))), n - 1
                else:
                    start = int(m.group(1))
                    end = min(int(m.group(2)), n - 1) if m.group(2) else n - 1
                headers["Content-Range"] = f"bytes {start}-{end}/{n}"
                data, status = data[start:end + 1], 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    repos: dict[tuple[str, str], Repo]
    requests: list[tuple[str, str]]


@contextmanager
def serve(root: Path) -> Iterator[_Server]:
    """Serve every repository under ``root/models/<id>`` and ``root/datasets/<id>`` on 127.0.0.1.

    Yields the server: ``server.endpoint`` is the value for ``HF_ENDPOINT``, ``server.requests`` the
    (method, path) of every request so far.
    """
    server = _Server(("127.0.0.1", 0), _Handler)
    server.repos = {}
    server.requests = []
    for kind, folder in (("model", "models"), ("dataset", "datasets")):
        base = root / folder
        if not base.is_dir():
            continue
        for readme_or_file in sorted(base.rglob("*")):
            if readme_or_file.is_dir() and _is_repo_dir(readme_or_file):
                rid = readme_or_file.relative_to(base).as_posix()
                server.repos[(kind, rid)] = Repo(kind, rid, readme_or_file)
    server.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="hub-standin", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _is_repo_dir(path: Path) -> bool:
    """A repository folder: it holds ``.gitattributes``, as every Hub repository does."""
    return (path / ".gitattributes").is_file()


# ------------------------------------------------------------------------------------ the paper's data, small
GITATTRIBUTES = "*.parquet filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n"


def _yaml_front(meta: dict[str, Any], body: str = "") -> str:
    import yaml

    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n" + body


def build_glue(repo: Path, glue_dir: Path, tasks: list[str], test_rows: int = 200) -> None:
    """``nyu-mll/glue``: per task the train/validation(/test) parquet files from the GLUE TSVs.

    Train and validation are the whole files; the unlabelled test split keeps its first
    ``test_rows`` rows (fine-tuning predicts every test row for the GLUE server's files).
    """
    from datasets import Dataset

    from taco.data.glue import get_task, local_files, read_glue_tsv

    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".gitattributes").write_text(GITATTRIBUTES)
    configs, infos = [], []
    for name in tasks:
        task = get_task(name)
        feats = task.features()
        splits: dict[str, dict[str, list]] = {}
        for split, path in local_files(name, glue_dir).items():
            splits[split] = read_glue_tsv(path, name)
        test = glue_dir / task.dir_name / "test.tsv"
        if test.is_file():  # unlabelled: label -1, as the Hub's test splits
            lines = test.read_text(encoding="utf-8-sig").rstrip("\n").split("\n")[:test_rows + 1]
            header = lines[0].split("\t")
            cols: dict[str, list] = {f: [] for f in task.text_fields}
            for line in lines[1:]:
                row = line.split("\t")
                for f in task.text_fields:
                    col = task.local_columns.get(f, f)
                    cols[f].append(row[header.index(col)] if col in header else row[header.index(f)])
            cols["label"] = [-1.0 if task.is_regression else -1] * (len(lines) - 1)
            cols["idx"] = list(range(len(lines) - 1))
            splits["test"] = cols
        data_files, split_infos = [], []
        for split, cols in splits.items():
            ds = Dataset.from_dict({k: cols[k] for k in feats}, features=feats)
            (repo / name).mkdir(exist_ok=True)
            ds.to_parquet(str(repo / name / f"{split}-00000-of-00001.parquet"))
            data_files.append({"split": split, "path": f"{name}/{split}-*"})
            split_infos.append({"name": split, "num_bytes": ds.data.nbytes, "num_examples": len(ds)})
        configs.append({"config_name": name, "data_files": data_files})
        infos.append({"config_name": name, "features": feats._to_yaml_list(), "splits": split_infos})
    (repo / "README.md").write_text(_yaml_front({"language": ["en"], "pretty_name": "GLUE",
                                                 "dataset_info": infos, "configs": configs},
                                                "\n# GLUE (stand-in: a few tasks, from the original TSVs)\n"))


def build_wikipedia(repo: Path, raw_file: Path, articles: int = 24) -> None:
    """``wikimedia/wikipedia`` config ``20231101.en``: two parquet shards, columns id, url, title, text."""
    from datasets import Dataset, Features, Value

    from taco.data.detokenize import wikitext_detokenize

    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".gitattributes").write_text(GITATTRIBUTES)
    title_re = re.compile(r"^ ?= ([^=].*[^=]) = ?$")
    section_re = re.compile(r"^ ?(=\s?)+(.*?)(\s?=)+ ?$")
    rows: list[dict[str, str]] = []
    title, body = None, []
    for line in raw_file.read_text(encoding="utf-8").splitlines() + [" = END = "]:
        m = title_re.match(line)
        if m:
            if title and body:
                rows.append({"title": title, "text": wikitext_detokenize("\n\n".join(body)).strip()})
            title, body = wikitext_detokenize(m.group(1).strip()), []
        elif line.strip():
            s = section_re.match(line)
            body.append(s.group(2).strip() if s else line.strip())
        if len(rows) >= articles:
            break
    for i, r in enumerate(rows):
        r["id"] = str(1000 + i)
        r["url"] = "https://en.wikipedia.org/wiki/" + urllib.parse.quote(r["title"].replace(" ", "_"))
    feats = Features({k: Value("string") for k in ("id", "url", "title", "text")})
    ds = Dataset.from_list([{k: r[k] for k in feats} for r in rows], features=feats)
    (repo / "20231101.en").mkdir(exist_ok=True)
    half = len(ds) // 2
    for i, part in enumerate((ds.select(range(half)), ds.select(range(half, len(ds))))):
        part.to_parquet(str(repo / "20231101.en" / f"train-{i:05d}-of-00002.parquet"))
    meta = {"language": ["en"], "license": ["cc-by-sa-3.0", "gfdl"],
            "dataset_info": [{"config_name": "20231101.en", "features": feats._to_yaml_list(),
                              "splits": [{"name": "train", "num_bytes": ds.data.nbytes,
                                          "num_examples": len(ds)}]}],
            "configs": [{"config_name": "20231101.en",
                         "data_files": [{"split": "train", "path": "20231101.en/train-*"}]}]}
    (repo / "README.md").write_text(_yaml_front(meta, "\n# Wikipedia (stand-in: a few articles)\n"))


def build_wikitext(repo: Path, wikitext_dir: Path) -> None:
    """``Salesforce/wikitext`` config ``wikitext-2-v1``: validation and test parquet files, one row per line
    of the tokenized release (column ``text``, each line with its newline, as on the Hub)."""
    from datasets import Dataset, Features, Value

    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".gitattributes").write_text(GITATTRIBUTES)
    feats = Features({"text": Value("string")})
    (repo / "wikitext-2-v1").mkdir(exist_ok=True)
    split_infos, data_files = [], []
    for split, name in (("validation", "valid.txt"), ("test", "test.txt")):
        lines = (wikitext_dir / name).read_text(encoding="utf-8").splitlines(keepends=True)
        ds = Dataset.from_dict({"text": lines}, features=feats)
        ds.to_parquet(str(repo / "wikitext-2-v1" / f"{split}-00000-of-00001.parquet"))
        split_infos.append({"name": split, "num_bytes": ds.data.nbytes, "num_examples": len(ds)})
        data_files.append({"split": split, "path": f"wikitext-2-v1/{split}-*"})
    meta = {"language": ["en"], "license": ["cc-by-sa-3.0", "gfdl"],
            "dataset_info": [{"config_name": "wikitext-2-v1", "features": feats._to_yaml_list(), "splits": split_infos}],
            "configs": [{"config_name": "wikitext-2-v1", "data_files": data_files}]}
    (repo / "README.md").write_text(_yaml_front(meta, "\n# WikiText (stand-in: WikiText-2 validation and test)\n"))


def build_bookcorpus(repo: Path, texts: list[Path], sentences: int = 1500) -> None:
    """``rojagtap/bookcorpus``: ``books_large_p{1,2}.txt``, one lower-cased sentence per line."""
    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".gitattributes").write_text("*.txt filter=lfs diff=lfs merge=lfs -text\n")
    out: list[str] = []
    for t in texts:
        text = re.sub(r"\s+", " ", t.read_text(encoding="latin-1"))
        for s in re.split(r"(?<=[.!?])\s+", text):
            s = s.strip().lower()
            if 20 <= len(s) <= 400:
                out.append(s)
            if len(out) >= sentences:
                break
    half = len(out) // 2
    (repo / "books_large_p1.txt").write_text("\n".join(out[:half]) + "\n")
    (repo / "books_large_p2.txt").write_text("\n".join(out[half:]) + "\n")
    (repo / "README.md").write_text("---\nlicense: mit\n---\n")  # the Hub's 21-byte card, no configs


def build_bert(repo: Path, vocab: Path, bert_config: Path) -> None:
    """``bert-base-uncased``: the tokenizer files (and config.json), built from the real vocab.txt."""
    import tempfile

    from taco.data.tokenizer import tokenizer_from_vocab

    repo.mkdir(parents=True, exist_ok=True)
    (repo / ".gitattributes").write_text(GITATTRIBUTES)
    (repo / "vocab.txt").write_bytes(vocab.read_bytes())
    tok = tokenizer_from_vocab(vocab, lowercase=True, model_max_length=512)
    with tempfile.TemporaryDirectory() as tmp:
        tok.save_pretrained(tmp)
        (repo / "tokenizer.json").write_bytes((Path(tmp) / "tokenizer.json").read_bytes())
    (repo / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "model_max_length": 512}))
    cfg = json.loads(bert_config.read_text())
    cfg.update(architectures=["BertForMaskedLM"], model_type="bert", pad_token_id=0, layer_norm_eps=1e-12,
               position_embedding_type="absolute", use_cache=True)
    (repo / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def build_paper_hub(root: Path, shared: Path, glue_tasks: list[str]) -> Path:
    """Every repository the paper's configuration names, small, under ``root``; returns ``root``."""
    build_glue(root / "datasets" / "nyu-mll" / "glue", shared / "glue", glue_tasks)
    build_wikipedia(root / "datasets" / "wikimedia" / "wikipedia", shared / "corpus" / "wikitext-2" / "wiki.test.raw")
    gutenberg = shared / "corpus" / "gutenberg"
    build_bookcorpus(root / "datasets" / "rojagtap" / "bookcorpus",
                     [gutenberg / "carroll-alice.txt", gutenberg / "austen-emma.txt"])
    build_bert(root / "models" / "bert-base-uncased", shared / "bert" / "vocab.txt",
               shared / "bert" / "uncased_L-12_H-768_A-12" / "bert_config.json")
    return root
