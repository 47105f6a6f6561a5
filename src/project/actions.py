"""A continuous action stated without points: its value is computed, not searched.

``Model(actions={"consumption": ContinuousAction()})`` says that consumption is continuous and
that the endogenous grid method (EGM, or DC-EGM with discrete actions) computes it from the Euler
equation, so it needs no grid. Such a model is solved by EGM/DC-EGM (``method=None`` picks it);
grid search needs points for every action, so ``method="grid"`` raises and says how to give them.
"""

from __future__ import annotations

from typing import Any

from project.errors import GridInitializationError, ModelSpecificationError
from project.grids import Grid

__all__ = ["ContinuousAction", "computed_actions", "grid_search_needs_points"]

KIND = "continuous_action"


class ContinuousAction(Grid):
    """A continuous action whose optimal value EGM/DC-EGM computes (no points to search)."""

    has_points = False

    def __init__(self, *, name: str = "ContinuousAction") -> None:
        if not isinstance(name, str) or not name:
            msg = f"ContinuousAction: name must be a non-empty str, got {name!r}."
            raise GridInitializationError(msg)
        self.name = name
        self.batch_size = 0
        self.distributed = False

    @property
    def n_points(self) -> int:
        """Raise: the action has no points (only grid search would need them)."""
        raise ModelSpecificationError(_no_points(self.name))

    def to_jax(self) -> Any:
        """Raise: the action has no points (only grid search would need them)."""
        raise ModelSpecificationError(_no_points(self.name))

    def describe(self) -> dict[str, Any]:
        """Return its kind and name (``grids.grid_from_description`` rebuilds it)."""
        return {"kind": KIND, "name": self.name}

    def __repr__(self) -> str:
        return f"ContinuousAction(name={self.name!r})"


def computed_actions(model: Any) -> tuple[str, ...]:
    """Return the model's actions stated as ``ContinuousAction`` (no points)."""
    return tuple(a for a, g in model.actions.items() if isinstance(g, ContinuousAction))


def grid_search_needs_points(*, model_name: str, actions: tuple[str, ...], why: str = "") -> str:
    """Return the message for grid search on a model whose ``actions`` have no points."""
    action = actions[0]
    return (
        f"Model {model_name!r}{why}: method='grid' (grid search) needs points for every action, "
        f"but {list(actions)} {'is' if len(actions) == 1 else 'are'} stated as "
        f"ContinuousAction(), whose value only EGM/DC-EGM computes. Solve with method=None "
        f"(EGM/DC-EGM), or give the action a grid to search, e.g. actions={{{action!r}: "
        f"LinSpacedGrid(start=0.01, stop=<max wealth>, n_points=200)}}."
    )


def _no_points(name: str) -> str:
    return (
        f"{name}: a ContinuousAction has no points; its value is computed by EGM/DC-EGM. Grid "
        "search (method='grid') and anything else that reads an action's points need a grid "
        "instead, e.g. LinSpacedGrid(start=0.01, stop=<max wealth>, n_points=200)."
    )
