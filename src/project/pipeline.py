"""Engine entry points that the pipeline's tasks call (no pytask in here).

Expensive steps are fingerprinted: ``solve_variant`` records a hash of everything that determines
its product (the variant specification, the engine's source files, package versions) in the
product's metadata and returns at once when an existing product has the same fingerprint. pytask
reruns a task whenever its module file changes; this keeps an edit to the pipeline declaration
from repeating a long solve.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from project.config import DATA, SimulationSettings, Variant
from project.dispatch import solve
from project.errors import CheckpointError, ConfigurationError, ParamsError
from project.estimation.calibrated import calibrated_value, estimate_calibrated
from project.estimation.products import load_estimation, save_estimation
from project.estimation.ratios import RATIO_TARGET, defines_ratio
from project.estimation.variant import estimate_variant
from project.launch import check_processes, solve_in_processes
from project.model.spec import Model
from project.models import (
    DEFAULT_TASTE_SHOCK_SCALES,
    MODEL_BUILDERS,
    default_params_of,
    panel_columns_of,
)
from project.persist.bundle import load_table, save_bundle
from project.persist.manifest import verify_directory
from project.persist.solution import (
    KIND,
    REBUILD_HINT,
    load_solution,
    read_metadata,
    read_provenance,
    save_solution,
)
from project.points import precision
from project.simulation import SimulationResult, draw_initial_conditions, simulate
from project.solver import Solution
from project.taste_shocks import TASTE_SHOCK_SCALE
from project.up_to_date import fingerprint, intact_fingerprint

logger = logging.getLogger("project.pipeline")


def variant_specification(
    variant: Variant,
    *,
    estimates: Mapping[str, float] | None = None,
    calibrated: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Return the complete, JSON-serialisable specification of a variant's model and params.

    ``estimates`` (the status quo's estimated preferences, ``estimated_params``) replace the
    default values of those params and are listed under ``"estimated"``; ``calibrated`` (the
    param the estimation calibrated jointly, ``calibrated_params``) likewise, listed under
    ``"calibrated"``; without them (the estimation's own input) both lists are empty. A variant
    that sets one of them in its own ``params`` is refused: a counterfactual changes policy,
    never preferences.
    """
    model = build_variant_model(model=variant.model, sizes=variant.sizes)
    check_processes(model=model, name=variant.name, processes=variant.processes)
    params = variant_params(variant=variant, model=model)
    fixed = dict(calibrated or {})
    estimates = dict(estimates or {}) | fixed
    overridden = sorted(set(estimates) & set(variant.params))
    if overridden:
        msg = (
            f"Variant {variant.name!r} sets {overridden} in its params, but the pipeline "
            "estimates them once, on the status quo, and solves every variant at the estimates "
            "(a counterfactual changes policy, never preferences). Remove them from its params "
            "in src/project/config.py."
        )
        raise ConfigurationError(msg)
    unknown = sorted(set(estimates) - set(params))
    if unknown:
        msg = (
            f"The estimates name {unknown}, which model {variant.model!r} of variant "
            f"{variant.name!r} lacks; it has {sorted(params)}. Fix ESTIMATION.estimated in "
            "src/project/config.py."
        )
        raise ConfigurationError(msg)
    params |= {name: float(value) for name, value in estimates.items()}
    return {
        "name": variant.name,
        "model": variant.model,
        "sizes": dict(sorted(variant.sizes.items())),
        "params": dict(sorted(params.items())),
        "estimated": sorted(set(estimates) - set(fixed)),
        "calibrated": sorted(fixed),
        "log_level": variant.log_level,
        "x64": variant.x64,
        "processes": variant.processes,
        "description": model.describe(),
    }


def estimated_params(directory: Path) -> dict[str, float]:
    """Return the estimates saved in the estimation product ``directory`` (verified), by name."""
    return load_estimation(Path(directory)).params


def calibrated_params(directory: Path) -> dict[str, float]:
    """Return the param the estimation in ``directory`` calibrated jointly, by name (or none)."""
    return calibrated_value(load_estimation(Path(directory)).summary)


def variant_params(*, variant: Variant, model: Model) -> dict[str, Any]:
    """Return the params of a variant's built ``model``: defaults, then the overrides, sorted.

    A model with taste shocks gets its shipped default ``taste_shock_scale`` (see
    ``project.models.DEFAULT_TASTE_SHOCK_SCALES``) unless the variant sets it. Life-table
    survival probabilities mix men and women with ``DATA.female_share`` (src/project/config.py).
    """
    defaults = default_params_of(name=variant.model, model=model, female_share=DATA.female_share)
    if TASTE_SHOCK_SCALE in model.params_template:
        scale = DEFAULT_TASTE_SHOCK_SCALES.get(variant.model, variant.params.get(TASTE_SHOCK_SCALE))
        if scale is None:
            msg = (
                f"Variant {variant.name!r}: model {variant.model!r} has taste shocks but no "
                f"default {TASTE_SHOCK_SCALE!r}; set it in the variant's params."
            )
            raise ParamsError(msg)
        defaults[TASTE_SHOCK_SCALE] = scale
    unknown = sorted(set(variant.params) - set(defaults))
    if unknown:
        hint = (
            f" {TASTE_SHOCK_SCALE!r} needs taste shocks: add taste_shocks=True to its sizes."
            if TASTE_SHOCK_SCALE in unknown
            else ""
        )
        msg = (
            f"Variant {variant.name!r} overrides unknown params {unknown}; model "
            f"{variant.model!r} has {sorted(defaults)}.{hint}"
        )
        raise ParamsError(msg)
    return dict(sorted((defaults | variant.params).items()))


def simulation_specification(variant: Variant) -> dict[str, Any]:
    """Return the variant's simulation settings as JSON-serialisable data."""
    return asdict(variant.simulation)


def build_variant_model(*, model: str, sizes: dict[str, int | bool]) -> Model:
    """Return the shipped model ``model`` built with ``sizes`` (one object per process).

    Models are immutable, and JAX keeps a model's compiled programs with the model object: the
    same object for the same model, sizes and precision lets every task of a serial build (the
    solve, the simulation, the estimation, the validation, the welfare measure) reuse them
    instead of tracing them again. Raises ``ConfigurationError`` for an unknown model or size
    name, naming the known ones.
    """
    key = (model, json.dumps(sizes, sort_keys=True), bool(jax.config.jax_enable_x64))
    if key not in _MODELS:
        _MODELS[key] = _build_model(model=model, sizes=sizes)
    return _MODELS[key]


_MODELS: dict[tuple[str, str, bool], Model] = {}


def _build_model(*, model: str, sizes: dict[str, int | bool]) -> Model:
    if model not in MODEL_BUILDERS:
        msg = f"Unknown model {model!r} in a variant; shipped models: {sorted(MODEL_BUILDERS)}."
        raise ConfigurationError(msg)
    builder = MODEL_BUILDERS[model]
    known = [
        name
        for name, parameter in inspect.signature(builder).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    unknown = sorted(set(sizes) - set(known))
    if unknown:
        msg = f"Unknown sizes {unknown} for model {model!r}; its build_model takes {known}."
        raise ConfigurationError(msg)
    return builder(**sizes)


def solve_variant(
    *, specification: dict[str, Any], directory: Path, sources: Sequence[Path]
) -> bool:
    """Solve the specified model into ``directory`` unless it is up to date; say if solved.

    An existing solution counts only when every file matches its marker's digests and its
    fingerprint is the expected one; a damaged one is logged and solved again. A specification
    with ``processes`` > 1 is solved by that many processes (``project.launch``), which save
    the product together; it is then verified here.
    """
    expected = fingerprint(specification=specification, sources=sources)
    if _solved(directory, fingerprint=expected):
        logger.info("Solution of %r is up to date; not solving again.", specification["name"])
        return False
    if specification.get("processes", 1) == 1:
        solve_and_save(specification=specification, directory=directory, fingerprint=expected)
        return True
    with variant_precision(specification):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    solve_in_processes(
        specification=specification, model=model, directory=directory, fingerprint=expected
    )
    if not _solved(directory, fingerprint=expected):
        msg = (
            f"The processes that solved {specification['name']!r} exited without error but "
            f"published no intact solution in {directory}; run pytask again."
        )
        raise CheckpointError(msg)
    return True


def solve_and_save(*, specification: dict[str, Any], directory: Path, fingerprint: str) -> Solution:
    """Solve the specified model, save it with ``fingerprint`` and return it.

    In a multi-process solve every process calls it (``project.solve_worker``). It solves in
    the variant's precision and restores the process's after.
    """
    with variant_precision(specification):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        solution = solve(
            model=model, params=specification["params"], log_level=specification["log_level"]
        )
        save_solution(
            solution=solution,
            directory=directory,
            provenance={"variant": specification["name"], "fingerprint": fingerprint},
        )
    return solution


def _solved(directory: Path, *, fingerprint: str) -> bool:
    """Say whether ``directory`` holds an intact solution with ``fingerprint``."""
    found = intact_fingerprint(Path(directory), read=_solution_fingerprint, again="Solving")
    return found == fingerprint


def _solution_fingerprint(directory: Path) -> str | None:
    """Return the fingerprint of the solution in ``directory`` after verifying it."""
    verify_directory(directory, kind=KIND, hint=REBUILD_HINT)
    read_metadata(directory)
    return read_provenance(directory).get("fingerprint")


def _estimation_fingerprint(directory: Path) -> str | None:
    """Return the fingerprint of the estimate in ``directory`` after verifying it."""
    return load_estimation(directory).summary["provenance"].get("fingerprint")


def simulate_variant(
    *, specification: dict[str, Any], settings: dict[str, Any], solution_directory: Path
) -> SimulationResult:
    """Load a variant's solution and simulate its subjects with ``settings``.

    In the variant's precision; the process's is restored after.
    """
    settings = asdict(SimulationSettings(**settings))
    with variant_precision(specification):
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


def save_variant_bundle(
    *, result: SimulationResult, specification: Mapping[str, Any], directory: Path
) -> Path:
    """Save a variant's simulation bundle with the columns a reader of its panel needs.

    The model's own ``wealth_to_income`` (where its regimes define it: the SCF statistic the
    estimation matches) and the columns ``project.models.panel_columns_of`` derives (for
    ``lifecycle_normalised`` the unit of wealth and consumption, ``income_unit``). In the
    variant's precision, in which it was simulated (the shocks are drawn again in it).
    """
    with variant_precision(specification):
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
        targets = [RATIO_TARGET] if defines_ratio(model) else None
        columns = panel_columns_of(
            name=specification["model"],
            panel=result.to_dataframe(),
            model=model,
            params=dict(specification["params"]),
            seed=int(result.seed),
        )
        return save_bundle(
            result=result, directory=directory, additional_targets=targets, columns=columns
        )


def variant_precision(specification: Mapping[str, Any]) -> AbstractContextManager[None]:
    """Return a context in the variant's precision (float64 where ``x64``) that restores after."""
    return precision(x64=bool(specification["x64"]))


def load_variant_solution(*, specification: Mapping[str, Any], directory: Path) -> Solution:
    """Load the solution of the specified variant from its directory.

    Call it, and use the solution, inside ``variant_precision(specification)``: a solution read
    in another precision than it was solved in would be evaluated in that other precision.
    """
    if bool(jax.config.jax_enable_x64) != bool(specification["x64"]):
        wanted = "float64" if specification["x64"] else "float32"
        msg = (
            f"The solution of {specification['name']!r} is in {wanted}, and this process "
            f"computes in the other precision. Load and use it inside "
            "`with project.pipeline.variant_precision(specification):`."
        )
        raise ConfigurationError(msg)
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    return load_solution(directory=directory, model=model)


def solution_method(*, directory: Path) -> str:
    """Return the method that produced the solution saved in ``directory`` ("dcegm", "grid").

    Its metadata is checked against the marker's digest first.
    """
    verify_directory(Path(directory), kind=KIND, hint=REBUILD_HINT, names=("metadata.json",))
    return read_metadata(Path(directory)).get("method", "grid")


def load_panel(*, bundle_marker: Path) -> pd.DataFrame:
    """Read the simulated table of the bundle whose marker is ``bundle_marker`` (verified)."""
    return load_table(Path(bundle_marker).parent)


def estimate_variant_into(
    *,
    specification: dict[str, Any],
    moments_file: Path,
    initial_distribution: dict[str, Any],
    settings: dict[str, Any],
    directory: Path,
    sources: Sequence[Path],
) -> bool:
    """Estimate the variant into ``directory`` unless it is up to date; say if estimated.

    Fingerprinted like ``solve_variant``: the specification, the settings, the initial
    distribution, the moment table's bytes, the sources and package versions.
    """
    inputs = {
        "specification": specification,
        "settings": settings,
        "initial_distribution": initial_distribution,
        "moments": hashlib.sha256(Path(moments_file).read_bytes()).hexdigest(),
    }
    expected = fingerprint(specification=inputs, sources=sources)
    found = intact_fingerprint(Path(directory), read=_estimation_fingerprint, again="Estimating")
    if found == expected:
        logger.info("Estimate of %r is up to date; not estimating again.", specification["name"])
        return False
    with precision(x64=bool(settings.get("x64", True))):  # the estimation's own precision
        model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    estimate = estimate_calibrated if settings.get("calibration") else estimate_variant
    outcome = estimate(
        model=model,
        specification=specification,
        moments=pd.read_feather(moments_file),
        initial_distribution=initial_distribution,
        settings=settings,
    )
    save_estimation(outcome, directory=directory, provenance={"fingerprint": expected})
    return True
