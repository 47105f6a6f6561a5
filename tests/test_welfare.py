"""The consumption equivalent against cases where λ is known."""

import numpy as np
import pandas as pd
import pytest

from project import solve
from project.analysis.welfare import (
    consumption_equivalent,
    consumption_utility,
    initial_values,
    lambdas_at,
    scaled_params,
    simulated_consumption_utility,
    subject_weights,
    weighted_mean_and_error,
    welfare_effect,
    welfare_uncertainty,
)
from project.analysis.welfare_text import welfare_numbers
from project.calibration.errors import CalibrationError
from project.estimation.variant import precision
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


SIZES = {
    "n_wealth": 12,
    "n_consumption": 12,
    "n_periods": 6,
    "start_age": 64,
    "n_savings": 40,
    "taste_shocks": True,
    "survival": "life_table",
}


@pytest.fixture(scope="module")
def model():
    return lifecycle_regimes.build_model(**SIZES)


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


def test_weights_count_a_household_as_often_as_its_weight(model):
    """Weights 2, 1, 1 give the λ of the same households with the first listed twice."""
    params = lifecycle_regimes.params_for(model) | {"taste_shock_scale": 0.01}
    base = solve(model=model, params=params)
    cut = solve(model=model, params=params | {"pension": 0.5 * params["pension"]})
    three = pd.concat([states_of([1.0, 3.0]), states_of([2.0], pref_type="leisure_loving")])
    four = pd.concat([states_of([1.0]), three])

    def effect(states, weights=None):
        return welfare_effect(
            model=model,
            base_params=params,
            base_solution=base,
            counterfactual_solution=cut,
            states=states.reset_index(drop=True),
            weights=weights,
        )

    weighted, replicated = effect(three, weights=np.array([2.0, 1.0, 1.0])), effect(four)
    for key in ("lambda", "base_value", "counterfactual_value", "consumption_utility"):
        assert weighted[key] == pytest.approx(replicated[key], rel=1e-12), key
    assert weighted["lambda_by_type"] == pytest.approx(replicated["lambda_by_type"], rel=1e-12)
    assert weighted["type_shares"] == pytest.approx({"work_loving": 0.75, "leisure_loving": 0.25})
    assert weighted["lambda"] != pytest.approx(effect(three)["lambda"], rel=1e-6)


def test_subject_weights_follow_the_ids_and_refuse_a_foreign_calibration():
    states = pd.DataFrame({"subject_id": [0, 1, 2]})
    weights = pd.DataFrame({"subject_id": [2, 0, 1], "weight": [3.0, 1.0, 2.0]})
    np.testing.assert_array_equal(subject_weights(states=states, weights=weights), [1, 2, 3])
    np.testing.assert_array_equal(subject_weights(states=states, weights=None), [1, 1, 1])
    with pytest.raises(CalibrationError, match=r"no entry for subjects \[1\].*calibrated on this"):
        subject_weights(states=states, weights=weights.iloc[:2])
    with pytest.raises(CalibrationError, match=r"subjects \[2\] more than once"):
        subject_weights(states=states, weights=pd.concat([weights, weights.iloc[:1]]))


def test_weighted_mean_and_error_with_equal_weights_is_the_sample_mean_and_its_error():
    values = np.array([1.0, 4.0, 2.0, 7.0])
    mean, error = weighted_mean_and_error(values, weights=np.full(4, 0.3))
    assert mean == pytest.approx(values.mean())
    assert error == pytest.approx(values.std(ddof=1) / 2)


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


def test_the_delta_method_carries_each_estimate_s_variance_through_both_variants(model):
    """se(lambda) = |d lambda / d crra| sd(crra) when only crra is uncertain, the slope from an
    independent, wider difference of lambda (both variants re-solved); zero covariance, zero s.e."""
    base = lifecycle_regimes.params_for(model) | {"taste_shock_scale": 0.05}
    counterfactual = base | {"pension": 0.8 * base["pension"]}
    states = pd.concat([states_of([1.0, 3.0]), states_of([2.0, 4.0], pref_type="leisure_loving")])
    states = states.reset_index(drop=True)
    estimates = {"crra": float(base["crra"]), "beta": float(base["beta"])}
    sigma = 0.1
    arguments = {
        "specification": {"model": "lifecycle_regimes", "sizes": SIZES},
        "base_params": base,
        "counterfactual_params": counterfactual,
        "states": states,
        "estimates": estimates,
    }
    result = welfare_uncertainty(**arguments, covariance=np.diag([sigma**2, 0.0]))
    step = 0.02
    with precision(x64=True):
        sides = [
            lambdas_at(
                model=lifecycle_regimes.build_model(**SIZES),
                base_params=base | {"crra": estimates["crra"] + sign * step},
                counterfactual_params=counterfactual | {"crra": estimates["crra"] + sign * step},
                states=states,
            )
            for sign in (1, -1)
        ]
    slope = (sides[0]["all"] - sides[1]["all"]) / (2 * step)
    assert abs(slope) > 1e-4  # risk aversion moves the cut's cost
    assert result["lambda_gradient"]["crra"] == pytest.approx(slope, rel=2e-2)
    assert result["lambda_se"] == pytest.approx(sigma * abs(slope), rel=2e-2)
    slope_by_type = (sides[0]["leisure_loving"] - sides[1]["leisure_loving"]) / (2 * step)
    assert result["lambda_se_by_type"]["leisure_loving"] == pytest.approx(
        sigma * abs(slope_by_type), rel=2e-2
    )
    both = welfare_uncertainty(**arguments, covariance=np.diag([sigma**2, 1e-4]))
    assert both["lambda_se"] > result["lambda_se"]  # beta's variance adds to it
    none = welfare_uncertainty(**arguments, covariance=np.zeros((2, 2)))
    assert none["lambda_se"] == 0.0


def test_the_delta_method_refuses_params_other_than_the_estimates(model):
    base = lifecycle_regimes.params_for(model)
    with pytest.raises(ValueError, match=r"differ from the estimates in \['crra'\]"):
        welfare_uncertainty(
            specification={"model": "lifecycle_regimes", "sizes": SIZES},
            base_params=base,
            counterfactual_params=base | {"crra": 2.5},
            states=states_of([1.0]),
            estimates={"crra": float(base["crra"])},
            covariance=np.eye(1),
        )


def test_welfare_numbers_print_the_interval_from_the_standard_error():
    numbers = welfare_numbers(
        {
            "lambda": -0.02,
            "lambda_se": 0.005,
            "lambda_by_type": {"work_loving": -0.01},
            "lambda_se_by_type": {"work_loving": 0.001},
            "value_difference": -0.25,
        }
    )
    assert numbers["lambda"] == "\u22122.00 %"
    assert numbers["lambda_se"] == "0.50 %"
    assert numbers["lambda_ci"] == "[\u22122.98 %, \u22121.02 %]"
    assert numbers["lambda_work_loving_ci"] == "[\u22121.20 %, \u22120.80 %]"
    tiny = welfare_numbers(
        {"lambda": -0.02, "lambda_se": 1e-5, "lambda_by_type": {}, "value_difference": 0.0}
    )
    assert tiny["lambda_se"] == "< 0.01 %"
    at_bound = welfare_numbers(
        {
            "lambda": -0.02,
            "lambda_se": 0.005,
            "lambda_by_type": {"work_loving": -0.01},
            "lambda_se_by_type": {"work_loving": 0.001},
            "value_difference": 0.0,
            "params_at_bound": ["beta"],
        }
    )
    assert set(at_bound) == {"lambda", "lambda_work_loving", "value_difference"}
