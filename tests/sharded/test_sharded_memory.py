"""Memory prediction of a sharded solve, per device, against XLA's buffer assignment.

Collected only by the subprocess that tests/test_sharded.py starts (4 fake CPU devices).
"""

import jax

from project.devices import replicate, state_mesh
from project.model.params import pack_params, params_on_host
from project.models import lifecycle
from project.solver import grid_points_of
from project.solver.budget import fit_solve
from project.solver.memory import predict_solve_memory
from project.solver.memory_limit import free_memory
from project.solver.plan import plan_for
from project.solver.program import solve_program

PARAMS = lifecycle.default_params(n_types=4)


def test_sharded_prediction_is_per_device_and_matches_xla():
    model = lifecycle.build_model(
        n_wealth=400, n_consumption=200, n_periods=4, n_types=4, distributed_types=True
    )
    mesh = state_mesh(model)
    plan = plan_for(model)
    kernels = ("row",) * model.n_periods
    flat = replicate(pack_params(params_on_host(model=model, params=PARAMS)), mesh=mesh)
    program = solve_program(plan, kernels=kernels, mesh=mesh)
    compiled = program.lower(flat, grid_points_of(model, mesh=mesh)).compile()
    analysis = compiled.memory_analysis()
    xla = (
        analysis.temp_size_in_bytes
        + analysis.output_size_in_bytes
        + analysis.argument_size_in_bytes
    )
    sharded = predict_solve_memory(plan, kernels=kernels, shards={"pref_type": 4})
    whole = dict(predict_solve_memory(plan, kernels=kernels).parts)
    assert abs(sharded.total / xla - 1) <= 0.25, (sharded.total, xla)
    report = model.n_periods * 8 * 4
    assert dict(sharded.parts)["solution"] - report == (whole["solution"] - report) // 4


def test_cpu_devices_of_a_mesh_share_the_free_host_memory():
    model = lifecycle.build_model(
        n_wealth=20, n_consumption=10, n_periods=3, n_types=4, distributed_types=True
    )
    mesh = state_mesh(model)
    memory = fit_solve(plan_for(model), memory_limit=None, mesh=mesh, slopes=None)
    assert len(memory.devices) == 4
    one = free_memory(jax.devices()[:1])
    assert memory.limit.bytes <= 0.8 * one / 4 * 1.05
