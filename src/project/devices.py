"""Device mesh, sharding specs and replicated placement for the sharded solve.

States marked ``distributed=True`` (discrete, never transitioning) are sharded: V and every
period kernel are split along those axes over a device mesh with Auto axis types, one block per
device. Parameters and grids are replicated with ``jax.make_array_from_callback`` from the
host-local copy (``device_put`` of a host array runs a cross-host equality check whose memory
grows with the process count under multi-process JAX).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from project.errors import ModelSpecificationError
from project.model.spec import Model

SUBJECT_AXIS = "subjects"


def _auto_axis_types(n_axes: int) -> dict[str, Any]:
    axis_type = getattr(jax.sharding, "AxisType", None)
    return {} if axis_type is None else {"axis_types": (axis_type.Auto,) * n_axes}


def state_mesh(model: Model, *, devices: Sequence[Any] | None = None) -> Mesh | None:
    """Return the mesh for the model's distributed states, or None if none is distributed.

    One distributed state: a 1-D mesh over all devices; its size must be a multiple of the
    device count. Several: one mesh axis per state, of the state's size; their product must
    equal the device count.
    """
    permanent = model.permanent_states
    if not permanent:
        return None
    devices = list(jax.devices() if devices is None else devices)
    sizes = [model.states[s].n_points for s in permanent]
    if len(permanent) == 1:
        if sizes[0] % len(devices):
            msg = (
                f"Model {model.name!r}: distributed state {permanent[0]!r} has {sizes[0]} "
                f"categories, which do not split evenly over {len(devices)} devices. Use a "
                f"device count that divides {sizes[0]} (e.g. limit the visible devices), add "
                "categories, or set distributed=False."
            )
            raise ModelSpecificationError(msg)
        shape = (len(devices),)
    else:
        if math.prod(sizes) != len(devices):
            msg = (
                f"Model {model.name!r}: distributed states {list(permanent)} have sizes {sizes} "
                f"(product {math.prod(sizes)}) but there are {len(devices)} devices. Their "
                "product must equal the device count: distribute fewer states or change the "
                "device count."
            )
            raise ModelSpecificationError(msg)
        shape = tuple(sizes)
    mesh_devices = np.asarray(devices).reshape(shape)
    return Mesh(mesh_devices, axis_names=_mesh_axis_names(model), **_auto_axis_types(len(shape)))


def mesh_key(mesh: Mesh | None) -> tuple[Any, ...] | None:
    """Return a hashable key that is equal for meshes of the same axes over the same devices."""
    if mesh is None:
        return None
    return (mesh.axis_names, mesh.devices.shape, tuple(d.id for d in mesh.devices.flat))


def _mesh_axis_names(model: Model) -> tuple[str, ...]:
    return tuple(model.permanent_states)


def value_spec(model: Model, *, axis_order: Sequence[str] | None = None) -> PartitionSpec:
    """Return the partition spec of an array with one axis per state in ``axis_order``."""
    permanent = model.permanent_states
    order = model.state_names if axis_order is None else axis_order
    return PartitionSpec(*[s if s in permanent else None for s in order])


def value_sharding(model: Model, *, mesh: Mesh) -> NamedSharding:
    """Return the sharding of V (axes in the model's state order)."""
    return NamedSharding(mesh, value_spec(model))


def place(host: Any, *, sharding: NamedSharding) -> jax.Array:
    """Place a host array with ``sharding``, each device taking its block of the host copy."""
    host = np.asarray(host)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def replicate(tree: Any, *, mesh: Mesh) -> Any:
    """Place every array of ``tree`` fully replicated on ``mesh`` from its host-local copy."""
    sharding = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(lambda leaf: place(leaf, sharding=sharding), tree)


def check_permanent_states(*, model: Model, grid_points: dict[str, jnp.ndarray]) -> None:
    """Raise unless each distributed state's law of motion maps every code to itself."""
    from project.solver.sweep import compose  # noqa: PLC0415

    for state in model.permanent_states:
        law = compose(model, [f"next_{state}"])
        codes = np.asarray(grid_points[state])
        mapped = np.asarray(
            jax.vmap(lambda c, law=law, state=state: law({state: c})[f"next_{state}"])(
                jnp.asarray(codes)
            )
        )
        if not np.array_equal(mapped.astype(codes.dtype), codes):
            msg = (
                f"Model {model.name!r}: distributed state {state!r} transitions: "
                f"'next_{state}' maps codes {codes.tolist()} to {mapped.tolist()}. Only a "
                "state that never transitions can be sharded."
            )
            raise ModelSpecificationError(msg)


def value_devices(value: jax.Array) -> list[Any]:
    """Return the devices an array lives on, in id order."""
    return sorted(value.sharding.device_set, key=lambda d: d.id)


def subject_mesh(devices: Sequence[Any]) -> Mesh:
    """Return a 1-D mesh over ``devices`` for sharding subjects."""
    return Mesh(np.asarray(list(devices)), axis_names=(SUBJECT_AXIS,), **_auto_axis_types(1))


def shard_rows(host: np.ndarray, *, mesh: Mesh) -> jax.Array:
    """Place a host array split along its first axis over ``mesh`` (from the host-local copy)."""
    return place(host, sharding=NamedSharding(mesh, PartitionSpec(SUBJECT_AXIS)))
