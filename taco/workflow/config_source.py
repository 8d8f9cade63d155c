"""Where each key of a configuration comes from: the YAML file and line of every key of the
``--configfile`` files, merged in order as Snakemake merges them (a later file's key wins), and
``--config`` overrides.

``taco plan`` reads its configuration files with :func:`read_config_file` (a YAML syntax error is one
line: ``FILE:LINE:COLUMN: problem``; a missing file one line naming it and the closest existing one),
records where every key was set (:class:`KeySources`), and puts ``FILE:LINE: `` before each error
line that starts with a key (the schema check's ``pretrain.runs[0].size: ...`` and the semantic
check's ``finetune.pretrain_seeds: ...``): :meth:`KeySources.annotate`. A key the file does not
set (a default the schema filled in) points at its nearest enclosing key that a file sets.

Lines and columns are 1-based, from PyYAML's node marks (``yaml.SafeLoader``).
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

import yaml

#: one key of a dotted path with list indices (``pretrain.runs[0].size`` -> pretrain, runs, 0, size)
_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")
#: where an error line's key ends (``key: message``)
_KEY_END = ": "


class ConfigFileError(ValueError):
    """A configuration file that cannot be read or parsed; the message is one line naming the file
    (and, for a YAML syntax error, the line and column)."""


class ConfigShapeError(ConfigFileError):
    """A file that parses but that YAML (or Snakemake, which reads it first) would take wrongly or endlessly: a key
    given twice in one mapping, aliases that expand past :data:`MAX_EXPANDED_NODES`, nesting past :data:`MAX_DEPTH`,
    a recursive alias. :func:`config_file_errors` reports these; Snakemake names missing and unparsable files itself."""


def _mark(mark: Any) -> tuple[int, int]:
    """A PyYAML mark as 1-based (line, column)."""
    return mark.line + 1, mark.column + 1


def yaml_error_line(path: str | os.PathLike, exc: yaml.YAMLError) -> str:
    """One line for a YAML syntax error: ``FILE:LINE:COLUMN: problem (context at line L, column C)``;
    PyYAML's own message spans several lines with the source quoted."""
    problem_mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if problem_mark is None:
        return f"{path}: not valid YAML: {problem}"
    line, col = _mark(problem_mark)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    where = ""
    if context:
        where = f" ({context}"
        if context_mark is not None and _mark(context_mark) != (line, col):
            where += " at line {}, column {}".format(*_mark(context_mark))
        where += ")"
    return f"{path}:{line}:{col}: not valid YAML: {problem}{where}"


def _missing_file_line(path: str) -> str:
    """One line for a configuration file that does not exist, with the closest YAML file of its folder."""
    folder = Path(path).parent
    near = sorted(str(folder / p.name) if str(folder) != "." else p.name
                  for p in (folder.glob("*.y*ml") if folder.is_dir() else []))
    close = difflib.get_close_matches(str(path), near, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{path}: no such file (working directory {os.getcwd()}){hint}"


def _locations(node: yaml.Node, path: tuple, out: dict[tuple, tuple[int, int]]) -> None:
    """Record the (line, column) of every key (mapping) and item (sequence) below ``node``."""
    if isinstance(node, yaml.MappingNode):
        own: dict[Any, int] = {}  # keys written in this mapping itself (a merge key's `<<: *x` keys are not)
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = key_node.value if key_node.tag == "tag:yaml.org,2002:str" else yaml.safe_load(key_node.value)
                here = (*path, key)
                inside = node.start_mark.index <= key_node.start_mark.index <= node.end_mark.index
                if inside:
                    line, _ = _mark(key_node.start_mark)
                    if key in own:  # YAML keeps the last of two equal keys without a word: refuse it
                        raise DuplicateKeyError(key, line, own[key])
                    own[key] = line
                out[here] = _mark(key_node.start_mark)
                _locations(value_node, here, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            here = (*path, i)
            out[here] = _mark(item.start_mark)
            _locations(item, here, out)


class DuplicateKeyError(Exception):
    """A key given twice in one mapping of a configuration file (raised by :func:`_locations`)."""

    def __init__(self, key: Any, line: int, first: int):
        super().__init__(key, line, first)
        self.key, self.line, self.first = key, line, first


#: the most values a configuration file may hold once its YAML aliases are expanded, and its deepest nesting
MAX_EXPANDED_NODES = 200_000
MAX_DEPTH = 64


def _check_expansion(path: str | os.PathLike, root: yaml.Node) -> None:
    """ConfigFileError when the node graph, with every alias expanded, would hold more than
    :data:`MAX_EXPANDED_NODES` values, nests deeper than :data:`MAX_DEPTH`, or an alias refers to a node
    that contains it. Counted on the graph (each shared node once, memoised), so the check itself is cheap."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ConfigShapeError(f"{path}: line {node.start_mark.line + 1}: nested deeper than {MAX_DEPTH} levels; a "
                                  "configuration is a few levels deep")
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise ConfigShapeError(f"{path}: line {node.start_mark.line + 1}: an alias refers to a node that contains it "
                                  "(a recursive alias)")
        open_.add(key)
        if isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(v, depth + 1) for v in node.value)
        else:
            n = 1
        open_.discard(key)
        sizes[key] = n
        if n > MAX_EXPANDED_NODES:
            raise ConfigShapeError(f"{path}: line {node.start_mark.line + 1}: its YAML aliases expand to more than "
                                  f"{MAX_EXPANDED_NODES:,} values (an alias bomb?); a configuration holds a few hundred")
        return n

    size(root, 0)


def read_config_file(path: str | os.PathLike) -> tuple[dict[str, Any], dict[tuple, tuple[int, int]]]:
    """A YAML configuration file as a mapping, and the 1-based (line, column) of each of its keys by
    key path (``("pretrain", "runs", 0, "size")``).

    Raises ConfigFileError (one line) when the file is missing or unreadable, not valid YAML (with
    line and column), not a mapping, or gives a key twice in one mapping (with both lines).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigFileError(_missing_file_line(str(path))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"{path}: cannot be read: {exc}") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(path, node)  # before anything walks the aliases: a "billion laughs" never expands
        data = loader.construct_document(node) if node is not None else {}
    except yaml.YAMLError as exc:
        raise ConfigFileError(yaml_error_line(path, exc)) from None
    except RecursionError:
        raise ConfigShapeError(f"{path}: nested too deeply for a configuration (more than Python's recursion "
                              "limit); a configuration is a few levels deep") from None
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"{path}: not a mapping of configuration keys (a YAML {type(data).__name__})")
    where: dict[tuple, tuple[int, int]] = {}
    if node is not None:
        try:
            _locations(node, (), where)
        except DuplicateKeyError as dup:
            raise ConfigShapeError(f"{path}:{dup.line}: key {dup.key!r} is given twice in one mapping (first at line "
                                  f"{dup.first}); YAML would keep the last silently: keep one") from None
    return data, where


def key_path(key: str) -> tuple:
    """``pretrain.runs[0].size`` -> ``("pretrain", "runs", 0, "size")``."""
    return tuple(int(i) if i else name for i, name in _PART.findall(key))


class KeySources:
    """Where each key of a merged configuration was set: ``FILE:LINE`` of the last ``--configfile``
    that sets it, or ``--config`` for an override."""

    def __init__(self) -> None:
        self._where: dict[tuple, str] = {}

    def _merge(self, data: dict[str, Any], located: dict[tuple, str]) -> None:
        """Merge one source, as Snakemake merges configurations: a mapping is merged key by key, any
        other value (a list, a number) replaces the old one whole, so what an earlier source set
        below it is forgotten."""
        def replaced(old: tuple) -> bool:
            node: Any = data
            for part in old[:-1]:
                if not isinstance(node, dict) or part not in node:
                    return False
                node = node[part]
                if not isinstance(node, dict):
                    return True
            return False

        self._where = {k: v for k, v in self._where.items() if not replaced(k)}
        self._where.update(located)

    def add_file(self, path: str | os.PathLike, data: dict[str, Any],
                 locations: dict[tuple, tuple[int, int]]) -> None:
        """Record the keys of one configuration file (``data`` and ``locations`` from
        :func:`read_config_file`), merged after the earlier ones."""
        self._merge(data, {k: f"{path}:{line}" for k, (line, _col) in locations.items()})

    def add_overrides(self, overrides: dict[str, Any]) -> None:
        """Record ``--config`` overrides (a mapping value is merged into its section, as Snakemake does)."""
        located: dict[tuple, str] = {}

        def walk(value: Any, path: tuple) -> None:
            located[path] = "--config"
            if isinstance(value, dict):
                for k, v in value.items():
                    walk(v, (*path, k))
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    walk(v, (*path, i))

        for k, v in overrides.items():
            walk(v, (k,))
        self._merge(overrides, located)

    def where(self, key: str | tuple) -> str | None:
        """``FILE:LINE`` (or ``--config``) where ``key`` or, if no file sets it, its nearest enclosing key
        was set; None when nothing encloses it (a top-level default)."""
        path = key_path(key) if isinstance(key, str) else tuple(key)
        for n in range(len(path), 0, -1):
            if path[:n] in self._where:
                return self._where[path[:n]]
        return None

    def annotate(self, message: str) -> str:
        """``message`` with ``FILE:LINE: `` before each line that starts with a key (``key: ...``,
        indentation kept); other lines unchanged."""
        out = []
        for line in message.splitlines():
            body = line.lstrip()
            key = body.split(_KEY_END, 1)[0] if _KEY_END in body else ""
            where = self.where(key) if key and " " not in key and key_path(key) else None
            out.append(line if where is None else f"{line[:len(line) - len(body)]}{where}: {body}")
        return "\n".join(out)


def key_sources(configfiles: list[str | os.PathLike], overrides: dict[str, Any] | None = None) -> KeySources:
    """The :class:`KeySources` of ``configfiles`` merged in order and then ``overrides``; a file that
    cannot be read is skipped (its error is reported where it is loaded). For messages only."""
    sources = KeySources()
    for f in configfiles:
        try:
            data, where = read_config_file(f)
        except ConfigFileError:
            continue
        sources.add_file(f, data, where)
    sources.add_overrides(dict(overrides or {}))
    return sources


def overlay_bases(path: str | os.PathLike) -> list[str]:
    """The configuration files an overlay applies to, from the usage line in its header comment
    (``--configfile <base> ... <this file>``, possibly continued with ``\\``); ``[]`` when no usage line
    names other files first (a standalone configuration). ``configs/cpu-real-families.yaml`` ->
    ``["configs/cpu-real.yaml"]``."""
    p = Path(path)
    try:
        text = re.sub(r"\\\s*\n\s*#?", " ", p.read_text(encoding="utf-8"))  # join continued comment lines
    except (OSError, UnicodeDecodeError):  # read_config_file names the file and the byte
        return []
    m = re.search(r"--configfile((?:\s+\S+\.yaml)*?)\s+\S*" + re.escape(p.name) + r"(?=\s|$)", text)
    return m.group(1).split() if m else []


def missing_bases_note(configfiles: list[str | os.PathLike]) -> str:
    """`` (configs/X.yaml is an overlay: give configs/Y.yaml before it)`` for each given file whose usage
    line names a base that is not among ``configfiles``; ``""`` when none (a hint for the error of an
    overlay given alone)."""
    given = {Path(f).name for f in configfiles}
    notes = [f"{f} is an overlay: give {' '.join(missing)} before it (its usage line)"
             for f in configfiles if (missing := [b for b in overlay_bases(f) if Path(b).name not in given])]
    return f" ({'; '.join(notes)})" if notes else ""


def config_file_errors(configfiles: list[str | os.PathLike]) -> list[str]:
    """What is wrong with the configuration files as given, before the merged configuration is checked, one
    line each: a file that gives a key twice or whose YAML aliases or nesting blow up (:func:`read_config_file`:
    an alias bomb is refused before anything expands it), and an overlay given before its base
    (its usage line names the base: ``configs/cpu-real-families.yaml`` after ``configs/cpu-real.yaml``; the
    other order lets the base replace the overlay's runs without a word). Empty when all is well."""
    errors: list[str] = []
    names = [Path(f).name for f in configfiles]
    for i, f in enumerate(configfiles):
        try:
            read_config_file(f)
        except ConfigShapeError as exc:
            errors.append(str(exc))
        except ConfigFileError:
            pass  # missing or unparsable: Snakemake names it itself
        late = [b for b in overlay_bases(f) if Path(b).name in names[i + 1:]]
        if late:
            errors.append(f"{f} is an overlay of {' '.join(late)}: give {' '.join(late)} before it (--configfile "
                          f"{' '.join(late)} {f}); in this order the base replaces what the overlay sets")
    return errors
