"""Rouwenhorst discretisation of an AR(1) income process, in JAX so rho and sigma are params."""

from __future__ import annotations

import functools
import itertools
import math

import jax.numpy as jnp
import numpy as np


def rouwenhorst_nodes(*, n_nodes: int, rho: jnp.ndarray, sigma: jnp.ndarray) -> jnp.ndarray:
    """Return ``n_nodes`` evenly spaced on [-psi, psi], psi = sqrt(n-1) sigma / sqrt(1-rho^2)."""
    psi = jnp.sqrt(n_nodes - 1.0) * sigma / jnp.sqrt(1.0 - rho**2)
    return jnp.linspace(-1.0, 1.0, n_nodes) * psi


def rouwenhorst_matrix(*, n_nodes: int, rho: jnp.ndarray) -> jnp.ndarray:
    """Return the Rouwenhorst transition matrix (rows: current node) with p = q = (1 + rho) / 2.

    Uses the closed form of the recursion: node i counts the "high" states among n - 1
    independent two-state chains, so P[i, j] = sum_k C(i, k) C(n-1-i, j-k) p^(n-1-i-j+2k)
    (1-p)^(i+j-2k), where k of the i high chains stay high. One fused expression instead of
    n - 2 rounds of scatter updates keeps the compiled period kernel small.
    """
    # Fresh copies: JAX reuses its device copy of a host array it has seen, whatever the
    # precision (float32 or float64) that was in force when it made that copy.
    coefficient, power_p, power_q = (t.copy() for t in _rouwenhorst_terms(n_nodes))
    p = (1.0 + rho) / 2.0
    terms = jnp.asarray(coefficient) * p ** jnp.asarray(power_p) * (1.0 - p) ** jnp.asarray(power_q)
    return terms.sum(axis=-1)


@functools.cache
def _rouwenhorst_terms(n_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return C(i, k) C(n-1-i, j-k) and the powers of p and 1 - p, indexed [i, j, k]."""
    chains = n_nodes - 1
    shape = (n_nodes, n_nodes, n_nodes)
    coefficient, power_p, power_q = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for i, j, k in itertools.product(range(n_nodes), repeat=3):
        if k <= i and 0 <= j - k <= chains - i:
            coefficient[i, j, k] = math.comb(i, k) * math.comb(chains - i, j - k)
            power_p[i, j, k] = chains - i - j + 2 * k
            power_q[i, j, k] = i + j - 2 * k
    return coefficient, power_p, power_q
