"""One process of a multi-process solve: ``python -m project.solve_worker`` (``project.launch``).

Reads its inputs from the environment the launcher set, joins the other processes (a loopback
coordinator, or SLURM's environment under ``srun``), solves its blocks of the model and saves
them into the shared product; the primary process publishes it.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import jax

from project.launch import worker_setting
from project.model.spec import Model
from project.pipeline import solve_and_save

logger = logging.getLogger("project.solve_worker")


def join_processes() -> None:
    """Configure this process's CPU devices and join the others (JAX multi-process)."""
    jax.config.update("jax_num_cpu_devices", int(worker_setting("CPU_DEVICES")))
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    coordinator = worker_setting("COORDINATOR", required=False)
    if coordinator:
        jax.distributed.initialize(
            coordinator_address=coordinator,
            num_processes=int(worker_setting("PROCESSES")),
            process_id=int(worker_setting("PROCESS_ID")),
        )
    else:  # under srun: ids, count and coordinator from SLURM's environment
        jax.distributed.initialize()


def main() -> None:
    """Solve and save this process's part of the variant the launcher passed."""
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("project").setLevel(logging.INFO)  # relayed by the launcher
    specification = json.loads(worker_setting("SPECIFICATION"))
    join_processes()
    solution = solve_and_save(
        specification=specification,
        directory=Path(worker_setting("DIRECTORY")),
        fingerprint=worker_setting("FINGERPRINT"),
    )
    logger.info(
        "process %d of %d holds blocks %s of %s",
        jax.process_index(),
        jax.process_count(),
        local_blocks(solution.value_function[0], axes=block_axes(solution.model)),
        list(solution.model.permanent_states),
    )
    jax.distributed.shutdown()


def block_axes(model: Model) -> list[int]:
    """Return the positions of the model's distributed states among its state axes."""
    return [model.state_names.index(s) for s in model.permanent_states]


def local_blocks(values: jax.Array, *, axes: list[int]) -> list[Any]:
    """Return the first index, along ``axes``, of each block this process holds."""
    starts = {tuple(shard.index[a].start or 0 for a in axes) for shard in values.addressable_shards}
    return sorted(start[0] if len(start) == 1 else start for start in starts)


if __name__ == "__main__":
    main()
