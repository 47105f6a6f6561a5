"""Rouwenhorst discretisation of an AR(1) income process, in JAX so rho and sigma are params."""

from __future__ import annotations

import jax.numpy as jnp


def rouwenhorst_nodes(*, n_nodes: int, rho: jnp.ndarray, sigma: jnp.ndarray) -> jnp.ndarray:
    """Return ``n_nodes`` evenly spaced on [-psi, psi], psi = sqrt(n-1) sigma / sqrt(1-rho^2)."""
    psi = jnp.sqrt(n_nodes - 1.0) * sigma / jnp.sqrt(1.0 - rho**2)
    return jnp.linspace(-1.0, 1.0, n_nodes) * psi


def rouwenhorst_matrix(*, n_nodes: int, rho: jnp.ndarray) -> jnp.ndarray:
    """Return the Rouwenhorst transition matrix (rows: current node) with p = q = (1 + rho) / 2."""
    p = (1.0 + rho) / 2.0
    q = p
    matrix = jnp.array([[p, 1.0 - p], [1.0 - q, q]])
    for n in range(3, n_nodes + 1):
        grown = jnp.zeros((n, n), dtype=matrix.dtype)
        grown = grown.at[:-1, :-1].add(p * matrix)
        grown = grown.at[:-1, 1:].add((1.0 - p) * matrix)
        grown = grown.at[1:, :-1].add((1.0 - q) * matrix)
        grown = grown.at[1:, 1:].add(q * matrix)
        matrix = grown.at[1:-1].divide(2.0)
    return matrix
