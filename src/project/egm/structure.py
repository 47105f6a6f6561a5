"""Which models the endogenous grid method admits, and the facts it needs about them.

EGM needs: one continuous state ``w`` and one continuous action ``c`` (a grid, or a
``ContinuousAction()`` without points); a ``post_decision_grid`` of savings ``s = w - c`` (by
default ``default_savings_grid(stop=<last point of w's grid>)``, ``Model.post_decision_grid``);
a law of motion ``next_w = a·(w - c) + b`` (proved from its jaxpr, ``solver/structure.py``);
utility free of ``w`` (so the envelope condition V'(w) = u'(c) holds);
and discrete states whose next value and probabilities do not depend on ``w`` or ``c``. Utility
must be increasing and concave in ``c``. Discrete actions make it DC-EGM (method ``"dcegm"``):
EGM per discrete choice, whose laws of motion, utility and constraints may all depend on the
choice. Constraints that involve ``w`` or ``c`` state the borrowing limit; the others say which
discrete choices are feasible, and must not involve ``w`` or ``c``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from project.errors import ModelSpecificationError
from project.grids import code_combinations
from project.model.internal import Fact
from project.model.names import CLOSED_FORM_INVERSES
from project.model.spec import Model
from project.solver.plan import prove_law_of_motion


@dataclass(frozen=True)
class EGMStructure:
    """The roles of a model's names under EGM.

    ``discrete`` are the discrete states in V's order; ``contexts`` their code combinations
    (rows, C order); ``deterministic_discrete`` those with a law of motion. ``discrete_actions``
    are the discrete actions and ``choices`` their code combinations (rows, C order; one empty
    row without discrete actions). ``borrowing_constraints`` involve ``state`` or ``action``;
    ``choice_constraints`` do not (they select the feasible discrete choices). ``folded`` are
    discrete states that only the choice constraints read (lagged retirement): the EGM step of
    a context does not depend on them, so it runs once per ``reduced_contexts`` row and
    ``reduced_row`` maps each context to its row.
    """

    state: str
    action: str
    discrete: tuple[str, ...]
    stochastic: tuple[str, ...]
    deterministic_discrete: tuple[str, ...]
    contexts: np.ndarray
    discrete_shape: tuple[int, ...]
    discrete_actions: tuple[str, ...]
    choices: np.ndarray
    borrowing_constraints: tuple[str, ...]
    choice_constraints: tuple[str, ...]
    folded: tuple[str, ...]
    reduced_contexts: np.ndarray
    reduced_row: np.ndarray

    @property
    def reduced_members(self) -> np.ndarray:
        """Return, per ``reduced_contexts`` row, the contexts that map to it (equal counts)."""
        rows = range(self.reduced_contexts.shape[0])
        return np.stack([np.flatnonzero(self.reduced_row == r) for r in rows])

    @property
    def kept(self) -> tuple[str, ...]:
        """Return the discrete states the EGM step depends on (not folded)."""
        return tuple(s for s in self.discrete if s not in self.folded)

    @property
    def n_choices(self) -> int:
        """Return the number of discrete choices (1 without discrete actions)."""
        return int(self.choices.shape[0])

    @property
    def method(self) -> str:
        """Return "dcegm" with discrete actions, else "egm"."""
        return "dcegm" if self.discrete_actions else "egm"

    @property
    def n_contexts(self) -> int:
        """Return the number of discrete contexts."""
        return int(self.contexts.shape[0])

    def context_index(self, codes: Sequence[jnp.ndarray] | jnp.ndarray) -> jnp.ndarray:
        """Return the row of ``contexts`` holding ``codes`` (one per discrete state; traceable)."""
        index = jnp.zeros((), dtype=jnp.int32)
        for code, size in zip(codes, self.discrete_shape, strict=True):
            index = index * size + code
        return index


def egm_obstacle(model: Model) -> str:
    """Return why EGM cannot solve ``model`` ("" when it can)."""
    return OBSTACLE.of(model)


def egm_structure(model: Model) -> EGMStructure:
    """Return the model's EGM structure; raise ``ModelSpecificationError`` if EGM does not apply."""
    return STRUCTURE.of(model)


def _structure(model: Model) -> EGMStructure:
    obstacle = egm_obstacle(model)
    if obstacle:
        method = "dcegm" if model.discrete_actions else "egm"
        instead = (
            f"Grid search cannot solve it either: its actions {list(model.computed_actions)} "
            "are ContinuousAction() without points. Restate the model for EGM, or give those "
            "actions grids and solve with method='grid'."
            if model.computed_actions
            else "Solve it with method='grid'."
        )
        msg = f"Model {model.name!r} cannot be solved with method={method!r}: {obstacle}. {instead}"
        raise ModelSpecificationError(msg)
    (state,) = [s for s, g in model.states.items() if not g.is_discrete]
    (action,) = [a for a, g in model.actions.items() if not g.is_discrete]
    discrete = tuple(s for s in model.state_names if s != state)
    shape = tuple(model.states[s].n_points for s in discrete)
    contexts = code_combinations(shape)
    discrete_actions = model.discrete_actions
    borrowing = tuple(c for c in model.constraints if model.ancestors(c) & {state, action})
    choice_constraints = tuple(c for c in model.constraints if c not in borrowing)
    used: set[str] = set()
    for target in (
        "utility",
        *borrowing,
        *model.transition_targets(),
        *(name for name in CLOSED_FORM_INVERSES if name in model.functions),
    ):
        used |= model.ancestors(target)
    folded = tuple(s for s in discrete if s not in used)
    kept = [i for i, s in enumerate(discrete) if s not in folded]
    reduced = code_combinations([shape[i] for i in kept])
    reduced_row = np.zeros(contexts.shape[0], dtype=np.int32)
    for i in kept:
        reduced_row = reduced_row * shape[i] + contexts[:, i]
    return EGMStructure(
        state=state,
        action=action,
        discrete=discrete,
        stochastic=tuple(s for s in discrete if s in model.stochastic_transitions),
        deterministic_discrete=tuple(s for s in discrete if s not in model.stochastic_transitions),
        contexts=contexts,
        discrete_shape=shape,
        discrete_actions=discrete_actions,
        choices=code_combinations([model.actions[a].n_points for a in discrete_actions]),
        borrowing_constraints=borrowing,
        choice_constraints=choice_constraints,
        folded=folded,
        reduced_contexts=reduced,
        reduced_row=reduced_row,
    )


def _obstacle(model: Model) -> str:  # noqa: PLR0911 (one reason per check)
    continuous = [s for s, g in model.states.items() if not g.is_discrete]
    if len(continuous) != 1:
        return f"it has {len(continuous)} continuous states (EGM needs exactly one)"
    if model.post_decision_grid is None:
        return "it states no post_decision_grid (the grid of savings w - c)"
    continuous_actions = [a for a, g in model.actions.items() if not g.is_discrete]
    if len(continuous_actions) != 1:
        return (
            f"its continuous actions are {continuous_actions} (EGM needs exactly one, "
            "consumption; discrete actions are allowed)"
        )
    (state,), (action,) = continuous, continuous_actions
    if state in model.permanent_states:
        return f"its continuous state {state!r} is marked distributed"
    if state in model.ancestors("utility"):
        return f"utility depends on {state!r} (the envelope condition V'(w) = u'(c) needs u(c))"
    for inverse in (name for name in CLOSED_FORM_INVERSES if name in model.functions):
        if model.ancestors(inverse) & {state, action}:
            return f"{inverse!r} depends on {state!r} or {action!r}"
    law = f"next_{state}"
    for target in (t for t in model.transition_targets() if t != law):
        if model.ancestors(target) & {state, action}:
            return f"{target!r} depends on {state!r} or {action!r}"
    proof = prove_law_of_motion(model, state=state, action=action)
    if not proof.holds:
        return f"{law} is not a·({state} - {action}) + b: {proof.reason}"
    return ""


OBSTACLE: Fact[str] = Fact("why EGM cannot solve it", build=_obstacle)
STRUCTURE: Fact[EGMStructure] = Fact("EGM structure", build=_structure)
