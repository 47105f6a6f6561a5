"""Engine entry points that the pipeline's tasks call (no pytask in here).

Expensive steps are fingerprinted: ``solve_variant`` records a hash of everything that determines
its product (the variant specification, the engine's source files, package versions) in the
product's metadata and returns at once when an existing product has the same fingerprint. pytask
reruns a task whenever its module file changes; this keeps an edit to the pipeline declaration
from repeating a long solve.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from project.config import SimulationSettings, Variant
from project.model.spec import Model
from project.models import DEFAULT_PARAMS, MODEL_BUILDERS
from project.persist.solution import MARKER_NAME, load_solution, package_versions, save_solution
from project.simulation import SimulationResult, draw_initial_conditions, simulate
from project.solver import Solution, solve

logger = logging.getLogger("project.pipeline")


def variant_specification(variant: Variant) -> dict[str, Any]:
    """Return the complete, JSON-serialisable specification of a variant's model and params."""
    unknown = sorted(set(variant.params) - set(DEFAULT_PARAMS[variant.model]))
    if unknown:
        msg = f"Variant {variant.name!r} overrides unknown params {unknown}."
        raise KeyError(msg)
    model = build_variant_model(model=variant.model, sizes=variant.sizes)
    return {
        "name": variant.name,
        "model": variant.model,
        "sizes": dict(sorted(variant.sizes.items())),
        "params": dict(sorted((DEFAULT_PARAMS[variant.model] | variant.params).items())),
        "log_level": variant.log_level,
        "x64": variant.x64,
        "description": model.describe(),
    }


def simulation_specification(variant: Variant) -> dict[str, Any]:
    """Return the variant's simulation settings as JSON-serialisable data."""
    return asdict(variant.simulation)


def write_json_if_changed(*, content: dict[str, Any], path: Path) -> bool:
    """Write ``content`` as sorted JSON unless the file already holds it; return if written."""
    text = json.dumps(content, indent=2, sort_keys=True) + "\n"
    if path.exists() and path.read_text() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return True


def build_variant_model(*, model: str, sizes: dict[str, int]) -> Model:
    """Return the shipped model ``model`` built with ``sizes``."""
    return MODEL_BUILDERS[model](**sizes)


def fingerprint(*, specification: dict[str, Any], sources: Sequence[Path]) -> str:
    """Return a SHA-256 of the specification, the sources' bytes and package versions."""
    digest = hashlib.sha256(json.dumps(specification, sort_keys=True).encode())
    for source in sorted(Path(s) for s in sources):
        digest.update(source.name.encode() + Path(source).read_bytes())
    digest.update(json.dumps(package_versions(), sort_keys=True).encode())
    return digest.hexdigest()


def solve_variant(
    *, specification: dict[str, Any], directory: Path, sources: Sequence[Path]
) -> bool:
    """Solve the specified model into ``directory`` unless it is up to date; say if solved."""
    expected = fingerprint(specification=specification, sources=sources)
    metadata_file = Path(directory) / "metadata.json"
    complete = (Path(directory) / MARKER_NAME).exists() and metadata_file.exists()
    if complete and json.loads(metadata_file.read_text()).get("fingerprint") == expected:
        logger.info("Solution of %r is up to date; not solving again.", specification["name"])
        return False
    jax.config.update("jax_enable_x64", specification["x64"])
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    solution = solve(
        model=model, params=specification["params"], log_level=specification["log_level"]
    )
    save_solution(
        solution=solution,
        directory=directory,
        extra={"variant": specification["name"], "fingerprint": expected},
    )
    return True


def simulate_variant(
    *, specification: dict[str, Any], settings: dict[str, Any], solution_directory: Path
) -> SimulationResult:
    """Load a variant's solution and simulate its subjects with ``settings``."""
    jax.config.update("jax_enable_x64", specification["x64"])
    settings = asdict(SimulationSettings(**settings))
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    solution = load_solution(directory=solution_directory, model=model)
    initial = draw_initial_conditions(
        model=model,
        n_subjects=settings["n_subjects"],
        seed=settings["seed"],
        distribution=settings["initial_distribution"],
    )
    return simulate(
        params=specification["params"],
        initial_conditions=initial,
        solution=solution,
        seed=settings["seed"],
        subject_batch_size=settings["subject_batch_size"],
        log_level=specification["log_level"],
    )


def load_variant_solution(*, specification: dict[str, Any], directory: Path) -> Solution:
    """Load the solution of the specified variant from its directory."""
    jax.config.update("jax_enable_x64", specification["x64"])
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    return load_solution(directory=directory, model=model)


def load_panel(*, bundle_marker: Path) -> pd.DataFrame:
    """Read the simulated table of the bundle whose marker is ``bundle_marker``."""
    return pd.read_feather(Path(bundle_marker).parent / "simulated_data.arrow")
