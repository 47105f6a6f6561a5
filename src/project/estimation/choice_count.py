"""A count of one discrete choice at one age, beside the simulated moments.

``ChoiceCount(regime="working", action="claim", label="claim", age=62)`` asks a moment program
(``project.estimation.program``) for the simulated subjects of the regime at that age and those
of them who choose the label: the share a calibrated param is set to meet
(``project.estimation.calibrated``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from project.estimation.errors import EstimationError
from project.regimes.spec import RegimeModel


@dataclass(frozen=True)
class ChoiceCount:
    """Count, at ``age``, the simulated subjects of ``regime`` and those choosing ``label``.

    ``action`` is a discrete action of the regime and ``label`` one of its categories (for
    ``lifecycle_normalised``: the workers of an age, and those who claim the pension there).
    The program then returns the two counts beside the moments (``MomentProgram.choices``).
    """

    regime: str
    action: str
    label: str
    age: float

    def period(self, model: RegimeModel) -> int:
        """Return the period of ``age``; raise ``EstimationError`` naming what is wrong."""
        where = f"The choice count {self}"
        if self.regime not in model.regimes:
            msg = f"{where} names no regime of {model.name!r} ({sorted(model.regimes)})."
            raise EstimationError(msg)
        grid = model.regimes[self.regime].actions.get(self.action)
        if grid is None or not grid.is_discrete or self.label not in grid.labels:
            msg = (
                f"{where}: {self.action!r} must be a discrete action of regime {self.regime!r} "
                f"with the category {self.label!r}."
            )
            raise EstimationError(msg)
        ages = np.asarray(model.ages, dtype=float)
        if float(self.age) not in ages:
            msg = f"{where}: age {self.age:g} is no age of the model ({ages[0]:g}..{ages[-1]:g})."
            raise EstimationError(msg)
        return int(np.flatnonzero(ages == float(self.age))[0])

    def code(self, model: RegimeModel) -> int:
        """Return the code of ``label`` in the action's grid."""
        grid = model.regimes[self.regime].actions[self.action]
        return int(grid.codes[list(grid.labels).index(self.label)])


def choice_counter(
    model: RegimeModel, choice: ChoiceCount | None, *, every_period: bool = False
) -> Any:
    """Return ``count(codes, actions, dtype)``: the choice count's (deciding, choosing).

    ``every_period``: the two numbers of every period given (a panel: periods x 2; one
    period's record: 2), not only of the count's age.
    """
    if choice is None:
        return lambda codes, actions, dtype: jnp.zeros(2, dtype)
    period, regime = choice.period(model), model.code(choice.regime)
    code = choice.code(model)
    rows = slice(None) if every_period else period

    def count(codes, actions, dtype):  # noqa: ANN001, ANN202
        deciding = codes[rows] == regime
        choosing = deciding & (actions[choice.action][rows] == code)
        return jnp.stack([deciding.sum(-1), choosing.sum(-1)], axis=-1).astype(dtype)

    return count
