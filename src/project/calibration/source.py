"""Where the estimate matrix A (records x targets) comes from: an array or a batch function.

Contract: ``EstimateSource.of(estimates=..., n_records=N, names=...)`` accepts either an array A
of shape (N, K) (NumPy or JAX) or a callable ``estimate_batches(start, stop)`` returning the rows
``start:stop`` of A as an array of shape (stop - start, K). ``batch(start=..., stop=...,
rows=B)`` returns those rows as a device array of the default float dtype, padded with zero rows
to B rows, so every batch has one shape (one compilation). A callable is called once per batch
and pass and must return the same numbers every time (an iterator cannot be replayed across
epochs, so it is not accepted). A NumPy array is moved to the device one batch at a time (on
CPU a copy per batch and pass, unless the rows are 64-byte aligned, when XLA uses them in place);
when one batch covers all N records, that batch is kept on the device after its first use (in a
full batch A is materialised anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project.calibration.errors import CalibrationError
from project.points import float_dtype

EstimateBatches = Callable[[int, int], Any]


@dataclass
class EstimateSource:
    """Serve row batches of the estimate matrix A, shape-checked, on the device."""

    n_records: int
    names: tuple[str, ...]
    array: Any = None
    function: EstimateBatches | None = None
    _kept: dict[tuple[int, int, int], jnp.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, *, estimates: Any, n_records: int, names: Sequence[str]) -> EstimateSource:
        """Wrap an array A (N x K) or a callable ``(start, stop) -> (stop - start, K)``."""
        names = tuple(names)
        if callable(estimates) and not hasattr(estimates, "shape"):
            return cls(n_records=n_records, names=names, function=estimates)
        if not hasattr(estimates, "shape"):
            estimates = np.asarray(estimates)
        expected = (n_records, len(names))
        if tuple(estimates.shape) != expected:
            msg = (
                f"The estimate matrix has shape {tuple(estimates.shape)}; expected {expected}: "
                f"one row per record (weight) and one column per target {list(names)}."
            )
            raise CalibrationError(msg)
        return cls(n_records=n_records, names=names, array=estimates)

    @property
    def n_targets(self) -> int:
        """Return K, the number of targets (columns of A)."""
        return len(self.names)

    def batch(self, *, start: int, stop: int, rows: int) -> jnp.ndarray:
        """Return rows ``start:stop`` of A as a device array padded with zeros to ``rows``."""
        key = (start, stop, rows)
        if key in self._kept:
            return self._kept[key]
        values = self._rows(start=start, stop=stop)
        dtype = float_dtype()
        missing = rows - (stop - start)
        if isinstance(values, jax.Array):
            block = values.astype(dtype)
            if missing:
                block = jnp.pad(block, ((0, missing), (0, 0)))
        else:  # convert and pad on the host, then one transfer (nothing to compile)
            block = np.asarray(values, dtype=dtype)
            if missing:
                block = np.pad(block, ((0, missing), (0, 0)))
            block = jax.device_put(block)
        if start == 0 and stop == self.n_records:
            self._kept[key] = block
        return block

    def _rows(self, *, start: int, stop: int) -> Any:
        if self.array is not None:
            return self.array[start:stop]
        values = self.function(start, stop)
        shape = tuple(getattr(values, "shape", np.shape(values)))
        expected = (stop - start, self.n_targets)
        if shape != expected:
            msg = (
                f"estimate_batches({start}, {stop}) returned shape {shape}; expected {expected}: "
                f"one row per record in the batch and one column per target {list(self.names)}."
            )
            raise CalibrationError(msg)
        if isinstance(values, jax.Array):
            return values
        return np.asarray(values)
