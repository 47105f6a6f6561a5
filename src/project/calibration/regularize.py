"""Bounded weights and a penalty toward the base weights: what keeps a reweighting sound.

Contract: a record with base weight b_i > 0 gets the weight ``w_i = b_i * r_i`` with the ratio

    r_i = lower + (upper - lower) * sigmoid(theta_i),

so every weight stays strictly within ``[lower, upper] * b_i`` whatever the optimiser does (a
base weight of 0 stays 0). ``initial_theta`` is the theta of r = 1 (the base weights). The
penalty is ``strength * sum_i b_i * phi(r_i) / sum_i b_i``, a mean over the base population of

- ``entropy``: phi(r) = r log r - r + 1, the Kullback-Leibler divergence of the weights from
  the base weights (the raking / minimum-discrimination-information distance), or
- ``chi2``: phi(r) = (r - 1)^2 / 2, the chi-square distance; its mean is half the variance of
  the ratios, which is what the Kish effective sample size penalises.

Both are zero at r = 1, convex and about (r - 1)^2 / 2 near it. The fit loss is measured in
tolerances (see ``objective``), so ``strength`` trades one unit of mean divergence against all
fitted targets missing by sqrt(strength) tolerances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

PENALTIES = ("entropy", "chi2")


@dataclass(frozen=True)
class Regularization:
    """The bounds of the weight ratios and the penalty toward the base weights."""

    lower: float
    upper: float
    penalty: str
    strength: float

    @property
    def initial_theta(self) -> float:
        """Return the theta of the ratio 1: logit((1 - lower) / (upper - lower))."""
        share = (1.0 - self.lower) / (self.upper - self.lower)
        return math.log(share / (1.0 - share))

    def ratios(self, theta: jnp.ndarray) -> jnp.ndarray:
        """Return r = lower + (upper - lower) * sigmoid(theta)."""
        return self.lower + (self.upper - self.lower) * jax.nn.sigmoid(theta)

    def host_ratios(self, theta: np.ndarray) -> np.ndarray:
        """Return r of ``theta`` in float64 on the host (sigmoid as 0.5 * (1 + tanh(theta / 2)))."""
        return self.lower + (self.upper - self.lower) * 0.5 * (1.0 + np.tanh(0.5 * theta))

    def divergence(self, ratios: jnp.ndarray) -> jnp.ndarray:
        """Return phi(r) elementwise (zero at r = 1)."""
        excess = ratios - 1.0
        if self.penalty == "entropy":  # (1 + e) log(1 + e) - e, without cancelling near e = 0
            return ratios * jnp.log1p(excess) - excess
        return 0.5 * excess**2

    def penalty_of(self, *, weights: np.ndarray, base: np.ndarray) -> float:
        """Return strength * sum_i b_i phi(w_i / b_i) / sum_i b_i in float64 on the host."""
        base = np.asarray(base, dtype=np.float64)
        positive = base > 0
        excess = np.asarray(weights, dtype=np.float64)[positive] / base[positive] - 1.0
        if self.penalty == "entropy":
            terms = (1.0 + excess) * np.log1p(excess) - excess
        else:
            terms = 0.5 * excess**2
        return float(self.strength * np.sum(base[positive] * terms) / np.sum(base))
