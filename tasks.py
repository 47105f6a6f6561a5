"""The pipeline, declared: which task consumes which product. No logic lives here.

Per variant (see ``VARIANTS`` in src/project/config.py):

- ``define_model`` writes the full model specification to ``bld/<variant>/model.json``;
- ``solve`` writes V and the policy to ``bld/<variant>/solution/`` (declared through its marker);
- ``simulate`` writes the simulation bundle to ``bld/<variant>/simulation/``; the default
  variant's table is also copied to ``bld/simulated_data.arrow``.

pytask reruns every task of this file when the file changes. The solve is fingerprinted (see
``project.pipeline``), so such a rerun returns at once unless the model or the engine changed.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict
from pathlib import Path

from pytask import PythonNode, task

from project.config import BLD, DEFAULT_VARIANT, SRC, VARIANTS
from project.persist import MARKER_NAME
from project.pipeline import (
    simulate_variant,
    simulation_specification,
    solve_variant,
    variant_specification,
    write_json_if_changed,
)

ENGINE_SOURCES = [
    *sorted(p for folder in ("model", "solver", "models") for p in (SRC / folder).glob("*.py")),
    SRC / "grids.py",
    SRC / "errors.py",
]
PERSIST_SOURCES = sorted((SRC / "persist").glob("*.py"))
SIMULATION_SOURCES = sorted((SRC / "simulation").glob("*.py"))

logging.basicConfig(level=logging.INFO, format="%(message)s")


def _hashed(value: object) -> PythonNode:
    """Return a node whose staleness follows the value's JSON text.

    Passed through ``@task(kwargs=...)``, which binds it per loop iteration; an ``Annotated``
    node would be evaluated lazily (postponed annotations) and see the last variant only.
    """
    return PythonNode(value=json.dumps(value, sort_keys=True), hash=True)


for variant in VARIANTS.values():
    variant_dir = BLD / variant.name

    @task(id=variant.name, kwargs={"variant_json": _hashed(asdict(variant))})
    def task_define_model(
        variant_json: str,
        engine_sources: list[Path] = ENGINE_SOURCES,
        pipeline_source: Path = SRC / "pipeline.py",
        produces: Path = variant_dir / "model.json",
    ) -> None:
        """Write the variant's model specification (only when it changed)."""
        variant_fields = json.loads(variant_json)
        specification = variant_specification(VARIANTS[variant_fields["name"]])
        write_json_if_changed(content=specification, path=produces)

    @task(id=variant.name)
    def task_solve(
        specification_file: Path = variant_dir / "model.json",
        engine_sources: list[Path] = ENGINE_SOURCES,
        persist_sources: list[Path] = PERSIST_SOURCES,
        produces: Path = variant_dir / "solution" / MARKER_NAME,
    ) -> None:
        """Solve the variant and save V and the policy (skipped when up to date)."""
        solve_variant(
            specification=json.loads(specification_file.read_text()),
            directory=produces.parent,
            sources=[*ENGINE_SOURCES, *PERSIST_SOURCES],
        )

    simulation_products = {"bundle": variant_dir / "simulation" / MARKER_NAME}
    if variant.name == DEFAULT_VARIANT:
        simulation_products["table"] = BLD / "simulated_data.arrow"

    @task(id=variant.name, kwargs={"settings_json": _hashed(simulation_specification(variant))})
    def task_simulate(
        settings_json: str,
        specification_file: Path = variant_dir / "model.json",
        solution_marker: Path = variant_dir / "solution" / MARKER_NAME,
        simulation_sources: list[Path] = SIMULATION_SOURCES,
        persist_sources: list[Path] = PERSIST_SOURCES,
        produces: dict[str, Path] = simulation_products,
    ) -> None:
        """Simulate the variant's subjects and save the bundle (and the default table)."""
        result = simulate_variant(
            specification=json.loads(specification_file.read_text()),
            settings=json.loads(settings_json),
            solution_directory=solution_marker.parent,
        )
        result.save(directory=produces["bundle"].parent)
        if "table" in produces:
            shutil.copyfile(produces["bundle"].parent / "simulated_data.arrow", produces["table"])
