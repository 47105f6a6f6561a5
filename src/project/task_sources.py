"""The source files each pipeline task runs, declared as its dependencies (tasks.py).

pytask does not follow imports: a task that calls library code depends on that code's files
only through these lists, so an edit to a module reruns exactly the tasks that run it. The
fingerprinted tasks (solve, estimate) also hash their lists into their fingerprints.
"""

from __future__ import annotations

from pathlib import Path

from project.config import PAPER, SRC


def _modules(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (SRC / folder).rglob("*.py"))


def _files(*names: str) -> list[Path]:
    return [SRC / name for name in names]


MODEL_SOURCES = [
    *sorted(p for folder in ("model", "models") for p in (SRC / folder).glob("*.py")),
    *_files("grids.py", "errors.py", "shocks.py", "taste_shocks.py", "regimes/spec.py"),
]
"""The modules that define a variant's model (its specification's ``description``)."""
ENGINE_SOURCES = [
    *_modules("model", "solver", "egm", "regimes", "models"),
    *_files(
        "grids.py",
        "points.py",
        "devices.py",
        "errors.py",
        "shocks.py",
        "taste_shocks.py",
        "_xla.py",
        "actions.py",
        "savings_grids.py",
        "deprecation.py",
    ),
]
"""Every module the solve imports (the model, both solvers, the shared helpers)."""
PROVENANCE_SOURCES = _files("provenance.py", "checkout.py")
PERSIST_SOURCES = [*_modules("persist"), *PROVENANCE_SOURCES]
PIPELINE_SOURCE = SRC / "pipeline.py"
SIMULATION_SOURCES = _modules("simulation")
ANALYSIS_BASE = _files(
    "analysis/style.py",
    "analysis/profiles.py",
    "analysis/notation.py",
    "calibration/panel.py",
    "provenance.py",
)
FIGURE_SOURCES = [*_files("analysis/figures.py", "analysis/policy_figures.py"), *ANALYSIS_BASE]
CALIBRATION_SOURCES = [*_modules("calibration"), *_files("analysis/style.py"), *PROVENANCE_SOURCES]
TABLE_OUTPUT = _files("analysis/table_output.py", "analysis/panel_statistics.py")
TABLE_SOURCES = [
    *_files("analysis/tables.py", "calibration/weighting.py"),
    *TABLE_OUTPUT,
    *ANALYSIS_BASE,
]
DATA_SOURCES = [*_modules("data"), *_files("errors.py", "persist/atomic.py"), *PROVENANCE_SOURCES]
"""The modules the data preparation runs."""
LAUNCH_SOURCES = _files("launch.py", "solve_worker.py")
"""What a multi-process solve runs besides the engine (``Variant.processes``)."""
SOLVE_SOURCES = [*ENGINE_SOURCES, *PERSIST_SOURCES, *LAUNCH_SOURCES, PIPELINE_SOURCE]
"""What the solve task depends on and its fingerprint hashes."""
ESTIMATE_SOURCES = [
    *_modules("estimation"),
    *ENGINE_SOURCES,
    *SIMULATION_SOURCES,
    *PERSIST_SOURCES,
    PIPELINE_SOURCE,
]
"""What the estimation task depends on and its fingerprint hashes (it solves and simulates)."""
ESTIMATES_READER_SOURCES = [*_modules("estimation"), *PERSIST_SOURCES]
"""What reading the estimates back runs (``project.pipeline.estimated_params``)."""
ESTIMATION_REPORT_SOURCES = [
    *_files("analysis/estimation.py", "analysis/identification.py", "analysis/tables.py"),
    *ANALYSIS_BASE,
]
ROBUSTNESS_TABLE_SOURCES = [
    *_files("analysis/robustness.py", "estimation/inference.py", "persist/manifest.py"),
    *TABLE_OUTPUT,
    *ANALYSIS_BASE,
]
"""What writing the robustness table of the estimates runs (from the estimation products)."""
VALIDATION_SOURCES = [
    *_files("analysis/validation.py", "analysis/accuracy.py"),
    *TABLE_OUTPUT,
    *ANALYSIS_BASE,
    *ENGINE_SOURCES,
    *PERSIST_SOURCES,
    PIPELINE_SOURCE,
]
WELFARE_SOURCES = [
    *_files("analysis/welfare.py", "analysis/welfare_text.py", "analysis/table_output.py"),
    *ANALYSIS_BASE,
    *_modules("calibration"),
    *_modules("estimation"),
    *SIMULATION_SOURCES,
    *SOLVE_SOURCES,
]
ROBUSTNESS_WELFARE_SOURCES = [*_files("analysis/robustness_welfare.py"), *WELFARE_SOURCES]
"""What the pension cut's λ under each robustness check runs (it solves both variants)."""
WELFARE_TABLE_SOURCES = [
    *_files("analysis/welfare_table.py", "analysis/welfare_text.py", "estimation/inference.py"),
    *TABLE_OUTPUT,
    *ANALYSIS_BASE,
]
"""What writing the welfare table runs (from ``welfare.json``)."""
NUMBERS_SOURCES = [
    *_files(
        "analysis/numbers.py",
        "analysis/welfare_text.py",
        "analysis/calibration_text.py",
        "analysis/estimation.py",
        "analysis/identification.py",
        "estimation/inference.py",
        "estimation/variant.py",
        "analysis/robustness.py",
        "data/scf.py",
    ),
    *TABLE_SOURCES,
]
PAPER_SOURCES = [
    *(PAPER / name for name in ("paper.typ", "template.typ", "references.bib")),
    *_files("analysis/paper.py"),
]
CATALOGUE_SOURCES = _files("catalogue.py", "provenance.py", "persist/atomic.py")
