"""Consumption and saving with iid income: the endogenous grid method's benchmark model.

Cash on hand ``wealth`` is the state; the agent consumes ``c <= wealth`` and carries savings
``wealth - c`` at gross return ``interest_factor`` into next period, when an iid income draw
(1, 2 or 3 equally likely values with mean one; 1 is the deterministic case) arrives:
``next_wealth = R (wealth - c) + income``.
CRRA utility; the last period consumes everything. The model states both a wealth and a
consumption grid (for the grid solver) and a savings grid (for EGM), so the two solvers can be
cross-checked on one statement.
"""

from __future__ import annotations

import jax.numpy as jnp

from project.grids import ContinuousGrid, IrregSpacedGrid, LinSpacedGrid, LogSpacedGrid
from project.model import Model
from project.savings_grids import default_savings_grid
from project.shocks import DiscreteShock

DEFAULT_PARAMS = {"beta": 0.96, "crra": 2.0, "interest_factor": 1.03}
INCOME_NODES = {1: (1.0,), 2: (0.7, 1.3), 3: (0.6, 1.0, 1.4)}
WEALTH_RANGE = (0.1, 20.0)


def build_model(
    *,
    n_wealth: int = 100,
    n_consumption: int = 200,
    n_savings: int = 500,
    n_income: int = 2,
    n_periods: int = 10,
    savings_max: float = 20.0,
    savings: ContinuousGrid | None = None,
) -> Model:
    """Return the model; ``n_income`` is 1, 2 or 3 equally likely income values.

    ``savings`` replaces the default savings grid (``n_savings`` points up to ``savings_max``).
    """
    low, high = WEALTH_RANGE
    return Model(
        name="iid_income",
        states={"wealth": LogSpacedGrid(start=low, stop=high, n_points=n_wealth, name="wealth")},
        actions={
            "consumption": LinSpacedGrid(
                start=0.01, stop=high, n_points=n_consumption, name="consumption"
            )
        },
        functions={"utility": utility, "next_wealth": next_wealth},
        constraints={"borrowing_constraint": borrowing_constraint},
        shocks={"income": DiscreteShock(nodes=INCOME_NODES[n_income])},
        n_periods=n_periods,
        post_decision_grid=savings or savings_grid(n_points=n_savings, stop=savings_max),
    )


def savings_grid(*, n_points: int, stop: float) -> IrregSpacedGrid:
    """Return the default savings grid: 0 and then points even in log(1 + s)."""
    return default_savings_grid(stop=stop, n_points=n_points)


def utility(consumption: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return CRRA utility."""
    return consumption ** (1 - crra) / (1 - crra)


def next_wealth(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    income: jnp.ndarray,
    interest_factor: jnp.ndarray,
) -> jnp.ndarray:
    """Return next period's cash on hand: savings with interest plus the income draw."""
    return interest_factor * (wealth - consumption) + income


def borrowing_constraint(consumption: jnp.ndarray, wealth: jnp.ndarray) -> jnp.ndarray:
    """Return whether consumption leaves savings >= 0."""
    return consumption <= wealth
