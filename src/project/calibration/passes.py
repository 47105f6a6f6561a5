"""Batched passes over the records: the estimates S, the exact gradient and a scan of A.

Contract: records are processed in batches of B = min(batch_size, N) rows (``None``: one batch
of N); the last batch is padded with zero rows, and padded records carry base weight 0. The
parameters theta have length n_batches * B (entries past N are padding). Record i's weight is
``w_i = b_i * r(theta_i)`` with the base weight b_i and the bounded ratio r of ``regularize``;
in epoch e its effective weight is the inverted-dropout weight

    v_i = w_i * m_i / (1 - p),   m_i ~ Bernoulli(1 - p) drawn with the key
    fold_in(fold_in(key(seed), e), i),

so the mask depends only on (seed, epoch, record index), never on the batch size (p = 0: m = 1).
The objective is ``L(S) + strength * sum_i b_i phi(r_i) / sum_i b_i`` (the penalty uses the
weights w, not the dropped-out v). ``gradient`` makes two passes: pass 1 accumulates
S = sum_i v_i A_i and the penalty sum over batches, then c = dL/dS; pass 2 forms the exact
d/dtheta_i of ``v_i (A_i . c) + strength * b_i phi(r_i) / sum b`` batch by batch (autodiff of
that separable surrogate). That is the full-batch gradient up to float summation order, with
O(B x K) memory beyond vectors of length N. ``scan`` makes one pass without dropout: w @ A and
the column sums of |A|. Sums over records are tree sums within chunks of rows (see
``_chunk_sums``); the dot A_i . c uses ``Precision.HIGHEST`` (no TF32 on GPUs).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.calibration.objective import Objective
from project.calibration.regularize import Regularization
from project.calibration.source import EstimateSource

HIGHEST = jax.lax.Precision.HIGHEST
CHUNK_ROWS = 4096


@dataclass(frozen=True)
class Batching:
    """How N records are cut into batches of B rows (the last one padded)."""

    n_records: int
    rows: int

    @classmethod
    def of(cls, *, n_records: int, batch_size: int | None) -> Batching:
        """Return the batching for ``batch_size`` (None or >= N: one batch of N)."""
        rows = n_records if batch_size is None else max(1, min(batch_size, n_records))
        return cls(n_records=n_records, rows=rows)

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """Return ``(start, stop)`` of every batch."""
        starts = range(0, self.n_records, self.rows)
        return [(start, min(start + self.rows, self.n_records)) for start in starts]

    @property
    def padded_length(self) -> int:
        """Return n_batches * B, the length of theta including padding."""
        return len(self.bounds) * self.rows

    def pad(self, vector: np.ndarray) -> np.ndarray:
        """Return ``vector`` (length N, host) padded with zeros to ``padded_length``."""
        return np.pad(np.asarray(vector), (0, self.padded_length - self.n_records))


def epoch_key(*, seed: int, epoch: int) -> jax.Array:
    """Return the dropout key of one epoch."""
    return _epoch_key(seed, epoch)


def dropout_mask(*, seed: int, epoch: int, start: int, stop: int, rate: float) -> np.ndarray:
    """Return the kept-record mask of records ``start:stop`` in ``epoch`` (True = kept)."""
    indices = np.arange(start, stop, dtype=np.int32)
    return np.asarray(_keep(epoch_key(seed=seed, epoch=epoch), indices, rate=rate))


@dataclass(frozen=True)
class Parameters:
    """What turns theta into weights: base weights (padded), their sum, the regularisation."""

    base: jnp.ndarray
    base_total: float
    regularization: Regularization

    @property
    def penalty_scale(self) -> float:
        """Return strength / sum_i b_i, the factor of sum_i b_i phi(r_i) in the objective."""
        return self.regularization.strength / self.base_total


@dataclass(frozen=True)
class Step:
    """One epoch's objective at theta: fit loss, penalty, S, the gradient, targets within."""

    fit_loss: jnp.ndarray
    penalty: jnp.ndarray
    estimates: jnp.ndarray
    gradient: jnp.ndarray
    within: jnp.ndarray

    @property
    def loss(self) -> jnp.ndarray:
        """Return the objective: fit loss plus penalty."""
        return self.fit_loss + self.penalty


def weights_of(
    *, theta: jnp.ndarray, base: np.ndarray, regularization: Regularization
) -> np.ndarray:
    """Return the weights b_i * r(theta_i) of the N records in float64 on the host."""
    ratios = regularization.host_ratios(np.asarray(theta, dtype=np.float64)[: base.size])
    return np.asarray(base, dtype=np.float64) * ratios


def estimates(
    *,
    theta: jnp.ndarray,
    parameters: Parameters,
    source: EstimateSource,
    batching: Batching,
    key: jax.Array,
    rate: float,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return S = sum_i v_i A_i and sum_i b_i phi(r_i), accumulated over batches (pass 1)."""
    total = np.zeros(source.n_targets, dtype=theta.dtype)
    divergence = np.zeros((), dtype=theta.dtype)
    for start, stop in batching.bounds:
        block = source.batch(start=start, stop=stop, rows=batching.rows)
        total, divergence = _pass_estimates(
            total, divergence, theta, parameters.base, block, start, key, batching.n_records,
            rows=batching.rows, rate=rate, regularization=parameters.regularization,
        )  # fmt: skip
        _bound_memory(result=total, batching=batching)
    return total, divergence


def gradient(
    *,
    theta: jnp.ndarray,
    parameters: Parameters,
    source: EstimateSource,
    batching: Batching,
    objective: Objective,
    key: jax.Array,
    rate: float,
) -> Step:
    """Return the objective at theta and its exact gradient from two passes."""
    total, divergence = estimates(
        theta=theta, parameters=parameters, source=source, batching=batching, key=key, rate=rate
    )
    fit_loss, c, within = objective.assess(total)
    scale = jnp.asarray(parameters.penalty_scale, dtype=theta.dtype)
    parts = []
    for start, stop in batching.bounds:
        block = source.batch(start=start, stop=stop, rows=batching.rows)
        part = _pass_gradient(
            theta, parameters.base, block, start, key, batching.n_records, c, scale,
            rows=batching.rows, rate=rate, regularization=parameters.regularization,
        )  # fmt: skip
        parts.append(part)
        _bound_memory(result=parts[-1], batching=batching)
    grad = parts[0] if len(parts) == 1 else jnp.concatenate(parts)
    return Step(
        fit_loss=fit_loss, penalty=scale * divergence, estimates=total, gradient=grad,
        within=within,
    )  # fmt: skip


def scan(
    *, weights: np.ndarray, source: EstimateSource, batching: Batching
) -> tuple[np.ndarray, np.ndarray]:
    """Return (w @ A, column sums of |A|) in one pass, chunk sums added in float64.

    A column with NaN or inf entries has a non-finite sum of |A| (so has one whose sum
    overflows the float range).
    """
    padded = jnp.asarray(batching.pad(weights))
    total = np.zeros(source.n_targets)
    absolute = np.zeros(source.n_targets)
    for start, stop in batching.bounds:
        block = source.batch(start=start, stop=stop, rows=batching.rows)
        parts = jax.device_get(_pass_scan(padded, block, start, rows=batching.rows))  # waits
        total += np.asarray(parts[0], dtype=np.float64).sum(axis=0)
        absolute += np.asarray(parts[1], dtype=np.float64).sum(axis=0)
    return total, absolute


def _bound_memory(*, result: jnp.ndarray, batching: Batching) -> None:
    """Wait for a batch's result when there are several, so one batch of A is alive at a time.

    Without waiting, JAX's asynchronous dispatch lets the loop fetch the next batches while
    earlier ones still compute, holding many (B, K) blocks at once.
    """
    if len(batching.bounds) > 1:
        result.block_until_ready()


@jit
def _epoch_key(seed: int, epoch: int) -> jax.Array:
    return jax.random.fold_in(jax.random.key(seed), epoch)


@partial(jit, static_argnames=("rate",))
def _keep(key: jax.Array, indices: jnp.ndarray, *, rate: float) -> jnp.ndarray:
    def one(index: jnp.ndarray) -> jnp.ndarray:
        return jax.random.bernoulli(jax.random.fold_in(key, index), 1.0 - rate)

    return jax.vmap(one)(indices)


def _batch_weights(
    part: jnp.ndarray,
    base: jnp.ndarray,
    start: jnp.ndarray,
    key: jax.Array,
    n_records: jnp.ndarray,
    *,
    rows: int,
    rate: float,
    regularization: Regularization,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return the effective weights v and the terms b_i phi(r_i) of one batch's theta."""
    indices = start + jnp.arange(rows)
    ratios = regularization.ratios(part)
    weights = jnp.where(indices < n_records, base * ratios, 0.0)
    divergence = base * regularization.divergence(ratios)
    if rate > 0:
        weights = jnp.where(_keep(key, indices, rate=rate), weights / (1.0 - rate), 0.0)
    return weights, divergence


@partial(jit, static_argnames=("rows", "rate", "regularization"))
def _pass_estimates(
    total: jnp.ndarray,
    divergence: jnp.ndarray,
    theta: jnp.ndarray,
    base: jnp.ndarray,
    block: jnp.ndarray,
    start: int,
    key: jax.Array,
    n_records: int,
    *,
    rows: int,
    rate: float,
    regularization: Regularization,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    part = jax.lax.dynamic_slice(theta, (start,), (rows,))
    bases = jax.lax.dynamic_slice(base, (start,), (rows,))
    weights, terms = _batch_weights(
        part, bases, start, key, n_records, rows=rows, rate=rate, regularization=regularization
    )
    return total + jnp.sum(_chunk_sums(weights, block), axis=0), divergence + jnp.sum(terms)


@partial(jit, static_argnames=("rows", "rate", "regularization"))
def _pass_gradient(
    theta: jnp.ndarray,
    base: jnp.ndarray,
    block: jnp.ndarray,
    start: int,
    key: jax.Array,
    n_records: int,
    c: jnp.ndarray,
    scale: jnp.ndarray,
    *,
    rows: int,
    rate: float,
    regularization: Regularization,
) -> jnp.ndarray:
    contributions = jnp.matmul(block, c, precision=HIGHEST)  # dL/dv_i = A_i . c
    bases = jax.lax.dynamic_slice(base, (start,), (rows,))

    def surrogate(part: jnp.ndarray) -> jnp.ndarray:
        weights, terms = _batch_weights(
            part, bases, start, key, n_records, rows=rows, rate=rate, regularization=regularization
        )
        return jnp.sum(weights * contributions) + scale * jnp.sum(terms)

    return jax.grad(surrogate)(jax.lax.dynamic_slice(theta, (start,), (rows,)))


@partial(jit, static_argnames=("rows",))
def _pass_scan(
    weights: jnp.ndarray, block: jnp.ndarray, start: int, *, rows: int
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Return the chunk sums of w @ A and of |A|, shape (n_chunks, K) each."""
    part = jax.lax.dynamic_slice(weights, (start,), (rows,))
    return _chunk_sums(part, block), _chunk_sums(None, block)


def _chunk_sums(weights: jnp.ndarray | None, block: jnp.ndarray) -> jnp.ndarray:
    """Return sum_i w_i A_ij (weights None: sum_i |A_ij|) per chunk of rows, (n_chunks, K).

    XLA's CPU dot adds rows one after another in the working precision (an error of ~1e-5
    relative over 10^4 float32 rows); a tree sum within chunks of ``CHUNK_ROWS`` rows keeps
    the error near float eps, bounds temporaries to (CHUNK_ROWS, K), and makes the estimates
    nearly independent of the batch size.
    """
    rows = block.shape[0]
    chunk = min(rows, CHUNK_ROWS)
    full = rows // chunk

    def terms(start: int | jnp.ndarray, size: int) -> jnp.ndarray:
        part = jax.lax.dynamic_slice_in_dim(block, start, size, axis=0)
        if weights is None:
            return jnp.sum(jnp.abs(part), axis=0)
        scale = jax.lax.dynamic_slice_in_dim(weights, start, size)
        return jnp.sum(scale[:, None] * part, axis=0)

    sums = jax.lax.map(lambda index: terms(index * chunk, chunk), jnp.arange(full))
    if rows > full * chunk:
        sums = jnp.concatenate([sums, terms(full * chunk, rows - full * chunk)[None]])
    return sums
