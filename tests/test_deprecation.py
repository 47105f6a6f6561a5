"""Deprecation shims: the old spelling warns (our category, a helpful message) and gives the
same result as the new one; mixing old and new spellings is refused with a message."""

import warnings

import numpy as np
import pandas as pd
import pytest

from project import LinSpacedGrid, Model, ProjectDeprecationWarning, solve
from project.deprecation import (
    REMOVED_IN,
    renamed_attribute,
    renamed_function,
    renamed_keywords,
)
from project.persist import load_bundle, save_bundle
from project.simulation import SimulationResult, simulate
from project.solver import Solution


@pytest.fixture(scope="module")
def solution():
    model = Model(
        name="cake",
        states={"wealth": LinSpacedGrid(start=0.1, stop=4.0, n_points=15, name="wealth")},
        actions={
            "consumption": LinSpacedGrid(start=0.1, stop=4.0, n_points=20, name="consumption")
        },
        functions={
            "utility": lambda consumption: -1.0 / consumption,
            "next_wealth": lambda wealth, consumption: 1.02 * (wealth - consumption),
        },
        constraints={"feasible": lambda consumption, wealth: consumption <= wealth},
        n_periods=3,
    )
    return solve(model=model, params={"beta": 0.95}, method="grid")


def test_project_deprecation_warning_is_a_deprecation_warning():
    assert issubclass(ProjectDeprecationWarning, DeprecationWarning)


def test_old_constructor_warns_and_equals_from_periods(solution):
    fields = {
        "model": solution.model,
        "params": solution.params,
        "value_function": solution.value_function,
        "policy": solution.policy_indices,
    }
    with pytest.warns(ProjectDeprecationWarning) as record:
        old = Solution(**fields)
    message = str(record[0].message)
    assert "Solution(model=, params=, value_function=, policy=)" in message
    assert "Solution.from_periods" in message
    assert f"removed in project {REMOVED_IN}" in message
    assert record[0].filename == __file__
    new = Solution.from_periods(**fields)
    np.testing.assert_array_equal(old.values, new.values)
    np.testing.assert_array_equal(old.policies["consumption"], new.policies["consumption"])
    states = {"wealth": [0.5, 2.0, 3.7]}
    np.testing.assert_array_equal(
        old.policy(period=0, states=states)["consumption"],
        solution.policy(period=0, states=states)["consumption"],
    )


def test_old_positional_constructor_warns(solution):
    with pytest.warns(ProjectDeprecationWarning, match="from_periods"):
        old = Solution(
            solution.model, solution.params, solution.value_function, solution.policy_indices
        )
    np.testing.assert_array_equal(old.values, solution.values)


def test_old_and_new_constructor_fields_together_are_refused(solution):
    with pytest.raises(TypeError, match=r"either\s+Solution.from_periods"):
        Solution(
            model=solution.model,
            params=solution.params,
            values=solution.values,
            policy=solution.policy_indices,
        )


def test_new_constructor_does_not_warn(solution):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ProjectDeprecationWarning)
        Solution(
            model=solution.model,
            params=solution.params,
            values=solution.values,
            policies=solution.policies,
        )
        solution.policy(period=1, states={"wealth": [1.0]})


def test_indexing_the_policy_method_reads_policy_indices(solution):
    with pytest.warns(ProjectDeprecationWarning, match=r"policy_indices") as record:
        first = solution.policy[0]
    assert "policy(period=, states=)" in str(record[0].message)
    assert record[0].filename == __file__
    np.testing.assert_array_equal(first["consumption"], solution.policy_indices[0]["consumption"])
    with pytest.warns(ProjectDeprecationWarning):
        assert len(solution.policy) == solution.model.n_periods
    with pytest.warns(ProjectDeprecationWarning):
        periods = list(solution.policy)
    assert len(periods) == solution.model.n_periods


def test_renamed_function_keyword_and_attribute_warn_and_forward():
    def add(*, a, b):
        return a + b

    old_add = renamed_function(add, old="plus", new="add")
    with pytest.warns(ProjectDeprecationWarning, match=r"plus is deprecated.*use add"):
        assert old_add(a=1, b=2) == 3

    new_keywords = renamed_keywords({"first": "a"}, where="add")(add)
    with pytest.warns(ProjectDeprecationWarning, match=r"add\(first=...\)"):
        assert new_keywords(first=1, b=2) == 3
    with pytest.raises(TypeError, match="both first="):
        new_keywords(first=1, a=1, b=2)

    class Box:
        size = 3
        length = renamed_attribute(new="size")

    with pytest.warns(ProjectDeprecationWarning, match=r"Box.length .* Box.size"):
        assert Box().length == 3


def test_old_simulation_result_save_and_load_forward_to_bundles(solution, tmp_path):
    initial = {"wealth": np.array([0.5, 1.0, 2.0, 3.5])}
    result = simulate(params={"beta": 0.95}, initial_conditions=initial, solution=solution, seed=3)
    save_bundle(result=result, directory=tmp_path / "new")
    with pytest.warns(ProjectDeprecationWarning, match=r"project.persist.save_bundle"):
        result.save(directory=tmp_path / "old")
    with pytest.warns(ProjectDeprecationWarning, match=r"project.persist.load_bundle"):
        old = SimulationResult.load(directory=tmp_path / "old")
    pd.testing.assert_frame_equal(
        old.to_dataframe(), load_bundle(directory=tmp_path / "new").to_dataframe()
    )


@pytest.mark.parametrize(
    "name",
    ["INCOME_PARAMS", "default_params", "income_profiles", "working_transitions", "working_years"],
)
def test_names_moved_from_lifecycle_normalised_warn_and_are_the_new_ones(name):
    from project.models import lifecycle_normalised, lifecycle_normalised_params

    with pytest.warns(ProjectDeprecationWarning) as caught:
        old = getattr(lifecycle_normalised, name)
    message = str(caught[0].message)
    assert f"lifecycle_normalised.{name} is deprecated" in message
    assert f"lifecycle_normalised_params.{name}" in message
    assert REMOVED_IN in message
    assert old is getattr(lifecycle_normalised_params, name)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        lifecycle_normalised.not_a_name  # noqa: B018
