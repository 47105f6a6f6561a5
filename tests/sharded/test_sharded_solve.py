"""Sharded solve, checks, simulation and persistence on 4 fake CPU devices.

Collected only by the subprocess that tests/test_sharded.py starts, because the device count
must be set before the first JAX operation of the process.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from jax.sharding import NamedSharding, PartitionSpec

from project import ModelSpecificationError, solve
from project.devices import replicate, state_mesh
from project.model.params import pack_params, params_on_host
from project.models import lifecycle
from project.persist import load_bundle, load_solution, save_bundle, save_solution
from project.simulation import draw_initial_conditions, simulate
from project.solver import grid_points_of, has_inf, has_nan
from project.solver.plan import plan_for
from project.solver.program import solve_program

PARAMS = lifecycle.default_params(n_types=4)
DISTRIBUTION = {
    "pref_type": {"probabilities": [0.25] * 4},
    "lagged_retirement": {"label": "working"},
    "income": {"label": "node_2"},
    "wealth": {"uniform": [0.5, 5.0]},
}


def build(*, distributed: bool, n_types: int = 4, **sizes):
    return lifecycle.build_model(
        n_wealth=16,
        n_consumption=16,
        n_periods=4,
        start_age=66,
        distributed_types=distributed,
        n_types=n_types,
        **sizes,
    )


@pytest.fixture(scope="module")
def solutions():
    assert len(jax.devices()) == 4
    single = solve(model=build(distributed=False), params=PARAMS)
    model = build(distributed=True)
    return model, single, solve(model=model, params=PARAMS)


def test_sharded_value_function_equals_single_device_exactly(solutions):
    model, single, sharded = solutions
    by_type = NamedSharding(state_mesh(model), PartitionSpec("pref_type"))
    for t, (v_single, v_sharded) in enumerate(
        zip(single.value_function, sharded.value_function, strict=True)
    ):
        assert len(v_sharded.sharding.device_set) == 4
        assert v_sharded.sharding.is_equivalent_to(by_type, v_sharded.ndim)
        np.testing.assert_array_equal(np.asarray(v_single), np.asarray(v_sharded), f"period {t}")
        for action in single.policy_indices[t]:
            np.testing.assert_array_equal(
                np.asarray(single.policy_indices[t][action]),
                np.asarray(sharded.policy_indices[t][action]),
            )


def test_each_device_holds_only_its_own_type_block(solutions):
    _, _, sharded = solutions
    blocks = sorted(s.index[0].start for s in sharded.value_function[0].addressable_shards)
    assert blocks == [0, 1, 2, 3]
    assert all(s.data.shape[0] == 1 for s in sharded.value_function[0].addressable_shards)


def test_solve_program_moves_no_value_function_between_devices(solutions):
    """Only the scalar NaN/Inf flags and params facts are reduced across devices."""
    model, _, sharded = solutions
    mesh = state_mesh(model)
    program = solve_program(plan_for(model), kernels=sharded.kernels, mesh=mesh)
    flat = replicate(pack_params(params_on_host(model=model, params=PARAMS)), mesh=mesh)
    text = program.lower(flat, grid_points_of(model, mesh=mesh)).compile().as_text()
    for collective in ("all-gather", "all-to-all", "collective-permute"):
        assert collective not in text, collective
    reduced = [line for line in text.splitlines() if " all-reduce(" in line]
    assert reduced, "the flags are reduced across the type blocks"
    for line in reduced:
        shape = line.split("=")[1].split("all-reduce(")[0]
        assert "[]" in shape or "[1]" in shape or "[2]" in shape or "[3]" in shape, line


def test_nan_and_inf_checks_return_replicated_scalars_without_gathering(solutions):
    _, _, sharded = solutions
    value = sharded.value_function[0]
    assert isinstance(value.sharding, NamedSharding)
    for check in (has_nan, has_inf):
        result = check(value)
        assert result.shape == ()
        assert result.sharding.is_fully_replicated
        assert "all-gather" not in check.lower(value).compile().as_text()
    poisoned = value.at[2, 0, 0, 0].set(jnp.nan)
    assert bool(has_nan(poisoned))


def test_simulation_is_identical_across_device_counts_and_chunks(solutions):
    model, single, sharded = solutions
    initial = draw_initial_conditions(
        model=model, n_subjects=101, seed=4, distribution=DISTRIBUTION
    )
    reference = simulate(
        params=PARAMS, initial_conditions=initial, solution=single, seed=9
    ).to_dataframe()
    for batch in (0, 7, 64):
        frame = simulate(
            params=PARAMS,
            initial_conditions=initial,
            solution=sharded,
            seed=9,
            subject_batch_size=batch,
        ).to_dataframe()
        pd.testing.assert_frame_equal(reference, frame, check_exact=True)


def test_save_and_load_keep_the_sharding(solutions, tmp_path):
    model, _, sharded = solutions
    save_solution(solution=sharded, directory=tmp_path / "solution")
    loaded = load_solution(directory=tmp_path / "solution", model=model)
    for original, restored in zip(sharded.value_function, loaded.value_function, strict=True):
        assert restored.sharding.is_equivalent_to(original.sharding, original.ndim)
        np.testing.assert_array_equal(np.asarray(original), np.asarray(restored))


def test_load_onto_fewer_devices_works(solutions, tmp_path):
    model, _, sharded = solutions
    save_solution(solution=sharded, directory=tmp_path / "solution")
    two = jax.devices()[:2]
    loaded = load_solution(directory=tmp_path / "solution", model=model, devices=two)
    assert len(loaded.value_function[0].sharding.device_set) == 2
    np.testing.assert_array_equal(
        np.asarray(sharded.value_function[0]), np.asarray(loaded.value_function[0])
    )


def test_load_onto_an_incompatible_device_count_raises(solutions, tmp_path):
    model, _, sharded = solutions
    save_solution(solution=sharded, directory=tmp_path / "solution")
    with pytest.raises(ModelSpecificationError, match="do not split evenly over 3 devices"):
        load_solution(directory=tmp_path / "solution", model=model, devices=jax.devices()[:3])


def test_type_count_not_divisible_by_devices_raises():
    with pytest.raises(ModelSpecificationError, match=r"2 categories.*4 devices"):
        solve(model=build(distributed=True, n_types=2), params=lifecycle.default_params())


def test_two_distributed_axes_must_multiply_to_the_device_count():
    from dataclasses import dataclass

    from project import DiscreteGrid, LinSpacedGrid, Model

    @dataclass(frozen=True)
    class Three:
        a: int = 0
        b: int = 1
        c: int = 2

    @dataclass(frozen=True)
    class Two:
        a: int = 0
        b: int = 1

    model = Model(
        name="two_axes",
        states={
            "x": DiscreteGrid(Three, distributed=True),
            "y": DiscreteGrid(Two, distributed=True),
            "wealth": LinSpacedGrid(start=1, stop=2, n_points=3, name="wealth"),
        },
        actions={"c": LinSpacedGrid(start=0.1, stop=1, n_points=3, name="c")},
        functions={
            "utility": lambda c: jnp.log(c),  # noqa: PLW0108 (dags binds by name)
            "next_x": lambda x: x,
            "next_y": lambda y: y,
            "next_wealth": lambda wealth, c: wealth - c,
        },
        n_periods=2,
    )
    with pytest.raises(ModelSpecificationError, match=r"product 6.*4 devices"):
        solve(model=model, params={"beta": 0.9})


def test_simulation_bundle_keeps_value_function_sharded(solutions, tmp_path):

    model, _, sharded = solutions
    initial = draw_initial_conditions(model=model, n_subjects=21, seed=4, distribution=DISTRIBUTION)
    result = simulate(params=PARAMS, initial_conditions=initial, solution=sharded, seed=9)
    save_bundle(result=result, directory=tmp_path / "bundle")
    loaded = load_bundle(directory=tmp_path / "bundle", model=model)
    original = sharded.value_function[0]
    assert loaded.value_function[0].sharding.is_equivalent_to(original.sharding, original.ndim)
    np.testing.assert_array_equal(
        np.asarray(loaded.value_function[0]), np.asarray(sharded.value_function[0])
    )
    pd.testing.assert_frame_equal(result.to_dataframe(), loaded.to_dataframe())


def test_dcegm_refuses_distributed_types_it_would_not_shard():
    """(DC-)EGM runs on one device: distributed types over 4 devices raise, naming the fix."""
    model = build(distributed=True, n_savings=20)
    with pytest.raises(ModelSpecificationError, match=r"\(DC-\)EGM solves on one device.*grid"):
        solve(model=model, params=PARAMS)
    one_device = solve(model=model, params=PARAMS, devices=jax.devices()[:1])
    assert one_device.method == "dcegm"
