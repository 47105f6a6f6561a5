"""The SolvingMicroDSOPs buffer-stock model (``project.models.buffer_stock``) and its profiles.

Oracle: HARK 0.17.2's ``IndShockConsumerType`` on the same profiles and a dense grid
(``tests/oracles/hark_buffer_stock.json``, from ``benchmarks/hark_buffer_stock_reference.py``).
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from project.data.replication import read_profiles
from project.data.vendored import verified_path
from project.dispatch import solve
from project.egm.accuracy import euler_errors
from project.errors import DataError
from project.models import buffer_stock

REFERENCE = json.loads((Path(__file__).parent / "oracles" / "hark_buffer_stock.json").read_text())


@pytest.fixture(scope="module")
def profiles():
    return read_profiles(verified_path("profiles_notes2026"))


def solve_case(calibration: str):
    """Return our solution of ``calibration`` at the reference's estimates (float64)."""
    case = REFERENCE["cases"][calibration]
    params = buffer_stock.model_params(
        profiles=read_profiles(verified_path(f"profiles_{calibration}")),
        crra=case["crra"],
        beta=case["beta"],
    )
    return solve(model=buffer_stock.build_model(), params=params, method="egm")


@pytest.fixture(scope="module")
def solved():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        yield solve_case("notes2026")
    finally:
        jax.config.update("jax_enable_x64", False)


@pytest.mark.parametrize("calibration", ["notes2026", "hark2019"])
def test_consumption_matches_hark_at_every_stored_period(calibration, x64):
    solution = solve_case(calibration)
    wealth = {"wealth": np.asarray(REFERENCE["wealth"])}
    stored = REFERENCE["cases"][calibration]["consumption"]
    assert len(stored) >= 8
    for period, expected in stored.items():
        ours = solution.policy(period=int(period), states=wealth)["consumption"]
        np.testing.assert_allclose(ours, expected, rtol=3e-4, err_msg=f"period {period}")


def test_euler_errors_are_small_in_working_life(solved, x64):
    for period in (0, 20, 37):
        errors = euler_errors(solved, period=period, states={"wealth": np.linspace(1.0, 20, 40)})
        assert np.nanmax(errors) < 1e-3, period


def test_income_risk_stops_at_the_published_retirement_transition(profiles):
    params = buffer_stock.model_params(profiles=profiles, crra=3.0, beta=0.9)
    risky = buffer_stock.RISKY_TRANSITIONS
    assert np.all(params["unemployment_risk"][:risky] == buffer_stock.UNEMPLOYMENT_PROBABILITY)
    assert np.all(params["unemployment_risk"][risky:] == 0)
    # The shocks are mean one while risky and exactly one afterwards.
    for nodes in (params["permanent_nodes"], params["transitory_nodes"]):
        np.testing.assert_allclose(nodes.mean(axis=1), 1.0, rtol=1e-12)
        assert np.all(nodes[risky:] == 1.0)
        assert np.all(nodes[:risky].std(axis=1) > 0.1)
    assert params["income_growth"][40] == pytest.approx(0.6821)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda text: text.replace("survival", "survival_rate"), "columns are"),
        (lambda text: text.replace("0.998341", "1.5"), r"survival must lie in \(0, 1\]"),
        (lambda text: "\n".join(text.splitlines()[:-1]) + "\n", "ages must run 25..89"),
        (lambda text: text.replace("0.6821", "nan"), "finite number"),
    ],
)
def test_damaged_profiles_are_refused(tmp_path, edit, match):
    source = verified_path("profiles_notes2026")
    damaged = tmp_path / "profiles.csv"
    shutil.copy(source, damaged)
    damaged.write_text(edit(damaged.read_text()))
    with pytest.raises(DataError, match=match):
        read_profiles(damaged)


def test_unemployment_as_its_own_shock_gives_the_same_solution(x64, monkeypatch):
    """The transitory shock's unemployed bin (56 combinations) states the distribution that
    unemployment drawn as a shock of its own did (98 combinations): the solutions agree.

    Without kinks in the savings grid: the duplicated combinations map the same kinks more
    than once, which changes which ones fill the slots (and the solution within 3e-4).
    """
    monkeypatch.setattr("project.egm.program.KINK_SLOTS", 0)
    import jax.numpy as jnp

    from project.model import Model
    from project.shocks import DiscreteShock

    def separate_income(transitory_bin, unemployed, period, transitory_nodes, unemployment_risk):
        risk = unemployment_risk[period]
        employed = transitory_nodes[period, transitory_bin.astype(jnp.int32)] / (1 - risk)
        return jnp.where((unemployed > 0) & (risk > 0), 0.0, employed)

    folded = buffer_stock.build_model(n_savings=60)
    bins = tuple(float(k) for k in range(buffer_stock.N_NODES))
    p = buffer_stock.UNEMPLOYMENT_PROBABILITY
    separate = Model(
        name="buffer_stock_separate",
        states=folded.states,
        actions=folded.actions,
        functions=folded.functions | {"transitory_income": separate_income},
        constraints=folded.constraints,
        shocks={
            "permanent_bin": DiscreteShock(nodes=bins),
            "transitory_bin": DiscreteShock(nodes=bins),
            "unemployed": DiscreteShock(nodes=(0.0, 1.0), weights=(1 - p, p)),
        },
        ages=folded.ages,
        param_shapes=folded.param_shapes,
        post_decision_grid=folded.stated_post_decision_grid,
    )
    params = buffer_stock.model_params(
        profiles=read_profiles(verified_path("profiles_hark2019")), crra=4.0, beta=0.99
    )
    ours, theirs = (solve(model=m, params=params, method="egm") for m in (folded, separate))
    wealth = {"wealth": np.linspace(0.5, 30.0, 200)}
    for period in (0, 20, 38, 39, 50, 64):
        np.testing.assert_allclose(
            ours.policy(period=period, states=wealth)["consumption"],
            theirs.policy(period=period, states=wealth)["consumption"],
            rtol=1e-10,
            err_msg=f"period {period}",
        )


@pytest.mark.parametrize("calibration", ["notes2026", "hark2019"])
def test_periods_without_risk_have_degenerate_transitory_nodes(calibration):
    """The unemployed bin pays one where there is no risk: right only if theta is one there."""
    from project.models import lifecycle_normalised_params

    params = buffer_stock.model_params(
        profiles=read_profiles(verified_path(f"profiles_{calibration}")), crra=3.0, beta=0.98
    )
    calm = np.asarray(params["unemployment_risk"]) == 0
    assert calm.any()  # retirement, from the published T_retire on
    np.testing.assert_array_equal(np.asarray(params["transitory_nodes"])[calm], 1.0)
    normalised = lifecycle_normalised_params.default_params()
    calm = np.asarray(normalised["unemployment_risk"]) == 0  # none: risk to the end of work
    np.testing.assert_array_equal(np.asarray(normalised["transitory_nodes"])[calm], 1.0)
