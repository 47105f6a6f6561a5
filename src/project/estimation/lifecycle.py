"""The life-cycle model's simulated moments for MSM: mean log wealth-to-income by age group.

Moment definition: for an age group ``(age_min, age_max)`` (ages ``age_min < age <= age_max``,
i.e. age_min+1..age_max) the moment is the mean, over every simulated subject-year in the group,
of ``log(wealth / income)``. ``wealth`` is the state the subject enters the period with (assets
after last period's interest and income), ``income`` the period's income: labour income
``wage * exp(income node)`` (the model function ``labor_income``) while working, the
``pension`` once retired (the model function ``working`` tells which). It is the model analogue
of the SCF's log of net worth normalised by income: the income node follows a persistent AR(1)
(Rouwenhorst), so current income stands in for the permanent income the SCF normalises by, and
the pension is a retiree's permanent income. A model whose living regimes define the function
``wealth_to_income`` (``program.RATIO_TARGET``) states the ratio itself
(``project.models.lifecycle_normalised``: the assets kept at the period's end, m - c, over
permanent income); every moment is then the mean of its log over the subject-years with a
positive ratio, as the SCF keeps households with positive net worth (a ratio of the wealth
state to income is always positive).

Common random numbers: the initial conditions and the simulation ``seed`` are fixed when the
simulator is built, so ``simulate_moments(params)`` is a deterministic function of the params
(identical arrays for identical params), as ``estimate_msm`` requires. Only the estimated params
vary; every other param stays at its base value. Finite-difference derivatives of the moments
need float64 (``jax.config.update("jax_enable_x64", True)``); in float32 a warning is logged.

One program: for a model with regimes solved by endogenous grids (the pipeline's), the moments
are one compiled program of the estimated params (``program.py``: solve, simulate and average
traced together, compiled once, batched over points by ``batch``); ``compiled=False``, another
model or solver takes the path through ``solve``, ``simulate`` and the simulated table (``frame``),
which gives the same moments to rounding (tests/test_moment_program.py). The program simulates
every subject in one chunk (``subject_batch_size`` applies to the table path only).

Smooth moments (``smooth=True``, ``smooth.py``): the expectation over the taste-shocked exit
choice (retirement) instead of one draw of it, income and deaths still drawn with common random
numbers. They are differentiable in the params: ``jacobian(params)`` gives the moments and their
exact Jacobian (forward mode, one compiled program), which matches central differences
(tests/test_smooth_moments.py). Drawn moments are step functions of the params wherever a
subject's drawn choice flips; smooth ones need no large difference steps.

Economics (checked in the tests): more risk aversion (higher ``crra``) means more precautionary
saving and a lower elasticity of intertemporal substitution, so young subjects hold more wealth
relative to income: the moments of young age groups rise with ``crra`` (in a 40-period model
from age 30, ages 31-35: about 0.05 at crra 1.5, 0.10 at crra 3). They rise with ``beta`` (more
patience, more saving) too, in a nearly proportional pattern over ages: the two are told apart
only by the shape of the profile, so crra is the less precise estimate and the objective has a
long curved valley. A local optimiser can stop in it (a start at crra 1.5, beta 0.97 stopped at
an objective 35 times the minimum's in the test model): use multistart or several starts.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pandas as pd

from project.dispatch import solve
from project.estimation.choice_count import ChoiceCount
from project.estimation.claiming import choice_counts_of_table
from project.estimation.errors import EstimationError
from project.estimation.program import MomentProgram, compiles_moments
from project.estimation.ratios import RATIO_TARGET, defines_ratio
from project.model.spec import Model
from project.regimes.spec import RegimeModel
from project.simulation import simulate, validate_initial_conditions
from project.simulation.initial import REGIME, validate_regime_initial_conditions

logger = logging.getLogger("project.estimation")

TARGETS = ("labor_income", "working")
"""The model functions the moments need besides the wealth state."""
COLUMN = "log_wealth_income"


def age_group_names(age_groups: Sequence[tuple[float, float]]) -> list[str]:
    """Return one moment name per age group, e.g. ``log_wealth_income_31_35`` for (30, 35)."""
    return [f"{COLUMN}_{lo + 1:g}_{hi:g}" for lo, hi in age_groups]


def log_wealth_to_income(*, frame: pd.DataFrame, pension: float) -> pd.Series:
    """Return log(wealth / income) per row of a simulated table with ``labor_income``, ``working``.

    ``frame``: ``SimulationResult.to_dataframe(additional_targets=["labor_income", "working"])``.
    """
    income = np.where(frame["working"].to_numpy() > 0.5, frame["labor_income"].to_numpy(), pension)
    with np.errstate(divide="ignore", invalid="ignore"):
        values = np.log(frame["wealth"].to_numpy() / income)
    return pd.Series(values, index=frame.index, name=COLUMN)


def simulate_log_wealth_to_income(
    *,
    model: Model | RegimeModel,
    params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any] | pd.DataFrame,
    seed: int,
    subject_batch_size: int = 0,
) -> pd.DataFrame:
    """Solve and simulate the model; return ``subject_id``, ``age``, ``log_wealth_income``.

    The rows of the living with positive wealth over income (the SCF keeps positive net worth).
    """
    solution = solve(model=model, params=dict(params), log_level="off")
    result = simulate(
        params=dict(params),
        initial_conditions=initial_conditions,
        solution=solution,
        seed=seed,
        subject_batch_size=subject_batch_size,
        log_level="off",
    )
    own_ratio = defines_ratio(model)
    targets = [RATIO_TARGET] if own_ratio else list(TARGETS)
    frame = result.to_dataframe(additional_targets=targets, use_labels=False)
    if isinstance(model, RegimeModel):  # moments of the living: drop the dead's rows
        dead = [model.regime_names.index(name) for name in model.terminal]
        frame = frame.loc[~frame[REGIME].isin(dead)]
    if own_ratio:
        ratio = frame[RATIO_TARGET].to_numpy(dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            values = pd.Series(np.log(ratio), index=frame.index, name=COLUMN)
    else:
        ratio = np.ones(len(frame))
        values = log_wealth_to_income(frame=frame, pension=float(params["pension"]))
    positive = ratio > 0
    return pd.DataFrame(
        {
            "subject_id": frame["subject_id"].to_numpy()[positive],
            "age": frame["age"].to_numpy()[positive],
            COLUMN: values.to_numpy()[positive],
        }
    )


def age_group_means(
    *, frame: pd.DataFrame, age_groups: Sequence[tuple[float, float]]
) -> np.ndarray:
    """Return the mean of ``log_wealth_income`` over the rows of each age group."""
    ages = frame["age"].to_numpy()
    values = frame[COLUMN].to_numpy()
    return np.array([values[(ages > lo) & (ages <= hi)].mean() for lo, hi in age_groups])


def subjects_per_group(
    *, frame: pd.DataFrame, age_groups: Sequence[tuple[float, float]]
) -> np.ndarray:
    """Return how many distinct subjects have a row in each age group (of the living)."""
    ages = frame["age"].to_numpy()
    ids = frame["subject_id"].to_numpy()
    return np.array([np.unique(ids[(ages > lo) & (ages <= hi)]).size for lo, hi in age_groups])


class LifecycleMoments:
    """``simulate_moments(params)`` of the life-cycle model at fixed random numbers."""

    def __init__(
        self,
        *,
        model: Model | RegimeModel,
        base_params: Mapping[str, Any],
        initial_conditions: Mapping[str, Any] | pd.DataFrame,
        seed: int,
        age_groups: Sequence[tuple[float, float]],
        estimated: Sequence[str],
        subject_batch_size: int = 0,
        compiled: bool = True,
        smooth: bool = False,
        choice: ChoiceCount | None = None,
    ) -> None:
        _check_model(model=model, base_params=base_params, estimated=estimated)
        if choice is not None and not isinstance(model, RegimeModel):
            msg = f"A choice count needs a model with regimes; {model.name!r} has none."
            raise EstimationError(msg)
        if choice is not None:
            choice.period(model)  # raises for a regime, action, label or age the model lacks
        self.choice = choice
        self.model = model
        self.base_params = dict(base_params)
        self.initial_conditions = _validated(model=model, initial_conditions=initial_conditions)
        self.seed = seed
        self.age_groups = _check_age_groups(age_groups=age_groups, ages=tuple(model.ages))
        self.estimated = tuple(estimated)
        self.subject_batch_size = subject_batch_size
        self.moment_names = tuple(age_group_names(self.age_groups))
        self.program = (
            MomentProgram(
                model=model,
                base_params=base_params,
                initial_conditions=self.initial_conditions,
                seed=seed,
                age_groups=self.age_groups,
                estimated=self.estimated,
                smooth=smooth,
                choice=choice,
            )
            if (compiled or smooth) and compiles_moments(model)
            else None
        )
        if smooth and self.program is None:
            msg = (
                f"Smooth moments need a model with regimes solved by EGM or DC-EGM; {model.name!r}"
                " is not one. Use drawn moments (smooth=False)."
            )
            raise EstimationError(msg)
        if not jax.config.jax_enable_x64:
            logger.warning(
                "The life-cycle moments are simulated in float32: finite-difference derivatives "
                "of them are noisy. Enable float64 (jax.config.update('jax_enable_x64', True)) "
                "before estimating."
            )

    @property
    def n_subjects(self) -> int:
        """Return the number of simulated subjects."""
        return len(next(iter(self.initial_conditions.values())))

    def full_params(self, params: Mapping[str, float]) -> dict[str, Any]:
        """Return the base params with the estimated ones replaced by ``params``."""
        given = set(params)
        if given != set(self.estimated):
            msg = (
                f"The life-cycle moments take exactly the estimated params {list(self.estimated)}"
                f"; got {sorted(given)} (missing {sorted(set(self.estimated) - given)}, "
                f"unexpected {sorted(given - set(self.estimated))})."
            )
            raise EstimationError(msg)
        return self.base_params | {name: float(value) for name, value in params.items()}

    def frame(self, params: Mapping[str, float]) -> pd.DataFrame:
        """Return the simulated ``subject_id``, ``age``, ``log_wealth_income`` at ``params``."""
        return simulate_log_wealth_to_income(
            model=self.model,
            params=self.full_params(params),
            initial_conditions=self.initial_conditions,
            seed=self.seed,
            subject_batch_size=self.subject_batch_size,
        )

    def __call__(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the mean log wealth-to-income of each age group at ``params``."""
        if self.program is None:
            return age_group_means(frame=self.frame(params), age_groups=self.age_groups)
        full = self.full_params(params)
        return self.program([full[name] for name in self.estimated])

    def jacobian(self, params: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """Return the moments and their exact Jacobian (moments by estimated params) at ``params``.

        Forward-mode derivatives of the one program; exact for smooth moments (``smooth=True``),
        for drawn moments they ignore the jumps where a subject's drawn choice flips.
        """
        if self.program is None:
            msg = "Exact derivatives need the one-program moments (compiled=True or smooth=True)."
            raise EstimationError(msg)
        full = self.full_params(params)
        return self.program.jacobian(np.array([full[name] for name in self.estimated]))

    def living_subjects(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the simulated subjects alive in each age group at ``params``.

        With the one program, its own count (``MomentProgram.living``; for smooth moments the
        expected number); otherwise ``subjects_per_group`` of the simulated table.
        """
        if self.program is None:
            return subjects_per_group(frame=self.frame(params), age_groups=self.age_groups)
        full = self.full_params(params)
        return self.program.living(np.array([full[name] for name in self.estimated]))

    def choice_counts(self, params: Mapping[str, float]) -> np.ndarray:
        """Return the choice count at ``params``: the subjects deciding and those choosing.

        The same simulated subjects as the moments (``choice``: ``ChoiceCount``); from the one
        program where it runs, else from the simulated table.
        """
        if self.choice is None:
            msg = "These moments count no choice: build them with choice=ChoiceCount(...)."
            raise EstimationError(msg)
        full = self.full_params(params)
        if self.program is not None:
            return self.program.choices(np.array([full[name] for name in self.estimated]))
        return choice_counts_of_table(
            model=self.model,
            params=full,
            initial_conditions=self.initial_conditions,
            seed=self.seed,
            choice=self.choice,
        )

    def batch(self, points: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Return the moments at every point (rows), in one program where the model allows."""
        if self.program is None:
            return np.stack([self(point) for point in points])
        rows = [self.full_params(point) for point in points]
        return self.program.batch(np.array([[r[n] for n in self.estimated] for r in rows]))


def lifecycle_moment_simulator(
    *,
    model: Model | RegimeModel,
    base_params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any] | pd.DataFrame,
    seed: int,
    age_groups: Sequence[tuple[float, float]],
    estimated: Sequence[str] = ("crra", "beta"),
    subject_batch_size: int = 0,
) -> LifecycleMoments:
    """Return ``simulate_moments(params)`` for ``estimate_msm``; see the module docstring.

    ``initial_conditions``: one array per state (e.g. from ``draw_initial_conditions``);
    ``seed``: the simulation's seed; ``age_groups``: ``(age_min, age_max)`` pairs covering
    ages age_min+1..age_max; ``estimated``: the params that vary (scalars of ``base_params``).
    """
    return LifecycleMoments(
        model=model,
        base_params=base_params,
        initial_conditions=initial_conditions,
        seed=seed,
        age_groups=age_groups,
        estimated=estimated,
        subject_batch_size=subject_batch_size,
    )


def _validated(
    *, model: Model | RegimeModel, initial_conditions: Mapping[str, Any] | pd.DataFrame
) -> dict[str, np.ndarray]:
    """Return the initial conditions as arrays, checked against the model (raises if invalid)."""
    if not isinstance(model, RegimeModel):
        return validate_initial_conditions(model=model, initial_conditions=initial_conditions)
    validate_regime_initial_conditions(model=model, initial_conditions=initial_conditions)
    if isinstance(initial_conditions, pd.DataFrame):
        return {c: initial_conditions[c].to_numpy() for c in initial_conditions}
    return {name: np.asarray(values) for name, values in initial_conditions.items()}


def _check_model(
    *, model: Model | RegimeModel, base_params: Mapping[str, Any], estimated: Sequence[str]
) -> None:
    """Raise unless the model has what the moments need and the estimated params are scalars."""
    regimes = model.regimes.values() if isinstance(model, RegimeModel) else [model]
    functions = {name for regime in regimes for name in regime.functions}
    missing = [] if defines_ratio(model) else [f for f in TARGETS if f not in functions]
    if missing or "wealth" not in model.states:
        msg = (
            f"Model {model.name!r} lacks {missing or ['the state wealth']}: the log wealth-to-"
            f"income moments need a wealth state and either the function {RATIO_TARGET} in "
            "every living regime (project.models.lifecycle_normalised) or the functions "
            "labor_income and working (project.models.lifecycle)."
        )
        raise EstimationError(msg)
    if not defines_ratio(model) and "pension" not in base_params:
        msg = "base_params lack 'pension', the income of retirees in the moments."
        raise EstimationError(msg)
    if isinstance(estimated, str) or not estimated:
        msg = f"estimated must be a non-empty sequence of param names, got {estimated!r}."
        raise EstimationError(msg)
    for name in estimated:
        if name not in base_params or np.ndim(base_params[name]) != 0:
            msg = (
                f"Estimated param {name!r} must be a scalar param of base_params; base_params "
                f"has {sorted(base_params)}."
            )
            raise EstimationError(msg)


def _check_age_groups(
    *, age_groups: Sequence[tuple[float, float]], ages: tuple[float, ...]
) -> tuple[tuple[float, float], ...]:
    """Return the age groups; raise for an empty, inverted or overlapping group."""
    groups = tuple((float(lo), float(hi)) for lo, hi in age_groups)
    if not groups:
        msg = "age_groups is empty; give (age_min, age_max) pairs, e.g. [(30, 35), (35, 40)]."
        raise EstimationError(msg)
    model_ages = np.asarray(ages, dtype=float)
    for lo, hi in groups:
        if not lo < hi or not ((model_ages > lo) & (model_ages <= hi)).any():
            msg = (
                f"Age group ({lo:g}, {hi:g}) holds no age of the model (ages {model_ages[0]:g}"
                f"..{model_ages[-1]:g}); a group (age_min, age_max) covers ages "
                "age_min+1..age_max. Give groups within the model's ages."
            )
            raise EstimationError(msg)
    ordered = sorted(groups)
    for (_, first_hi), (second_lo, _) in itertools.pairwise(ordered):
        if second_lo < first_hi:
            msg = f"Age groups overlap ({ordered}); each subject-year must count in one group."
            raise EstimationError(msg)
    return groups
