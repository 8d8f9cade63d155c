"""The tuning grid of a configuration (``pretrain.tuning``): which arms are tuned, their trials' settings, and
whether a run reads its arm's choice. The workflow's side of :mod:`taco.training.tuning` (the method);
Snakemake's environment: no ML library."""

from __future__ import annotations

from typing import Any

from taco.workflow.config import ConfigError, runs


def tuning_enabled(config: dict[str, Any]) -> bool:
    """Whether ``pretrain.tuning`` is on (equal tuning budgets, :mod:`taco.training.tuning`)."""
    return bool((config["pretrain"].get("tuning") or {}).get("enabled"))


def tuned_as(config: dict[str, Any], size: str) -> str | None:
    """``pretrain.sizes.<size>.tuned_as``: the size whose arms' tuning choices this size's runs read instead
    of trials of their own (a longer schedule of the same model, e.g. ``configs/cpu-real-long.yaml``), or None."""
    return config["pretrain"]["sizes"][size].get("tuned_as") or None


def tuning_arms(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The (size, objective) arms that get tuning trials: every size's objective with a full-data run, in run
    order, but a size that is ``tuned_as`` another; [] when tuning is off. The choice of an arm sets the recipe
    of all its runs (every seed and fraction) and of the same objective's runs of a size tuned as it."""
    if not tuning_enabled(config):
        return []
    out: list[tuple[str, str]] = []
    for r in runs(config):
        if r.fraction == 1.0 and not tuned_as(config, r.size) and (r.size, r.objective) not in out:
            out.append((r.size, r.objective))
    return out


def recipe_arm(config: dict[str, Any], size: str, objective: str) -> tuple[str, str] | None:
    """The tuned arm whose choice sets the recipe of (size, objective)'s runs: its own, or that of the same
    objective on ``tuned_as``'s size; None when the runs are not tuned (tuning off, or no such arm)."""
    arm = (tuned_as(config, size) or size, objective)
    return arm if arm in tuning_arms(config) else None


def tuning_space(config: dict[str, Any], size: str) -> dict[str, Any]:
    """The search space of ``size``'s arms: ``pretrain.sizes.<size>.tuning_space`` where the size declares one
    (another family's range, e.g. a pre-norm encoder's higher learning rates: ``configs/cpu-real-families.yaml``),
    else ``pretrain.tuning.space``. Every objective of a size draws from the same space."""
    own = config["pretrain"]["sizes"][size].get("tuning_space")
    return own if own else config["pretrain"]["tuning"]["space"]


def tuning_trial_count(config: dict[str, Any]) -> int:
    """``pretrain.tuning.trials``, the same for every arm; 0 when tuning is off."""
    return int(config["pretrain"]["tuning"]["trials"]) if tuning_enabled(config) else 0


def tuning_trials(config: dict[str, Any], size: str) -> list[dict[str, Any]]:
    """The trials' settings of ``size``'s arms (:func:`taco.training.tuning.trial_settings` over
    :func:`tuning_space`), the same for every objective of the size; [] when off."""
    from taco.training.tuning import trial_settings

    n = tuning_trial_count(config)
    return trial_settings(tuning_space(config, size), n, int(config["pretrain"]["tuning"]["seed"])) if n else []


def recorded_choice(config: dict[str, Any], size: str, objective: str) -> str | None:
    """``pretrain.tuning.recorded.<size>.<objective>``: a choice.json kept from an earlier run of this arm's
    trials that stands in for them (no trial runs; ``taco tuning-choice --recorded`` checks and copies it), or
    None. Relative paths are read from the working directory (the checkout)."""
    if not tuning_enabled(config):
        return None
    return ((config["pretrain"]["tuning"].get("recorded") or {}).get(size) or {}).get(objective) or None


def check_recorded_choices(config: dict[str, Any]) -> None:
    """ConfigError naming ``pretrain.tuning.recorded.<size>.<objective>`` for an entry that is not a tuned arm,
    a file that cannot be read, or a recorded choice whose trials are not the ones this configuration draws
    (:func:`taco.training.tuning.check_recorded`): before any job runs."""
    from taco.training.tuning import TuningError, read_recorded

    recorded = config["pretrain"]["tuning"].get("recorded") or {}
    arms = tuning_arms(config)
    horizon = int(config["pretrain"]["tuning"]["horizon"])
    for size, by_objective in recorded.items():
        for objective, path in (by_objective or {}).items():
            key = f"pretrain.tuning.recorded.{size}.{objective}"
            if (size, objective) not in arms:
                raise ConfigError(f"{key}: not a tuned arm (the arms with trials: "
                                  f"{', '.join(f'{z}.{o}' for z, o in arms)})")
            try:
                read_recorded(path, tuning_trials(config, size), horizon, objective, where=key)
            except TuningError as exc:
                raise ConfigError(str(exc)) from None


def tuned_arm(config: dict[str, Any], size: str, objective: str) -> bool:
    """Whether the runs of (size, objective) take their recipe from a tuning choice (:func:`recipe_arm`)."""
    return recipe_arm(config, size, objective) is not None


def check_tuning(config: dict[str, Any]) -> None:
    """ConfigError naming the key for a bad search space or a tuning with nothing to tune (no-op when off)."""
    from taco.training.tuning import check_space

    for size, s in config["pretrain"]["sizes"].items():
        other = s.get("tuned_as")
        if s.get("tuning_space") and other:
            raise ConfigError(f"pretrain.sizes.{size}.tuning_space: set, but the size is tuned_as {other!r} (it runs "
                              "no trials of its own); give the space to that size instead")
        if not other:
            continue
        key = f"pretrain.sizes.{size}.tuned_as"
        if not tuning_enabled(config):
            raise ConfigError(f"{key}: {other!r}, but pretrain.tuning is off (there is no choice to read)")
        if other == size or other not in config["pretrain"]["sizes"] or tuned_as(config, other):
            raise ConfigError(f"{key}: {other!r} is not another size with trials of its own "
                              f"(pretrain.sizes: {sorted(config['pretrain']['sizes'])})")
        missing = sorted({r.objective for r in runs(config) if r.size == size} -
                         {o for z, o in tuning_arms(config) if z == other})
        if missing:
            raise ConfigError(f"{key}: {other!r} has no tuned arm for {', '.join(missing)} (a full-data run of "
                              f"that objective on size {other!r} in pretrain.runs)")
    if not tuning_enabled(config):
        if config["pretrain"].get("tuning", {}).get("recorded"):
            raise ConfigError("pretrain.tuning.recorded: set, but pretrain.tuning is off (no arm reads a choice)")
        return
    t = config["pretrain"]["tuning"]
    errors = check_space(t["space"], horizon=int(t["horizon"]))
    for size, s in config["pretrain"]["sizes"].items():
        if s.get("tuning_space"):
            errors += check_space(s["tuning_space"], where=f"pretrain.sizes.{size}.tuning_space",
                                  horizon=int(t["horizon"]))
    if errors:
        raise ConfigError("; ".join(errors))
    if not tuning_arms(config):
        raise ConfigError("pretrain.tuning.enabled: no full-data run (fractions: [1.0]) to tune")
    check_recorded_choices(config)
