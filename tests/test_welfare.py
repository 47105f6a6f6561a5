"""The consumption equivalent against cases where λ is known."""

import numpy as np
import pandas as pd
import pytest

from project import solve
from project.analysis.welfare import (
    consumption_equivalent,
    consumption_utility,
    initial_values,
    scaled_params,
    simulated_consumption_utility,
    welfare_effect,
)
from project.models import lifecycle_regimes
from project.simulation import draw_initial_conditions, simulate


def test_consumption_equivalent_by_hand():
    # gamma = 2: (1 + l)^-1 C + R = V1 with C = -10, R = -2, l = -0.2: V1 = -12.5 - 2.
    assert consumption_equivalent(
        base_value=-12.0, counterfactual_value=-14.5, consumption_utility=-10.0, crra=2.0
    ) == pytest.approx(-0.2, abs=1e-12)
    assert (
        consumption_equivalent(
            base_value=-12.0, counterfactual_value=-12.0, consumption_utility=-10.0, crra=2.0
        )
        == 0.0
    )
    # gamma = 0.5: (1 + l)^0.5 C with C = 4 and l = 0.21 gives 4.4.
    assert consumption_equivalent(
        base_value=5.0, counterfactual_value=5.4, consumption_utility=4.0, crra=0.5
    ) == pytest.approx(0.21, abs=1e-12)
    with pytest.raises(ValueError, match="crra = 1"):
        consumption_equivalent(
            base_value=1.0, counterfactual_value=1.0, consumption_utility=1.0, crra=1.0
        )


def test_scaled_params_divide_only_non_consumption_utility():
    params = {"disutility_of_work": [0.2, 0.6], "taste_shock_scale": 0.01, "crra": 2.0}
    scaled = scaled_params(params, scale=2.0)
    assert scaled == {"disutility_of_work": [0.1, 0.3], "taste_shock_scale": 0.005, "crra": 2.0}


@pytest.fixture(scope="module")
def model():
    return lifecycle_regimes.build_model(
        n_wealth=12,
        n_consumption=12,
        n_periods=6,
        start_age=64,
        n_savings=40,
        taste_shocks=True,
        survival="life_table",
    )


def states_of(wealth, *, pref_type="work_loving"):
    n = len(wealth)
    return pd.DataFrame(
        {
            "regime": pd.Categorical(["working"] * n),
            "pref_type": pd.Categorical(
                [pref_type] * n, categories=["work_loving", "leisure_loving"]
            ),
            "income": pd.Categorical(["node_2"] * n),
            "wealth": np.asarray(wealth, dtype=np.float64),
        }
    )


def test_the_same_model_gives_zero(model):
    params = lifecycle_regimes.params_for(model) | {"taste_shock_scale": 0.01}
    solution = solve(model=model, params=params)
    states = pd.concat([states_of([1.0, 3.0]), states_of([2.0], pref_type="leisure_loving")])
    result = welfare_effect(
        model=model,
        base_params=params,
        base_solution=solution,
        counterfactual_solution=solution,
        states=states.reset_index(drop=True),
    )
    assert result["lambda"] == 0.0
    assert result["lambda_by_type"] == {"work_loving": 0.0, "leisure_loving": 0.0}
    assert result["value_difference"] == 0.0


def test_without_other_utility_consumption_utility_is_v_and_scaling_gives_k_minus_1(model):
    """No work disutility, no shocks: V is all consumption utility, and scaling wage, pension
    and initial wealth by k scales consumption by k (homothetic, limit at zero): λ = k - 1."""
    params = lifecycle_regimes.params_for(model) | {
        "taste_shock_scale": 0.0,
        "disutility_of_work": [0.0, 0.0],
    }
    k = 0.9
    wealth = np.array([1.5, 3.0, 6.0])
    base = solve(model=model, params=params)
    scaled = solve(model=model, params=params | {"wage": k, "pension": k * params["pension"]})
    states = states_of(wealth)
    v0 = initial_values(solution=base, states=states)
    v1 = initial_values(solution=scaled, states=states_of(k * wealth))
    c = consumption_utility(model=model, params=params, states=states)
    np.testing.assert_allclose(c, v0, rtol=1e-4)
    lam = consumption_equivalent(
        base_value=v0.mean(),
        counterfactual_value=v1.mean(),
        consumption_utility=c.mean(),
        crra=params["crra"],
    )
    assert lam == pytest.approx(k - 1, abs=2e-3)


def test_consumption_utility_matches_the_simulated_one(model):
    """The envelope derivative against Monte Carlo over realised consumption (4 std. errors)."""
    params = lifecycle_regimes.params_for(model) | {"taste_shock_scale": 0.05}
    solution = solve(model=model, params=params)
    initial = draw_initial_conditions(
        model=model,
        n_subjects=3000,
        seed=5,
        distribution={
            "pref_type": {"probabilities": [0.5, 0.5]},
            "regime": {"label": "working"},
            "income": {"label": "node_2"},
            "wealth": {"lognormal": [0.5, 0.6], "clip": [0.2, 20]},
        },
    )
    panel = simulate(params=params, initial_conditions=initial, solution=solution, seed=5)
    panel = panel.to_dataframe()
    first = panel[panel["period"] == 0].sort_values("subject_id").reset_index(drop=True)
    exact = consumption_utility(model=model, params=params, states=first).mean()
    simulated = simulated_consumption_utility(panel=panel, params=params)
    error = simulated.std() / np.sqrt(simulated.size)
    assert abs(exact - simulated.mean()) < 4 * error
    # The work disutility is not consumption: C differs from V by more than the noise.
    value = initial_values(solution=solution, states=first).mean()
    assert abs(value - exact) > 10 * error
