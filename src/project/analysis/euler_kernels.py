"""The compiled pieces the Euler errors read: laws of motion, marginal utility, its inverse.

Built once per model (``project.model.internal``), reused across periods and blocks of states.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.egm.structure import egm_structure
from project.model.continuation import CONTINUATION_SCALE, has_continuation_scale
from project.model.internal import Fact, table
from project.regimes.solution import RegimeSolution
from project.regimes.spec import REGIME_TRANSITION
from project.solver.sweep import compose


def euler_kernels(view: Any) -> dict[str, Callable[..., Any]]:
    """Return the view's jitted laws of motion, marginal utility and its inverse (cached)."""
    return KERNELS.of(view)


def _build_kernels(view: Any) -> dict[str, Callable[..., Any]]:
    structure = egm_structure(view)
    targets = ["next_wealth", REGIME_TRANSITION]
    if has_continuation_scale(view):
        targets.append(CONTINUATION_SCALE)
    laws = compose(view, targets)
    utility = compose(view, ["utility"])
    inverse = compose(view, ["inverse_marginal_utility"])

    def laws_at(params, at, claim, wealth, consumption, shocks):  # noqa: ANN001, ANN202
        env = params | at | {k: v[None, :] for k, v in shocks.items()}
        env |= {"claim": claim[:, None], "wealth": wealth[:, None]}
        shape = (wealth.shape[0], max([1, *(v.shape[0] for v in shocks.values())]))
        c = jnp.broadcast_to(consumption[:, None], shape)
        out, tangent = jax.jvp(lambda x: laws(env | {"consumption": x}), (c,), (jnp.ones_like(c),))
        transition = out[REGIME_TRANSITION]
        probabilities = jnp.stack(
            [jnp.broadcast_to(transition.get(r, 0.0), shape) for r in view.regime_names]
        )
        scale = jnp.broadcast_to(out.get(CONTINUATION_SCALE, 1.0), shape)
        return out["next_wealth"], -tangent["next_wealth"], scale, probabilities

    def marginal_at(params, at, codes, consumption):  # noqa: ANN001, ANN202
        env = params | at | {a: codes[:, i] for i, a in enumerate(structure.discrete_actions)}

        def level(x: jnp.ndarray) -> jnp.ndarray:
            return utility(env | {structure.action: x})["utility"]

        return jax.jvp(level, (consumption,), (jnp.ones_like(consumption),))[1]

    def inverse_at(params, claim, marginal):  # noqa: ANN001, ANN202
        env = params | {"claim": claim, "marginal_utility": marginal}
        return inverse(env)["inverse_marginal_utility"]

    return {
        "laws": jit(laws_at),
        "marginal": jit(marginal_at),
        "inverse": jit(inverse_at),
    }


KERNELS: Fact[dict[str, Callable[..., Any]]] = Fact("Euler-error kernels", build=_build_kernels)


def terminal_slope(solution: RegimeSolution, *, regime: str, wealth: np.ndarray) -> np.ndarray:
    """Return the slope in wealth of a terminal regime's value (the bequest's)."""
    spec = solution.model.terminal[regime]
    if spec.value is None:
        return np.zeros_like(wealth)
    params = {k: jnp.asarray(v) for k, v in solution.params.items()}
    slopes = TERMINAL_SLOPES.of(solution.model)
    if regime not in slopes:
        slopes[regime] = _terminal_kernel(spec.value, tuple(spec.arguments))
    return np.asarray(slopes[regime](params, wealth))


TERMINAL_SLOPES = table("terminal values' slopes in wealth, by regime")


def _terminal_kernel(value: Callable[..., Any], arguments: tuple[str, ...]) -> Callable[..., Any]:
    """Return the jitted slope of a terminal value in wealth."""

    def slope(params, wealth):  # noqa: ANN001, ANN202
        def level(w: jnp.ndarray) -> jnp.ndarray:
            env = params | {"wealth": w}
            return value(**{a: env[a] for a in arguments})

        return jax.jvp(level, (wealth,), (jnp.ones_like(wealth),))[1]

    return jit(slope)
