"""Estimate a pipeline variant's preferences from the SCF moments: the estimation task's engine.

Contract: ``estimate_variant(model=..., specification=..., moments=...,
initial_distribution=..., settings=...)`` takes the variant's model and its specification
(``bld/<variant>/model.json``; its params are the base of the estimated ones), matches the mean
log wealth-to-income of ``settings["age_groups"]`` in the SCF moment table
(``bld/data/scf_moments.arrow``, ``project.data.scf_moments``) by MSM (``estimate_msm``) and
returns an ``EstimationOutcome``: the ``MSMResult``, the settings, the seconds it took and the
warnings a reader must see (non-convergence, an estimate at a bound, a rejected J-test).

Search: one local search from ``settings["start"]``; with ``n_starts > 1``, optimagic's TikTak
multistart (Arnoud, Guvenen and Kleineberg 2019) instead, whose exploration sample is the start
and ``5 * n_starts - 1`` Halton points within the bounds: TikTak ranks them by the criterion and
runs up to ``n_starts`` local searches, the first from the best of them (on the SCF moments, the
start), each later one from a sampled point pulled towards the best end point found so far, and
stops once two searches have ended at the same point (``EstimationOutcome.searches`` records
every local search). The objective has a long curved valley (more risk aversion and more
patience both raise wealth) and a second local minimum at the bound crra = 8, about 18 times as
high. A sample without the start (as the build drew until 2026-11-26) sent the first local
search to the sampled points nearest that bound (175 simulations there, more than the rest of
the estimation together); with the start in it, the later searches test the first search's
minimum from starts between it and the best sampled points. Until 2026-11-27 the build ran the
search from the start and then a multistart seeded with its end point, whose first local search
repeated the first search from its own end point (about 18 simulations for nothing).

Sampling design: the data moment of a group is the SCF mean of log(net worth / permanent
income) over the households aged ``age_min + 1 .. age_max``; its sampling variance is
``variance_of_mean_log_wealth_to_income`` (one household per five implicates) and ``n_data``
its household count. The simulated moment is the mean over the living simulated subject-years
of that age group; ``n_simulated`` counts the distinct simulated subjects alive in the group
(a conservative count: a subject's years in a group are correlated). The simulated subjects
start from the variant's initial distribution with their own seed (common random numbers
across evaluations); the variant's own simulation is not reused, so the estimation's noise is
independent of the panel the figures show. Float64 throughout (finite differences).
With ``settings["smooth"]`` the moments are the smooth ones (expectations over the retirement
choice) and ``estimate_msm`` gets their exact Jacobian (``LifecycleMoments.jacobian``) for the
search and the standard errors. ``settings["profiles"]`` false (a robustness check's,
``project.estimation.robustness``) leaves out the criterion slices through the estimate.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.stats import qmc

from project.estimation.choice_count import ChoiceCount
from project.estimation.errors import EstimationError
from project.estimation.inference import step_standard_errors
from project.estimation.lifecycle import LifecycleMoments
from project.estimation.msm import estimate_msm
from project.estimation.profiles import criterion_profiles
from project.estimation.result import MSMResult
from project.model.spec import Model
from project.points import precision
from project.regimes.spec import RegimeModel
from project.simulation import draw_initial_conditions

if TYPE_CHECKING:
    import optimagic as om

logger = logging.getLogger("project.estimation")

DATA_COLUMN = "log_wealth_to_income"
J_TEST_LEVEL = 0.05
HALTON_PER_START = 5
"""The multistart samples this many points per local search: the start and 5·n_starts - 1
Halton points within the bounds."""


@dataclass(frozen=True)
class EstimationOutcome:
    """An estimate of a variant with what it took and the warnings to show with it."""

    variant: str
    result: MSMResult
    settings: dict[str, Any]
    seconds: float
    warnings: list[str] = field(default_factory=list)
    searches: dict[str, dict[str, Any]] = field(default_factory=dict)
    profiles: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    calibrated: dict[str, Any] = field(default_factory=dict)
    """A param calibrated jointly with the estimate, if any (``project.estimation.calibrated``)."""


def data_moments(*, moments: pd.DataFrame, age_groups: list[tuple[int, int]]) -> pd.DataFrame:
    """Return the SCF rows of ``age_groups`` (in that order); raise for a group the table lacks."""
    needed = (
        "age_min",
        "age_max",
        f"mean_{DATA_COLUMN}",
        f"variance_of_mean_{DATA_COLUMN}",
        "n_households",
    )
    missing = [c for c in needed if c not in moments]
    if missing:
        msg = (
            f"The SCF moment table lacks the columns {missing}; it has {list(moments.columns)}. "
            "Rebuild it with `uv run pytask` (task_prepare_data)."
        )
        raise EstimationError(msg)
    rows = []
    for lo, hi in age_groups:
        row = moments.loc[(moments["age_min"] == lo) & (moments["age_max"] == hi)]
        if len(row) != 1:
            available = list(zip(moments["age_min"], moments["age_max"], strict=True))
            msg = (
                f"The SCF moment table has no single row for the age group ({lo}, {hi}); it has "
                f"{available}. Choose age groups of the table in ESTIMATION (config.py)."
            )
            raise EstimationError(msg)
        rows.append(row)
    return pd.concat(rows, ignore_index=True)


def estimate_variant(
    *,
    model: Model | RegimeModel,
    specification: Mapping[str, Any],
    moments: pd.DataFrame,
    initial_distribution: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
    simulator: Any | None = None,
) -> EstimationOutcome:
    """Estimate the variant's ``settings["estimated"]`` params by MSM; see the module docstring.

    ``model``: the variant's model, built from ``specification`` (its params are the base).
    ``simulator``: the moments to match, if the caller has built them (a calibration shares
    them: ``project.estimation.calibrated``); else ``LifecycleMoments`` of the settings.
    The estimation runs in float64 unless ``settings["x64"]`` is false (moments of a few
    thousand subjects need it) and restores the process's precision afterwards, so that later
    work in the same process (a serial build's next tasks) computes as it would in a fresh one.
    """
    with precision(x64=bool(settings.get("x64", True))):
        started = time.perf_counter()
        settings = dict(settings)
        _check_start(settings)
        groups = [(int(lo), int(hi)) for lo, hi in settings["age_groups"]]
        data = data_moments(moments=moments, age_groups=groups)
        if simulator is None:
            simulator = moments_of(
                model=model,
                params=specification["params"],
                initial_distribution=initial_distribution,
                settings=settings,
            )
        _check_simulator(simulator, settings=settings, groups=groups)
        common = _msm_arguments(simulator, data=data, settings=settings)
        options = _multistart(
            int(settings["n_starts"]),
            seed=int(settings["seed"]),
            start=common["start_params"],
            bounds=common["bounds"],
        )
        name = "from the start" if options is False else "multistart"
        searches = {name: estimate_msm(**common, multistart=options)}
        result = searches[name]
        return _outcome(
            simulator,
            variant=str(specification["name"]),
            searches=searches,
            result=result,
            settings=settings,
            started=started,
        )


def _outcome(
    simulator: Any,
    *,
    variant: str,
    searches: dict[str, Any],
    result: Any,
    settings: dict[str, Any],
    started: float,
) -> EstimationOutcome:
    """Return the outcome: the kept search's result, step checks, profiles, warnings logged."""
    by_step = {
        str(float(step)): step_standard_errors(
            simulate_moments=simulator, result=result, step=float(step)
        )
        for step in settings.get("alternative_steps", ())
    }
    profiles = (
        criterion_profiles(simulate_moments=simulator, result=result)
        if settings.get("profiles", True)
        else {}
    )
    outcome = EstimationOutcome(
        variant=variant,
        result=result,
        settings=settings,
        seconds=time.perf_counter() - started,
        warnings=visible_warnings(result),
        searches={
            name: search_record(found, kept=found is result)
            | ({"std_errors_by_step": by_step} if found is result and by_step else {})
            for name, found in searches.items()
        },
        profiles=profiles,
    )
    for warning in outcome.warnings:
        logger.warning("Estimation of %r: %s", outcome.variant, warning)
    logger.info(
        "Estimated %r in %.0f s: %s",
        outcome.variant,
        outcome.seconds,
        ", ".join(f"{n} = {v:.4g}" for n, v in result.params.items()),
    )
    return outcome


def _check_start(settings: Mapping[str, Any]) -> None:
    """Raise unless the settings' start gives exactly the estimated params."""
    if set(settings["start"]) != set(settings["estimated"]):
        msg = (
            f"The estimation's start {sorted(settings['start'])} must give exactly the "
            f"estimated params {list(settings['estimated'])}; fix ESTIMATION in "
            "src/project/config.py."
        )
        raise EstimationError(msg)


def _check_simulator(
    simulator: Any, *, settings: Mapping[str, Any], groups: list[tuple[int, int]]
) -> None:
    """Raise unless the moments vary the settings' params on the settings' age groups."""
    wanted = [(float(lo), float(hi)) for lo, hi in groups]
    if (
        tuple(simulator.estimated) != tuple(settings["estimated"])
        or list(simulator.age_groups) != wanted
    ):
        msg = (
            f"The moments vary {list(simulator.estimated)} on the age groups "
            f"{list(simulator.age_groups)}; the settings estimate "
            f"{list(settings['estimated'])} on {wanted}: give moments of the settings."
        )
        raise EstimationError(msg)


def _msm_arguments(
    simulator: Any, *, data: pd.DataFrame, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """Return ``estimate_msm``'s arguments but the multistart: data, start, bounds, options."""
    # In the order of ``estimated`` (the settings' JSON sorts the start's keys): the optimiser's
    # path, and on this objective the optimum it reaches, depends on the order of the params.
    start = {name: float(settings["start"][name]) for name in settings["estimated"]}
    n_simulated = simulator.living_subjects(start)
    return {
        "simulate_moments": simulator,
        "data_moments": data[f"mean_{DATA_COLUMN}"].to_numpy(),
        "data_variances": data[f"variance_of_mean_{DATA_COLUMN}"].to_numpy(),
        "n_data": data["n_households"].to_numpy(),
        "n_simulated": n_simulated,
        "start_params": start,
        "bounds": {name: tuple(bound) for name, bound in settings["bounds"].items()},
        "moment_names": simulator.moment_names,
        "algorithm": settings["algorithm"],
        "algo_options": settings["algo_options"],
        "relative_step": float(settings["relative_step"]),
        "on_failure": "warn",
        "moments_and_jacobian": simulator.jacobian if settings.get("smooth") else None,
        "weighting": str(settings.get("weighting", "data")),
    }


def moments_of(
    *,
    model: Model | RegimeModel,
    params: Mapping[str, Any],
    initial_distribution: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
    estimated: Sequence[str] | None = None,
    choice: ChoiceCount | None = None,
) -> LifecycleMoments:
    """Return the settings' simulated moments of ``estimated`` (default: the settings').

    ``settings["n_subjects"]`` subjects drawn from ``initial_distribution`` with the settings'
    seed, simulated with that seed plus one, at ``params`` for every param not estimated;
    ``choice``: a choice to count beside the moments.
    """
    initial = draw_initial_conditions(
        model=model,
        n_subjects=int(settings["n_subjects"]),
        seed=int(settings["seed"]),
        distribution=initial_distribution,
    )
    return LifecycleMoments(
        model=model,
        base_params=params,
        initial_conditions=initial,
        seed=int(settings["seed"]) + 1,
        age_groups=[(int(lo), int(hi)) for lo, hi in settings["age_groups"]],
        estimated=tuple(settings["estimated"] if estimated is None else estimated),
        compiled=bool(settings.get("compiled", True)),
        smooth=bool(settings.get("smooth", False)),
        choice=choice,
    )


def search_record(result: MSMResult, *, kept: bool) -> dict[str, Any]:
    """Return what an estimation's summary records of one search: where it ended, how."""
    return {
        "objective": result.objective,
        "params": result.params,
        "kept": kept,
        "local_searches": list(result.local_searches),
    }


def visible_warnings(result: MSMResult) -> list[str]:
    """Return the facts about ``result`` that its tables must show next to the numbers."""
    warnings = []
    if not result.converged:
        warnings.append(f"The optimiser did not report convergence: {result.message}")
    for name, at_bound in zip(result.param_names, result.at_bound, strict=True):
        if at_bound:
            warnings.append(
                f"{name} is at a bound of its search interval: its standard error and interval "
                "assume an interior optimum and are not valid."
            )
    if result.j_dof > 0 and result.j_p_value < J_TEST_LEVEL:
        warnings.append(
            f"The J-test rejects the over-identifying restrictions at {J_TEST_LEVEL:.0%} "
            f"(J = {result.j_statistic:.1f}, {result.j_dof} degrees of freedom, p = "
            f"{result.j_p_value:.2g}): the model does not fit all moments within their "
            "sampling error."
        )
    return warnings


def halton_points(n_starts: int) -> int:
    """Return how many Halton points the multistart samples beside the start (none for one)."""
    return HALTON_PER_START * n_starts - 1 if n_starts > 1 else 0


def _multistart(
    n_starts: int,
    *,
    seed: int,
    start: Mapping[str, float],
    bounds: Mapping[str, tuple[float, float]],
) -> bool | om.MultistartOptions:
    """Return no multistart for one start, else TikTak whose sample begins with ``start``.

    The exploration sample is ``start`` and ``5 * n_starts - 1`` points of a scrambled Halton
    sequence (``seed``) within ``bounds`` (per param of ``start``, in its order); ``n_starts``
    local searches at most.
    """
    if n_starts < 1:
        msg = f"n_starts must be at least 1, got {n_starts}."
        raise EstimationError(msg)
    if n_starts == 1:
        return False
    names = list(start)
    infinite = (-np.inf, np.inf)
    lower = np.array([bounds.get(name, infinite)[0] for name in names], dtype=float)
    upper = np.array([bounds.get(name, infinite)[1] for name in names], dtype=float)
    if not (np.isfinite(lower).all() and np.isfinite(upper).all()):
        msg = (
            f"A multistart (n_starts = {n_starts}) samples within the bounds, but the bounds of "
            f"{names} are {lower.tolist()} to {upper.tolist()}. Give every estimated param "
            "finite bounds in ESTIMATION (config.py), or set n_starts = 1."
        )
        raise EstimationError(msg)
    draws = qmc.Halton(d=len(names), seed=seed).random(halton_points(n_starts))
    sample = [np.array([start[name] for name in names], dtype=float)]
    sample += list(qmc.scale(draws, lower, upper))
    import optimagic as om  # noqa: PLC0415 (0.7 s to import: where it runs)

    return om.MultistartOptions(sample=sample, stopping_maxopt=n_starts, seed=seed, n_cores=1)
