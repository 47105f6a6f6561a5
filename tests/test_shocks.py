"""iid shocks: discretisation moments, guards, and draws in the simulation."""

import jax.numpy as jnp
import numpy as np
import pytest

from project import LinSpacedGrid, Model, ModelSpecificationError
from project.dispatch import solve
from project.models import iid_income
from project.shocks import DiscreteShock, LogNormalShock, NormalShock, shock_tables
from project.simulation.forward import simulate


def log_utility(consumption):
    return jnp.log(consumption)


@pytest.mark.parametrize("method", ["gauss-hermite", "equiprobable"])
def test_normal_nodes_have_the_right_mean_and_weights(x64, method):
    nodes, weights = NormalShock(mean="mu", sd="sd", n_nodes=7, method=method).nodes_and_weights(
        {"mu": jnp.asarray(0.3), "sd": jnp.asarray(0.2)}
    )
    assert float(jnp.sum(weights)) == pytest.approx(1.0, abs=1e-14)
    assert float(jnp.sum(weights * nodes)) == pytest.approx(0.3, abs=1e-14)
    variance = float(jnp.sum(weights * (nodes - 0.3) ** 2))
    if method == "gauss-hermite":
        assert variance == pytest.approx(0.04, rel=1e-12)
    else:  # conditional means understate the variance
        assert 0.9 * 0.04 < variance < 0.04


@pytest.mark.parametrize("method", ["gauss-hermite", "equiprobable"])
def test_lognormal_nodes_have_the_lognormal_mean(x64, method):
    nodes, weights = LogNormalShock(
        mean_of_log=-0.02, sd_of_log=0.2, n_nodes=9, method=method
    ).nodes_and_weights({})
    expected = np.exp(-0.02 + 0.2**2 / 2)
    assert float(jnp.sum(weights * nodes)) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"nodes": [1, 2], "weights": [0.5, 0.6]}, "sum to"),
        ({"nodes": [1, 2], "weights": [1.5, -0.5]}, "negative"),
        ({"nodes": [1, 2], "weights": [1.0]}, "2 nodes but 1 weights"),
        ({"nodes": []}, "non-empty"),
    ],
)
def test_bad_discrete_shocks_are_refused(kwargs, match):
    with pytest.raises(ModelSpecificationError, match=match):
        DiscreteShock(**kwargs)


def test_bad_distribution_shocks_are_refused():
    with pytest.raises(ModelSpecificationError, match="n_nodes"):
        NormalShock(sd=1.0, n_nodes=0)
    with pytest.raises(ModelSpecificationError, match="method"):
        NormalShock(sd=1.0, n_nodes=3, method="tauchen")
    with pytest.raises(ModelSpecificationError, match="sd must be >= 0"):
        NormalShock(sd=-1.0, n_nodes=3)


def test_shock_parameters_join_the_params_template():
    model = Model(
        name="m",
        states={"wealth": LinSpacedGrid(start=1, stop=2, n_points=3)},
        actions={"consumption": LinSpacedGrid(start=0.1, stop=1, n_points=3)},
        functions={
            "utility": log_utility,
            "next_wealth": lambda wealth, consumption, income: wealth - consumption + income,
        },
        shocks={"income": LogNormalShock(sd_of_log="income_sd", n_nodes=3)},
        n_periods=2,
    )
    assert set(model.params_template) == {"beta", "income_sd"}


def test_a_shock_in_utility_is_refused():
    with pytest.raises(ModelSpecificationError, match="only laws of motion"):
        Model(
            name="m",
            states={"wealth": LinSpacedGrid(start=1, stop=2, n_points=3)},
            actions={"consumption": LinSpacedGrid(start=0.1, stop=1, n_points=3)},
            functions={
                "utility": lambda consumption, taste: jnp.log(consumption) * taste,
                "next_wealth": lambda wealth, consumption: wealth - consumption,
            },
            shocks={"taste": DiscreteShock(nodes=[0.9, 1.1])},
            n_periods=2,
        )


def test_a_shock_named_like_a_state_is_refused():
    with pytest.raises(ModelSpecificationError, match="named like"):
        Model(
            name="m",
            states={"wealth": LinSpacedGrid(start=1, stop=2, n_points=3)},
            actions={"consumption": LinSpacedGrid(start=0.1, stop=1, n_points=3)},
            functions={
                "utility": log_utility,
                "next_wealth": lambda wealth, consumption: wealth - consumption,
            },
            shocks={"wealth": DiscreteShock(nodes=[0.9, 1.1])},
            n_periods=2,
        )


def test_joint_table_of_two_shocks_is_the_product():
    values, weights, codes = shock_tables(
        {
            "a": DiscreteShock(nodes=[1.0, 2.0], weights=[0.25, 0.75]),
            "b": DiscreteShock(nodes=[10.0, 20.0, 30.0]),
        },
        {},
    )
    assert codes.shape == (6, 2)
    np.testing.assert_allclose(np.asarray(weights).sum(), 1.0)
    np.testing.assert_allclose(np.asarray(values["a"] + values["b"])[:3], [11, 21, 31])


@pytest.mark.parametrize("method", ["egm", "grid"])
def test_simulated_income_draws_follow_the_weights_and_ignore_chunking(x64, method):
    model = iid_income.build_model(n_wealth=30, n_consumption=60, n_savings=100, n_periods=3)
    params = iid_income.DEFAULT_PARAMS
    solution = solve(model=model, params=params, method=method)
    initial = {"wealth": np.full(4000, 2.0)}
    whole = simulate(params=params, initial_conditions=initial, solution=solution, seed=3)
    chunked = simulate(
        params=params,
        initial_conditions=initial,
        solution=solution,
        seed=3,
        subject_batch_size=700,
    )
    for name, values in whole.columns.items():
        np.testing.assert_array_equal(values, chunked.columns[name])
    # Next wealth = R·savings + income: the income draw is what is left over.
    wealth, consumption = whole.columns["wealth"], whole.columns["consumption"]
    income = wealth[:, 1] - params["interest_factor"] * (wealth[:, 0] - consumption[:, 0])
    high = np.isclose(income, 1.3)
    assert np.all(high | np.isclose(income, 0.7))
    assert abs(high.mean() - 0.5) < 0.03
