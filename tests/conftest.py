"""Shared fixtures: float64 on demand (float32 the default), a SLURM cluster, a welfare result."""

import os

import jax
import pytest

# tests/sharded needs 4 fake devices set before JAX starts: tests/test_sharded.py runs it in a
# subprocess, so this process must not collect it.
collect_ignore = ["sharded"]


@pytest.fixture
def x64():
    """Enable float64 for one test and restore float32 afterwards."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A running one-node SLURM cluster (tests/slurm.py), stopped at the end of the session.

    Skipped, with the reason, only where SLURM can neither be found nor installed (no root or no
    apt-get), and never under ``PROJECT_REQUIRE_SLURM=1`` (``.ci/run`` installs SLURM and sets
    it, so CI fails rather than skips).
    """
    from slurm import SlurmCluster, SlurmUnavailableError

    try:
        cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"))
    except SlurmUnavailableError as error:
        if os.environ.get("PROJECT_REQUIRE_SLURM") == "1":
            raise
        pytest.skip(f"no SLURM cluster can run here: {error}")
    yield cluster
    cluster.stop()


@pytest.fixture
def welfare():
    """A welfare result as ``welfare.json`` holds it: λ by type with s.e., and the C check."""
    from project.analysis.welfare_text import welfare_numbers

    result = {
        "lambda": -0.0465,
        "lambda_se": 0.0012,
        "lambda_by_type": {"leisure_loving": -0.0569, "work_loving": -0.034},
        "lambda_se_by_type": {"leisure_loving": 0.0024, "work_loving": 1e-6},
        "value_difference": -1.25,
    }
    values = {
        "consumption_utility": 114.85,
        "simulated_consumption_utility": 115.19,
        "simulated_consumption_utility_se": 0.181,
        "n_households": 20_000,
    }
    return result | {"numbers": welfare_numbers(result), "values": values}
