"""validate_params: names, shapes and dtypes of user parameters (the life-cycle model)."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project.errors import ParamsError, ProjectError
from project.model import validate_params
from project.models import lifecycle


@pytest.fixture(scope="module")
def model():
    return lifecycle.build_model(n_wealth=5, n_consumption=5, n_income=3, n_periods=3)


@pytest.fixture
def params():
    return dict(lifecycle.DEFAULT_PARAMS)


@pytest.fixture
def enable_x64():
    jax.config.update("jax_enable_x64", True)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", False)


def test_params_error_is_a_project_error():
    assert issubclass(ParamsError, ProjectError)
    assert issubclass(ParamsError, ValueError)


def test_default_precision_is_float32():
    assert jnp.asarray(0.0).dtype == jnp.float32


def test_default_params_are_valid(model, params):
    validated = validate_params(model=model, params=params)
    assert list(validated) == list(model.params_template)
    for key, value in validated.items():
        assert isinstance(value, jax.Array), key
        assert value.dtype == jnp.float32, key
        assert value.shape == model.params_template[key], key
    np.testing.assert_allclose(np.asarray(validated["disutility_of_work"]), [0.15, 0.6], rtol=1e-6)
    np.testing.assert_allclose(float(validated["beta"]), 0.96, rtol=1e-6)


def test_int_float64_and_jax_inputs_become_float32(model, params):
    params |= {
        "wage": 1,
        "pension": np.float64(0.45),
        "crra": jnp.asarray(2.0),
        "disutility_of_work": np.asarray([0.0, 1.0], dtype=np.float64),
        "r": np.asarray(0.03, dtype=np.float64),
    }
    validated = validate_params(model=model, params=params)
    for key in ("wage", "pension", "crra", "disutility_of_work", "r"):
        assert validated[key].dtype == jnp.float32, key
    assert float(validated["wage"]) == 1.0


def test_working_precision_follows_x64(model, params, enable_x64):
    del enable_x64
    validated = validate_params(model=model, params=params)
    assert all(value.dtype == jnp.float64 for value in validated.values())


def test_input_params_are_not_modified(model, params):
    before = dict(params)
    validate_params(model=model, params=params)
    assert params == before


@pytest.mark.parametrize("missing", [["crra"], ["beta"], ["disutility_of_work", "wage"]])
def test_missing_params(model, params, missing):
    for key in missing:
        del params[key]
    expected = r"'lifecycle': params are missing " + re.escape(repr(missing))
    with pytest.raises(ParamsError, match=expected):
        validate_params(model=model, params=params)


def test_extra_params(model, params):
    params |= {"gamma": 1.0, "alpha": 0.3}
    with pytest.raises(ParamsError, match=r"params are unexpected \['alpha', 'gamma'\]") as info:
        validate_params(model=model, params=params)
    assert "missing" not in str(info.value)


def test_missing_and_extra_params_are_both_named(model, params):
    del params["r"]
    params["interest"] = 0.03
    with pytest.raises(
        ParamsError, match=r"missing \['r'\] and unexpected \['interest'\]. Expected exactly"
    ):
        validate_params(model=model, params=params)


@pytest.mark.parametrize(
    ("value", "got"),
    [(0.1, r"\(\)"), ([0.1, 0.2, 0.3], r"\(3,\)"), ([[0.1, 0.2]], r"\(1, 2\)"), ([], r"\(0,\)")],
    ids=["scalar", "too_long", "two_dims", "empty"],
)
def test_wrongly_shaped_array_param(model, params, value, got):
    params["disutility_of_work"] = value
    with pytest.raises(ParamsError, match=rf"disutility_of_work: expected shape \(2,\), got {got}"):
        validate_params(model=model, params=params)


def test_array_given_for_scalar_param(model, params):
    params["beta"] = [0.96]
    with pytest.raises(ParamsError, match=r"beta: expected shape \(\), got \(1,\)"):
        validate_params(model=model, params=params)


def test_every_wrongly_shaped_param_is_named(model, params):
    params |= {"crra": [2.0, 3.0], "disutility_of_work": 0.1}
    with pytest.raises(ParamsError) as info:
        validate_params(model=model, params=params)
    message = str(info.value)
    assert "crra: expected shape ()" in message
    assert "disutility_of_work: expected shape (2,)" in message
    assert "'lifecycle'" in message


@pytest.mark.parametrize(
    "value",
    [
        None,
        np.datetime64("2020-01-01"),
        "two",
        object(),
    ],
    ids=["none", "datetime", "string", "object"],
)
def test_non_numeric_scalar_param(model, params, value):
    params["crra"] = value
    with pytest.raises(ParamsError, match=r"crra: expected numbers, got dtype"):
        validate_params(model=model, params=params)


def test_non_numeric_array_param(model, params):
    params["disutility_of_work"] = ["low", "high"]
    with pytest.raises(ParamsError, match=r"disutility_of_work: expected numbers"):
        validate_params(model=model, params=params)


def test_ragged_array_param(model, params):
    params["disutility_of_work"] = [[0.1, 0.2], [0.3]]
    with pytest.raises(ParamsError, match=r"disutility_of_work"):
        validate_params(model=model, params=params)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("beta", float("nan")),
        ("r", float("inf")),
        ("disutility_of_work", [0.15, -float("inf")]),
    ],
)
def test_non_finite_params_are_refused_by_name(model, params, name, value):
    params[name] = value
    with pytest.raises(ParamsError, match=rf"\['{name}'\] are not finite"):
        validate_params(model=model, params=params)


@pytest.mark.parametrize("beta", [0.0, -0.5])
def test_a_discount_factor_that_is_not_positive_is_refused(model, params, beta):
    params["beta"] = beta
    with pytest.raises(ParamsError, match=r"discount factor 'beta' must be > 0"):
        validate_params(model=model, params=params)


@pytest.mark.parametrize("bad", [None, [("beta", 0.9)], "beta=0.9"])
def test_params_that_are_no_mapping_are_refused(model, bad):
    with pytest.raises(ParamsError, match=r"params must be a mapping.*Give e\.g\."):
        validate_params(model=model, params=bad)


def test_simulate_refuses_params_other_than_the_solutions(model, params):
    from project import solve
    from project.simulation import draw_initial_conditions, simulate

    solution = solve(model=model, params=params)
    initial = draw_initial_conditions(
        model=model,
        n_subjects=4,
        seed=0,
        distribution={
            "pref_type": {"probabilities": [0.5, 0.5]},
            "lagged_retirement": {"label": "working"},
            "income": {"probabilities": [1 / 3] * 3},
            "wealth": {"uniform": [1, 5]},
        },
    )
    other = params | {"beta": 0.9}
    with pytest.raises(ParamsError, match=r"\['beta'\] differ from those the solution"):
        simulate(params=other, initial_conditions=initial, solution=solution, seed=0)
    result = simulate(params=params, initial_conditions=initial, solution=solution, seed=0)
    assert result.n_subjects == 4
