"""Provenance for every artifact directory: ``manifest.json``, hashes and atomic writes.

A cache or artifact is keyed by what made it, never by a fixed path (see ``docs/INTERFACES.md``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

MANIFEST_NAME = "manifest.json"

#: packages whose versions are recorded in every manifest
TRACKED_PACKAGES = (
    "torch",
    "transformers",
    "datasets",
    "tokenizers",
    "accelerate",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
)


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Hex sha256 of one file's bytes. Raises FileNotFoundError naming the path."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_tree(path: str | os.PathLike, exclude: tuple[str, ...] = (MANIFEST_NAME,)) -> str:
    """Hex sha256 over a directory's files (relative names and contents, sorted), or of one file."""
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.name not in exclude):
        h.update(str(f.relative_to(path)).encode())
        h.update(b"\0")
        h.update(sha256_file(f).encode())
    return h.hexdigest()


def sha256_json(obj: Any) -> str:
    """Hex sha256 of a JSON-serialisable object in canonical form (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def package_versions(names: tuple[str, ...] = TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None where a package is not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def code_version() -> str:
    """``taco`` version plus the git commit of the source tree when it is a checkout."""
    from taco import __version__

    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "taco"],
            capture_output=True, text=True, timeout=5, check=True,
        ).stdout.strip()
        return f"{__version__}+g{commit}{'.dirty' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return __version__


def build_manifest(kind: str, parameters: Mapping[str, Any], inputs: Mapping[str, Any] | None = None,
                   **extra: Any) -> dict[str, Any]:
    """A manifest dict: kind, parameters, inputs (name -> sha256 or value), provenance, extra keys."""
    return {
        "kind": kind,
        "parameters": dict(parameters),
        "inputs": dict(inputs or {}),
        "code_version": code_version(),
        "packages": package_versions(),
        "host": platform.node(),
        "command": " ".join(sys.argv),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **extra,
    }


def finite_or_null(obj: Any) -> Any:
    """``obj`` with every NaN/inf float (also numpy/torch 0-d scalars) replaced by ``None``.

    Strict JSON has no NaN; an undefined number (e.g. the Pearson correlation of constant
    predictions) is written as ``null``. Dicts, lists and tuples are converted recursively.
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_null(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return finite_or_null(obj.item())
    return obj


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary sibling and a rename (never half-written).

    The parent folder is created. An OSError (e.g. ENOSPC) leaves any earlier file at ``path``
    intact and removes the temporary file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_json(path: str | os.PathLike, obj: Any, *, sort_keys: bool = False) -> Path:
    """Write ``obj`` as indented strict JSON (NaN/inf -> null, other objects via ``str``) atomically."""
    text = json.dumps(finite_or_null(obj), indent=2, sort_keys=sort_keys, default=str, allow_nan=False)
    return atomic_write_text(path, text + "\n")


def write_manifest(directory: str | os.PathLike, manifest: Mapping[str, Any]) -> Path:
    """Write ``manifest.json`` into ``directory`` (atomically: temp file then rename)."""
    return atomic_write_json(Path(directory) / MANIFEST_NAME, manifest, sort_keys=True)


class ManifestError(ValueError):
    """A damaged ``manifest.json`` (not JSON, not an object) or weights that are not those it recorded; the
    message names the file."""


def read_manifest(directory: str | os.PathLike) -> dict[str, Any]:
    """Read ``<directory>/manifest.json``: the one reader of manifests (every command uses it).

    FileNotFoundError names the directory if it is missing; :class:`ManifestError` names the file when it
    is not valid JSON, not text, or not a JSON object.
    """
    path = Path(directory) / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory}: no {MANIFEST_NAME}; the artifact is missing or incomplete "
            "(was it written by an interrupted run?)"
        )
    return read_json_object(path, ManifestError, "rerun the step that wrote it")


def read_json_object(path: str | os.PathLike, error: type[Exception], remedy: str = "") -> dict[str, Any]:
    """The JSON object in the file ``path``; ``error`` (a ValueError subclass of the caller's) names the file
    when it is not valid JSON, not text, or another JSON type than an object (``remedy`` ends the message)."""
    path = Path(path)
    tail = f"; {remedy}" if remedy else ""
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc}){tail}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file ({exc})") from None
    if not isinstance(record, dict):
        raise error(f"{path}: expected a JSON object, got a {type(record).__name__}")
    return record


def check_model_sha256(directory: str | os.PathLike, manifest: dict[str, Any]) -> None:
    """Check a checkpoint's ``model.safetensors`` against the ``model_sha256`` its manifest recorded (a
    flipped bit, a truncated or swapped file) before the weights are used; :class:`ManifestError` naming
    the file. A manifest without ``model_sha256`` (older checkpoints, the control) is not checked."""
    recorded = manifest.get("model_sha256")
    if not recorded:
        return
    model = Path(directory) / "model.safetensors"
    if not model.is_file():
        raise ManifestError(f"{model}: missing, but {Path(directory) / MANIFEST_NAME} records model_sha256")
    found = sha256_file(model)
    if found != recorded:
        raise ManifestError(f"{model}: sha256 {found[:12]}..., its manifest recorded model_sha256 "
                            f"{str(recorded)[:12]}... (damaged or swapped since it was written); rerun the "
                            "pre-training segment that wrote it")


def read_json_record(path: str | os.PathLike, required: tuple[str, ...] | list[str],
                     error: type[Exception] = ValueError, what: str = "JSON file") -> dict[str, Any]:
    """Read a JSON object that must hold ``required`` keys; every problem names the file.

    Raises ``error`` (a ValueError subclass of the caller's) for a missing file, invalid JSON, a
    non-object or missing keys.
    """
    path = Path(path)
    if not path.is_file():
        raise error(f"{path}: no such {what}")
    try:
        rec = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(rec, dict):
        raise error(f"{path}: expected a JSON object")
    missing = [k for k in required if k not in rec]
    if missing:
        raise error(f"{path}: missing key(s) {', '.join(missing)}")
    return rec


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling directory that is renamed to ``target`` on success.

    On an exception the temporary directory is removed and ``target`` is untouched. If ``target``
    exists and ``overwrite`` is False, FileExistsError is raised before any work starts.
    """
    target = Path(target)
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; refusing to overwrite a finished artifact")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        old = target.with_name(f"{target.name}.old-{os.getpid()}")
        os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, target)
