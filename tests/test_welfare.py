# ruff: noqa: RUF001, RUF002 (the Greek letters of the welfare formulas)
"""The consumption equivalent of lifecycle_normalised against cases where the answer is known."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from project.analysis.robustness import read_welfare
from project.analysis.robustness_welfare import write_robustness_welfare
from project.analysis.welfare import (
    delta_method,
    fixed_cost_covariance,
    measured_at,
    welfare_effect,
    welfare_uncertainty,
    write_welfare,
)
from project.analysis.welfare_measure import (
    NON_CONSUMPTION_PARAMS,
    WelfareError,
    consumption_equivalent,
    consumption_utility,
    initial_states,
    initial_values,
    mean_and_error,
    scaled_params,
    simulated_consumption_utility,
)
from project.analysis.welfare_table import welfare_table, write_welfare_table
from project.analysis.welfare_text import monte_carlo_sentence, welfare_numbers, welfare_sentence
from project.dispatch import solve
from project.estimation.products import SavedEstimation
from project.models import lifecycle_normalised, lifecycle_normalised_params, normalised_units
from project.models.lifecycle_regimes import bequest_value
from project.persist.manifest import write_marker
from project.pipeline import build_variant_model, save_variant_bundle, solve_and_save
from project.points import precision
from project.simulation import draw_initial_conditions, simulate

SIZES = {"n_savings": 150, "taste_shocks": False}
"""The pipeline's sizes: a coarser savings grid biases V (at 30 points by 0.5 %, 3.5 Monte Carlo
standard errors of 40,000 households), which the check of C would see."""
VALUES = {"crra": 1.5, "beta": 0.95, "work_cost": 0.5, "bequest_weight": 10.0}
"""A work cost and a bequest motive large enough that leaving either out shows."""
N_SUBJECTS, SEED = 10_000, 11
DISTRIBUTION = {
    "regime": {"label": "working"},
    "wealth": {"lognormal": [0.3, 0.4], "clip": [0.5, 10.0]},
}


@pytest.fixture(scope="module")
def float64():
    with precision(x64=True):
        yield


@pytest.fixture(scope="module")
def model(float64):
    return build_variant_model(model="lifecycle_normalised", sizes=SIZES)


@pytest.fixture(scope="module")
def params(model):
    defaults = lifecycle_normalised_params.default_params()
    return {k: v for k, v in defaults.items() if k in model.params_template} | VALUES


@pytest.fixture(scope="module")
def simulated(model, params):
    """The solution, its simulation of 10,000 households and their panel with income units."""
    solution = solve(model=model, params=params)
    initial = draw_initial_conditions(
        model=model, n_subjects=N_SUBJECTS, seed=SEED, distribution=DISTRIBUTION
    )
    result = simulate(params=params, initial_conditions=initial, solution=solution, seed=SEED)
    panel = result.to_dataframe()
    panel["income_unit"] = normalised_units.income_units(
        panel=panel, model=model, params=params, seed=SEED
    )
    return solution, result, panel


def states_of(wealth):
    return pd.DataFrame(
        {"regime": pd.Categorical(["working"] * len(wealth)), "wealth": np.asarray(wealth)}
    )


def test_consumption_equivalent_by_hand():
    # gamma = 2: (1 + l)^-1 C + R = V1 with C = -10, R = -2, l = -0.2: V1 = -12.5 - 2.
    assert consumption_equivalent(
        base_value=-12.0, counterfactual_value=-14.5, consumption_utility=-10.0, crra=2.0
    ) == pytest.approx(-0.2, abs=1e-12)
    # gamma = 0.5: (1 + l)^0.5 C with C = 4 and l = 0.21 gives 4.4.
    assert consumption_equivalent(
        base_value=5.0, counterfactual_value=5.4, consumption_utility=4.0, crra=0.5
    ) == pytest.approx(0.21, abs=1e-12)
    with pytest.raises(WelfareError, match="crra = 1"):
        consumption_equivalent(
            base_value=1.0, counterfactual_value=1.0, consumption_utility=1.0, crra=1.0
        )
    with pytest.raises(WelfareError, match="cannot close a gap"):  # (1 + λ)^-1 C > C - 10
        consumption_equivalent(
            base_value=-12.0, counterfactual_value=-1.0, consumption_utility=-10.0, crra=2.0
        )


def test_only_the_bequest_and_the_taste_shocks_are_not_consumption_utility():
    """Scaling consumption by s scales both regimes' utility by s^(1-γ), the work cost's
    included, so V(k) divides the bequest weight and the shock scale by k, never κ."""
    c, s, crra, cost = np.array([0.3, 1.0, 4.0]), 1.7, 1.5, 0.4
    working = lifecycle_normalised.working_utility(c, crra, cost)
    np.testing.assert_allclose(
        lifecycle_normalised.working_utility(s * c, crra, cost), s ** (1 - crra) * working
    )
    np.testing.assert_allclose(working, (1 - cost) ** (1 - crra) * c ** (1 - crra) / (1 - crra))
    k, wealth = 1.3, np.array([0.5, 2.0])
    np.testing.assert_allclose(  # k V(ω / k): the bequest's value is linear in its weight
        k * bequest_value(wealth, crra, 10.0 / k, 1.0), bequest_value(wealth, crra, 10.0, 1.0)
    )
    shocked = lifecycle_normalised.build_model(n_savings=20, taste_shocks=True).params_template
    plain = lifecycle_normalised.build_model(n_savings=20, taste_shocks=False).params_template
    assert set(NON_CONSUMPTION_PARAMS) == {"bequest_weight", "taste_shock_scale"}
    assert set(NON_CONSUMPTION_PARAMS) - set(plain) == {"taste_shock_scale"} <= set(shocked)
    params = {"bequest_weight": 10.0, "taste_shock_scale": 0.01, "work_cost": 0.5, "crra": 2.0}
    assert scaled_params(params, scale=2.0) == params | {
        "bequest_weight": 5.0,
        "taste_shock_scale": 0.005,
    }


def test_simulated_consumption_utility_by_hand():
    """Levels are consumption times the unit; working years pay the work cost; the dead none."""
    panel = pd.DataFrame(
        {
            "subject_id": [0, 0, 0, 1, 1, 1],
            "period": [0, 1, 2, 0, 1, 2],
            "regime": pd.Categorical(["working", "retired", "dead", "working", "working", "dead"]),
            "consumption": [1.0, 2.0, np.nan, 0.5, 1.0, np.nan],
            "income_unit": [1.0, 0.5, np.nan, 1.0, 2.0, np.nan],
        }
    )
    crra, beta, cost = 2.0, 0.9, 0.2
    simulated = simulated_consumption_utility(
        panel=panel, params={"crra": crra, "beta": beta, "work_cost": cost}
    )

    def u(c):
        return c ** (1 - crra) / (1 - crra)

    assert simulated[0] == pytest.approx(u(0.8 * 1.0) + beta * u(2.0 * 0.5))
    assert simulated[1] == pytest.approx(u(0.8 * 0.5) + beta * u(0.8 * 2.0))
    mean, error = mean_and_error(np.array([1.0, 4.0, 2.0, 7.0]))
    assert (mean, error) == pytest.approx((3.5, np.std([1.0, 4.0, 2.0, 7.0], ddof=1) / 2))
    with pytest.raises(WelfareError, match="no column income_unit"):
        simulated_consumption_utility(panel=panel.drop(columns="income_unit"), params={})


@pytest.mark.slow
def test_consumption_utility_matches_its_monte_carlo_estimate(model, params, simulated):
    """C from the solution against the households' realised discounted utility of consumption
    in levels (4 standard errors); leaving out the bequest or the work cost misses by far more."""
    solution, _, panel = simulated
    states = initial_states(panel)
    exact = consumption_utility(model=model, params=params, states=states).mean()
    mean, error = mean_and_error(simulated_consumption_utility(panel=panel, params=params))
    assert abs(mean - exact) < 4 * error
    value = initial_values(solution=solution, states=states).mean()
    assert abs(value - exact) > 4 * error  # the bequest is part of V, not of C
    no_cost = simulated_consumption_utility(panel=panel, params=params | {"work_cost": 0.0})
    assert abs(no_cost.mean() - exact) > 20 * error  # the work cost is part of C


def test_the_same_solution_gives_zero(model, params, simulated):
    solution, _, _ = simulated
    result = welfare_effect(
        model=model,
        base_params=params,
        base_solution=solution,
        counterfactual_solution=solution,
        states=states_of([0.8, 1.4, 3.0]),
    )
    assert result["lambda"] == 0.0
    assert result["value_difference"] == 0.0
    assert result["n_households"] == 3


def lambda_function(point):
    """A mocked λ: quadratic, so central differences give its gradient exactly."""

    def evaluate(changes):
        x = point | changes
        return (
            0.3 * x["crra"]
            - 2.0 * x["beta"]
            + 0.5 * x["work_cost"]
            + 0.01 * x["crra"] * x["work_cost"]
            + 0.2 * x["beta"] ** 2
        )

    return evaluate


def test_the_delta_method_matches_the_spread_of_lambda_over_drawn_estimates():
    """se(λ) = sd of λ(θ, κ(θ)) over θ ~ N(θ̂, Σ) with κ following θ by its gradient; held
    fixed, the sd of λ(θ, κ̂) over θ ~ N(θ̂, Σ_fixed). Both by brute force (200,000 draws)."""
    estimates, calibrated = {"crra": 1.5, "beta": 0.95}, {"work_cost": 0.6}
    cost_gradient = {"crra": -0.8, "beta": 3.0}
    covariance = np.array([[0.04, -0.002], [-0.002, 0.0004]])
    fixed = np.array([[0.06, -0.001], [-0.001, 0.0009]])
    calls = []
    point = estimates | calibrated

    def recorded(changes):
        calls.append(dict(changes))
        return lambda_function(point)(changes)

    result = delta_method(
        lambda_at=recorded,
        estimates=estimates,
        covariance=covariance,
        calibrated=calibrated,
        cost_gradient=cost_gradient,
        fixed_cost_covariance=fixed,
        relative_step=1e-3,
    )
    assert calls[:2] == [{"crra": pytest.approx(1.5015)}, {"crra": pytest.approx(1.4985)}]
    assert calls[-1] == {"work_cost": pytest.approx(0.6 - 0.6e-3, rel=1e-12)}
    rng = np.random.default_rng(0)
    draws = rng.multivariate_normal([1.5, 0.95], covariance, size=200_000)
    following = 0.6 + (draws - [1.5, 0.95]) @ [cost_gradient["crra"], cost_gradient["beta"]]
    spread = lambda_function({})({"crra": draws[:, 0], "beta": draws[:, 1], "work_cost": following})
    assert result["lambda_se"] == pytest.approx(np.std(spread), rel=1e-2)
    held = rng.multivariate_normal([1.5, 0.95], fixed, size=200_000)
    spread = lambda_function({})({"crra": held[:, 0], "beta": held[:, 1], "work_cost": 0.6})
    assert result["lambda_se_fixed_cost"] == pytest.approx(np.std(spread), rel=1e-2)
    assert result["lambda_gradient_fixed_cost"] == pytest.approx(
        {"crra": 0.3 + 0.01 * 0.6, "beta": -2.0 + 0.4 * 0.95}, rel=1e-8
    )
    assert result["lambda_cost_slope"] == pytest.approx({"work_cost": 0.5 + 0.01 * 1.5})
    alone = delta_method(lambda_at=recorded, estimates=estimates, covariance=covariance)
    assert alone["lambda_se"] == alone["lambda_se_fixed_cost"]  # nothing follows: the same


def fixed_cost_estimation(*, params, covariance, sensitivity, errors, names, cost_gradient):
    """A ``SavedEstimation`` whose fixed-cost errors are those of its sensitivity and moments."""
    sensitivity = np.asarray(sensitivity, dtype=float)
    fixed = sensitivity @ np.diag(np.square(errors)) @ sensitivity.T
    return SavedEstimation(
        estimates=pd.DataFrame({"param": list(params), "estimate": list(params.values())}),
        moments=pd.DataFrame({"moment": names, "std_error": errors}),
        summary={
            "param_names": list(params),
            "covariance": np.asarray(covariance).tolist(),
            "sensitivity": sensitivity.tolist(),
            "params_at_bound": [],
            "warnings": [],
            "provenance": {},
            "calibrated": {
                "param": "work_cost",
                "value": VALUES["work_cost"],
                "cost_gradient": cost_gradient,
                "fact": {"age": 62, "share": 0.36},
                "fixed_cost_standard_errors": dict(
                    zip(params, np.sqrt(np.diag(fixed)).tolist(), strict=True)
                ),
            },
        },
    )


def test_the_fixed_cost_covariance_is_the_sandwich_of_the_sensitivity():
    """S Ω S' with S = (G'WG)^-1 G'W is the MSM covariance (G'WG)^-1 G'WΩWG (G'WG)^-1."""
    jacobian = np.array([[1.0, 0.2], [0.5, -1.0], [2.0, 0.3]])
    weighting, omega = np.diag([4.0, 1.0, 2.0]), np.diag([0.01, 0.04, 0.02])
    bread = np.linalg.inv(jacobian.T @ weighting @ jacobian)
    sandwich = bread @ jacobian.T @ weighting @ omega @ weighting @ jacobian @ bread
    sensitivity = bread @ jacobian.T @ weighting
    saved = fixed_cost_estimation(
        params={"crra": 1.5, "beta": 0.95},
        covariance=np.eye(2),
        sensitivity=sensitivity,
        errors=np.sqrt(np.diag(omega)),
        names=["a", "b", "c"],
        cost_gradient={"crra": 0.0, "beta": 0.0},
    )
    np.testing.assert_allclose(fixed_cost_covariance(saved), sandwich, rtol=1e-12)
    saved.summary["calibrated"]["fixed_cost_standard_errors"]["beta"] *= 1.1
    with pytest.raises(WelfareError, match="not diagonal"):
        fixed_cost_covariance(saved)
    saved.summary["calibrated"]["fixed_cost_covariance"] = (2 * sandwich).tolist()
    np.testing.assert_array_equal(fixed_cost_covariance(saved), 2 * sandwich)  # saved: used


@pytest.mark.slow
def test_the_delta_method_moves_both_variants_and_the_work_cost(model, params):
    """se(λ) = sd(γ) |dλ/dγ| along κ(γ) = κ̂ + (dκ/dγ)(γ - γ̂), the slope from one difference
    along that path (a wider step, both variants solved again); held fixed, the slope at κ̂.

    The claim's upper envelope leaves λ slightly rough at small steps: slopes at steps from
    0.0015 to 0.01 agree within 1 % along the path and 4 % at fixed κ, where λ hardly moves."""
    counterfactual = params | {"benefit_scale": 0.79}
    states = states_of([0.8, 1.4, 3.0])
    slope = -0.5
    saved = fixed_cost_estimation(
        params={"crra": VALUES["crra"]},
        covariance=[[0.01]],
        sensitivity=[[1.0]],
        errors=[0.12],
        names=["a"],
        cost_gradient={"crra": slope},
    )
    result = welfare_uncertainty(
        specification={"model": "lifecycle_normalised", "sizes": SIZES},
        base_params=params,
        counterfactual_params=counterfactual,
        states=states,
        estimation=saved,
    )

    def path_slope(cost_slope):
        h = 0.005
        lambdas = []
        for sign in (1, -1):
            moved = {"crra": VALUES["crra"] + sign * h}
            moved["work_cost"] = VALUES["work_cost"] + sign * h * cost_slope
            lambdas.append(
                measured_at(
                    model=model,
                    base_params=params | moved,
                    counterfactual_params=counterfactual | moved,
                    states=states,
                )["lambda"]
            )
        return (lambdas[0] - lambdas[1]) / (2 * h)

    following, held = path_slope(slope), path_slope(0.0)
    assert abs(following - held) > abs(held)  # the work cost's response matters
    assert result["lambda_gradient"]["crra"] == pytest.approx(following, rel=3e-2)
    assert result["lambda_se"] == pytest.approx(0.1 * abs(following), rel=3e-2)
    assert result["lambda_gradient_fixed_cost"]["crra"] == pytest.approx(held, rel=6e-2)
    assert result["lambda_se_fixed_cost"] == pytest.approx(0.12 * abs(held), rel=6e-2)
    with pytest.raises(WelfareError, match=r"differ from the estimation's in \['work_cost'\]"):
        welfare_uncertainty(
            specification={"model": "lifecycle_normalised", "sizes": SIZES},
            base_params=params,
            counterfactual_params=counterfactual | {"work_cost": 0.4},
            states=states,
            estimation=saved,
        )


RESULT = {
    "lambda": -0.0123,
    "lambda_se": 0.0015,
    "lambda_se_fixed_cost": 0.000004,
    "value_difference": -0.25,
    "base_value": -186.0447,
    "counterfactual_value": -186.2856,
    "consumption_utility": -185.3038,
    "simulated_consumption_utility": -184.8974,
    "simulated_consumption_utility_se": 0.1742,
    "n_households": 20_000,
    "estimated_params": {"crra": 1.11, "beta": 0.95},
    "calibrated_params": {"work_cost": 0.62},
    "calibration_fact": {"age": 62, "share": 0.36},
    "policy": {"benefit_scale": [1.0, 0.79]},
    "first_age": 25.0,
    "params_at_bound": [],
}


def test_welfare_numbers_print_the_interval_from_the_standard_error():
    numbers = welfare_numbers(RESULT)
    assert numbers["lambda"] == "\u22121.23 %"
    assert numbers["lambda_se"] == "0.15 %"
    assert numbers["lambda_ci"] == "[\u22121.52 %, \u22120.94 %]"
    assert numbers["lambda_se_fixed_cost"] == "< 0.01 %"
    assert numbers["value_difference"] == "\u22120.2500"
    assert numbers["consumption_utility_mc_distance"] == "2.3"  # 0.4064 / 0.1742
    assert numbers["n_households"] == "20,000"
    at_bound = welfare_numbers(RESULT | {"params_at_bound": ["beta"]})
    assert not {k for k in at_bound if k.startswith("lambda_")}
    # a standard error below 0.1 points keeps two digits, and λ and the interval follow it
    small = welfare_numbers(RESULT | {"lambda_se": 0.000143, "lambda_se_fixed_cost": 0.000147})
    assert small["lambda"] == "\u22121.230 %"
    assert (small["lambda_se"], small["lambda_se_fixed_cost"]) == ("0.014 %", "0.015 %")
    assert small["lambda_ci"] == "[\u22121.258 %, \u22121.202 %]"


def welfare_content(result):
    return {"lambda": result["lambda"], "numbers": welfare_numbers(result), "values": result}


def test_the_sentences_say_what_the_standard_error_carries():
    text = welfare_sentence(welfare_content(RESULT))
    assert text["abstract"] == (
        "The benefit cut (paying 79 % of scheduled Social Security benefits) is a welfare loss "
        "worth 1.23 % of consumption in every period and state (standard error 0.15 %, from the "
        "sampling uncertainty of the estimated preferences, the cost of working recalibrated "
        "along)."
    )
    sentence = text["sentence"]
    assert "at age 25 over the 20,000 simulated households" in sentence
    assert "λ = \u22121.23 % (standard error 0.15 %; 95 % interval [\u22121.52 %, " in sentence
    assert "sampling uncertainty of the estimated preferences γ and β" in sentence
    reloaded = RESULT | {"estimated_params": {"beta": 0.95, "crra": 1.11}}  # JSON sorts keys
    assert "preferences γ and β" in welfare_sentence(welfare_content(reloaded))["sentence"]
    assert (
        "κ calibrated again at each value of them, as the estimation calibrates it (so that 36 % "
        "of the workers alive at 62 claim there)"
    ) in sentence
    decided = welfare_sentence(welfare_content(RESULT | {"calibration_decision_age": 61}))
    assert "of the workers alive at 61 decide to claim at 62)" in decided["sentence"]
    assert sentence.endswith("the standard error would be < 0.01 %.")
    bound = welfare_sentence(welfare_content(RESULT | {"params_at_bound": ["beta"]}))
    assert "standard error" not in bound["abstract"]
    assert bound["sentence"].endswith("where the delta method does not apply.")
    check = monte_carlo_sentence(welfare_content(RESULT))
    assert "(\u2212185.304)" in check and "2.3 standard errors apart, beyond" in check
    close = RESULT | {"simulated_consumption_utility": -185.2}
    assert monte_carlo_sentence(welfare_content(close)).endswith(": the two agree.")


def test_the_welfare_table_prints_the_numbers_the_text_cites(tmp_path):
    content = welfare_content(RESULT)
    table = welfare_table(content)
    cells = {str(cell) for cell in table.to_numpy().ravel()}
    printed = content["numbers"]
    assert set(printed.values()) - {printed["n_households"]} <= cells | {
        printed["consumption_utility_mc_distance"]
    }
    text = welfare_sentence(content)["sentence"] + monte_carlo_sentence(content)
    for key in ("lambda", "lambda_se", "lambda_ci", "lambda_se_fixed_cost", "consumption_utility"):
        assert printed[key] in text, key
    assert len(table) == 7
    at_bound = welfare_table(welfare_content(RESULT | {"params_at_bound": ["beta"]}))
    assert len(at_bound) == 6 and set(at_bound["Standard error"][:1]) == {""}
    path = tmp_path / "welfare.json"
    path.write_text(json.dumps(content))
    paths = {s: tmp_path / f"welfare.{s}" for s in ("tex", "typ", "md")}
    write_welfare_table(welfare_path=path, paths=paths)
    assert "| \u22121.23 % | 0.15 % |" in paths["md"].read_text()


def write_estimation(directory: Path, saved: SavedEstimation) -> None:
    directory.mkdir(parents=True)
    saved.estimates.to_feather(directory / "estimates.arrow")
    saved.moments.to_feather(directory / "moments.arrow")
    (directory / "summary.json").write_text(json.dumps(saved.summary))
    write_marker(directory, kind="estimation")


@pytest.mark.slow
def test_write_welfare_and_its_robustness_read_back_as_the_paper_reads_them(
    tmp_path, params, simulated
):
    """From saved products: welfare.json, its table, robustness_welfare.json and read_welfare."""
    _, result, _ = simulated
    specifications = {
        name: {
            "name": name,
            "model": "lifecycle_normalised",
            "sizes": SIZES,
            "params": params | {"benefit_scale": scale},
            "x64": True,
            "estimated": ["crra"],
            "calibrated": ["work_cost"],
            "log_level": "warning",
        }
        for name, scale in (("baseline", 1.0), ("benefit_cut", 0.79))
    }
    for name, specification in specifications.items():
        solve_and_save(specification=specification, directory=tmp_path / name, fingerprint="t")
    save_variant_bundle(
        result=result, specification=specifications["baseline"], directory=tmp_path / "bundle"
    )
    saved = fixed_cost_estimation(
        params={"crra": VALUES["crra"]},
        covariance=[[0.01]],
        sensitivity=[[1.0]],
        errors=[0.12],
        names=["a"],
        cost_gradient={"crra": -0.5},
    )
    write_estimation(tmp_path / "estimation", saved)
    content = write_welfare(
        specifications=specifications,
        solution_directories={v: tmp_path / v for v in specifications},
        bundle_directories={"baseline": tmp_path / "bundle"},
        estimation_directory=tmp_path / "estimation",
        path=tmp_path / "welfare.json",
    )
    assert json.loads((tmp_path / "welfare.json").read_text()) == content
    values = content["values"]
    assert values["policy"] == {"benefit_scale": [1.0, 0.79]}
    assert values["calibrated_params"] == {"work_cost": VALUES["work_cost"]}
    assert content["lambda"] < 0 < content["lambda_se"]
    assert values["n_households"] == N_SUBJECTS
    assert abs(values["simulated_consumption_utility"] - values["consumption_utility"]) < (
        4 * values["simulated_consumption_utility_se"]
    )
    robust = write_robustness_welfare(
        specifications=specifications,
        checks={"no_bequest": saved},
        specs={"no_bequest": {"name": "no_bequest", "params": {"bequest_weight": 0.0}}},
        bundle_directory=tmp_path / "bundle",
        path=tmp_path / "robustness_welfare.json",
    )
    assert robust["status_quo"]["lambda"] == pytest.approx(content["lambda"], rel=1e-12)
    no_bequest = robust["checks"]["no_bequest"]
    assert no_bequest["consumption_utility"] == pytest.approx(no_bequest["base_value"], rel=1e-6)
    assert no_bequest["estimates"] == {"crra": VALUES["crra"]}
    welfare = read_welfare(
        {
            "welfare": tmp_path / "welfare.json",
            "robustness_welfare": tmp_path / "robustness_welfare.json",
        }
    )
    assert welfare.baseline == robust["status_quo"]["lambda"]
    assert welfare.interval == content["numbers"]["lambda_ci"]
