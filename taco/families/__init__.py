"""Encoder families: one module each, found by a package scan (and an entry-point group).

Each module declares ``DECLARED`` (:class:`taco.families.base.Family`): its label, transformers' native
masked-LM class, the config builder from a preset and the tokenizer's special ids, its dropout fields, its
encoder's model FLOPs, how the pre-training model encodes and predicts (:mod:`taco.model.modeling` builds the
class from these), its own pre-training recipe for the deviations page and its attention kernels. Everything
else derives from them: ``taco pretrain --architecture``'s choices, the config schema's
``pretrain.sizes.<size>.architecture`` values (:func:`taco.workflow.schema.workflow_schema`), the FLOPs of the
plan, the labels of the pages.

Adding a family: write ``taco/families/<name>.py`` with ``DECLARED``; nothing else in taco names it. Another
package adds one without editing taco through the entry-point group :data:`ENTRY_POINT_GROUP`
(``[project.entry-points."taco.families"] mine = "mypackage.myfamily"``). Every module of this package except
:mod:`base` (and ``_``-prefixed ones) is a family module. Families are listed BERT first (the paper's), the
others in :data:`_ORDER`, then by name. Torch-free: the hooks that touch tensors are called with a model.
"""

from __future__ import annotations

from types import ModuleType

from taco.families.base import Family

__all__ = ["FAMILIES", "DEFAULT_FAMILY", "ENTRY_POINT_GROUP", "get_family", "family_of_model_type"]

#: entry-point group through which another installed package adds family modules
ENTRY_POINT_GROUP = "taco.families"
#: the paper's encoder: a run without ``architecture`` trains it (its hashes, commands and paths predate the
#: families)
DEFAULT_FAMILY = "bert"
_SUPPORT_MODULES = ("base",)
_ORDER = ("bert", "roberta", "modernbert")


def _order(name: str) -> tuple[int, str]:
    return (_ORDER.index(name), "") if name in _ORDER else (len(_ORDER), name)


def _modules() -> list[ModuleType]:
    """The family modules: this package's (a scan), then the entry points'; a module that fails to import or
    declares no Family is left out and named (:func:`taco.plugins.load_modules`, kept in :data:`BROKEN`)."""
    from taco.plugins import load_modules

    def declares(mod: ModuleType) -> str | None:
        return None if isinstance(getattr(mod, "DECLARED", None), Family) else (
            "a family module must declare DECLARED (a taco.families.base.Family); helper modules start with '_'")

    mods, broken = load_modules(__name__, __path__, ENTRY_POINT_GROUP, "family", _SUPPORT_MODULES, declares)
    BROKEN.update(broken)
    return mods


def _load(mods: list[ModuleType]) -> dict[str, Family]:
    out: dict[str, Family] = {}
    for mod in mods:
        f = mod.DECLARED
        where = getattr(mod, "__file__", mod.__name__)
        if f.name in out:
            raise ValueError(f"{where}: family {f.name!r} is declared twice")
        if any(g.model_type == f.model_type for g in out.values()):
            raise ValueError(f"{where}: model_type {f.model_type!r} belongs to another family already")
        out[f.name] = f
    if DEFAULT_FAMILY not in out:
        raise ValueError(f"taco/families/: no module declares the default family {DEFAULT_FAMILY!r}")
    return dict(sorted(out.items(), key=lambda kv: _order(kv[0])))


#: family modules left out (where -> why): they failed to import or declare no family
BROKEN: dict[str, str] = {}
#: every encoder family, name -> declaration, BERT first
FAMILIES: dict[str, Family] = _load(_modules())


def get_family(name: str) -> Family:
    """The family ``name`` (``pretrain.sizes.<size>.architecture``); ValueError listing the valid names."""
    try:
        return FAMILIES[name]
    except (KeyError, TypeError):
        broken = "".join(f"; left out: {w} ({why})" for w, why in BROKEN.items())
        raise ValueError(f"unknown architecture {name!r}; valid: {', '.join(FAMILIES)}{broken}") from None


def family_of_model_type(model_type: object, where: str = "model config") -> Family:
    """The family whose transformers ``model_type`` is ``model_type`` (a checkpoint's ``config.json``);
    ValueError naming ``where`` and the known model types."""
    for f in FAMILIES.values():
        if f.model_type == model_type:
            return f
    raise ValueError(f"{where}: model type {model_type!r} is no encoder family of this suite "
                     f"({', '.join(f.model_type for f in FAMILIES.values())})")
