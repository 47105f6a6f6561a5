"""The solve and the simulation as one program give what ``solve`` then ``simulate`` record.

Oracles: the program's columns equal, bit for bit, the columns of ``simulate`` on the solution of
``solve`` (plain EGM with its kinks, the replication's model; DC-EGM with taste shocks and the
last period's step, IJRS), for the periods the program simulates; a failed solve gives no panel;
bad arguments raise the simulation's own error.
"""

from __future__ import annotations

import numpy as np
import pytest

from project.data.replication import read_profiles
from project.data.vendored import verified_path
from project.dispatch import solve
from project.errors import InitialConditionsError
from project.models import buffer_stock, ijrs
from project.simulation import simulate
from project.simulation.program import PanelProgram


def simulated(model, params, initial, seed):
    """Return the columns of ``simulate`` on ``solve``'s solution (the two-step path)."""
    solution = solve(model=model, params=params, log_level="off")
    return simulate(
        params=params, initial_conditions=initial, solution=solution, seed=seed, log_level="off"
    ).columns


@pytest.fixture
def buffer_stock_case(x64):
    model = buffer_stock.build_model(n_savings=60)
    profiles = read_profiles(verified_path("profiles_hark2019"))
    params = buffer_stock.model_params(profiles=profiles, crra=3.5, beta=0.99)
    initial = {"wealth": np.random.default_rng(3).uniform(1.0, 3.0, size=300)}
    return model, params, initial


def test_plain_egm_panel_equals_solve_then_simulate(buffer_stock_case):
    model, params, initial = buffer_stock_case
    program = PanelProgram(
        model=model,
        initial_conditions=initial,
        seed=11,
        stop_period=20,
        record=("wealth", "consumption"),
    )
    panel = program(params)
    reference = simulated(model, params, initial, seed=11)
    assert panel["wealth"].shape == (300, 20)
    for name in ("wealth", "consumption"):
        np.testing.assert_array_equal(panel[name], reference[name][:, :20])


def test_dcegm_panel_with_taste_shocks_and_the_last_period_equals_simulate(x64):
    model = ijrs.build_model(n_periods=5, n_savings=120, taste_shocks=True)
    params = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 2.0}
    rng = np.random.default_rng(5)
    initial = {
        "lagged_retirement": np.zeros(200, dtype=int),
        "wealth": rng.uniform(1.0, 200.0, size=200),
    }
    program = PanelProgram(
        model=model,
        initial_conditions=initial,
        seed=4,
        stop_period=model.n_periods,
        record=("lagged_retirement", "wealth", "retirement", "consumption"),
    )
    panel = program(params)
    reference = simulated(model, params, initial, seed=4)
    assert panel["retirement"].any() and not panel["retirement"].all()
    for name, values in panel.items():
        np.testing.assert_array_equal(values, reference[name])


def test_a_failed_solve_gives_no_panel(buffer_stock_case):
    model, params, initial = buffer_stock_case
    program = PanelProgram(
        model=model, initial_conditions=initial, seed=1, stop_period=5, record=("wealth",)
    )
    assert program(params) is not None
    # Log utility's closed forms divide by 1 - crra: the solution is not finite.
    assert program(params | {"crra": 1.0}) is None


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"record": ("savings_rate",)}, "record must name states or actions"),
        ({"record": ()}, "record must name states or actions"),
        ({"stop_period": 0}, "stop_period must be a whole number"),
        ({"stop_period": 67}, r"in 1\.\.66"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_arguments_raise_the_simulations_error(buffer_stock_case, arguments, match):
    model, _, initial = buffer_stock_case
    given = {"seed": 1, "stop_period": 5, "record": ("wealth",)} | arguments
    with pytest.raises(InitialConditionsError, match=match):
        PanelProgram(model=model, initial_conditions=initial, **given)
