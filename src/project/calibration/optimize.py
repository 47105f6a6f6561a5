"""Fit record weights to aggregate targets with Adam on bounded weight ratios (optax).

Contract: ``calibrate_weights(weights=b, estimates=A, problem=targets, settings=...)`` takes
the base weights b (N, finite, >= 0), the estimate matrix A as an (N, K) array or a callable
``(start, stop) -> (stop - start, K)`` (see ``source``) and a ``TargetProblem``. It scans A once
(no dropout: the estimates before, the column scales that fix the denominators, and checks),
then runs ``settings.epochs`` Adam steps (learning rate constant, or cosine-decayed to
``final_learning_rate_share`` of its start) on theta, where w_i = b_i * r(theta_i) keeps every
weight within [lower_bound, upper_bound] * b_i (see ``regularize``), each with one dropout mask
and the exact two-pass batched gradient of fit loss plus penalty (see ``passes``). It returns
the weights after the final step with the per-epoch log (objective, fit loss, penalty and share
of fitted targets within tolerance, at the epoch's starting weights under its mask) and the
estimates before and after. Everything is deterministic given ``settings.seed``. A record with
base weight 0 keeps weight 0. A fitted target whose column of A is zero for every record raises
``CalibrationError`` (no weights can move it); a held-out one only logs a warning.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from project._xla import jit
from project.calibration import passes
from project.calibration.errors import CalibrationError
from project.calibration.objective import Objective, TargetProblem
from project.calibration.settings import CalibrationSettings
from project.calibration.source import EstimateSource
from project.points import float_dtype

logger = logging.getLogger("project.calibration")

SHOWN = 5
LOG_LINES = 10
HISTORY_COLUMNS = ["epoch", "objective", "fit_loss", "penalty", "share_within_tolerance"]


@dataclass(frozen=True)
class CalibrationFit:
    """Fitted weights, the per-epoch log and the estimates before and after.

    ``loss_*`` are the fit losses (in tolerances, see ``objective``) without dropout;
    ``penalty_after`` is the penalty at the fitted weights (0 at the base weights).
    """

    weights: np.ndarray
    history: pd.DataFrame
    estimates_before: np.ndarray
    estimates_after: np.ndarray
    denominators: np.ndarray
    loss_before: float
    loss_after: float
    penalty_after: float
    epoch_seconds: tuple[float, ...]


def calibrate_weights(
    *,
    weights: Any,
    estimates: Any,
    problem: TargetProblem,
    settings: CalibrationSettings | None = None,
) -> CalibrationFit:
    """Return weights fitted to the targets (see the module docstring)."""
    settings = settings or CalibrationSettings()
    base = validate_weights(weights)
    source = EstimateSource.of(estimates=estimates, n_records=base.size, names=problem.names)
    batching = passes.Batching.of(n_records=base.size, batch_size=settings.batch_size)
    dtype = float_dtype()
    before, absolute = passes.scan(weights=base.astype(dtype), source=source, batching=batching)
    check_columns(problem=problem, absolute=absolute)
    objective = Objective.for_problem(
        problem=problem,
        column_scale=absolute / base.size,
        relative_floor=settings.relative_floor,
    )
    regularization = settings.regularization
    parameters = passes.Parameters(
        base=jnp.asarray(batching.pad(base).astype(dtype)),
        base_total=float(base.sum()),
        regularization=regularization,
    )
    theta = jnp.full(batching.padded_length, regularization.initial_theta, dtype=dtype)
    logger.info(
        "Calibrating %d records to %d targets (%d fitted): %d epochs, batch %d, dropout %g, "
        "weights within [%g, %g] x base, %s penalty %g.",
        base.size, problem.n_targets, int(problem.fitted.sum()), settings.epochs,
        batching.rows, settings.dropout, regularization.lower, regularization.upper,
        regularization.penalty, regularization.strength,
    )  # fmt: skip
    theta, rows, seconds = _descend(
        theta, settings=settings, parameters=parameters, source=source, batching=batching,
        objective=objective,
    )  # fmt: skip
    fitted = passes.weights_of(theta=theta, base=base, regularization=regularization)
    after = passes.scan(weights=fitted.astype(dtype), source=source, batching=batching)[0]
    return CalibrationFit(
        weights=fitted,
        history=pd.DataFrame(rows, columns=HISTORY_COLUMNS),
        estimates_before=before.astype(np.float64),
        estimates_after=after.astype(np.float64),
        denominators=np.asarray(objective.denominators, dtype=np.float64),
        loss_before=float(objective.loss(before.astype(dtype))),
        loss_after=float(objective.loss(after.astype(dtype))),
        penalty_after=regularization.penalty_of(weights=fitted, base=base),
        epoch_seconds=tuple(seconds),
    )


def _descend(
    theta: jnp.ndarray,
    *,
    settings: CalibrationSettings,
    parameters: passes.Parameters,
    source: EstimateSource,
    batching: passes.Batching,
    objective: Objective,
) -> tuple[jnp.ndarray, list[tuple[Any, ...]], list[float]]:
    """Return theta after ``settings.epochs`` Adam epochs, each epoch's losses and seconds."""
    init, update = _adam(
        float(settings.learning_rate),
        float(settings.final_learning_rate_share),
        int(settings.epochs),
    )
    state = init(theta)
    rows, seconds = [], []
    every = max(1, math.ceil(settings.epochs / LOG_LINES))
    for epoch in range(settings.epochs):
        started = time.perf_counter()
        key = passes.epoch_key(seed=settings.seed, epoch=epoch)
        step = passes.gradient(
            theta=theta, parameters=parameters, source=source, batching=batching,
            objective=objective, key=key, rate=settings.dropout,
        )  # fmt: skip
        theta, state = update(theta, state, step.gradient)
        share = int(step.within) / objective.n_fitted
        theta.block_until_ready()
        seconds.append(time.perf_counter() - started)
        rows.append((epoch, float(step.loss), float(step.fit_loss), float(step.penalty), share))
        if (epoch + 1) % every == 0 or epoch + 1 == settings.epochs:
            logger.info(
                "epoch %d/%d: objective %.4g (fit %.4g, penalty %.4g), %.0f%% of fitted targets "
                "within tolerance",
                epoch + 1, settings.epochs, float(step.loss), float(step.fit_loss),
                float(step.penalty), 100 * share,
            )  # fmt: skip
    return theta, rows, seconds


def validate_weights(weights: Any) -> np.ndarray:
    """Return the initial weights as a float vector; raise unless finite and >= 0."""
    try:
        vector = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as error:
        msg = f"Initial weights must be numbers: {error}."
        raise CalibrationError(msg) from error
    if vector.ndim != 1 or vector.size == 0:
        msg = f"Initial weights must be a non-empty vector, one per record; got {vector.shape}."
        raise CalibrationError(msg)
    for bad, what in ((~np.isfinite(vector), "not finite"), (vector < 0, "negative")):
        if bad.any():
            records = np.flatnonzero(bad)
            msg = (
                f"Initial weights must be finite and >= 0: records {records[:SHOWN].tolist()} "
                f"({records.size} in all) are {what} (first: {vector[records[0]]})."
            )
            raise CalibrationError(msg)
    if not vector.any():
        msg = "Initial weights are all zero; no reweighting can move any estimate."
        raise CalibrationError(msg)
    return vector


def check_columns(*, problem: TargetProblem, absolute: np.ndarray) -> None:
    """Raise for non-finite and fitted all-zero columns of A; warn for held-out all-zero ones.

    ``absolute``: the column sums of |A|.
    """
    for j, name in enumerate(problem.names):
        if not np.isfinite(absolute[j]):
            msg = (
                f"Target {name!r}: its estimate column holds NaN or inf entries (or its "
                "absolute sum overflows); fix the column the target sums or counts."
            )
            raise CalibrationError(msg)
        if absolute[j] == 0 and problem.held_out[j]:
            logger.warning(
                "Held-out target %r: its estimate column is zero for every record.", name
            )
        elif absolute[j] == 0:
            msg = (
                f"Target {name!r}: its estimate column is zero for every record, so no weights "
                f"can move its estimate (0) toward the target {problem.values[j]:g}. Fix the "
                "target's definition (column, label, age bin) or mark it held out."
            )
            raise CalibrationError(msg)


@functools.lru_cache(maxsize=16)
def _adam(learning_rate: float, final_share: float, epochs: int) -> tuple[Any, Any]:
    """Return Adam's jitted init and step (learning rate constant or cosine-decayed)."""
    schedule = (
        learning_rate
        if final_share == 1.0
        else optax.cosine_decay_schedule(
            init_value=learning_rate, decay_steps=max(epochs, 1), alpha=final_share
        )
    )
    optimizer = optax.adam(schedule)

    @jit
    def step(
        theta: jnp.ndarray, state: optax.OptState, grad: jnp.ndarray
    ) -> tuple[jnp.ndarray, optax.OptState]:
        updates, state = optimizer.update(grad, state, theta)
        return optax.apply_updates(theta, updates), state

    return jit(optimizer.init), step
