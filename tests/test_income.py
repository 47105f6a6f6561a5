"""The closed-form Rouwenhorst matrix equals the textbook recursion and has its known moments."""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from project.models.income import rouwenhorst_matrix, rouwenhorst_nodes


def recursion(n_nodes: int, rho: float) -> np.ndarray:
    """Rouwenhorst (1995) / Kopecky-Suen (2010) recursion with p = q = (1 + rho) / 2."""
    p = q = (1 + rho) / 2
    matrix = np.array([[p, 1 - p], [1 - q, q]])
    for n in range(3, n_nodes + 1):
        grown = np.zeros((n, n))
        grown[:-1, :-1] += p * matrix
        grown[:-1, 1:] += (1 - p) * matrix
        grown[1:, :-1] += (1 - q) * matrix
        grown[1:, 1:] += q * matrix
        grown[1:-1] /= 2
        matrix = grown
    return matrix


@pytest.mark.parametrize("n_nodes", [2, 3, 5, 8])
@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9, 0.99])
def test_closed_form_equals_the_recursion(n_nodes, rho):
    matrix = np.asarray(rouwenhorst_matrix(n_nodes=n_nodes, rho=jnp.asarray(rho)), dtype=float)
    np.testing.assert_allclose(matrix, recursion(n_nodes, rho), atol=1e-6)
    np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-6)


def test_binomial_stationary_distribution_and_autocorrelation():
    n_nodes, rho, sigma = 5, 0.9, 0.2
    matrix = np.asarray(rouwenhorst_matrix(n_nodes=n_nodes, rho=jnp.asarray(rho)), dtype=float)
    nodes = np.asarray(rouwenhorst_nodes(n_nodes=n_nodes, rho=rho, sigma=sigma), dtype=float)
    stationary = np.array([math.comb(n_nodes - 1, i) for i in range(n_nodes)]) / 2 ** (n_nodes - 1)
    np.testing.assert_allclose(stationary @ matrix, stationary, atol=1e-6)
    variance = stationary @ nodes**2
    np.testing.assert_allclose(variance, sigma**2 / (1 - rho**2), rtol=1e-5)
    lag_covariance = stationary @ (nodes[:, None] * matrix * nodes[None, :]).sum(axis=1)
    np.testing.assert_allclose(lag_covariance / variance, rho, rtol=1e-5)
