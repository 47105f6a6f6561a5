"""``continuation_scale``: a factor on next period's value inside the expectation.

Oracles: a constant factor k is a discount factor beta·k (both solvers); a model normalised by
permanent income, weighting its continuation by ``(G psi')^(1 - rho)``, is the model in levels
with permanent income as a (lattice) state, divided by permanent income.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from project import ContinuousAction, DiscreteGrid, LinSpacedGrid, Model, ModelSpecificationError
from project.dispatch import solve
from project.egm.accuracy import euler_errors
from project.grids import categories
from project.models import iid_income
from project.savings_grids import default_savings_grid
from project.shocks import DiscreteShock

CRRA, R, GROWTH, STEP = 2.0, 1.03, 1.02, 1.1
"""Risk aversion, interest factor, permanent income growth G, the permanent shock psi in {1/STEP,
STEP}."""
TRANSITORY = (0.7, 1.3)
N_PERIODS, HALF = 4, 4
"""The lattice of permanent income has 2·HALF + 1 nodes STEP^(k - HALF); HALF >= N_PERIODS keeps
every path from the centre inside it."""


def utility(consumption, crra):
    return consumption ** (1 - crra) / (1 - crra)


def scaled(factor):
    def continuation_scale():
        return jnp.asarray(factor)

    return continuation_scale


@pytest.mark.parametrize("method", ["egm", "grid"])
def test_a_constant_scale_is_a_discount_factor(x64, method):
    params = iid_income.DEFAULT_PARAMS | {"beta": 0.9}
    plain = iid_income.build_model(n_wealth=30, n_consumption=60, n_savings=80, n_periods=4)
    model = Model(
        name="scaled",
        states=plain.states,
        actions=plain.actions,
        functions=plain.functions | {"continuation_scale": scaled(0.8)},
        constraints=plain.constraints,
        shocks=plain.shocks,
        n_periods=plain.n_periods,
        post_decision_grid=plain.post_decision_grid,
    )
    ours = solve(model=model, params=params, method=method)
    reference = solve(model=plain, params=params | {"beta": 0.72}, method=method)
    wealth = {"wealth": np.linspace(0.2, 15.0, 41)}
    for period in range(4):
        np.testing.assert_allclose(
            ours.value(period=period, states=wealth),
            reference.value(period=period, states=wealth),
            rtol=1e-12,
        )
    assert not np.allclose(
        ours.value(period=0, states=wealth),
        solve(model=plain, params=params, method=method).value(period=0, states=wealth),
    )


def normalised_model() -> Model:
    """Return the buffer-stock model in m = M / P: m' = R (m - c) / (G psi') + theta'."""

    def next_wealth(wealth, consumption, psi, theta, interest_factor, growth):
        return interest_factor * (wealth - consumption) / (growth * psi) + theta

    def continuation_scale(psi, growth, crra):
        return (growth * psi) ** (1 - crra)

    return Model(
        name="normalised",
        states={"wealth": LinSpacedGrid(start=0.1, stop=20, n_points=10, name="wealth")},
        actions={"consumption": ContinuousAction()},
        functions={
            "utility": utility,
            "next_wealth": next_wealth,
            "continuation_scale": continuation_scale,
        },
        constraints={"borrowing": lambda consumption, wealth: consumption <= wealth},
        shocks={
            "psi": DiscreteShock(nodes=(1 / STEP, STEP)),
            "theta": DiscreteShock(nodes=TRANSITORY),
        },
        n_periods=N_PERIODS,
        post_decision_grid=default_savings_grid(stop=20, n_points=600),
    )


def permanent_income(k, period, growth):
    return growth**period * STEP ** (k - HALF)


def levels_model() -> Model:
    """Return the same model in levels, permanent income P = G^t STEP^(k - HALF) a state."""
    n_nodes = 2 * HALF + 1
    up = np.eye(n_nodes, k=1)
    down = np.eye(n_nodes, k=-1)
    up[-1, -1] = down[0, 0] = 1.0
    moves = jnp.asarray((up + down) / 2)

    def next_wealth(wealth, consumption, next_income, theta, interest_factor, growth, period):
        return interest_factor * (wealth - consumption) + theta * permanent_income(
            next_income, period + 1, growth
        )

    return Model(
        name="levels",
        states={
            "income": DiscreteGrid(categories("Lattice", [f"k{k}" for k in range(n_nodes)])),
            "wealth": LinSpacedGrid(start=0.1, stop=40, n_points=10, name="wealth"),
        },
        actions={"consumption": ContinuousAction()},
        functions={"utility": utility, "next_wealth": next_wealth},
        constraints={"borrowing": lambda consumption, wealth: consumption <= wealth},
        stochastic_transitions={"income": lambda income: moves[income]},
        shocks={"theta": DiscreteShock(nodes=TRANSITORY)},
        n_periods=N_PERIODS,
        post_decision_grid=default_savings_grid(stop=40, n_points=1200),
    )


PARAMS = {"beta": 0.96, "crra": CRRA, "interest_factor": R, "growth": GROWTH}


def test_the_normalised_model_is_the_levels_model_over_permanent_income(x64):
    normalised = solve(model=normalised_model(), params=PARAMS, method="egm")
    levels = solve(model=levels_model(), params=PARAMS, method="egm")
    ratio = np.linspace(0.3, 6.0, 25)
    for period in range(N_PERIODS - 1):
        # Every path from these nodes stays inside the lattice until the last period.
        for k in range(HALF - period, HALF + period + 1):
            p = permanent_income(k, period, GROWTH)
            states = {"income": np.full(ratio.size, k), "wealth": p * ratio}
            level_c = levels.policy(period=period, states=states)["consumption"]
            level_v = levels.value(period=period, states=states)
            norm_c = normalised.policy(period=period, states={"wealth": ratio})["consumption"]
            norm_v = normalised.value(period=period, states={"wealth": ratio})
            np.testing.assert_allclose(level_c / p, norm_c, rtol=5e-6)
            np.testing.assert_allclose(level_v / p ** (1 - CRRA), norm_v, rtol=1e-8)


def test_without_the_scale_the_normalised_model_differs(x64):
    model = normalised_model()
    unscaled = Model(
        name="unscaled",
        states=model.states,
        actions=model.actions,
        functions={k: f for k, f in model.functions.items() if k != "continuation_scale"},
        constraints=model.constraints,
        shocks=model.shocks,
        n_periods=N_PERIODS,
        post_decision_grid=model.post_decision_grid,
    )
    ratio = {"wealth": np.linspace(0.3, 6.0, 25)}
    with_scale = solve(model=model, params=PARAMS, method="egm")
    without = solve(model=unscaled, params=PARAMS, method="egm")
    gap = np.abs(
        with_scale.policy(period=0, states=ratio)["consumption"]
        - without.policy(period=0, states=ratio)["consumption"]
    )
    assert gap.max() > 1e-2


def test_euler_errors_weigh_next_period_by_the_scale(x64):
    solution = solve(model=normalised_model(), params=PARAMS, method="egm")
    errors = euler_errors(solution, period=1, states={"wealth": np.linspace(1.5, 8.0, 30)})
    assert np.nanmax(errors) < 1e-3


@pytest.mark.parametrize(
    ("scale", "match"),
    [
        (lambda wealth: wealth, r"depends on \['wealth'\]"),
        (lambda consumption: consumption, r"depends on \['consumption'\]"),
    ],
)
def test_a_scale_reading_a_continuous_state_or_action_is_refused(scale, match):
    model = normalised_model()
    with pytest.raises(ModelSpecificationError, match=match):
        Model(
            name="bad",
            states=model.states,
            actions=model.actions,
            functions=model.functions | {"continuation_scale": scale},
            constraints=model.constraints,
            shocks=model.shocks,
            n_periods=N_PERIODS,
        )


def test_a_scale_reading_a_next_outcome_is_refused():
    model = levels_model()
    with pytest.raises(ModelSpecificationError, match=r"depends on \['next_income'\]"):
        Model(
            name="bad",
            states=model.states,
            actions=model.actions,
            functions=model.functions | {"continuation_scale": lambda next_income: next_income},
            constraints=model.constraints,
            stochastic_transitions=model.stochastic_transitions,
            shocks=model.shocks,
            n_periods=N_PERIODS,
        )


def test_a_scale_stated_as_a_constraint_is_refused():
    model = normalised_model()
    with pytest.raises(ModelSpecificationError, match="State it under functions"):
        Model(
            name="bad",
            states=model.states,
            actions=model.actions,
            functions={k: f for k, f in model.functions.items() if k != "continuation_scale"},
            constraints=model.constraints | {"continuation_scale": lambda wealth: wealth > 0},
            shocks=model.shocks,
            n_periods=N_PERIODS,
        )
