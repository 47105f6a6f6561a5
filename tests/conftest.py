"""Shared fixtures: float64 on demand (float32 stays the default)."""

import jax
import pytest


@pytest.fixture
def x64():
    """Enable float64 for one test and restore float32 afterwards."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)
