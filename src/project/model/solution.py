"""The interface every method's solution satisfies: grid search, (DC-)EGM, regimes.

Simulation, persistence, figures and the estimation read a solution through these members
only; none of them asks which class it holds (``tests/test_imports.py`` checks). A model
without regimes has no ``regimes`` (an empty mapping) and takes no ``regime=``; a model with
regimes names one in every read.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

from project.errors import ModelSpecificationError

NO_REGIMES: Mapping[str, Any] = MappingProxyType({})
"""The ``regimes`` of a solution of a model without regimes."""


@runtime_checkable
class SolutionInterface(Protocol):
    """What ``project.solve`` returns, whatever the method."""

    model: Any
    params: Mapping[str, Any]

    @property
    def method(self) -> str:
        """Return the method it was solved with: "grid", "egm" or "dcegm"."""

    @property
    def kernels(self) -> Any:
        """Return the kernel (or method) of every period (per regime with regimes)."""

    @property
    def regimes(self) -> Mapping[str, Any]:
        """Return the solution of each solved regime (empty without regimes)."""

    def value(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return V of ``period`` at ``states``."""

    def policy(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> dict[str, np.ndarray]:
        """Return the optimal actions of ``period`` at ``states``."""

    def choice_probabilities(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return the probability of each discrete choice at ``states``."""


def refuse_regime(*, model_name: str, regime: str | None) -> None:
    """Raise where a read of a model without regimes names a regime."""
    if regime is not None:
        msg = (
            f"Model {model_name!r} has no regimes, so a read of its solution takes no "
            f"regime= (got {regime!r}). Leave regime out."
        )
        raise ModelSpecificationError(msg)


def require_regime(*, model_name: str, regime: str | None, regimes: Any) -> str:
    """Return ``regime``; raise where a read of a model with regimes names none."""
    if regime is None:
        msg = (
            f"Model {model_name!r} has regimes {list(regimes)}: a read of its solution names "
            f"one (regime=...)."
        )
        raise ModelSpecificationError(msg)
    return regime
