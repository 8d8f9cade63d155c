"""A distribution installed into a scratch folder that adds one module through an entry-point group (as
``[project.entry-points."<group>"] name = "package.module"`` of another package would), for the tests of
``taco.objectives``' and ``taco.families``' entry-point groups."""

from __future__ import annotations

from pathlib import Path


def install_entry_point(site: Path, package: str, module: str, text: str, group: str) -> Path:
    """``site/package/module.py`` holding ``text``, and a ``package-0.1.dist-info`` whose ``entry_points.txt``
    names it under ``group``; returns ``site`` (put it on ``PYTHONPATH``)."""
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / f"{module}.py").write_text(text)
    dist = site / f"{package}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{module} = {package}.{module}\n")
    return site
