"""The tuning grid of a configuration (``pretrain.tuning``): which arms are tuned, their trials' settings, and
whether a run reads its arm's choice. The workflow's side of :mod:`taco.training.tuning` (the method);
Snakemake's environment: no ML library."""

from __future__ import annotations

from typing import Any

from taco.workflow.config import ConfigError, runs


def tuning_enabled(config: dict[str, Any]) -> bool:
    """Whether ``pretrain.tuning`` is on (equal tuning budgets, :mod:`taco.training.tuning`)."""
    return bool((config["pretrain"].get("tuning") or {}).get("enabled"))


def tuning_arms(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The (size, objective) arms that get tuning trials: every size's objective with a full-data run, in run
    order; [] when tuning is off. The choice of an arm sets the recipe of all its runs (every seed and
    fraction)."""
    if not tuning_enabled(config):
        return []
    out: list[tuple[str, str]] = []
    for r in runs(config):
        if r.fraction == 1.0 and (r.size, r.objective) not in out:
            out.append((r.size, r.objective))
    return out


def tuning_trials(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The trials' settings (:func:`taco.training.tuning.trial_settings`), the same for every arm; [] when off."""
    from taco.training.tuning import trial_settings

    if not tuning_enabled(config):
        return []
    t = config["pretrain"]["tuning"]
    return trial_settings(t["space"], int(t["trials"]), int(t["seed"]))


def tuned_arm(config: dict[str, Any], size: str, objective: str) -> bool:
    """Whether the runs of (size, objective) take their recipe from the arm's tuning choice."""
    return (size, objective) in tuning_arms(config)


def check_tuning(config: dict[str, Any]) -> None:
    """ConfigError naming the key for a bad search space or a tuning with nothing to tune (no-op when off)."""
    from taco.training.tuning import check_space

    if not tuning_enabled(config):
        return
    t = config["pretrain"]["tuning"]
    errors = check_space(t["space"])
    if errors:
        raise ConfigError("; ".join(errors))
    if not tuning_arms(config):
        raise ConfigError("pretrain.tuning.enabled: no full-data run (fractions: [1.0]) to tune")
