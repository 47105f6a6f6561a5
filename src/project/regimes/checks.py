"""Checks of a model with regimes: one horizon, one grid per shared name, reachable targets.

``RegimeModel.__init__`` runs them once its regimes are built; each raises
``ModelSpecificationError`` saying which regime is wrong and how to restate it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from project.errors import ModelSpecificationError
from project.regimes.names import REGIME_TRANSITION

if TYPE_CHECKING:
    from project.regimes.spec import RegimeModel


def check_horizons(model: RegimeModel) -> None:
    """Require one horizon for every regime and no sharded state."""
    for regime, view in model.regimes.items():
        if view.ages != model.ages:
            first = next(iter(model.regimes))
            msg = (
                f"Model {model.name!r}: regime {regime!r} has ages {list(view.ages)}, regime "
                f"{first!r} has {list(model.ages)}. Give every regime the same horizon."
            )
            raise ModelSpecificationError(msg)
        if view.permanent_states:
            msg = (
                f"Model {model.name!r}: regime {regime!r} marks {list(view.permanent_states)} "
                "distributed; sharding is not supported for models with regimes yet. Set "
                "distributed=False."
            )
            raise ModelSpecificationError(msg)


def check_shared_states(model: RegimeModel) -> None:
    """Require one grid per state name and per action name across regimes."""
    for kind in ("states", "actions"):
        seen: dict[str, tuple[str, dict[str, Any]]] = {}
        for regime, view in model.regimes.items():
            for item, grid in getattr(view, kind).items():
                described = {k: v for k, v in grid.describe().items() if k != "batch_size"}
                if item in seen and seen[item][1] != described:
                    msg = (
                        f"Model {model.name!r}: {kind[:-1]} {item!r} has the grid "
                        f"{described} in regime {regime!r} but {seen[item][1]} in regime "
                        f"{seen[item][0]!r}. A {kind[:-1]} shared by regimes needs one grid."
                    )
                    raise ModelSpecificationError(msg)
                seen.setdefault(item, (regime, described))


def check_transitions(model: RegimeModel) -> None:
    """Check what each transition reads and returns, and that its targets can be reached."""
    for regime, view in model.regimes.items():
        read = view.ancestors(REGIME_TRANSITION)
        continuous = sorted(
            n for n, g in (view.states | view.actions).items() if n in read and not g.is_discrete
        )
        if continuous:
            msg = (
                f"Model {model.name!r}: the regime transition of {regime!r} depends on the "
                f"continuous {continuous}. Regime transitions may depend on discrete states and "
                "actions, age, period and params only."
            )
            raise ModelSpecificationError(msg)
        outcomes = sorted(a for a in read if a.startswith("next_"))
        if outcomes:
            msg = (
                f"Model {model.name!r}: the regime transition of {regime!r} reads next-period "
                f"outcomes {outcomes}; it sees the current period only."
            )
            raise ModelSpecificationError(msg)
        view.transition_kind  # noqa: B018  (raises on an invalid output)
        for target in view.named_targets:
            missing = missing_states(model, source=regime, target=target)
            if missing:
                msg = (
                    f"Model {model.name!r}: regime {regime!r} can move to {target!r}, which needs "
                    f"the states {missing} that {regime!r} lacks (a source's laws of motion give "
                    f"the target's states). Add them to {regime!r} or drop {target!r} from its "
                    "transition."
                )
                raise ModelSpecificationError(msg)


def missing_states(model: RegimeModel, *, source: str, target: str) -> list[str]:
    """Return the states ``target`` needs that regime ``source`` does not have."""
    have = set(model.regimes[source].states)
    if target in model.regimes:
        needed = model.regimes[target].state_names
    else:
        needed = tuple(a for a in model.terminal[target].arguments if a in model.states)
    return [s for s in needed if s not in have]
