"""Shared fixtures: float64 on demand (float32 stays the default)."""

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
