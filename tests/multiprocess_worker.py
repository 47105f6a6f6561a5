"""One process of the 2-process x 2-device solve (not a test).

``python multiprocess_worker.py OUTPUT PROCESS_ID PORT``: a loopback coordinator on PORT
(tests/test_multiprocess.py). ``srun -n 2 python multiprocess_worker.py OUTPUT``: JAX finds the
processes, their ids and the coordinator from SLURM's environment (tests/test_slurm.py).
"""

import os
import sys
from pathlib import Path

import jax

output = sys.argv[1]
jax.config.update("jax_num_cpu_devices", 2)
jax.config.update("jax_cpu_collectives_implementation", "gloo")
if len(sys.argv) > 2:
    process_id, port = int(sys.argv[2]), sys.argv[3]
    jax.distributed.initialize(
        coordinator_address=f"127.0.0.1:{port}", num_processes=2, process_id=process_id
    )
else:
    assert "SLURM_JOB_ID" in os.environ, "without a port, run this under srun"
    jax.distributed.initialize()  # SLURM auto-detection: ids, count, coordinator

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

from project import solve  # noqa: E402
from project.models import lifecycle  # noqa: E402
from project.persist.solution import save_solution  # noqa: E402

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
if jax.process_index() == 0:
    np.savez(output, *gathered)
save_solution(solution=solution, directory=Path(output).parent / "solution")  # every process
print(f"process {jax.process_index()} of {jax.process_count()}: blocks {sorted(local_blocks)}")
