"""Save and load a simulated panel ("bundle"): arrays, metadata and the results table.

Layout of a bundle directory::

    arrays/               orbax checkpoint {"value_function": {"0": V_0, ...} (with regimes
                                            {"working_0": ..., "retired_0": ...}),
                                            "columns": {name: (n_subjects, n_simulated) array}}
    metadata.json         model description, state/action order, ages (every period's),
                          start_period (the first simulated period: n_simulated = n_periods -
                          start_period; 0 when absent), params (lists, with dtypes), seed,
                          subject_batch_size, n_subjects, package versions and the provenance
                          (``project.provenance``: commit, dirty flag, config digest, seed,
                          versions; human-readable JSON, sorted keys)
    simulated_data.arrow  ``result.to_dataframe()`` as Feather (Arrow IPC, zstd), for analysis;
                          its schema metadata holds the same provenance
    COMPLETE.json         the marker, written last: every file's SHA-256
                          (``project.persist.manifest``), so its bytes change exactly when they do

Contract:

- A bundle is published as a generation behind an atomically flipped link
  (``project.persist.atomic``): an exception or a killed process leaves the previous bundle in
  place and never a directory that looks complete.
- Saving the same result twice from the same checkout gives byte-identical arrow files and
  markers (the arrow file embeds the pandas and pyarrow versions and the provenance, recorded
  in metadata.json too: no time stamps).
- Loading reads only JSON and the orbax checkpoint (no pickle: no code is executed) and restores
  everything but the table, which ``to_dataframe()`` rebuilds identically. Every file is checked
  against the marker first (``load_table`` checks the table and the metadata): a missing,
  partial, altered or truncated bundle raises ``CheckpointError`` naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax.sharding import NamedSharding

from project.devices import place, state_mesh, value_spec
from project.errors import CheckpointError
from project.model.spec import Model
from project.persist.atomic import MARKER_NAME, atomic_directory
from project.persist.checkpoint import read_checkpoint, write_checkpoint
from project.persist.manifest import read_json_object, verify_directory, write_marker
from project.persist.solution import grids_without_knobs, package_versions
from project.provenance import PROVENANCE_KEY, product_provenance, write_arrow
from project.provenance import package_versions as versions_of
from project.regimes.spec import RegimeModel
from project.simulation.result import SimulationResult

ARRAYS_NAME = "arrays"
METADATA_NAME = "metadata.json"
TABLE_NAME = "simulated_data.arrow"
TABLE_COMPRESSION = "zstd"
TABLE_PACKAGES = ("pandas", "pyarrow")  # their versions are embedded in the arrow file
REBUILD_HINT = "Rebuild it with `pytask` (or call save_bundle again)."
KIND = "simulation bundle"
METADATA_KEYS = (
    "model",
    "ages",
    "params",
    "param_dtypes",
    "seed",
    "subject_batch_size",
    "n_subjects",
    "state_names",
    "action_names",
)


def save_bundle(
    *,
    result: SimulationResult,
    directory: Path,
    additional_targets: list[str] | str | None = None,
    columns: Mapping[str, np.ndarray] | None = None,
    provenance: Mapping[str, str] | None = None,
) -> Path:
    """Write ``result`` atomically to ``directory``; return the marker path (written last).

    ``additional_targets`` adds model functions as table columns (see ``to_dataframe``); they
    need the result's model. ``columns`` adds columns computed from the table (one value per
    row, in ``to_dataframe``'s order; e.g. the unit of a normalised model's wealth), listed in
    the metadata's ``derived_columns``. The arrays never depend on either. ``provenance`` goes
    to the metadata and the table's schema; by default ``product_provenance`` of the metadata
    (the model description, params and simulation settings) with the result's seed.
    """
    frame = _table(result, additional_targets=additional_targets, columns=columns or {})
    tree = {
        "value_function": value_function_tree(result.value_function),
        "columns": {name: _to_numpy(v) for name, v in result.columns.items()},
    }
    metadata = _metadata(
        result, frame=frame, columns=columns or {}, n_subjects=tree["columns"]["value"].shape[0]
    )
    if provenance is None:
        settings = {k: v for k, v in metadata.items() if k != "versions"}
        provenance = product_provenance(
            config=json.loads(json.dumps(settings, default=_json_default)), seed=metadata["seed"]
        )
    metadata[PROVENANCE_KEY] = dict(provenance)
    directory = Path(directory).absolute()
    with atomic_directory(
        directory, digest_of=lambda staging: write_marker(staging, kind=KIND)
    ) as staging:
        write_checkpoint(staging / ARRAYS_NAME, tree)
        _write_json(staging / METADATA_NAME, metadata)
        write_arrow(
            frame=frame,
            path=staging / TABLE_NAME,
            provenance=metadata[PROVENANCE_KEY],
            compression=TABLE_COMPRESSION,
        )
    return directory / MARKER_NAME


def _table(
    result: SimulationResult,
    *,
    additional_targets: list[str] | str | None,
    columns: Mapping[str, np.ndarray],
) -> pd.DataFrame:
    """Return ``result``'s table with the extra targets and the derived ``columns``."""
    frame = result.to_dataframe(additional_targets)
    for name, values in columns.items():
        if name in frame.columns or np.shape(values) != (len(frame),):
            msg = (
                f"The derived column {name!r} must be new and hold one value per row "
                f"({len(frame)}), got shape {np.shape(values)}."
            )
            raise ValueError(msg)
        frame[name] = np.asarray(values)
    return frame


def _metadata(
    result: SimulationResult,
    *,
    frame: pd.DataFrame,
    columns: Mapping[str, np.ndarray],
    n_subjects: int,
) -> dict[str, Any]:
    """Return the bundle's metadata (without its provenance)."""
    params = {name: _to_numpy(v) for name, v in result.params.items()}
    base = {"subject_id", "period", "age", *result.columns}
    return {
        "model": result.description,
        "state_names": list(result.description["states"]),
        "action_names": list(result.description["actions"]),
        "ages": [float(a) for a in result.ages],
        "params": {name: v.tolist() for name, v in params.items()},
        "param_dtypes": {name: str(v.dtype) for name, v in params.items()},
        "seed": int(_to_numpy(result.seed)),
        "subject_batch_size": int(_to_numpy(result.subject_batch_size)),
        "start_period": int(result.start_period),
        "method": str(result.method),
        "n_subjects": int(n_subjects),
        "additional_targets": [str(c) for c in frame.columns if c not in base and c not in columns],
        "derived_columns": sorted(columns),
        "versions": {**package_versions(), **versions_of(TABLE_PACKAGES)},
    }


def load_bundle(*, directory: Path, model: Model | RegimeModel | None = None) -> SimulationResult:
    """Restore a result saved by ``save_bundle``; ``model`` is needed only for extra targets."""
    directory = Path(directory).absolute()
    verify_directory(directory, kind=KIND, hint=REBUILD_HINT)
    metadata = read_json_object(
        directory / METADATA_NAME, kind=KIND, hint=REBUILD_HINT, required=METADATA_KEYS
    )
    if model is not None:
        _check_model(directory=directory, model=model, metadata=metadata)
    tree = _restore_arrays(directory, model=model, metadata=metadata)
    try:
        _check_arrays(directory=directory, tree=tree, metadata=metadata)
        ages = tuple(float(a) for a in metadata["ages"])
        start_period = _start_period(metadata)
        return SimulationResult(
            description=_ordered_description(metadata),
            ages=ages,
            seed=int(metadata["seed"]),
            subject_batch_size=int(metadata["subject_batch_size"]),
            columns=tree["columns"],
            value_function=_value_function(tree["value_function"], metadata=metadata),
            params={
                name: np.asarray(value, dtype=metadata["param_dtypes"][name])
                for name, value in metadata["params"].items()
            },
            model=model,
            start_period=start_period,
            method=str(metadata.get("method", "grid")),
        )
    except (KeyError, TypeError, ValueError) as error:
        msg = f"{directory / METADATA_NAME} is malformed ({error!r}). {REBUILD_HINT}"
        raise CheckpointError(msg) from error


def load_table(directory: Path) -> pd.DataFrame:
    """Return a bundle's simulated table after checking it and the marker's digests."""
    directory = Path(directory).absolute()
    verify_directory(directory, kind=KIND, hint=REBUILD_HINT, names=(TABLE_NAME, METADATA_NAME))
    return pd.read_feather(directory / TABLE_NAME)


def value_function_tree(value_function: Any) -> dict[str, Any]:
    """Return V by period ("0", "1", ...), or with regimes by regime and period ("working_0")."""
    if isinstance(value_function, dict):
        return {
            f"{regime}_{t}": v
            for regime, values in value_function.items()
            for t, v in enumerate_periods(values)
        }
    return dict(enumerate_periods(value_function))


def _value_keys(metadata: dict[str, Any]) -> dict[str | None, list[str]]:
    """Return the value-function keys per solved regime (one group, None, without regimes)."""
    periods = range(len(metadata["ages"]))
    regimes = metadata["model"].get("regimes")
    if regimes is None:
        return {None: [str(t) for t in periods]}
    solved = [r for r, spec in regimes.items() if not spec.get("terminal")]
    return {r: [f"{r}_{t}" for t in periods] for r in solved}


def _value_function(values: dict[str, Any], *, metadata: dict[str, Any]) -> Any:
    keys = _value_keys(metadata)
    grouped = {r: tuple(jnp.asarray(values[k]) for k in names) for r, names in keys.items()}
    return grouped if "regimes" in metadata["model"] else grouped[None]


def enumerate_periods(values: Any) -> Any:
    """Yield (period as str, V) pairs; sharded arrays stay on their devices (orbax saves shards)."""
    for t, value in enumerate(values):
        yield str(t), value if isinstance(value, jax.Array) else _to_numpy(value)


def _restore_arrays(
    directory: Path, *, model: Model | None, metadata: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Restore the arrays; V goes onto the model's mesh when it has distributed states."""
    path = directory / ARRAYS_NAME
    if not path.is_dir():
        msg = f"{directory} has no {ARRAYS_NAME}/ directory: the bundle is partial. {REBUILD_HINT}"
        raise CheckpointError(msg)
    try:
        restored = read_checkpoint(path)
        tree = {
            group: {name: np.asarray(array) for name, array in restored[group].items()}
            for group in ("value_function", "columns")
        }
        if model is not None and model.permanent_states:
            mesh = state_mesh(model)
            tree["value_function"] = {
                t: place(v, sharding=NamedSharding(mesh, value_spec(model)))
                for t, v in tree["value_function"].items()
            }
        return tree
    except Exception as error:
        msg = f"Cannot read the arrays of {directory}: {error!r}. {REBUILD_HINT}"
        raise CheckpointError(msg) from error


def _check_arrays(
    *, directory: Path, tree: dict[str, dict[str, np.ndarray]], metadata: dict[str, Any]
) -> None:
    description = metadata["model"]
    n_periods = len(metadata["ages"])
    regime = {"regime"} if "regimes" in description else set()
    expected = {
        "value_function": {k for keys in _value_keys(metadata).values() for k in keys},
        "columns": {"value", *regime, *description["states"], *description["actions"]},
    }
    for group, names in expected.items():
        missing = sorted(names - set(tree[group]))
        if missing:
            msg = f"The arrays of {directory} lack {group} {missing}. {REBUILD_HINT}"
            raise CheckpointError(msg)
    shapes = {name: array.shape for name, array in tree["columns"].items()}
    n_simulated = n_periods - _start_period(metadata)
    if len({*shapes.values(), (metadata["n_subjects"], n_simulated)}) != 1:
        msg = (
            f"The simulated arrays of {directory} have shapes {shapes}, expected "
            f"({metadata['n_subjects']}, {n_simulated}) each. {REBUILD_HINT}"
        )
        raise CheckpointError(msg)


def _start_period(metadata: dict[str, Any]) -> int:
    """Return the first simulated period (0 in bundles saved before it was recorded)."""
    start_period = metadata.get("start_period", 0)
    n_periods = len(metadata["ages"])
    if type(start_period) is not int or not 0 <= start_period < n_periods:
        msg = f"start_period {start_period!r} is not one of the periods 0..{n_periods - 1}"
        raise ValueError(msg)
    return start_period


def _ordered_description(metadata: dict[str, Any]) -> dict[str, Any]:
    """Return the model description with states and actions in their saved order.

    ``metadata.json`` has sorted keys, but the order of states is V's axis order and the order
    of the table's columns.
    """
    description = dict(metadata["model"])
    for part in ("states", "actions"):
        grids = description[part]
        names = metadata[f"{part[:-1]}_names"]
        if sorted(names) != sorted(grids):
            msg = f"{part} {names} do not match the model description {sorted(grids)}."
            raise ValueError(msg)
        description[part] = {name: grids[name] for name in names}
    return description


def _check_model(*, directory: Path, model: Model, metadata: dict[str, Any]) -> None:
    given = json.loads(json.dumps(model.describe(), default=_json_default))
    for part in ("states", "actions"):
        names = metadata[f"{part[:-1]}_names"]
        saved = metadata["model"].get(part, {})
        if list(given[part]) != names or grids_without_knobs(given[part]) != grids_without_knobs(
            saved
        ):
            msg = (
                f"{directory} holds a simulation of a model with other {part} than "
                f"{model.name!r}. Load it with the matching model or rebuild it with `pytask`."
            )
            raise CheckpointError(msg)


def _write_json(path: Path, content: dict[str, Any]) -> None:
    text = json.dumps(content, indent=2, sort_keys=True, default=_json_default)
    path.write_text(text + "\n")


def _json_default(value: Any) -> Any:
    """Return numpy and JAX values (0-d included) as plain Python numbers and lists."""
    if isinstance(value, np.ndarray | np.generic | jax.Array):
        return _to_numpy(value).tolist()
    msg = f"Cannot write {type(value).__name__} {value!r} as JSON."
    raise TypeError(msg)


def _to_numpy(value: Any) -> np.ndarray:
    return np.asarray(jax.device_get(value))
