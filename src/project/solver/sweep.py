"""Compose model functions with dags and sweep them over grid products (vmap or splay)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import dags
import jax
import jax.numpy as jnp

from project.model.internal import table
from project.model.spec import Model


def compose(model: Model, targets: list[str]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Compose ``targets`` with dags; the result takes one dict of all available inputs."""
    if not targets:
        return lambda env: {}
    func, arguments = composed_function(model, targets)
    return lambda env: func(**{a: env[a] for a in arguments})


def composed_function(
    model: Model, targets: list[str]
) -> tuple[Callable[..., dict[str, Any]], tuple[str, ...]]:
    """Return ``targets`` composed with dags (keyword arguments) and its argument names.

    Compositions are cached per model: building one costs about a millisecond and a solve's
    tracing asks for the same few many times.
    """
    cache = COMPOSED.of(model)
    key = tuple(targets)
    if key not in cache:
        func = dags.concatenate_functions(model.dag_functions, targets=targets, return_type="dict")
        cache[key] = (func, tuple(inspect.signature(func).parameters))
    return cache[key]


COMPOSED = table("compositions by target")


def sweep(
    func: Callable[[dict[str, jnp.ndarray], Any], Any],
    axes: list[tuple[str, jnp.ndarray, int, bool]],
    carried: Any = None,
) -> Any:
    """Evaluate ``func(values, carried)`` on the product of ``axes``, nested in order.

    Each axis is (name, points, batch_size, slices). An axis with ``batch_size > 0`` is swept with
    ``jax.lax.map`` in chunks of that length (splay), every other axis with ``vmap``. When
    ``slices`` is true, the leading axis of ``carried`` is mapped together with the points, so
    each point sees only its own slice (no gather of the whole array). Outputs gain one leading
    dimension per axis, in order.
    """
    if not axes:
        return func({}, carried)
    name, points, batch_size, slices = axes[0]

    def along_axis(mapped: tuple[jnp.ndarray, Any]) -> Any:
        value, part = mapped
        return sweep(
            lambda inner, c: func({name: value, **inner}, c), axes[1:], part if slices else carried
        )

    mapped = (points, carried if slices else None)
    if batch_size > 0:
        return _map_in_chunks(along_axis, mapped, batch_size=batch_size)
    return jax.vmap(along_axis)(mapped)


def _map_in_chunks(func: Callable[[Any], Any], mapped: Any, *, batch_size: int) -> Any:
    """Apply ``func`` over the leading axis in equal chunks of ``batch_size`` (``lax.map``).

    The axis is padded with copies of its last entry to a multiple of ``batch_size`` and the
    padding is dropped from the result, so every chunk has the same shape: one compiled body,
    and no ragged remainder whose different fusion could change the last bits of the values.
    """
    n = jax.tree.leaves(mapped)[0].shape[0]
    padded_n = -(-n // batch_size) * batch_size
    if padded_n != n:
        mapped = jax.tree.map(
            lambda x: jnp.concatenate([x, jnp.repeat(x[-1:], padded_n - n, axis=0)]), mapped
        )
    result = jax.lax.map(func, mapped, batch_size=batch_size)
    return jax.tree.map(lambda x: x[:n], result)


def weighted_sum(weights: jnp.ndarray, stacked: jnp.ndarray) -> jnp.ndarray:
    """Return sum_k weights[k] * stacked[k], summed in a fixed order.

    Elementwise, unlike a dot product, so the rounding does not depend on how XLA batches it:
    splayed and unsplayed solves stay value-identical.
    """
    total = weights[0] * stacked[0]
    for k in range(1, stacked.shape[0]):
        total = total + weights[k] * stacked[k]
    return total
