"""The default life-cycle model restated as regimes: working, retired and dead.

The same economics as ``lifecycle.build_model`` without the states and choices a phase does not
have. *Working* (states: preference type, Markov income, wealth; actions: retire or work,
consumption) earns ``wage * exp(income node)`` and may retire (mandatorily from
``mandatory_retirement_age``); choosing to retire moves the household to *retired* next period
(states: type, wealth; action: consumption), which lives on its pension. *Dead* is terminal with
value 0 (no bequest motive).

Survival: with ``survival=True`` (or ``"gompertz"``) a household alive at age ``a`` dies before
the next period with the Gompertz probability ``min(1, exp(mortality_intercept + mortality_slope
* a))``: at the default params 0.5 % at 50, 2.6 % at 70 and 5.9 % at 80, near US period life
tables for men. With ``survival="life_table"`` the probability of living from period ``t`` to
``t + 1`` is the parameter array ``survival_probabilities[t]`` (one entry per period), which
``life_table_params`` fills from the vendored SSA life table (``project.data``); the model
function ``survival`` reads it and the regime transitions read that. With ``survival=False``
nobody dies, and V of working and retired households equals the single-regime model's V at
lagged retirement "working" and "retired" (``tests/test_regimes.py``). ``bequest=True`` gives the
dead the value of a warm-glow bequest ``bequest_weight * (wealth + bequest_shift)^(1 - crra) /
(1 - crra)`` of the wealth they leave.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp

from project.errors import ModelSpecificationError
from project.grids import DiscreteGrid
from project.model import Model
from project.models.iid_income import savings_grid
from project.models.ijrs import RetirementStatus, borrowing_constraint, working
from project.models.lifecycle import (
    DEFAULT_PARAMS,
    IncomeProcess,
    PreferenceType,
    consumption_grid,
    inverse_marginal_utility,
    inverse_utility,
    labor_income,
    mandatory_retirement,
    next_pref_type,
    next_wealth,
    utility,
    wealth_grid,
)
from project.regimes import RegimeModel, TerminalRegime

REGIMES = ("working", "retired", "dead")
MORTALITY_PARAMS = {"mortality_intercept": -9.44, "mortality_slope": 0.0828}
BEQUEST_PARAMS = {"bequest_weight": 2.0, "bequest_shift": 1.0}


def default_params(*, survival: bool = True, bequest: bool = False) -> dict[str, Any]:
    """Return the single-regime model's default params (and mortality and bequest params)."""
    return (
        dict(DEFAULT_PARAMS)
        | (MORTALITY_PARAMS if survival else {})
        | (BEQUEST_PARAMS if bequest else {})
    )


def build_model(
    *,
    n_wealth: int = 100,
    n_consumption: int = 100,
    n_income: int = 5,
    n_periods: int = 30,
    start_age: int = 50,
    n_savings: int | None = None,
    taste_shocks: bool = False,
    survival: bool | str = True,
    bequest: bool = False,
) -> RegimeModel:
    """Return the life-cycle model as regimes (grids and options as ``lifecycle.build_model``).

    ``survival``: True or "gompertz" (parametric mortality), "life_table" (the parameter array
    ``survival_probabilities``, one entry per period) or False (nobody dies).
    """
    form = _survival_form(survival)
    ages = range(start_age, start_age + n_periods)
    wealth = wealth_grid(n_points=n_wealth)
    consumption = consumption_grid(n_points=n_consumption)
    types = DiscreteGrid(PreferenceType)
    savings = None if n_savings is None else savings_grid(n_points=n_savings, stop=20)
    income = IncomeProcess(n_income)
    table = form == "life_table"
    survival_functions = {"survival": survival_from_table} if table else {}
    survival_shapes = {"survival_probabilities": (n_periods,)} if table else {}
    survival_parts = {"functions": survival_functions, "shapes": survival_shapes}
    working_regime = _working_regime(
        grids={"pref_type": types, "income": income.grid, "wealth": wealth},
        consumption=consumption,
        income=income,
        savings=savings,
        ages=ages,
        survival=survival_parts,
        taste_shocks=taste_shocks,
    )
    retired_regime = _retired_regime(
        grids={"pref_type": types, "wealth": wealth},
        consumption=consumption,
        savings=savings,
        ages=ages,
        survival=survival_parts,
    )
    return RegimeModel(
        name="lifecycle_regimes",
        regimes={
            "working": working_regime,
            "retired": retired_regime,
            "dead": TerminalRegime(value=bequest_value if bequest else None),
        },
        transitions=_transitions(form),
    )


def _working_regime(
    *,
    grids: dict[str, Any],
    consumption: Any,
    income: IncomeProcess,
    savings: Any,
    ages: range,
    survival: dict[str, dict[str, Any]],
    taste_shocks: bool,
) -> Model:
    """Return the working regime: it retires (or not) and consumes."""
    return Model(
        name="working",
        states=dict(grids),
        actions={"retirement": DiscreteGrid(RetirementStatus), "consumption": consumption},
        functions={
            "utility": utility,
            "inverse_utility": inverse_utility,
            "inverse_marginal_utility": inverse_marginal_utility,
            "working": working,
            "income_nodes": income.nodes,
            "labor_income": labor_income,
            "next_wealth": next_wealth,
            "next_pref_type": next_pref_type,
            **survival["functions"],
        },
        constraints={
            "borrowing_constraint": borrowing_constraint,
            "mandatory_retirement": mandatory_retirement,
        },
        stochastic_transitions={"income": income.transition},
        ages=ages,
        param_shapes={"disutility_of_work": (2,), **survival["shapes"]},
        post_decision_grid=savings,
        taste_shocks=taste_shocks,
    )


def _retired_regime(
    *,
    grids: dict[str, Any],
    consumption: Any,
    savings: Any,
    ages: range,
    survival: dict[str, dict[str, Any]],
) -> Model:
    """Return the retired regime: it consumes."""
    return Model(
        name="retired",
        states=dict(grids),
        actions={"consumption": consumption},
        functions={
            "utility": retired_utility,
            "inverse_utility": retired_inverse_utility,
            "inverse_marginal_utility": inverse_marginal_utility,
            "next_wealth": retired_next_wealth,
            "next_pref_type": next_pref_type,
            **survival["functions"],
        },
        constraints={"borrowing_constraint": borrowing_constraint},
        ages=ages,
        param_shapes=survival["shapes"],
        post_decision_grid=savings,
    )


def _transitions(form: str) -> dict[str, Any]:
    """Return the regime transitions of the survival ``form``."""
    if form == "life_table":
        return {"working": working_transition_of, "retired": retired_transition_of}
    if form == "gompertz":
        return {"working": working_transition, "retired": retired_transition}
    return {"working": working_transition_immortal, "retired": lambda: {"retired": 1.0}}


def _survival_form(survival: bool | str) -> str:
    if survival is True or survival == "gompertz":
        return "gompertz"
    if survival is False:
        return "none"
    if survival == "life_table":
        return "life_table"
    msg = (
        f"lifecycle_regimes: survival must be True, False, 'gompertz' or 'life_table', got "
        f"{survival!r}."
    )
    raise ModelSpecificationError(msg)


def params_for(model: RegimeModel, *, female_share: float = 0.5) -> dict[str, Any]:
    """Return the default params of a built model: exactly the params its options use.

    Mortality and bequest params where the model has them; with life-table survival the
    ``survival_probabilities`` of the model's ages from the vendored SSA table, mixing men and
    women with ``female_share``.
    """
    template = model.params_template
    defaults = dict(DEFAULT_PARAMS) | MORTALITY_PARAMS | BEQUEST_PARAMS
    params = {name: value for name, value in defaults.items() if name in template}
    if "survival_probabilities" in template:
        ages = [int(age) for age in model.ages]
        params |= life_table_params(ages=ages, female_share=female_share)
    return {name: params[name] for name in sorted(params) if name in template}


def life_table_params(*, ages: Sequence[int], female_share: float = 0.5) -> dict[str, Any]:
    """Return the default params with ``survival_probabilities`` from the vendored life table."""
    from project.data import survival_probabilities, verified_path  # noqa: PLC0415

    probabilities = survival_probabilities(
        path=verified_path("us_life_table"), ages=[int(a) for a in ages], female_share=female_share
    )
    return dict(DEFAULT_PARAMS) | {"survival_probabilities": [float(p) for p in probabilities]}


def survival_from_table(period: jnp.ndarray, survival_probabilities: jnp.ndarray) -> jnp.ndarray:
    """Return the probability of living to the next period, read from the table by period."""
    return survival_probabilities[period]


def working_transition_of(retirement: jnp.ndarray, survival: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return next period's regime of a worker who survives with probability ``survival``."""
    return {
        "working": survival * (1 - retirement),
        "retired": survival * retirement,
        "dead": 1 - survival,
    }


def retired_transition_of(survival: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return next period's regime of a retiree who survives with probability ``survival``."""
    return {"retired": survival, "dead": 1 - survival}


def survival_probability(
    age: jnp.ndarray, mortality_intercept: jnp.ndarray, mortality_slope: jnp.ndarray
) -> jnp.ndarray:
    """Return the probability of living to the next period (Gompertz mortality)."""
    return 1 - jnp.minimum(1.0, jnp.exp(mortality_intercept + mortality_slope * age))


def working_transition(
    retirement: jnp.ndarray,
    age: jnp.ndarray,
    mortality_intercept: jnp.ndarray,
    mortality_slope: jnp.ndarray,
) -> dict[str, jnp.ndarray]:
    """Return next period's regime: retirement moves to "retired", death to "dead"."""
    alive = survival_probability(age, mortality_intercept, mortality_slope)
    return {
        "working": alive * (1 - retirement),
        "retired": alive * retirement,
        "dead": 1 - alive,
    }


def working_transition_immortal(retirement: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return next period's regime without mortality: "retired" after retiring."""
    return {"working": 1.0 - retirement, "retired": 1.0 * retirement}


def retired_transition(
    age: jnp.ndarray, mortality_intercept: jnp.ndarray, mortality_slope: jnp.ndarray
) -> dict[str, jnp.ndarray]:
    """Return next period's regime of a retiree: retired while alive."""
    alive = survival_probability(age, mortality_intercept, mortality_slope)
    return {"retired": alive, "dead": 1 - alive}


def retired_utility(consumption: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return CRRA utility of consumption (no work, no disutility)."""
    return consumption ** (1 - crra) / (1 - crra)


def retired_inverse_utility(utility_level: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return the consumption whose ``retired_utility`` is ``utility_level`` (EGM's closed form)."""
    return ((1 - crra) * utility_level) ** (1 / (1 - crra))


def retired_next_wealth(
    wealth: jnp.ndarray, consumption: jnp.ndarray, pension: jnp.ndarray, r: jnp.ndarray
) -> jnp.ndarray:
    """Return savings with interest plus the pension."""
    return (1 + r) * (wealth - consumption) + pension


def bequest_value(
    wealth: jnp.ndarray, crra: jnp.ndarray, bequest_weight: jnp.ndarray, bequest_shift: jnp.ndarray
) -> jnp.ndarray:
    """Return the warm-glow value of leaving ``wealth``."""
    return bequest_weight * (wealth + bequest_shift) ** (1 - crra) / (1 - crra)
