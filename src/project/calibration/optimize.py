"""Fit record weights to aggregate targets with Adam on log-weights (optax).

Contract: ``calibrate_weights(weights=w0, estimates=A, problem=targets, settings=...)`` takes
initial weights w0 (N, finite, >= 0), the estimate matrix A as an (N, K) array or a callable
``(start, stop) -> (stop - start, K)`` (see ``source``) and a ``TargetProblem``. It scans A once
(no dropout: the estimates before, the column scales that fix the denominators, and checks),
then runs ``settings.epochs`` Adam steps on theta = log w, each with one dropout mask and the
exact two-pass batched gradient (see ``passes``), and returns exp(theta) after the final step
together with the per-epoch log (loss and share of fitted targets within 10 % of their
denominator, both at the epoch's starting weights under its mask) and the estimates after.
Everything is deterministic given ``settings.seed``. A record with weight 0 keeps weight 0.
A fitted target whose column of A is zero for every record raises ``CalibrationError`` (no
weights can move it); an excluded one only logs a warning.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pandas as pd

from project.calibration import passes
from project.calibration.errors import CalibrationError
from project.calibration.objective import Objective, TargetProblem
from project.calibration.source import EstimateSource
from project.points import float_dtype

logger = logging.getLogger("project.calibration")

SHOWN = 5
LOG_LINES = 10


@dataclass(frozen=True)
class CalibrationSettings:
    """How to fit: epochs, Adam's learning rate, seed, dropout rate, batch size, floors."""

    epochs: int = 500
    learning_rate: float = 0.01
    seed: int = 0
    dropout: float = 0.0
    batch_size: int | None = None
    relative_floor: float = 1.0

    def __post_init__(self) -> None:
        checks = {
            "epochs": isinstance(self.epochs, int) and self.epochs >= 0,
            "learning_rate": _is_number(self.learning_rate) and self.learning_rate > 0,
            "seed": isinstance(self.seed, int) and 0 <= self.seed < 2**31,
            "dropout": _is_number(self.dropout) and 0 <= self.dropout < 1,
            "batch_size": self.batch_size is None
            or (isinstance(self.batch_size, int) and self.batch_size >= 1),
            "relative_floor": _is_number(self.relative_floor) and self.relative_floor >= 0,
        }
        wanted = {
            "epochs": "an integer >= 0",
            "learning_rate": "a number > 0",
            "seed": "an integer in [0, 2**31)",
            "dropout": "a rate in [0, 1)",
            "batch_size": "None (full batch) or an integer >= 1",
            "relative_floor": "a number >= 0",
        }
        for name, ok in checks.items():
            if not ok:
                msg = f"Calibration setting {name}={getattr(self, name)!r} must be {wanted[name]}."
                raise CalibrationError(msg)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> CalibrationSettings:
        """Return settings from a dict, rejecting unknown keys."""
        settings = dict(settings or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(settings) - known)
        if unknown:
            msg = f"Unknown calibration settings {unknown}; known are {sorted(known)}."
            raise CalibrationError(msg)
        return cls(**settings)


@dataclass(frozen=True)
class CalibrationFit:
    """Fitted weights, the per-epoch log and the estimates before and after."""

    weights: np.ndarray
    history: pd.DataFrame
    estimates_before: np.ndarray
    estimates_after: np.ndarray
    denominators: np.ndarray
    loss_before: float
    loss_after: float
    epoch_seconds: tuple[float, ...]


def calibrate_weights(
    *,
    weights: Any,
    estimates: Any,
    problem: TargetProblem,
    settings: CalibrationSettings | None = None,
) -> CalibrationFit:
    """Return weights fitted to the targets by Adam on log-weights (see the module docstring)."""
    settings = settings or CalibrationSettings()
    initial = validate_weights(weights)
    source = EstimateSource.of(estimates=estimates, n_records=initial.size, names=problem.names)
    batching = passes.Batching.of(n_records=initial.size, batch_size=settings.batch_size)
    dtype = float_dtype()
    before, absolute = passes.scan(weights=initial.astype(dtype), source=source, batching=batching)
    check_columns(problem=problem, absolute=absolute)
    objective = Objective.for_problem(
        problem=problem,
        column_scale=absolute / initial.size,
        relative_floor=settings.relative_floor,
    )
    with np.errstate(divide="ignore"):  # a zero weight is theta = -inf and stays zero
        theta = jnp.asarray(batching.pad(np.log(initial)).astype(dtype))
    init, step = _adam(float(settings.learning_rate))
    state = init(theta)
    logger.info(
        "Calibrating %d records to %d targets (%d fitted): %d epochs, batch %d, dropout %g.",
        initial.size, problem.n_targets, int(problem.fitted.sum()), settings.epochs,
        batching.rows, settings.dropout,
    )  # fmt: skip

    rows, seconds = [], []
    every = max(1, math.ceil(settings.epochs / LOG_LINES))
    for epoch in range(settings.epochs):
        started = time.perf_counter()
        key = passes.epoch_key(seed=settings.seed, epoch=epoch)
        loss, _, grad, within = passes.gradient(
            theta=theta, source=source, batching=batching, objective=objective, key=key,
            rate=settings.dropout,
        )  # fmt: skip
        theta, state = step(theta, state, grad)
        share = int(within) / objective.n_fitted
        theta.block_until_ready()
        seconds.append(time.perf_counter() - started)
        rows.append((epoch, float(loss), share))
        if (epoch + 1) % every == 0 or epoch + 1 == settings.epochs:
            logger.info(
                "epoch %d/%d: loss %.4g, %.0f%% of fitted targets within 10%%",
                epoch + 1, settings.epochs, float(loss), 100 * float(share),
            )  # fmt: skip

    fitted = np.exp(np.asarray(theta, dtype=np.float64)[: initial.size])
    after = passes.scan(weights=fitted.astype(dtype), source=source, batching=batching)[0]
    return CalibrationFit(
        weights=fitted,
        history=pd.DataFrame(rows, columns=["epoch", "loss", "share_within_10pct"]),
        estimates_before=before.astype(np.float64),
        estimates_after=after.astype(np.float64),
        denominators=np.asarray(objective.denominators, dtype=np.float64),
        loss_before=float(objective.loss(before.astype(dtype))),
        loss_after=float(objective.loss(after.astype(dtype))),
        epoch_seconds=tuple(seconds),
    )


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
    """Raise for non-finite and fitted all-zero columns of A; warn for excluded all-zero ones.

    ``absolute``: the column sums of |A|.
    """
    for j, name in enumerate(problem.names):
        if not np.isfinite(absolute[j]):
            msg = (
                f"Target {name!r}: its estimate column holds NaN or inf entries (or its "
                "absolute sum overflows); fix the column the target sums or counts."
            )
            raise CalibrationError(msg)
        if absolute[j] == 0 and problem.excluded[j]:
            logger.warning(
                "Excluded target %r: its estimate column is zero for every record.", name
            )
        elif absolute[j] == 0:
            msg = (
                f"Target {name!r}: its estimate column is zero for every record, so no weights "
                f"can move its estimate (0) toward the target {problem.values[j]:g}. Fix the "
                "target's definition (column, label, age bin) or mark it excluded."
            )
            raise CalibrationError(msg)


@functools.lru_cache(maxsize=16)
def _adam(learning_rate: float) -> tuple[Any, Any]:
    """Return Adam's jitted init and step for one learning rate (compiled once per shape)."""
    optimizer = optax.adam(learning_rate)

    @jax.jit
    def step(
        theta: jnp.ndarray, state: optax.OptState, grad: jnp.ndarray
    ) -> tuple[jnp.ndarray, optax.OptState]:
        updates, state = optimizer.update(grad, state, theta)
        return optax.apply_updates(theta, updates), state

    return jax.jit(optimizer.init), step


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
