"""A solved model with regimes: one solution per regime, evaluated per regime.

Each regime that is a ``Model`` has its own solution (a grid ``Solution`` or an ``EGMSolution``,
whose ``model`` is the regime's ``RegimeView``), with V and the policy over that regime's states
only. A terminal regime has no solution: its value is its value function, evaluated directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from project.egm.solution import EGMSolution
from project.errors import InvalidStatesError, ModelSpecificationError
from project.model.solution import require_regime
from project.regimes.spec import RegimeModel
from project.solver.solution import Solution
from project.solver.states import validate_states


@dataclass(frozen=True)
class RegimeSolution:
    """Per regime: V and the policy of every period (``solutions[regime]``).

    ``value``, ``policy`` and ``choice_probabilities`` take the regime by name and states of
    that regime (arrays broadcast together; labels or codes for discrete states), like a
    single-regime solution's.
    """

    model: RegimeModel
    params: Mapping[str, Any]
    solutions: Mapping[str, Solution | EGMSolution]

    @property
    def method(self) -> str:
        """Return the method every regime was solved with ("grid", "egm" or "dcegm")."""
        methods = {s.method for s in self.solutions.values()}
        return "dcegm" if "dcegm" in methods else methods.pop()

    @property
    def value_function(self) -> dict[str, tuple[Any, ...]]:
        """Return each regime's V of every period on its state grids."""
        return {r: tuple(s.value_function) for r, s in self.solutions.items()}

    @property
    def kernels(self) -> dict[str, tuple[str, ...]]:
        """Return each regime's kernel (or method) per period."""
        return {r: s.kernels for r, s in self.solutions.items()}

    @property
    def regimes(self) -> Mapping[str, Solution | EGMSolution]:
        """Return the solution of each solved regime (``SolutionInterface``)."""
        return self.solutions

    def solution(self, regime: str) -> Solution | EGMSolution:
        """Return the solution of ``regime`` (a regime that is a ``Model``)."""
        self.model.code(regime)
        if regime not in self.solutions:
            msg = (
                f"Model {self.model.name!r}: regime {regime!r} is terminal; it has a value "
                f"function but no solution or choices. Solved regimes: {list(self.solutions)}."
            )
            raise ModelSpecificationError(msg)
        return self.solutions[regime]

    def value(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return V of ``regime`` in ``period`` at ``states`` (a terminal regime's given value)."""
        regime = self._named(regime)
        self.model.code(regime)
        if regime in self.model.terminal:
            return self._terminal_value(regime, states=states)
        return self.solution(regime).value(period=period, states=states)

    def policy(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> dict[str, np.ndarray]:
        """Return the optimal actions of ``regime`` in ``period`` at ``states``."""
        return self.solution(self._named(regime)).policy(period=period, states=states)

    def choice_probabilities(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return the probabilities of ``regime``'s discrete choices at ``states``."""
        return self.solution(self._named(regime)).choice_probabilities(period=period, states=states)

    def _named(self, regime: str | None) -> str:
        return require_regime(model_name=self.model.name, regime=regime, regimes=self.model.regimes)

    def _terminal_value(self, regime: str, *, states: Mapping[str, Any]) -> np.ndarray:
        spec = self.model.terminal[regime]
        read = [a for a in spec.arguments if a in self.model.states]
        unknown = sorted(set(states) - set(read))
        if unknown:
            msg = (
                f"Model {self.model.name!r}: the value of terminal regime {regime!r} reads "
                f"{read}, not {unknown}. Give exactly the states it reads."
            )
            raise InvalidStatesError(msg)
        if spec.value is None:
            shape = np.broadcast_shapes(*(np.shape(v) for v in states.values()))
            return np.zeros(shape)
        source = next(v for v in self.model.regimes.values() if set(read) <= set(v.states))
        flat, shape = validate_states(model=_Reads(source, read), states=states, period=0)
        values = {**{k: np.asarray(v) for k, v in self.params.items()}, **flat}
        return np.asarray(spec.value(**{a: values[a] for a in spec.arguments})).reshape(shape)


class _Reads:
    """The states a terminal value reads, with their grids (for ``validate_states``)."""

    def __init__(self, source: Any, read: list[str]) -> None:
        self.name = source.name
        self.states = {s: source.states[s] for s in read}
        self.state_names = tuple(read)
        self.n_periods = source.n_periods
