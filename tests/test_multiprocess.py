"""The default model's sharded solve in 2 processes x 2 CPU devices equals one process.

Uses multi-process JAX on the CPU with gloo collectives. Each process holds two of the four
preference-type blocks. The processes are started twice: by hand, with a loopback coordinator,
and by ``srun -n 2`` on a running SLURM cluster, where ``jax.distributed.initialize()`` finds the
processes and the coordinator in SLURM's environment.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

from project import solve
from project.models import lifecycle
from project.persist.solution import load_solution

WORKER = Path(__file__).parent / "multiprocess_worker.py"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_solve_matches_single_process(tmp_path):
    output = tmp_path / "values.npz"
    port = str(free_port())
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(output), str(i), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    logs = [w.communicate(timeout=600)[0] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], "\n".join(logs)[-6000:]
    assert_equals_single_process(output)


def test_srun_two_process_solve_matches_single_process(slurm_cluster, tmp_path):
    output = tmp_path / "values.npz"
    done = slurm_cluster.run(
        "srun",
        "-n",
        "2",
        "--cpus-per-task=1",
        sys.executable,
        str(WORKER),
        str(output),
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "process 0 of 2: blocks [0, 1]" in done.stdout
    assert "process 1 of 2: blocks [2, 3]" in done.stdout
    assert_equals_single_process(output)


def assert_equals_single_process(output):
    """V gathered by the processes, and the solution they saved together, equal one process."""
    model = lifecycle.build_model(
        n_wealth=16, n_consumption=16, n_periods=4, start_age=66, n_types=4
    )
    single = solve(model=model, params=lifecycle.default_params(n_types=4))
    gathered = np.load(output)
    saved = load_solution(directory=output.parent / "solution", model=model)
    for t, value in enumerate(single.value_function):
        np.testing.assert_array_equal(gathered[f"arr_{t}"], np.asarray(value), f"period {t}")
        np.testing.assert_array_equal(
            np.asarray(saved.value_function[t]), np.asarray(value), f"saved, period {t}"
        )
    assert not [p.name for p in output.parent.iterdir() if p.name.startswith(".solution.w")]
