"""Plug-in modules found by a package scan and an entry-point group, each of which breaks only itself.

The objective modules (:mod:`taco.objectives`) and the encoder families (:mod:`taco.families`) are found by a
scan of their package and by an entry-point group, so a third party adds one without editing taco. A module
that raises on import (a syntax error, a package it needs that is not installed), or that declares nothing
(a stray ``notes.py``), must not take every command down with a traceback, nor blame the suite's extras:
:func:`load_modules` leaves it out, names it in one line on stderr (the file, or the entry point and its
distribution) with the reason, and keeps the reason in the returned ``broken`` mapping, so that asking for
what it would have declared names it again. Standard library only.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import sys
import traceback
from collections.abc import Callable, Iterable
from types import ModuleType

__all__ = ["load_modules"]

_WARNED: set[str] = set()


def _reason(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"it needs the package {exc.name!r}, which is not installed{at}"
    return f"{type(exc).__name__}: {exc}{at}"


def load_modules(package: str, path: Iterable[str], group: str, kind: str, skip: tuple[str, ...],
                 declares: Callable[[ModuleType], str | None]) -> tuple[list[ModuleType], dict[str, str]]:
    """Import every module of ``package`` (its ``path``; names in ``skip`` or starting with ``_`` left out)
    and of the entry-point ``group``; ``declares(module)`` returns what is wrong with a module's declaration
    (None when it is good). Returns ``(modules, broken)``: the good modules in scan order, then the entry
    points'; ``broken`` maps where a bad one lives to why it was left out (also printed to stderr once per
    process: ``taco: warning: the <kind> module <where> is left out: <why>``)."""
    found: list[tuple[str, Callable[[], ModuleType]]] = []
    for m in pkgutil.iter_modules(list(path)):
        if m.name in skip or m.name.startswith("_"):
            continue
        found.append((f"{package.replace('.', '/')}/{m.name}.py",
                      lambda n=m.name: importlib.import_module(f"{package}.{n}")))
    for ep in importlib.metadata.entry_points(group=group):
        dist = getattr(getattr(ep, "dist", None), "name", None)
        where = f"entry point {ep.name} = {ep.value!r} (group {group}" + (f", package {dist})" if dist else ")")
        found.append((where, ep.load))
    mods: list[ModuleType] = []
    broken: dict[str, str] = {}
    for where, load in found:
        try:
            mod = load()
        except Exception as exc:  # noqa: BLE001 (a plug-in's own error breaks only the plug-in)
            broken[where] = _reason(exc)
            continue
        problem = declares(mod)
        if problem:
            broken[where] = problem
            continue
        mods.append(mod)
    for where, why in broken.items():
        if where not in _WARNED:
            _WARNED.add(where)
            print(f"taco: warning: the {kind} module {where} is left out: {why}", file=sys.stderr)
    return mods, broken
