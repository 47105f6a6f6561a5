"""The pipeline, declared: which task consumes which product. No logic lives here.

Per variant: ``define_model`` writes the variant's full specification (grids, params) to
``bld/<variant>/model.json``; ``solve`` reads it and writes the orbax solution directory, declared
through its marker ``COMPLETE.json`` (written last). The engine's source files are declared as
dependencies, so editing the solver reruns the solves.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

from pytask import PythonNode, task

from project.config import BLD, SRC, VARIANTS, Variant
from project.persist import MARKER_NAME, save_solution
from project.pipeline import solve_specification, variant_specification

ENGINE_SOURCES = [
    *sorted(p for folder in ("model", "solver", "models") for p in (SRC / folder).glob("*.py")),
    SRC / "grids.py",
]
PERSIST_SOURCES = sorted((SRC / "persist").glob("*.py"))

logging.basicConfig(level=logging.INFO, format="%(message)s")

for variant in VARIANTS.values():

    @task(id=variant.name)
    def task_define_model(
        variant_json: Annotated[
            str, PythonNode(value=json.dumps(asdict(variant), sort_keys=True), hash=True)
        ],
        config_source: Path = SRC / "config.py",
        pipeline_source: Path = SRC / "pipeline.py",
        produces: Path = BLD / variant.name / "model.json",
    ) -> None:
        """Write the variant's model specification."""
        specification = variant_specification(Variant(**json.loads(variant_json)))
        produces.parent.mkdir(parents=True, exist_ok=True)
        produces.write_text(json.dumps(specification, indent=2, sort_keys=True) + "\n")

    @task(id=variant.name)
    def task_solve(
        specification_file: Path = BLD / variant.name / "model.json",
        engine_sources: list[Path] = ENGINE_SOURCES,
        persist_sources: list[Path] = PERSIST_SOURCES,
        produces: Path = BLD / variant.name / "solution" / MARKER_NAME,
    ) -> None:
        """Solve the variant and save V and the policy (orbax)."""
        specification = json.loads(specification_file.read_text())
        solution = solve_specification(specification)
        save_solution(
            solution=solution, directory=produces.parent, extra={"variant": specification["name"]}
        )
