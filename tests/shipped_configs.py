"""Every shipped configuration as the list of config files Snakemake is given, for the tests that run or
check each one (``test_commands``, ``test_lint``, ``test_workflow_config``).

``config.yaml`` and each ``configs/*.yaml`` stand alone, except an overlay: a file whose usage line
(``--configfile <base> ... <the file>``, in its header comment, possibly continued with ``\\``) names
the files it applies to (``configs/cpu-real-families.yaml`` on ``configs/cpu-real.yaml``;
``taco.workflow.config_source.overlay_bases``, which also names a missing base in the workflow's error). Every
``tests/configs/*.yaml`` is such an overlay (a test fails when its usage line is missing).
"""

from __future__ import annotations

from pathlib import Path

from taco.workflow.config_source import overlay_bases

REPO = Path(__file__).resolve().parents[1]


def config_sets() -> list[list[str]]:
    """``[["config.yaml"], ["configs/smoke.yaml"], ["configs/cpu-real.yaml", "configs/cpu-real-families.yaml"],
    ..., ["configs/cpu-real.yaml", "tests/configs/cpu-real-ci.yaml"], ...]``."""
    out = [["config.yaml"]]
    for p in sorted((REPO / "configs").glob("*.yaml")):
        out.append([*overlay_bases(p), p.relative_to(REPO).as_posix()])
    for p in sorted((REPO / "tests" / "configs").glob("*.yaml")):
        b = overlay_bases(p)
        assert b, f"{p}: no usage line `--configfile <base> ... tests/configs/{p.name}` names its base"
        out.append([*b, p.relative_to(REPO).as_posix()])
    return out
