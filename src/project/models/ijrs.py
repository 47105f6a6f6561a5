"""The Iskhakov, Jorgensen, Rust and Schjerning (2017) consumption-retirement model.

No taste shocks; log utility, a disutility ``delta`` of work, a deterministic wage paid the
period after work, absorbing retirement and no borrowing. V has axes (lagged_retirement, wealth).
EGM reads the closed-form inverses of utility and marginal utility (the grid solver ignores them).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from project.grids import DiscreteGrid, LinSpacedGrid
from project.model import Model
from project.models.iid_income import savings_grid

DEFAULT_PARAMS = {"beta": 0.98, "delta": 1.0, "r": 0.0, "wage": 20.0}


@dataclass(frozen=True)
class RetirementStatus:
    """Working or retired."""

    working: int = 0
    retired: int = 1


def working(retirement: jnp.ndarray) -> jnp.ndarray:
    """Return 1 for a worker, 0 for a retiree."""
    return 1 - retirement


def utility(consumption: jnp.ndarray, working: jnp.ndarray, delta: jnp.ndarray) -> jnp.ndarray:
    """Return log consumption less the disutility of work."""
    return jnp.log(consumption) - delta * working


def inverse_utility(
    utility_level: jnp.ndarray, working: jnp.ndarray, delta: jnp.ndarray
) -> jnp.ndarray:
    """Return the consumption whose utility is ``utility_level`` (EGM's closed form)."""
    return jnp.exp(utility_level + delta * working)


def inverse_marginal_utility(marginal_utility: jnp.ndarray) -> jnp.ndarray:
    """Return the consumption whose marginal utility is ``marginal_utility`` (EGM's closed form)."""
    return 1 / marginal_utility


def next_wealth(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    working: jnp.ndarray,
    r: jnp.ndarray,
    wage: jnp.ndarray,
) -> jnp.ndarray:
    """Return savings with interest plus the wage of a period worked."""
    return (1 + r) * (wealth - consumption) + wage * working


def next_lagged_retirement(retirement: jnp.ndarray) -> jnp.ndarray:
    """Return this period's retirement choice."""
    return retirement


def borrowing_constraint(consumption: jnp.ndarray, wealth: jnp.ndarray) -> jnp.ndarray:
    """Return whether consumption is affordable."""
    return consumption <= wealth


def absorbing_retirement(retirement: jnp.ndarray, lagged_retirement: jnp.ndarray) -> jnp.ndarray:
    """Return whether the choice respects that retirement cannot be undone."""
    return (retirement == RetirementStatus.retired) | (
        lagged_retirement == RetirementStatus.working
    )


def build_model(
    *,
    n_wealth: int = 100,
    n_consumption: int = 500,
    n_periods: int = 5,
    wealth_batch_size: int = 0,
    n_savings: int | None = None,
    taste_shocks: bool = False,
) -> Model:
    """Return the IJRS model with wealth and consumption on linspace [1, 400].

    ``n_savings`` adds a savings grid on [0, 400], dense near the borrowing limit, so that the
    model solves by DC-EGM; ``taste_shocks`` adds EV1 shocks to the work/retire choice (param
    ``taste_shock_scale``).
    """
    return Model(
        name="ijrs",
        states={
            "lagged_retirement": DiscreteGrid(RetirementStatus),
            "wealth": LinSpacedGrid(
                start=1, stop=400, n_points=n_wealth, batch_size=wealth_batch_size, name="wealth"
            ),
        },
        actions={
            "retirement": DiscreteGrid(RetirementStatus),
            "consumption": LinSpacedGrid(
                start=1, stop=400, n_points=n_consumption, name="consumption"
            ),
        },
        functions={
            "utility": utility,
            "inverse_utility": inverse_utility,
            "inverse_marginal_utility": inverse_marginal_utility,
            "working": working,
            "next_wealth": next_wealth,
            "next_lagged_retirement": next_lagged_retirement,
        },
        constraints={
            "borrowing_constraint": borrowing_constraint,
            "absorbing_retirement": absorbing_retirement,
        },
        n_periods=n_periods,
        post_decision_grid=(
            None if n_savings is None else savings_grid(n_points=n_savings, stop=400)
        ),
        taste_shocks=taste_shocks,
    )
