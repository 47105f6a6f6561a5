"""Save and load a solved model: V and the policy per period as an orbax checkpoint.

Layout of a solution directory::

    arrays/            orbax checkpoint {"value_function": {"0": V_0, ...}, "policy": {...}}
                       (EGM: {"egm": endogenous grids}; with regimes {"regimes": {name: ...}}),
                       written reproducibly (``project.persist.checkpoint``)
    metadata.json      model description, params, package versions (human-readable)
    provenance.json    how it was made: ``project.provenance.product_provenance`` of the metadata
                       (commit, dirty flag, config digest, versions) and what the caller adds
                       (``provenance``, e.g. the pipeline's fingerprint)
    COMPLETE.json      the marker, written last: every file's SHA-256
                       (``project.persist.manifest``), so it changes exactly when the files do

The directory is published as a generation behind a link (``project.persist.atomic``); loading
verifies every file against the marker first, so a damaged solution is never used.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from project.devices import state_mesh, value_spec
from project.egm.choices import EGMArrays
from project.egm.solution import EGMSolution
from project.egm.structure import egm_structure
from project.errors import CheckpointError
from project.model.solution import SolutionInterface
from project.model.spec import Model
from project.persist.atomic import MARKER_NAME, atomic_directory
from project.persist.checkpoint import read_checkpoint, write_checkpoint
from project.persist.manifest import (
    PROVENANCE_NAME,
    read_json_object,
    verify_directory,
    write_marker,
)
from project.provenance import package_versions as versions_of
from project.provenance import product_provenance
from project.regimes.grid import solution_continuation
from project.regimes.solution import RegimeSolution
from project.regimes.spec import RegimeModel
from project.solver.solution import Solution

PACKAGES = ("jax", "jaxlib", "orbax-checkpoint", "dags", "project")
ENDOGENOUS = ("egm", "dcegm")
KIND = "solution"
REBUILD_HINT = "Rebuild it with `pytask` (or solve and call save_solution again)."
METADATA_KEYS = ("model", "params", "dtype")
PATH_BYTES = 4096
"""The longest staging path a multi-process save passes from the primary to the others."""


def package_versions() -> dict[str, str]:
    """Return the versions of the packages that determine a product's bytes."""
    return versions_of(PACKAGES)


def save_solution(
    *,
    solution: SolutionInterface,
    directory: Path,
    provenance: dict[str, Any] | None = None,
) -> Path:
    """Write ``solution`` atomically to ``directory``; return the marker path (written last).

    A grid solution stores V and the policy indices per period; an EGM solution its endogenous
    grids (``EGMArrays``) and savings grid; a solution with regimes each regime's, under its
    name. ``metadata.json`` records the method and the kernels. ``provenance.json`` holds the
    product's provenance (``project.provenance.product_provenance`` of the metadata) updated
    with ``provenance``; it is verified like every file but is not part of the content that
    build tools compare (``project.persist.manifest``), so a new commit that solves to the same
    arrays reruns nothing downstream.

    In a multi-process solve (``jax.distributed``), every process calls it: each writes the
    blocks it holds into the primary process's staging directory, the primary (process 0)
    writes the rest and publishes, and all return once the product is published. The processes
    must share the file system of ``directory``.
    """
    if solution.regimes:
        parts = {r: _solution_tree(s) for r, s in solution.regimes.items()}
        tree = {"regimes": {r: part[0] for r, part in parts.items()}}
        dtype = next(iter(parts.values()))[1]
        kernels: Any = {r: list(k) for r, k in solution.kernels.items()}
    else:
        tree, dtype = _solution_tree(solution)
        kernels = list(solution.kernels)
    metadata = {
        "model": solution.model.describe(),
        "params": {k: jnp.asarray(v).tolist() for k, v in solution.params.items()},
        "dtype": dtype,
        "method": solution.method,
        "kernels": kernels,
        "versions": package_versions(),
    }
    settings = json.loads(json.dumps({k: v for k, v in metadata.items() if k != "versions"}))
    recorded = {**product_provenance(config=settings), **(provenance or {})}
    directory = Path(directory).absolute()
    marker = {"periods": solution.model.n_periods}
    primary = jax.process_index() == 0
    if primary:
        with atomic_directory(
            directory, digest_of=lambda staging: write_marker(staging, kind=KIND, extra=marker)
        ) as staging:
            shared_path(staging)
            write_checkpoint(staging / "arrays", tree)
            _write_json(staging / "metadata.json", metadata)
            _write_json(staging / PROVENANCE_NAME, recorded)
    else:  # another process of a multi-process solve: its shards, into the primary's staging
        write_checkpoint(shared_path(None) / "arrays", tree)
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices(f"published {directory}")
    return directory / MARKER_NAME


def shared_path(path: Path | None) -> Path:
    """Return the primary process's ``path`` in every process (``path`` itself in one process).

    Multi-process saves (``jax.process_count() > 1``): the primary process (index 0) passes
    the staging directory it made, the others ``None``; every process gets the primary's.
    """
    if jax.process_count() == 1:
        return Path(path)
    data = np.zeros(PATH_BYTES, dtype=np.uint8)
    if path is not None:
        raw = str(path).encode()
        data[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    shared = np.asarray(multihost_utils.broadcast_one_to_all(data))
    return Path(bytes(shared).rstrip(b"\0").decode())


def _solution_tree(solution: Solution | EGMSolution) -> tuple[dict[str, Any], str]:
    """Return the arrays of one (regime's) solution and their float dtype."""
    if solution.method in ENDOGENOUS:
        tree = {"egm": {**solution.arrays._asdict(), "savings": solution.savings}}
        return tree, str(solution.savings.dtype)
    tree = {
        "value_function": {str(t): v for t, v in enumerate(solution.value_function)},
        "policy": {str(t): dict(p) for t, p in enumerate(solution.policy_indices)},
    }
    return tree, str(solution.value_function[0].dtype)


def load_solution(
    *, directory: Path, model: Model | RegimeModel, devices: Sequence[Any] | None = None
) -> Solution | EGMSolution | RegimeSolution:
    """Restore a solution saved by ``save_solution`` for ``model``.

    Arrays of a model with distributed states are restored sharded onto the model's mesh over
    ``devices`` (default: all), each device reading only its blocks; the device count may differ
    from the one that saved, as long as the mesh guard in ``project.devices`` accepts it.
    """
    directory = Path(directory).absolute()
    verify_directory(directory, kind=KIND, hint=REBUILD_HINT)
    metadata = read_metadata(directory)
    method = metadata.get("method", "grid")
    views, described = _saved_views(directory, model=model, saved=metadata["model"])
    for view_model, view_saved in ((views[r], described[r]) for r in views):
        _check_grids(directory, model=view_model, saved=view_saved, method=method)
    targets = {
        r: (
            _egm_target(model=v, metadata=metadata)
            if method in ENDOGENOUS
            else _abstract_target(model=v, metadata=metadata, devices=devices)
        )
        for r, v in views.items()
    }
    target = {"regimes": targets} if isinstance(model, RegimeModel) else targets[None]
    try:
        tree = read_checkpoint(directory / "arrays", target)
    except Exception as error:
        msg = f"Cannot read the arrays of {directory}: {error}. Rebuild it with `pytask`."
        raise CheckpointError(msg) from error
    params = {k: np.asarray(v) for k, v in metadata["params"].items()}
    kernels = metadata.get("kernels", ())
    if not isinstance(model, RegimeModel):
        return _solution_from_tree(model, tree, method=method, params=params, kernels=kernels)
    return _regime_solution(model, tree=tree, method=method, params=params, kernels=kernels)


def _saved_views(
    directory: Path, *, model: Model | RegimeModel, saved: dict[str, Any]
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """Return the models to restore (a regime's view each) and their saved descriptions.

    Raises ``CheckpointError`` where the saved solution has other regimes than ``model``.
    """
    if isinstance(model, RegimeModel) != ("regimes" in saved):
        msg = (
            f"{directory} holds a solution of a model {'with' if 'regimes' in saved else 'without'}"
            f" regimes; {model.name!r} is {'' if isinstance(model, RegimeModel) else 'not '}one. "
            "Rebuild it with `pytask` or load it with the matching model."
        )
        raise CheckpointError(msg)
    if not isinstance(model, RegimeModel):
        return {None: model}, {None: saved}
    if sorted(saved["regimes"]) != sorted(model.regime_names):
        msg = (
            f"{directory} holds a solution with regimes {sorted(saved['regimes'])}, not "
            f"{sorted(model.regime_names)}. Rebuild it with `pytask`."
        )
        raise CheckpointError(msg)
    return model.regimes, {r: saved["regimes"][r] for r in model.regimes}


def _regime_solution(
    model: RegimeModel, *, tree: Any, method: str, params: dict[str, Any], kernels: Any
) -> RegimeSolution:
    """Return the solution of every regime from the restored tree, the regimes linked."""
    solutions: dict[str, Solution | EGMSolution] = {}
    for regime, view in model.regimes.items():
        solutions[regime] = _solution_from_tree(
            view,
            tree["regimes"][regime],
            method=method,
            params=params,
            kernels=kernels.get(regime, ()),
        )
    if method not in ENDOGENOUS:
        continuation = solution_continuation(model, solutions=solutions, params=params)
        solutions = {
            r: dataclasses.replace(s, continuation=lambda period, r=r: continuation(r, period))
            for r, s in solutions.items()
        }
    return RegimeSolution(model=model, params=params, solutions=solutions)


def read_metadata(directory: Path) -> dict[str, Any]:
    """Return a solution's ``metadata.json``; raise ``CheckpointError`` when it is malformed."""
    path = Path(directory) / "metadata.json"
    metadata = read_json_object(path, kind=KIND, hint=REBUILD_HINT, required=METADATA_KEYS)
    if not isinstance(metadata["model"], dict) or "states" not in metadata["model"]:
        msg = (
            f"{path} lacks the entries ['model.states']: the solution is damaged or was "
            f"written by another version. {REBUILD_HINT}"
        )
        raise CheckpointError(msg)
    try:
        jnp.dtype(metadata["dtype"])
        params = {k: np.asarray(v, dtype=float) for k, v in metadata["params"].items()}
    except (TypeError, ValueError, AttributeError) as error:
        msg = f"{path} has a malformed dtype or params ({error}). {REBUILD_HINT}"
        raise CheckpointError(msg) from error
    if not all(np.isfinite(v).all() for v in params.values()):
        msg = f"{path} records non-finite params. {REBUILD_HINT}"
        raise CheckpointError(msg)
    return metadata


def read_provenance(directory: Path) -> dict[str, Any]:
    """Return a solution's ``provenance.json`` (empty when it has none, as older ones)."""
    path = Path(directory) / PROVENANCE_NAME
    if not path.is_file():
        return {}
    return read_json_object(path, kind=KIND, hint=REBUILD_HINT)


def _check_grids(directory: Path, *, model: Model, saved: dict[str, Any], method: str) -> None:
    """Raise unless the saved state grids (and savings grid) are the model's."""
    if grids_without_knobs(saved["states"]) != grids_without_knobs(model.describe()["states"]):
        msg = (
            f"{directory} holds a solution of a model with other state grids than "
            f"{model.name!r}. Rebuild it with `pytask` or load it with the matching model."
        )
        raise CheckpointError(msg)
    if (
        method in ENDOGENOUS
        and saved.get("post_decision_grid") != (model.describe()["post_decision_grid"])
    ):
        msg = (
            f"{directory} holds an EGM solution on another post_decision_grid than "
            f"{model.name!r} states. Rebuild it with `pytask` or load it with the matching model."
        )
        raise CheckpointError(msg)


def _solution_from_tree(
    model: Model, tree: dict[str, Any], *, method: str, params: dict[str, Any], kernels: Any
) -> Solution | EGMSolution:
    if method in ENDOGENOUS:
        arrays = dict(tree["egm"])
        savings = arrays.pop("savings")
        return EGMSolution(model=model, params=params, arrays=EGMArrays(**arrays), savings=savings)
    n_periods = model.n_periods
    return Solution.from_periods(
        model=model,
        params=params,
        value_function=[tree["value_function"][str(t)] for t in range(n_periods)],
        policy=[tree["policy"][str(t)] for t in range(n_periods)],
        kernels=tuple(kernels),
    )


def grids_without_knobs(grids: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Drop batch_size and distributed: they change how V is computed, not its values."""
    return {
        name: {k: v for k, v in grid.items() if k not in {"batch_size", "distributed"}}
        for name, grid in grids.items()
    }


def _abstract_target(
    *, model: Model, metadata: dict[str, Any], devices: Sequence[Any] | None
) -> dict[str, Any]:
    """Return the checkpoint's tree as shape/dtype/sharding structs (no array data)."""
    mesh = state_mesh(model, devices=devices)
    if mesh is None:
        mesh = Mesh(np.asarray(jax.devices()[:1]), axis_names=("single",))
    sharding = NamedSharding(mesh, value_spec(model) if model.permanent_states else PartitionSpec())
    shape = tuple(g.n_points for g in model.states.values())
    dtype = jnp.dtype(metadata["dtype"])
    periods = [str(t) for t in range(model.n_periods)]
    return {
        "value_function": {
            t: jax.ShapeDtypeStruct(shape, dtype, sharding=sharding) for t in periods
        },
        "policy": {
            t: {a: jax.ShapeDtypeStruct(shape, jnp.int32, sharding=sharding) for a in model.actions}
            for t in periods
        },
    }


def _egm_target(*, model: Model, metadata: dict[str, Any]) -> dict[str, Any]:
    """Return the abstract tree of an EGM solution (shapes follow from model and savings grid)."""
    structure = egm_structure(model)
    grid = model.post_decision_grid
    n_savings = grid.n_points if grid is not None else 0
    dtype = jnp.dtype(metadata["dtype"])
    choices = (model.n_periods, *structure.discrete_shape, structure.n_choices)
    nodes = (*choices, n_savings + 1)
    return {
        "egm": {
            "wealth": jax.ShapeDtypeStruct(nodes, dtype),
            "consumption": jax.ShapeDtypeStruct(nodes, dtype),
            "value_equivalent": jax.ShapeDtypeStruct(nodes, dtype),
            "equivalent_slope": jax.ShapeDtypeStruct(nodes, dtype),
            "constrained_continuation": jax.ShapeDtypeStruct(choices, dtype),
            "feasible": jax.ShapeDtypeStruct(choices, jnp.bool_),
            "savings": jax.ShapeDtypeStruct((n_savings,), dtype),
        }
    }


def _write_json(path: Path, content: dict[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")
