"""One process of the 2-process x 2-device solve in tests/test_multiprocess.py (not a test)."""

import sys

import jax

process_id, port, output = int(sys.argv[1]), sys.argv[2], sys.argv[3]
jax.config.update("jax_num_cpu_devices", 2)
jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=process_id
)

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

from project import solve  # noqa: E402
from project.models import lifecycle  # noqa: E402

assert jax.process_count() == 2 and jax.device_count() == 4
model = lifecycle.build_model(
    n_wealth=16, n_consumption=16, n_periods=4, start_age=66, distributed_types=True, n_types=4
)
solution = solve(model=model, params=lifecycle.default_params(n_types=4))
local_blocks = {s.index[0].start for s in solution.value_function[0].addressable_shards}
assert len(local_blocks) == 2, local_blocks
gathered = [
    np.asarray(multihost_utils.process_allgather(v, tiled=True)) for v in solution.value_function
]
if process_id == 0:
    np.savez(output, *gathered)
