"""Precautionary savings: wealth and Markov income (Rouwenhorst AR(1)), log utility, c <= wealth.

V has axes (income, wealth). Income of the current node is added to next period's wealth.
"""

from __future__ import annotations

import jax.numpy as jnp

from project.grids import DiscreteGrid, LinSpacedGrid, categories
from project.model import Model
from project.models.iid_income import savings_grid
from project.models.income import rouwenhorst_matrix, rouwenhorst_nodes

DEFAULT_PARAMS = {"beta": 0.95, "r": 0.0, "income_rho": 0.9, "income_sigma": 0.2}


def build_model(
    *,
    n_wealth: int = 100,
    n_consumption: int = 100,
    n_periods: int = 5,
    n_income: int = 5,
    wealth_batch_size: int = 0,
    income_batch_size: int = 0,
    n_savings: int | None = None,
    consumption_stop: float = 5.0,
) -> Model:
    """Return the precautionary-savings model on wealth [1, 20] and consumption [0.1, 5].

    ``n_savings`` states a savings grid on [0, 20] (the borrowing limit is 0): the model can then
    be solved with EGM too, and EGM becomes its default method. ``consumption_stop`` is the top
    of the consumption grid: a bound on consumption for the grid solver (EGM has none).
    """

    def income_nodes(income_rho: jnp.ndarray, income_sigma: jnp.ndarray) -> jnp.ndarray:
        return rouwenhorst_nodes(n_nodes=n_income, rho=income_rho, sigma=income_sigma)

    def income_transition(income: jnp.ndarray, income_rho: jnp.ndarray) -> jnp.ndarray:
        return rouwenhorst_matrix(n_nodes=n_income, rho=income_rho)[income]

    return Model(
        name="precautionary",
        states={
            "income": DiscreteGrid(
                categories("Income", [f"node_{i}" for i in range(n_income)]),
                batch_size=income_batch_size,
            ),
            "wealth": LinSpacedGrid(
                start=1, stop=20, n_points=n_wealth, batch_size=wealth_batch_size, name="wealth"
            ),
        },
        actions={
            "consumption": LinSpacedGrid(
                start=0.1, stop=consumption_stop, n_points=n_consumption, name="consumption"
            ),
        },
        functions={
            "utility": utility,
            "income_nodes": income_nodes,
            "labor_income": labor_income,
            "next_wealth": next_wealth,
        },
        constraints={"borrowing_constraint": borrowing_constraint},
        stochastic_transitions={"income": income_transition},
        n_periods=n_periods,
        post_decision_grid=None if n_savings is None else savings_grid(n_points=n_savings, stop=20),
    )


def utility(consumption: jnp.ndarray) -> jnp.ndarray:
    """Return log consumption."""
    return jnp.log(consumption)


def labor_income(income: jnp.ndarray, income_nodes: jnp.ndarray) -> jnp.ndarray:
    """Return exp of the current income node."""
    return jnp.exp(income_nodes[income])


def next_wealth(
    wealth: jnp.ndarray, consumption: jnp.ndarray, labor_income: jnp.ndarray, r: jnp.ndarray
) -> jnp.ndarray:
    """Return savings with interest plus this period's income."""
    return (1 + r) * (wealth - consumption) + labor_income


def borrowing_constraint(consumption: jnp.ndarray, wealth: jnp.ndarray) -> jnp.ndarray:
    """Return whether consumption is affordable."""
    return consumption <= wealth
