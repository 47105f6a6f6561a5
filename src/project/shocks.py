"""iid shocks: a random variable drawn afresh each period and integrated out in the expectation.

A shock is named like a function argument. Laws of motion (``next_<state>``) may take it: its value
is the realisation between this period and the next (e.g. next period's income in cash on hand).
The solvers form E[V'] as the weighted sum over its nodes, so a shock costs no V axis; the
simulation draws one node per subject and period.

Nodes and weights are fixed numbers (``DiscreteShock``) or a discretised distribution
(``NormalShock``, ``LogNormalShock``) whose location and scale may be numbers or parameter names,
so that they can be estimated. Discretisation is Gauss-Hermite (exact for polynomials up to
degree 2n-1 under the normal density) or equiprobable (n bins of equal probability, each node its
bin's conditional mean, so the mean is exact).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from project.errors import ModelSpecificationError
from project.grids import code_combinations

METHODS = ("gauss-hermite", "equiprobable")
WEIGHT_TOLERANCE = 1e-12

Scalar = float | str


class Shock:
    """Common interface: ``n_nodes``, ``parameters`` and traceable ``nodes_and_weights``."""

    n_nodes: int

    @property
    def parameters(self) -> tuple[str, ...]:
        """Return the names of the model parameters the shock reads."""
        return ()

    def nodes_and_weights(self, params: Mapping[str, Any]) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the nodes and their probabilities (each of length ``n_nodes``)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """Return a JSON-serialisable description."""
        raise NotImplementedError


class DiscreteShock(Shock):
    """A shock with given nodes and probabilities (e.g. income 0.7 or 1.3, equally likely)."""

    def __init__(self, *, nodes: Sequence[float], weights: Sequence[float] | None = None) -> None:
        nodes = tuple(float(x) for x in nodes)
        if not nodes or not all(math.isfinite(x) for x in nodes):
            msg = (
                f"DiscreteShock: nodes must be a non-empty sequence of finite numbers, got {nodes}."
            )
            raise ModelSpecificationError(msg)
        if weights is None:
            weights = [1.0 / len(nodes)] * len(nodes)
        weights = tuple(float(w) for w in weights)
        if len(weights) != len(nodes):
            msg = (
                f"DiscreteShock: {len(nodes)} nodes but {len(weights)} weights. Give one "
                "probability per node."
            )
            raise ModelSpecificationError(msg)
        negative = [w for w in weights if not w >= 0]
        if negative:
            msg = (
                f"DiscreteShock: weights {list(weights)} include negative or NaN values "
                f"{negative}. Weights are probabilities: give non-negative numbers."
            )
            raise ModelSpecificationError(msg)
        if abs(math.fsum(weights) - 1.0) > WEIGHT_TOLERANCE:
            msg = (
                f"DiscreteShock: weights {list(weights)} sum to {math.fsum(weights)!r}, not one "
                f"(tolerance {WEIGHT_TOLERANCE:g}). Normalise them."
            )
            raise ModelSpecificationError(msg)
        self.nodes, self.weights, self.n_nodes = nodes, weights, len(nodes)

    def nodes_and_weights(self, params: Mapping[str, Any]) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the given nodes and weights."""
        del params
        return jnp.asarray(self.nodes), jnp.asarray(self.weights)

    def describe(self) -> dict[str, Any]:
        """Return kind, nodes and weights."""
        return {"kind": "discrete", "nodes": list(self.nodes), "weights": list(self.weights)}


class _LocationScaleShock(Shock):
    """A distribution with a location and a scale (numbers or parameter names), discretised."""

    kind: str
    location_name: str
    scale_name: str

    def __init__(self, *, location: Scalar, scale: Scalar, n_nodes: int, method: str) -> None:
        label = type(self).__name__
        if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 1:
            msg = f"{label}: n_nodes must be a positive int, got {n_nodes!r}."
            raise ModelSpecificationError(msg)
        if method not in METHODS:
            msg = f"{label}: method must be one of {METHODS}, got {method!r}."
            raise ModelSpecificationError(msg)
        for what, value in ((self.location_name, location), (self.scale_name, scale)):
            if isinstance(value, str):
                if not value.isidentifier():
                    msg = f"{label}: {what}={value!r} is not a valid parameter name."
                    raise ModelSpecificationError(msg)
            elif isinstance(value, bool) or not isinstance(value, int | float):
                msg = f"{label}: {what} must be a number or a parameter name, got {value!r}."
                raise ModelSpecificationError(msg)
        if not isinstance(scale, str) and not scale >= 0:
            msg = f"{label}: {self.scale_name} must be >= 0, got {scale!r}."
            raise ModelSpecificationError(msg)
        self.location, self.scale, self.n_nodes, self.method = location, scale, n_nodes, method

    @property
    def parameters(self) -> tuple[str, ...]:
        """Return the location and scale where they name parameters."""
        return tuple(v for v in (self.location, self.scale) if isinstance(v, str))

    def _values(self, params: Mapping[str, Any]) -> tuple[jnp.ndarray, jnp.ndarray]:
        def value(v: Scalar) -> jnp.ndarray:
            return jnp.asarray(params[v]) if isinstance(v, str) else jnp.asarray(float(v))

        return value(self.location), value(self.scale)

    def describe(self) -> dict[str, Any]:
        """Return kind, parameters, node count and method."""
        return {
            "kind": self.kind,
            self.location_name: self.location,
            self.scale_name: self.scale,
            "n_nodes": self.n_nodes,
            "method": self.method,
        }


class NormalShock(_LocationScaleShock):
    """A normal shock N(mean, sd^2), discretised on ``n_nodes`` nodes."""

    kind, location_name, scale_name = "normal", "mean", "sd"

    def __init__(
        self, *, mean: Scalar = 0.0, sd: Scalar, n_nodes: int, method: str = "gauss-hermite"
    ) -> None:
        super().__init__(location=mean, scale=sd, n_nodes=n_nodes, method=method)

    def nodes_and_weights(self, params: Mapping[str, Any]) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return mean + sd * standard nodes, and the standard weights."""
        mean, sd = self._values(params)
        standard, weights = _standard_normal(self.n_nodes, self.method)
        return mean + sd * jnp.asarray(standard), jnp.asarray(weights)


class LogNormalShock(_LocationScaleShock):
    """A shock exp(X) with X ~ N(mean_of_log, sd_of_log^2), discretised on ``n_nodes`` nodes.

    Equiprobable nodes are the lognormal's conditional means per bin, so E[shock] is exact.
    """

    kind, location_name, scale_name = "lognormal", "mean_of_log", "sd_of_log"

    def __init__(
        self,
        *,
        mean_of_log: Scalar = 0.0,
        sd_of_log: Scalar,
        n_nodes: int,
        method: str = "gauss-hermite",
    ) -> None:
        super().__init__(location=mean_of_log, scale=sd_of_log, n_nodes=n_nodes, method=method)

    def nodes_and_weights(self, params: Mapping[str, Any]) -> tuple[jnp.ndarray, jnp.ndarray]:
        """Return the lognormal nodes and weights."""
        mu, sigma = self._values(params)
        standard, weights = _standard_normal(self.n_nodes, self.method)
        if self.method == "gauss-hermite":
            return jnp.exp(mu + sigma * jnp.asarray(standard)), jnp.asarray(weights)
        edges = _equiprobable_edges(self.n_nodes)
        lower, upper = jnp.asarray(edges[:-1]), jnp.asarray(edges[1:])
        bin_mass = ndtr(upper - sigma) - ndtr(lower - sigma)
        means = jnp.exp(mu + sigma**2 / 2) * bin_mass * self.n_nodes
        return means, jnp.asarray(weights)


def _standard_normal(n_nodes: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Return standard-normal nodes and weights (float64 on the host)."""
    if method == "gauss-hermite":
        x, w = np.polynomial.hermite.hermgauss(n_nodes)
        return x * math.sqrt(2.0), w / math.sqrt(math.pi)
    edges = _equiprobable_edges(n_nodes)
    density = np.exp(-(edges**2) / 2) / math.sqrt(2 * math.pi)
    density[[0, -1]] = 0.0
    return (density[:-1] - density[1:]) * n_nodes, np.full(n_nodes, 1.0 / n_nodes)


def _equiprobable_edges(n_nodes: int) -> np.ndarray:
    """Return the n+1 bin edges of the standard normal's equiprobable bins (±inf at the ends)."""
    inner = [NormalDist().inv_cdf(k / n_nodes) for k in range(1, n_nodes)]
    return np.asarray([-np.inf, *inner, np.inf])


def shock_tables(
    shocks: Mapping[str, Shock], params: Mapping[str, Any]
) -> tuple[dict[str, jnp.ndarray], jnp.ndarray, jnp.ndarray]:
    """Return every node combination and its probability (shocks are independent).

    Returns ``(values, weights, codes)``: ``values[name]`` has one entry per combination,
    ``weights`` the joint probabilities, ``codes`` the node index of each shock per combination.
    """
    tables = {name: shock.nodes_and_weights(params) for name, shock in shocks.items()}
    codes = code_combinations([shock.n_nodes for shock in shocks.values()])
    values = {name: tables[name][0][codes[:, j]] for j, name in enumerate(shocks)}
    weights = jnp.ones(codes.shape[0])
    for j, name in enumerate(shocks):
        weights = weights * tables[name][1][codes[:, j]]
    return values, weights, jnp.asarray(codes)
