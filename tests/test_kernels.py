"""Structure kernels equal the general kernel; models built to defeat the detection fall back.

Every comparison is float64: max |dV| <= 1e-12, and the policies agree wherever Q does not have
a near-tie (two actions within 1e-12 of each other), as ``assert_same_solution`` checks.
"""

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pytest

from project import DiscreteGrid, IrregSpacedGrid, LinSpacedGrid, LogSpacedGrid, Model, solve
from project.models import ijrs, lifecycle, precautionary
from project.points import float_dtype
from project.solver import choice, grid_points_of
from project.solver.plan import plan_for
from project.solver.q import build_q_kernel

TOLERANCE = 1e-12


def assert_same_solution(model, params, auto, general):
    """V equal to TOLERANCE; where policies differ, both choices are near-ties in Q."""
    np.testing.assert_allclose(
        np.asarray(auto.values), np.asarray(general.values), rtol=0, atol=TOLERANCE
    )
    points = grid_points_of(model)
    q_kernel = build_q_kernel(model)
    action_names = model.action_names
    for period in range(model.n_periods):
        differs = np.zeros(auto.values.shape[1:], dtype=bool)
        for action in action_names:
            differs |= np.asarray(auto.policies[action][period]) != np.asarray(
                general.policies[action][period]
            )
        if not differs.any():
            continue
        last = period == model.n_periods - 1
        next_value = jnp.zeros_like(auto.values[0]) if last else general.values[period + 1]
        q = np.asarray(
            q_kernel(
                next_value,
                {k: jnp.asarray(v) for k, v in general.params.items()},
                points,
                jnp.int32(period),
                np.asarray(model.ages[period], dtype=float_dtype()),
            )
        ).reshape(*auto.values.shape[1:], -1)
        shape = tuple(model.actions[a].n_points for a in action_names)
        for policy in (auto, general):
            flat = np.ravel_multi_index(
                tuple(np.asarray(policy.policies[a][period]) for a in action_names), shape
            )
            chosen = np.take_along_axis(q, flat[..., None], axis=-1)[..., 0]
            np.testing.assert_allclose(
                chosen[differs], q.max(axis=-1)[differs], rtol=0, atol=TOLERANCE
            )


def solve_both(model, params):
    auto = solve(model=model, params=params)
    general = solve(model=model, params=params, exploit_structure=False)
    assert set(general.kernels) == {"general"}
    assert_same_solution(model, params, auto, general)
    return auto


SHIPPED = [
    ("ijrs r=0", lambda: ijrs.build_model(n_wealth=60, n_consumption=150), ijrs.DEFAULT_PARAMS),
    (
        "ijrs r>0",
        lambda: ijrs.build_model(n_wealth=60, n_consumption=150),
        ijrs.DEFAULT_PARAMS | {"r": 0.02},
    ),
    (
        "precautionary",
        lambda: precautionary.build_model(n_wealth=50, n_consumption=40),
        precautionary.DEFAULT_PARAMS,
    ),
    (
        "lifecycle",
        lambda: lifecycle.build_model(n_wealth=30, n_consumption=30, n_periods=8, start_age=64),
        lifecycle.DEFAULT_PARAMS,
    ),
]


@pytest.mark.parametrize(("build", "params"), [c[1:] for c in SHIPPED], ids=[c[0] for c in SHIPPED])
def test_shipped_models_equal_the_general_kernel(x64, build, params):
    solve_both(build(), params)


def commensurate_ijrs(*, ratio):
    """IJRS with wealth step = ratio x consumption step (both grids evenly spaced)."""
    base = ijrs.build_model(n_wealth=40, n_consumption=10)
    return Model(
        name="ijrs_lattice",
        states={
            "lagged_retirement": base.states["lagged_retirement"],
            "wealth": LinSpacedGrid(start=1, stop=40, n_points=40, name="wealth"),
        },
        actions={
            "retirement": base.actions["retirement"],
            "consumption": LinSpacedGrid(
                start=0.5, stop=0.5 + (40 * ratio - 1) / ratio, n_points=40 * ratio, name="c"
            ),
        },
        functions=base.functions,
        constraints=base.constraints,
        n_periods=5,
    )


@pytest.mark.parametrize("ratio", [1, 3])
@pytest.mark.parametrize("r", [0.0, 0.04])
def test_lattice_kernel_equals_the_general_kernel(x64, ratio, r):
    model = commensurate_ijrs(ratio=ratio)
    assert plan_for(model).structure.step_ratio == ratio
    auto = solve_both(model, ijrs.DEFAULT_PARAMS | {"r": r, "wage": 8.0})
    assert set(auto.kernels) == {"lattice"}


def test_lifecycle_on_commensurate_grids_uses_the_lattice(x64):
    model = lifecycle.build_model(n_wealth=25, n_consumption=25, n_periods=6, start_age=66)
    wealth = model.states["wealth"]
    model = Model(
        name="lifecycle_lattice",
        states=model.states,
        actions=model.actions
        | {
            "consumption": LinSpacedGrid(
                start=wealth.start, stop=wealth.stop, n_points=wealth.n_points, name="c"
            )
        },
        functions=model.functions,
        constraints=model.constraints,
        stochastic_transitions=model.stochastic_transitions,
        ages=model.ages,
        param_shapes=model.param_shapes,
    )
    auto = solve_both(model, lifecycle.DEFAULT_PARAMS)
    assert set(auto.kernels) == {"lattice"}


def test_kernels_follow_the_params_slope_in_both_directions(x64):
    """r = 0 runs the shift kernel, r > 0 the row kernel, and back, on one model object."""
    model = ijrs.build_model(n_wealth=40, n_consumption=90)
    for r, kernel in [(0.0, "shift"), (0.03, "row"), (0.0, "shift"), (0.03, "row")]:
        auto = solve_both(model, ijrs.DEFAULT_PARAMS | {"r": r})
        assert set(auto.kernels) == {kernel}


@dataclass(frozen=True)
class Kind:
    thrifty: int = 0
    lavish: int = 1


def savings_model(*, next_wealth, wealth=None, consumption=None, utility=None, ages=range(5)):
    """Wealth, a permanent discrete kind and consumption; laws and grids as given."""
    return Model(
        name="adversary",
        states={
            "kind": DiscreteGrid(Kind),
            "wealth": wealth or LinSpacedGrid(start=0.5, stop=10, n_points=30, name="w"),
        },
        actions={"consumption": consumption or LinSpacedGrid(start=0.1, stop=6, n_points=45)},
        functions={
            "utility": utility or (lambda consumption, kind: jnp.log(consumption) * (1 + kind)),
            "next_wealth": next_wealth,
            "next_kind": lambda kind: kind,
        },
        constraints={"affordable": lambda consumption, wealth: consumption <= wealth},
        ages=ages,
    )


# Each defeats the savings form or the evenly spaced grid: the row kernel takes over.
ADVERSARIES = {
    "not affine in the action": (
        lambda wealth, consumption, y: wealth - consumption**1.01 + y,
        {},
        None,
    ),
    "wealth and consumption apart": (
        lambda wealth, consumption, r, y: (1 + r) * wealth - consumption + y,
        {"r": 0.0},
        None,
    ),
    "slope differs by kind": (
        lambda wealth, consumption, r, kind, y: (1 + r * kind) * (wealth - consumption) + y,
        {"r": 0.05},
        None,
    ),
    "log-spaced wealth": (
        lambda wealth, consumption, y: wealth - consumption + y,
        {},
        {"wealth": LogSpacedGrid(start=0.5, stop=10, n_points=30, name="w")},
    ),
    "irregular wealth": (
        lambda wealth, consumption, y: wealth - consumption + y,
        {},
        {"wealth": IrregSpacedGrid(points=np.linspace(0.5, 10, 30) ** 1.1, name="w")},
    ),
    "steps that do not match": (
        lambda wealth, consumption, r, y: (1 + r) * (wealth - consumption) + y,
        {"r": 0.03},
        None,
    ),
}


@pytest.mark.parametrize("case", list(ADVERSARIES))
def test_models_built_to_defeat_the_shift_and_lattice_fall_back_to_rows_and_agree(x64, case):
    law, extra, grids = ADVERSARIES[case]
    model = savings_model(next_wealth=law, **(grids or {}))
    auto = solve_both(model, {"beta": 0.9, "y": 0.7, **extra})
    assert set(auto.kernels) == {"row"}, plan_for(model).structure.reason


def test_a_transition_that_depends_on_wealth_falls_back_to_the_general_kernel(x64):
    model = precautionary.build_model(n_wealth=30, n_consumption=25)
    transition = model.stochastic_transitions["income"]
    model = Model(
        name="wealth_dependent_income",
        states=model.states,
        actions=model.actions,
        functions=model.functions,
        constraints=model.constraints,
        stochastic_transitions={
            "income": lambda income, income_rho, wealth: (
                transition(income, income_rho) + 0.0 * wealth
            )
        },
        n_periods=4,
    )
    assert "depends on 'wealth'" in plan_for(model).structure.reason
    auto = solve_both(model, precautionary.DEFAULT_PARAMS)
    assert set(auto.kernels) == {"general"}


def test_two_continuous_states_fall_back_to_the_general_kernel(x64):
    model = Model(
        name="two_stocks",
        states={
            "wealth": LinSpacedGrid(start=0.5, stop=6, n_points=12),
            "housing": LinSpacedGrid(start=0.0, stop=2, n_points=5),
        },
        actions={"consumption": LinSpacedGrid(start=0.1, stop=4, n_points=15)},
        functions={
            "utility": lambda consumption, housing: jnp.log(consumption) + 0.2 * housing,
            "next_wealth": lambda wealth, consumption: wealth - consumption + 0.8,
            "next_housing": lambda housing: housing * 0.9,
        },
        constraints={"affordable": lambda consumption, wealth: consumption <= wealth},
        n_periods=4,
    )
    assert "2 continuous states" in plan_for(model).structure.reason
    auto = solve_both(model, {"beta": 0.9})
    assert set(auto.kernels) == {"general"}


def test_slope_that_changes_with_age_mixes_kernels_by_period(x64):
    """a = 1 before age 3 and 1.05 after: shift kernel early, row kernel late."""
    model = savings_model(
        next_wealth=lambda wealth, consumption, age, y: (
            (1 + 0.05 * (age >= 3)) * (wealth - consumption) + y
        ),
        ages=range(6),
    )
    auto = solve_both(model, {"beta": 0.9, "y": 0.7})
    assert auto.kernels == ("shift", "shift", "shift", "row", "row", "row")


@pytest.mark.parametrize(
    "utility",
    [
        lambda consumption, wealth: jnp.log(consumption) + 0.1 * jnp.sqrt(wealth),
        lambda consumption, kind, age: jnp.log(consumption) * (1 + kind) - 0.01 * age,
    ],
    ids=["utility of wealth", "utility of age"],
)
def test_structure_kernels_take_any_utility(x64, utility):
    model = savings_model(
        next_wealth=lambda wealth, consumption, y: wealth - consumption + y, utility=utility
    )
    auto = solve_both(model, {"beta": 0.9, "y": 0.7})
    assert set(auto.kernels) == {"shift"}


def test_action_dependent_transition_is_mixed_into_the_row(x64):
    """A kept stochastic state (probabilities depend on the discrete action) in a shift model."""
    base = ijrs.build_model(n_wealth=30, n_consumption=60)

    @dataclass(frozen=True)
    class Health:
        bad: int = 0
        good: int = 1

    def health_transition(health, retirement):
        stay = jnp.where(retirement == 1, 0.95, 0.8)
        good = jnp.where(health == 1, stay, 1 - stay)
        return jnp.stack([1 - good, good])

    model = Model(
        name="ijrs_health",
        states=base.states | {"health": DiscreteGrid(Health)},
        actions=base.actions,
        functions=base.functions
        | {
            "utility": lambda consumption, working, delta, health: (
                jnp.log(consumption) - delta * working * (2 - health)
            )
        },
        constraints=base.constraints,
        stochastic_transitions={"health": health_transition},
        n_periods=5,
    )
    assert plan_for(model).expectation.kept == ("health",)
    auto = solve_both(model, ijrs.DEFAULT_PARAMS)
    assert set(auto.kernels) == {"shift"}


def test_realised_outcome_in_the_law_of_motion_falls_back(x64):
    model = precautionary.build_model(n_wealth=30, n_consumption=25)
    model = Model(
        name="next_income",
        states=model.states,
        actions=model.actions,
        functions=model.functions
        | {
            "next_wealth": lambda wealth, consumption, income_nodes, next_income, r: (
                (1 + r) * (wealth - consumption) + jnp.exp(income_nodes[next_income])
            )
        },
        constraints=model.constraints,
        stochastic_transitions=model.stochastic_transitions,
        n_periods=4,
    )
    assert "realised outcome" in plan_for(model).structure.reason
    auto = solve_both(model, precautionary.DEFAULT_PARAMS)
    assert set(auto.kernels) == {"general"}


@pytest.mark.parametrize("batch_size", [1, 7, 40])
def test_splay_is_value_identical_in_the_lattice_kernel(batch_size):
    reference = solve(model=commensurate_ijrs(ratio=2), params=ijrs.DEFAULT_PARAMS)
    base = commensurate_ijrs(ratio=2)
    splayed = Model(
        name="ijrs_lattice",
        states=base.states
        | {"wealth": LinSpacedGrid(start=1, stop=40, n_points=40, batch_size=batch_size)},
        actions=base.actions,
        functions=base.functions,
        constraints=base.constraints,
        n_periods=5,
    )
    result = solve(model=splayed, params=ijrs.DEFAULT_PARAMS)
    assert set(result.kernels) == {"lattice"}
    np.testing.assert_array_equal(np.asarray(reference.values), np.asarray(result.values))
    for action in base.actions:
        np.testing.assert_array_equal(
            np.asarray(reference.policies[action]), np.asarray(result.policies[action])
        )


@pytest.mark.parametrize("exploit_structure", [True, False], ids=["row", "general"])
@pytest.mark.parametrize("batch_size", [1, 7, 13])
def test_splay_is_value_identical_in_the_row_and_general_kernels(exploit_structure, batch_size):
    def build(wealth_batch_size):
        return lifecycle.build_model(
            n_wealth=26,
            n_consumption=21,
            n_periods=4,
            start_age=67,
            wealth_batch_size=wealth_batch_size,
        )

    reference = solve(
        model=build(0), params=lifecycle.DEFAULT_PARAMS, exploit_structure=exploit_structure
    )
    result = solve(
        model=build(batch_size),
        params=lifecycle.DEFAULT_PARAMS,
        exploit_structure=exploit_structure,
    )
    assert set(result.kernels) == {"row" if exploit_structure else "general"}
    np.testing.assert_array_equal(np.asarray(reference.values), np.asarray(result.values))
    for action in reference.policies:
        np.testing.assert_array_equal(
            np.asarray(reference.policies[action]), np.asarray(result.policies[action])
        )


@pytest.fixture
def grouped_searches(monkeypatch):
    """Count the searches that go by groups (``choice._grouped``) from here on."""
    calls = []
    grouped = choice._grouped

    def counted(*args, **kwargs):
        calls.append(1)
        return grouped(*args, **kwargs)

    monkeypatch.setattr(choice, "_grouped", counted)
    return calls


@pytest.mark.parametrize(
    ("build", "params"),
    [
        (lambda: ijrs.build_model(n_wealth=60, n_consumption=150), ijrs.DEFAULT_PARAMS),
        (
            lambda: precautionary.build_model(n_wealth=50, n_consumption=40),
            precautionary.DEFAULT_PARAMS,
        ),
    ],
    ids=["ijrs", "precautionary"],
)
def test_the_shift_search_by_groups_equals_the_two_sweeps_bit_for_bit(
    x64, monkeypatch, grouped_searches, build, params
):
    """Above ``GROUPED_MIN_PAIRS`` (float64) the shift search re-reads each state's best group."""
    two_sweeps = solve(model=build(), params=params)
    assert grouped_searches == []  # below the threshold: two sweeps
    monkeypatch.setattr(choice, "GROUPED_MIN_PAIRS", 1)
    grouped_model = build()  # a new model: its kernels are built under the lowered threshold
    grouped = solve(model=grouped_model, params=params)
    assert grouped_searches
    assert set(grouped.kernels) == set(two_sweeps.kernels) == {"shift"}
    np.testing.assert_array_equal(np.asarray(grouped.values), np.asarray(two_sweeps.values))
    for action in grouped_model.action_names:
        np.testing.assert_array_equal(
            np.asarray(grouped.policies[action]), np.asarray(two_sweeps.policies[action])
        )
    general = solve(model=grouped_model, params=params, exploit_structure=False)
    assert_same_solution(grouped_model, params, grouped, general)


def test_the_shift_search_by_groups_is_value_identical_under_splay(
    x64, monkeypatch, grouped_searches
):
    whole = solve(
        model=ijrs.build_model(n_wealth=60, n_consumption=150), params=ijrs.DEFAULT_PARAMS
    )
    monkeypatch.setattr(choice, "GROUPED_MIN_PAIRS", 1)
    splayed = solve(
        model=ijrs.build_model(n_wealth=60, n_consumption=150, wealth_batch_size=7),
        params=ijrs.DEFAULT_PARAMS,
    )
    assert grouped_searches
    assert set(splayed.kernels) == {"shift"}
    np.testing.assert_array_equal(np.asarray(splayed.values), np.asarray(whole.values))
    np.testing.assert_array_equal(
        np.asarray(splayed.policies["consumption"]), np.asarray(whole.policies["consumption"])
    )


def test_the_shift_search_sweeps_twice_in_float32(monkeypatch, grouped_searches):
    """In float32 the two searches may pick different near-ties: the two sweeps are kept."""
    monkeypatch.setattr(choice, "GROUPED_MIN_PAIRS", 1)
    solution = solve(
        model=ijrs.build_model(n_wealth=60, n_consumption=150), params=ijrs.DEFAULT_PARAMS
    )
    assert np.asarray(solution.values).dtype == np.float32
    assert set(solution.kernels) == {"shift"}
    assert grouped_searches == []
