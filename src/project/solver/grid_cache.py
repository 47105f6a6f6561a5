"""Grid points of a model in the working precision, cached per model, dtype and mesh."""

from __future__ import annotations

import jax
from jax.sharding import Mesh

from project.devices import mesh_key, replicate
from project.grids import grid_points
from project.model.internal import table
from project.model.spec import Model
from project.points import float_dtype

GRID_POINTS = table("grid points by dtype and mesh")


def grid_points_of(model: Model, *, mesh: Mesh | None = None) -> dict[str, jax.Array]:
    """Return every state and action grid's points in the working precision (cached)."""
    per_model = GRID_POINTS.of(model)
    key = (float_dtype(), mesh_key(mesh))
    if key not in per_model:
        points = grid_points(model.states | model.actions)
        per_model[key] = points if mesh is None else replicate(points, mesh=mesh)
    return per_model[key]
