"""Survival from the life table in the regimes model: oracles and simulated deaths.

Oracles: a table of ones is the immortal model (same V, exactly); a constant table equals the
Gompertz form at the same constant probability; simulated deaths follow the table within Monte
Carlo error; the vendored table's probabilities reach the model unchanged. The default params of
a built model (``params_for``, ``default_params_of``) hold exactly the params its options use.
"""

from __future__ import annotations

import numpy as np
import pytest

from project import solve
from project.errors import InvalidTransitionError, ModelSpecificationError
from project.models import lifecycle_regimes

SHAPE = {"n_wealth": 25, "n_consumption": 30, "n_income": 3, "n_periods": 6, "start_age": 60}


def _table_params(probabilities):
    return dict(lifecycle_regimes.DEFAULT_PARAMS) | {
        "survival_probabilities": np.asarray(probabilities, dtype=float)
    }


@pytest.mark.parametrize("method", ["grid", "dcegm"])
def test_a_table_of_ones_is_the_immortal_model(method):
    sizes = SHAPE | ({"n_savings": 40} if method == "dcegm" else {})
    immortal = solve(
        model=lifecycle_regimes.build_model(**sizes, survival=False),
        params=lifecycle_regimes.default_params(survival=False),
        method=method,
    )
    table = solve(
        model=lifecycle_regimes.build_model(**sizes, survival="life_table"),
        params=_table_params(np.ones(SHAPE["n_periods"])),
        method=method,
    )
    for regime in ("working", "retired"):
        for got, want in zip(
            table.value_function[regime], immortal.value_function[regime], strict=True
        ):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_a_constant_table_equals_the_gompertz_form_at_that_probability():
    """Gompertz with slope 0 and intercept log(q) dies with probability q at every age."""
    q = 0.03
    gompertz = solve(
        model=lifecycle_regimes.build_model(**SHAPE),
        params=lifecycle_regimes.default_params()
        | {"mortality_intercept": float(np.log(q)), "mortality_slope": 0.0},
        method="grid",
    )
    table = solve(
        model=lifecycle_regimes.build_model(**SHAPE, survival="life_table"),
        params=_table_params(np.full(SHAPE["n_periods"], 1 - q)),
        method="grid",
    )
    for regime in ("working", "retired"):
        for got, want in zip(
            table.value_function[regime], gompertz.value_function[regime], strict=True
        ):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_simulated_deaths_follow_the_vendored_life_table():
    from project.simulation import simulate

    model = lifecycle_regimes.build_model(**SHAPE, n_savings=40, survival="life_table")
    params = lifecycle_regimes.life_table_params(ages=model.ages)
    table = np.asarray(params["survival_probabilities"])
    assert table.shape == (SHAPE["n_periods"],)
    assert (np.diff(table) < 0).all() and (table > 0.9).all()  # ages 60-65: falling, above 90 %
    solution = solve(model=model, params=params)
    n = 4000
    initial = {
        "regime": ["working"] * n,
        "pref_type": np.arange(n) % 2,
        "income": np.arange(n) % 3,
        "wealth": np.linspace(1, 8, n),
    }
    result = simulate(params=params, initial_conditions=initial, solution=solution, seed=3)
    frame = result.to_dataframe()
    dead = (frame["regime"] == "dead").to_numpy().reshape(n, -1)
    assert (np.diff(dead.astype(int), axis=1) >= 0).all()  # nobody comes back
    alive = ~dead
    deaths = (alive[:, :-1] & dead[:, 1:]).sum(axis=0)
    at_risk = alive[:, :-1].sum(axis=0)
    expected = at_risk * (1 - table[:-1])
    assert (np.abs(deaths - expected) <= 4 * np.sqrt(expected * table[:-1]) + 1).all()
    assert deaths.sum() > 0


def test_bad_survival_option_and_probabilities_raise_our_errors():
    with pytest.raises(ModelSpecificationError, match="survival must be"):
        lifecycle_regimes.build_model(**SHAPE, survival="lifetable")
    model = lifecycle_regimes.build_model(**SHAPE, survival="life_table")
    above_one = np.full(SHAPE["n_periods"], 1.2)
    with pytest.raises(InvalidTransitionError, match=r"negative probability|sum to one"):
        solve(model=model, params=_table_params(above_one), method="grid")


# ---------------------------------------------------------------------------------------------
# Default params of a built model

TINY = {"n_wealth": 12, "n_consumption": 12, "n_periods": 8, "start_age": 63, "n_savings": 30}


def test_params_for_the_life_table_model_hold_its_survival_probabilities():
    model = lifecycle_regimes.build_model(**TINY, taste_shocks=True, survival="life_table")
    params = lifecycle_regimes.params_for(model)
    probabilities = np.asarray(params["survival_probabilities"])
    assert probabilities.shape == (TINY["n_periods"],)
    assert ((probabilities > 0) & (probabilities <= 1)).all()
    assert (np.diff(probabilities) < 0).all()  # ages 63-70: mortality rises with age
    np.testing.assert_array_equal(
        probabilities,
        lifecycle_regimes.life_table_params(ages=model.ages)["survival_probabilities"],
    )
    # Exactly the params the model takes, but the taste-shock scale (set by the pipeline).
    assert set(params) == set(model.params_template) - {"taste_shock_scale"}
    assert "mortality_intercept" not in params
    for name, value in lifecycle_regimes.DEFAULT_PARAMS.items():
        assert params[name] == value


def test_params_for_mix_men_and_women_by_female_share():
    """Women die less often: their survival is higher at every age; a mix lies in between."""
    model = lifecycle_regimes.build_model(**TINY, survival="life_table")
    men, mixed, women = (
        np.asarray(lifecycle_regimes.params_for(model, female_share=s)["survival_probabilities"])
        for s in (0.0, 0.3, 1.0)
    )
    assert (women > men).all()
    np.testing.assert_allclose(mixed, 0.7 * men + 0.3 * women, rtol=1e-12)
    default = lifecycle_regimes.params_for(model)["survival_probabilities"]
    np.testing.assert_allclose(default, 0.5 * men + 0.5 * women, rtol=1e-12)


@pytest.mark.parametrize(
    ("options", "present", "absent"),
    [
        (
            {"survival": False},
            set(),
            {"mortality_intercept", "mortality_slope", "survival_probabilities", "bequest_weight"},
        ),
        (
            {"survival": True},
            {"mortality_intercept", "mortality_slope"},
            {"survival_probabilities", "bequest_weight", "bequest_shift"},
        ),
        (
            {"survival": "gompertz", "bequest": True},
            {"mortality_intercept", "mortality_slope", "bequest_weight", "bequest_shift"},
            {"survival_probabilities"},
        ),
    ],
)
def test_params_for_have_exactly_the_params_the_options_use(options, present, absent):
    model = lifecycle_regimes.build_model(**TINY, **options)
    params = lifecycle_regimes.params_for(model)
    assert set(params) == set(model.params_template)
    assert present <= set(params)
    assert not absent & set(params)
    defaults = lifecycle_regimes.MORTALITY_PARAMS | lifecycle_regimes.BEQUEST_PARAMS
    for name in present:
        assert params[name] == defaults[name]
    if options["survival"] is False:
        assert params == lifecycle_regimes.default_params(survival=False)


def test_default_params_of_each_model():
    from project.models import default_params_of, lifecycle

    single = lifecycle.build_model(**TINY)
    params = default_params_of(name="lifecycle", model=single)
    assert params == lifecycle.DEFAULT_PARAMS
    assert params is not lifecycle.DEFAULT_PARAMS  # a copy the caller may change
    params["beta"] = 0.5
    assert lifecycle.DEFAULT_PARAMS["beta"] == 0.96
    regimes = lifecycle_regimes.build_model(**TINY, survival="life_table")
    assert default_params_of(name="lifecycle_regimes", model=regimes, female_share=0.2) == (
        lifecycle_regimes.params_for(regimes, female_share=0.2)
    )
