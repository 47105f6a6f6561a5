"""A solved model: V and the optimal policy of every period, stacked along a period axis."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.deprecation import method_with_old_items, warn_deprecated
from project.errors import ModelSpecificationError
from project.grids import code_combinations
from project.model.solution import NO_REGIMES, refuse_regime
from project.model.spec import Model
from project.solver.evaluate import evaluate_choice_probabilities, evaluate_grid_solution
from project.solver.states import validate_states


@dataclass(frozen=True)
class Solution:
    """V (``values[t]``) and the optimal policy (grid index per action) for every period.

    ``values`` has shape (periods, *states); ``policies`` maps each action to int32 indices of
    the same shape. ``kernels`` names the kernel that solved each period. ``value``,
    ``policy`` and ``choice_probabilities`` evaluate the solution at any states (off the grid
    too).

    With taste shocks (``Model(taste_shocks=True)``) V is the expected maximum: the scaled
    log-sum over the discrete choices of each choice's best value, and the policy is the most
    likely discrete choice with the best continuous actions given it. The discrete choices are
    the combinations of the discrete actions, flattened in C order (``choice_codes``).

    ``continuation(period)``, where given, returns the array the period's Q reads as next
    period's V (a regime's mix of every regime's V, ``project.regimes``); by default that is
    ``values[period + 1]`` (zeros after the last period).
    """

    method = "grid"

    model: Model
    params: Mapping[str, Any]
    values: jax.Array
    policies: Mapping[str, jax.Array]
    kernels: tuple[str, ...] = field(default=())
    continuation: Callable[[int], jax.Array] | None = field(default=None, repr=False)

    @property
    def regimes(self) -> Mapping[str, Any]:
        """Return no regimes: a model without regimes (``SolutionInterface``)."""
        return NO_REGIMES

    def next_value(self, period: int) -> jax.Array:
        """Return what Q of ``period`` reads as next period's V (see ``continuation``)."""
        if self.continuation is not None:
            return self.continuation(period)
        if period == self.model.n_periods - 1:
            return jnp.zeros_like(self.values[period])
        return self.values[period + 1]

    @classmethod
    def from_periods(
        cls,
        *,
        model: Model,
        params: Mapping[str, Any],
        value_function: Sequence[jax.Array],
        policy: Sequence[Mapping[str, jax.Array]],
        kernels: tuple[str, ...] = (),
    ) -> Solution:
        """Return a solution from per-period V and policies."""
        return cls(
            model=model,
            params=params,
            values=jnp.stack(list(value_function)),
            policies={a: jnp.stack([p[a] for p in policy]) for a in model.actions},
            kernels=kernels,
        )

    @cached_property
    def value_function(self) -> tuple[jax.Array, ...]:
        """Return V of every period (slices of ``values``, taken in one dispatch)."""
        return split_periods(self.values)

    @cached_property
    def policy_indices(self) -> tuple[dict[str, jax.Array], ...]:
        """Return the policy of every period: the optimal grid index per action and state."""
        return tuple(
            {a: indices[t] for a, indices in self.policies.items()}
            for t in range(self.model.n_periods)
        )

    def policy_values(self, *, period: int) -> dict[str, jnp.ndarray]:
        """Return the optimal action values (grid points, or codes) per state in ``period``."""
        return {
            action: self.model.actions[action].to_jax()[indices]
            for action, indices in self.policy_indices[period].items()
        }

    def value(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return V of ``period`` at ``states`` (arrays broadcast together; off-grid allowed).

        The value is the maximum over the action grid of Q at the exact state, with next
        period's V interpolated (with taste shocks, the log-sum over the discrete choices of
        their maxima): on grid points it equals ``values[period]`` to rounding.
        """
        refuse_regime(model_name=self.model.name, regime=regime)
        flat, shape = validate_states(model=self.model, states=states, period=period)
        value, _ = evaluate_grid_solution(self, period=period, states=flat)
        return value.reshape(shape)

    @method_with_old_items.replacing(
        new="policy_indices",
        advice="solution.policy is a method now: policy(period=, states=) evaluates the policy; "
        "the grid indices per period moved to solution.policy_indices.",
    )
    def policy(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> dict[str, np.ndarray]:
        """Return the optimal action values of ``period`` at ``states`` (the maximiser of Q).

        With taste shocks: the most likely discrete choice and the best continuous actions
        given it.
        """
        refuse_regime(model_name=self.model.name, regime=regime)
        flat, shape = validate_states(model=self.model, states=states, period=period)
        policy = self.policy_flat(period=period, states=flat)
        return {a: v.reshape(shape) for a, v in policy.items()}

    def policy_flat(self, *, period: int, states: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Return the policy at flat ``states`` as ``validate_states`` gives them, unchecked."""
        return evaluate_grid_solution(self, period=period, states=states)[1]

    @cached_property
    def choice_codes(self) -> dict[str, np.ndarray]:
        """Return each discrete action's code in every discrete choice (choice order, C order).

        Choice ``k`` of ``choice_probabilities`` takes code ``choice_codes[a][k]`` of discrete
        action ``a``; the last discrete action in the model's order varies fastest.
        """
        _require_discrete_choice(self.model)
        sizes = [self.model.actions[a].n_points for a in self.model.discrete_actions]
        codes = code_combinations(sizes)
        return {a: codes[:, i] for i, a in enumerate(self.model.discrete_actions)}

    def choice_probabilities(
        self, *, period: int, states: Mapping[str, Any], regime: str | None = None
    ) -> np.ndarray:
        """Return the probabilities of the discrete choices of ``period`` at ``states``.

        The shape is (*broadcast state shape, n_choices); choices are the combinations of the
        discrete actions in ``choice_codes`` order. With taste shocks they are the logit
        probabilities of each choice's best value at the exact state (one-hot at the first best
        choice at scale 0); without, they are one-hot at the policy's choice. A model without
        discrete actions raises ``ModelSpecificationError``.
        """
        refuse_regime(model_name=self.model.name, regime=regime)
        _require_discrete_choice(self.model)
        flat, shape = validate_states(model=self.model, states=states, period=period)
        probabilities = evaluate_choice_probabilities(self, period=period, states=flat)
        return probabilities.reshape(*shape, probabilities.shape[-1])


_OLD_FIELDS = ("value_function", "policy")


def _accept_old_constructor(init: Callable[..., None]) -> Callable[..., None]:
    """Return ``Solution.__init__`` that also takes the old per-period fields, warning."""

    def __init__(self: Solution, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        if len(args) == len(_OLD_FIELDS) + 2 and isinstance(args[2], list | tuple):
            kwargs |= dict(zip(("model", "params", *_OLD_FIELDS), args, strict=True))
            args = ()
        if not any(k in kwargs for k in _OLD_FIELDS):
            init(self, *args, **kwargs)
            return
        if args or {"values", "policies"} & kwargs.keys():
            msg = (
                "Solution() got the old per-period fields (value_function=, policy=) together "
                "with positional arguments or the new fields (values=, policies=). Pass either "
                "Solution.from_periods(model=, params=, value_function=, policy=) or "
                "Solution(model=, params=, values=, policies=)."
            )
            raise TypeError(msg)
        warn_deprecated(
            old="Solution(model=, params=, value_function=, policy=)",
            new="Solution.from_periods(model=, params=, value_function=, policy=)",
            advice="Solution() itself now takes the stacked arrays values= and policies=.",
        )
        per_period = Solution.from_periods(**kwargs)
        init(
            self,
            model=per_period.model,
            params=per_period.params,
            values=per_period.values,
            policies=per_period.policies,
            kernels=per_period.kernels,
        )

    __init__.__doc__ = init.__doc__
    __init__.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
    return __init__


Solution.__init__ = _accept_old_constructor(Solution.__init__)  # type: ignore[method-assign]


def _require_discrete_choice(model: Model) -> None:
    """Raise ``ModelSpecificationError`` unless ``model`` has a discrete action."""
    if not model.discrete_actions:
        msg = (
            f"Model {model.name!r} has no discrete action, so there is no discrete choice to "
            f"give probabilities of. Its actions are {list(model.action_names)}; use policy()."
        )
        raise ModelSpecificationError(msg)


def with_value_function(solution: Solution, periods: tuple[jax.Array, ...]) -> Solution:
    """Return ``solution`` with ``value_function`` set to ``periods`` (its solve's outputs).

    ``periods`` must be ``values[0], values[1], ...``: the solve program's own per-period V,
    so that the first read of ``value_function`` runs no program.
    """
    solution.__dict__["value_function"] = periods  # the cached property's own slot
    return solution


@jit
def split_periods(stacked: jax.Array) -> tuple[jax.Array, ...]:
    """Return the slices of ``stacked`` along its first axis, all from one compiled program.

    Slicing period by period dispatches one small program per period: about 0.6 ms each on a
    GPU, which made reading V of a 30-period model ten times slower than solving it.
    """
    return tuple(stacked[t] for t in range(stacked.shape[0]))
