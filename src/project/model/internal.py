"""The internal model: every fact derived from a model, each computed once and kept with it.

A solve, a simulation or an estimation derives facts from the model it is given: the EGM
structure, the solve plan, the expectation plan, the composed functions, the compiled programs.
Each such fact is declared once, where it is derived, as a ``Fact`` with the function that
builds it (``STRUCTURE = Fact("EGM structure", build=_structure)``), and read as
``STRUCTURE.of(model)``. The values live here, in the model's ``InternalModel``, and nowhere
else; they go with the model (a model no longer referenced takes its facts along), or all
at once with ``forget_all``.

Most facts never change once built. A few record what the solve learned about the model (a
widened envelope window, the slopes of the last solve); those are replaced with ``put``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class InternalModel:
    """The facts derived from one model so far, by the ``Fact`` that names each."""

    def __init__(self) -> None:
        self._values: dict[Fact[Any], Any] = {}

    @property
    def facts(self) -> Mapping[str, Any]:
        """Return the facts built so far, by name (read-only)."""
        return MappingProxyType({fact.name: value for fact, value in self._values.items()})


_INTERNAL: weakref.WeakKeyDictionary[Any, InternalModel] = weakref.WeakKeyDictionary()


def internal_model(model: Any) -> InternalModel:
    """Return the internal model of ``model`` (a ``Model``, ``RegimeModel`` or regime view)."""
    internal = _INTERNAL.get(model)
    if internal is None:
        internal = _INTERNAL[model] = InternalModel()
    return internal


def forget_all() -> None:
    """Forget the facts of every model, compiled programs included; each is rebuilt when read.

    For a long-lived process that has built many models whose objects live on (a test worker):
    XLA:CPU keeps about 19 memory mappings per compiled program, and Linux allows a process
    65,530 by default (``vm.max_map_count``). Pair it with ``jax.clear_caches()``.
    """
    _INTERNAL.clear()


class Fact(Generic[T]):
    """A fact derived from a model by ``build(model)``, built on its first read and kept."""

    def __init__(self, name: str, *, build: Callable[[Any], T]) -> None:
        self.name = name
        self._build = build

    def __repr__(self) -> str:
        return f"Fact({self.name!r})"

    def of(self, model: Any) -> T:
        """Return the fact for ``model``, building it on the first read."""
        values = internal_model(model)._values
        if self not in values:
            values[self] = self._build(model)
        return values[self]

    def known(self, model: Any) -> bool:
        """Return whether the fact was built (or put) for ``model``."""
        internal = _INTERNAL.get(model)
        return internal is not None and self in internal._values

    def put(self, model: Any, value: T) -> None:
        """Record ``value`` as the fact for ``model`` (what a solve learned about it)."""
        internal_model(model)._values[self] = value


def table(name: str) -> Fact[dict[Any, Any]]:
    """Return a fact that is a table filled as it is read (compiled programs by their key)."""
    return Fact(name, build=lambda _model: {})
