"""Every shipped configuration as the list of config files Snakemake is given, for the tests that run or
check each one (``test_commands``, ``test_lint``, ``test_workflow_config``).

``config.yaml`` and each ``configs/*.yaml`` stand alone, except an overlay: a file whose usage line
(``--configfile <base> ... <the file>``, in its header comment, possibly continued with ``\\``) names
the files it applies to (``configs/cpu-real-families.yaml`` on ``configs/cpu-real.yaml``). Every
``tests/configs/*.yaml`` is such an overlay (a test fails when its usage line is missing).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bases(path: Path) -> list[str] | None:
    """The files the usage line of ``path`` lists before it (``[]``: it names itself alone; ``None``: no
    usage line names it)."""
    rel = path.relative_to(REPO).as_posix()
    text = re.sub(r"\\\s*\n\s*#?", " ", path.read_text())  # join continued comment lines
    m = re.search(r"--configfile((?:\s+\S+\.yaml)*?)\s+" + re.escape(rel) + r"(?=\s|$)", text)
    return m.group(1).split() if m else None


def config_sets() -> list[list[str]]:
    """``[["config.yaml"], ["configs/smoke.yaml"], ["configs/cpu-real.yaml", "configs/cpu-real-families.yaml"],
    ..., ["configs/cpu-real.yaml", "tests/configs/cpu-real-ci.yaml"], ...]``."""
    out = [["config.yaml"]]
    for p in sorted((REPO / "configs").glob("*.yaml")):
        out.append([*(bases(p) or []), p.relative_to(REPO).as_posix()])
    for p in sorted((REPO / "tests" / "configs").glob("*.yaml")):
        b = bases(p)
        assert b, f"{p}: no usage line `--configfile <base> ... tests/configs/{p.name}` names its base"
        out.append([*b, p.relative_to(REPO).as_posix()])
    return out
