"""Shared fixtures: float64 on demand (float32 stays the default)."""

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
