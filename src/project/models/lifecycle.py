"""The pipeline's default model: consumption, saving and retirement over the life cycle.

States: a permanent preference type (never transitions; the axis to shard), lagged retirement
(absorbing), Markov income (Rouwenhorst AR(1)) and continuous wealth. Actions: retirement and
consumption. CRRA utility less a type-specific disutility of work; workers earn
``wage * exp(income node)``, retirees a pension; retirement is mandatory from
``mandatory_retirement_age``. V has axes (pref_type, lagged_retirement, income, wealth).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp

from project.grids import DiscreteGrid, LinSpacedGrid, categories
from project.model import Model
from project.models.iid_income import savings_grid
from project.models.ijrs import (
    RetirementStatus,
    absorbing_retirement,
    borrowing_constraint,
    next_lagged_retirement,
    working,
)
from project.models.income import rouwenhorst_matrix, rouwenhorst_nodes

DEFAULT_PARAMS = {
    "beta": 0.96,
    "crra": 2.0,
    "r": 0.03,
    "wage": 1.0,
    "pension": 0.45,
    "disutility_of_work": [0.15, 0.6],
    "mandatory_retirement_age": 70.0,
    "income_rho": 0.9,
    "income_sigma": 0.1,
}
DEFAULT_TASTE_SHOCK_SCALE = 0.01
"""The scale of the EV1 taste shocks (param ``taste_shock_scale``) of ``build_model(
taste_shocks=True)``; ``DEFAULT_PARAMS`` lacks it, as the model without taste shocks does."""


def default_params(*, n_types: int = 2) -> dict[str, Any]:
    """Return default params for ``n_types`` types (disutility of work spread over [0.15, 0.6])."""
    if n_types == 2:
        return dict(DEFAULT_PARAMS)
    spread = [0.15 + 0.45 * i / (n_types - 1) for i in range(n_types)] if n_types > 1 else [0.15]
    return DEFAULT_PARAMS | {"disutility_of_work": spread}


@dataclass(frozen=True)
class PreferenceType:
    """A permanent type that differs in its disutility of work."""

    work_loving: int = 0
    leisure_loving: int = 1


def build_model(
    *,
    n_wealth: int = 100,
    n_consumption: int = 100,
    n_income: int = 5,
    n_periods: int = 30,
    start_age: int = 50,
    wealth_batch_size: int = 0,
    distributed_types: bool = False,
    n_types: int = 2,
    n_savings: int | None = None,
    taste_shocks: bool = False,
) -> Model:
    """Return the life-cycle model; ages run from ``start_age`` for ``n_periods`` years.

    ``n_types`` other than 2 gives types ``type_0..`` (see ``default_params(n_types=...)``).
    ``n_savings`` adds a savings grid on [0, 20] (dense near the borrowing limit), so that the
    model solves by DC-EGM; ``taste_shocks`` adds EV1 shocks to the retirement choice (param
    ``taste_shock_scale``).
    """
    type_class = (
        PreferenceType
        if n_types == 2
        else categories("PreferenceType", [f"type_{i}" for i in range(n_types)])
    )

    income = IncomeProcess(n_income)
    return Model(
        name="lifecycle",
        states={
            "pref_type": DiscreteGrid(type_class, distributed=distributed_types),
            "lagged_retirement": DiscreteGrid(RetirementStatus),
            "income": income.grid,
            "wealth": wealth_grid(n_points=n_wealth, batch_size=wealth_batch_size),
        },
        actions={
            "retirement": DiscreteGrid(RetirementStatus),
            "consumption": consumption_grid(n_points=n_consumption),
        },
        functions=_functions(income),
        constraints={
            "borrowing_constraint": borrowing_constraint,
            "absorbing_retirement": absorbing_retirement,
            "mandatory_retirement": mandatory_retirement,
        },
        stochastic_transitions={"income": income.transition},
        ages=range(start_age, start_age + n_periods),
        param_shapes={"disutility_of_work": (n_types,)},
        post_decision_grid=None if n_savings is None else savings_grid(n_points=n_savings, stop=20),
        taste_shocks=taste_shocks,
    )


def _functions(income: IncomeProcess) -> dict[str, Any]:
    """Return the model's functions; the income nodes are ``income``'s."""
    return {
        "utility": utility,
        "inverse_utility": inverse_utility,
        "inverse_marginal_utility": inverse_marginal_utility,
        "working": working,
        "income_nodes": income.nodes,
        "labor_income": labor_income,
        "next_wealth": next_wealth,
        "next_lagged_retirement": next_lagged_retirement,
        "next_pref_type": next_pref_type,
    }


class IncomeProcess:
    """A Rouwenhorst AR(1) income process on ``n_nodes`` nodes: its grid, nodes and transition."""

    def __init__(self, n_nodes: int) -> None:
        self.n_nodes = n_nodes
        self.grid = DiscreteGrid(categories("Income", [f"node_{i}" for i in range(n_nodes)]))

    def nodes(self, income_rho: jnp.ndarray, income_sigma: jnp.ndarray) -> jnp.ndarray:
        """Return the log income nodes (the model function ``income_nodes``)."""
        return rouwenhorst_nodes(n_nodes=self.n_nodes, rho=income_rho, sigma=income_sigma)

    def transition(self, income: jnp.ndarray, income_rho: jnp.ndarray) -> jnp.ndarray:
        """Return next period's income probabilities given this period's node."""
        return rouwenhorst_matrix(n_nodes=self.n_nodes, rho=income_rho)[income]


def wealth_grid(*, n_points: int, batch_size: int = 0) -> LinSpacedGrid:
    """Return the wealth grid on [0.2, 20]."""
    return LinSpacedGrid(
        start=0.2, stop=20, n_points=n_points, batch_size=batch_size, name="wealth"
    )


def consumption_grid(*, n_points: int) -> LinSpacedGrid:
    """Return the consumption grid on [0.05, 20]."""
    return LinSpacedGrid(start=0.05, stop=20, n_points=n_points, name="consumption")


def utility(
    consumption: jnp.ndarray,
    working: jnp.ndarray,
    pref_type: jnp.ndarray,
    crra: jnp.ndarray,
    disutility_of_work: jnp.ndarray,
) -> jnp.ndarray:
    """Return CRRA utility of consumption less the type's disutility of work."""
    return consumption ** (1 - crra) / (1 - crra) - disutility_of_work[pref_type] * working


def inverse_utility(
    utility_level: jnp.ndarray,
    working: jnp.ndarray,
    pref_type: jnp.ndarray,
    crra: jnp.ndarray,
    disutility_of_work: jnp.ndarray,
) -> jnp.ndarray:
    """Return the consumption whose ``utility`` is ``utility_level`` (EGM's closed form)."""
    level = utility_level + disutility_of_work[pref_type] * working
    return ((1 - crra) * level) ** (1 / (1 - crra))


def inverse_marginal_utility(marginal_utility: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return the consumption whose marginal utility is ``marginal_utility`` (EGM's closed form)."""
    return marginal_utility ** (-1 / crra)


def labor_income(income: jnp.ndarray, income_nodes: jnp.ndarray, wage: jnp.ndarray) -> jnp.ndarray:
    """Return the wage scaled by exp of the current income node."""
    return wage * jnp.exp(income_nodes[income])


def next_wealth(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    working: jnp.ndarray,
    labor_income: jnp.ndarray,
    pension: jnp.ndarray,
    r: jnp.ndarray,
) -> jnp.ndarray:
    """Return savings with interest plus labour income (workers) or the pension (retirees)."""
    return (1 + r) * (wealth - consumption) + working * labor_income + (1 - working) * pension


def next_pref_type(pref_type: jnp.ndarray) -> jnp.ndarray:
    """Return the type unchanged: it is permanent."""
    return pref_type


def mandatory_retirement(
    age: jnp.ndarray, retirement: jnp.ndarray, mandatory_retirement_age: jnp.ndarray
) -> jnp.ndarray:
    """Return whether the choice respects mandatory retirement."""
    return (age < mandatory_retirement_age) | (retirement == RetirementStatus.retired)
