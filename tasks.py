"""The pipeline, declared: which task consumes which product. No logic lives here.

Per variant (see ``VARIANTS`` in src/project/config.py):

- ``define_model`` writes the full model specification to ``bld/<variant>/model.json``;
- ``solve`` solves it (by DC-EGM where its sizes give a savings grid, else by grid search) and
  writes the solution to ``bld/<variant>/solution/`` (declared through its marker); its
  ``metadata.json``, the simulation bundle's and the parameter table record the method;
- ``simulate`` writes the simulation bundle to ``bld/<variant>/simulation/``; the default
  variant's table is also copied to ``bld/simulated_data.arrow``;
- ``calibrate`` reweights the simulated subjects to ``data/targets.csv``
  (``bld/<variant>/calibration/``);
- ``plot_policy_functions`` and ``plot_lifecycle_profiles`` write ``bld/figures/``.

Once: ``prepare_data`` turns the vendored real data (``data/scf/``, ``data/life_tables/``, see
data/README.md) into ``bld/data/scf_moments.arrow`` (with a Markdown copy) and
``bld/data/survival.arrow``, as chosen by ``DATA`` in src/project/config.py.

Across variants: ``plot_variant_comparison``, the tables in ``bld/tables/`` and the paper
(``bld/paper/paper.pdf``, compiled with pytask-latex when ``latexmk`` is on PATH, else skipped).

pytask reruns every task of this file when the file changes. The solve is fingerprinted (see
``project.pipeline``), so such a rerun returns at once unless the model or the engine changed.
Heavy modules (JAX, pandas, matplotlib) are imported inside the task bodies, so collecting the
pipeline, and a no-op rebuild, stays fast.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from concurrent.futures import Executor
from dataclasses import asdict
from pathlib import Path

# Workers that share a GPU must not each preallocate most of its memory; set before JAX starts
# (pytask-parallel's workers import this module too).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# dask's scheduler and workers log every start and stop at INFO: keep the build's output to
# warnings and errors unless the user configured dask's logging themselves.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")

import pytask
from pytask import PythonNode, task
from pytask_latex import compilation_steps
from pytask_parallel import ParallelBackend, registry

from project.analysis.paper import paper_inputs, remove_latex_by_products
from project.config import (
    BLD,
    CALIBRATION,
    DATA,
    DEFAULT_VARIANT,
    ESTIMATION,
    PAPER,
    SLURM_CLUSTER,
    SRC,
    VARIANTS,
)
from project.data.vendored import vendored_path
from project.errors import ConfigurationError
from project.logs import log_to_file
from project.nodes import directory_product
from project.persist import MARKER_NAME

MODEL_SOURCES = [
    *sorted(p for folder in ("model", "models") for p in (SRC / folder).glob("*.py")),
    *(SRC / name for name in ("grids.py", "errors.py", "shocks.py", "taste_shocks.py")),
    SRC / "regimes" / "spec.py",
]
ENGINE_SOURCES = [
    *sorted(
        p
        for folder in ("model", "solver", "egm", "regimes", "models")
        for p in (SRC / folder).rglob("*.py")
    ),
    *(
        SRC / name
        for name in (
            "grids.py",
            "points.py",
            "devices.py",
            "errors.py",
            "shocks.py",
            "taste_shocks.py",
            "_xla.py",
        )
    ),
]
"""Every module the solve imports (the model, both solvers, the shared helpers)."""
PERSIST_SOURCES = sorted((SRC / "persist").glob("*.py"))
PIPELINE_SOURCE = SRC / "pipeline.py"
SIMULATION_SOURCES = sorted((SRC / "simulation").glob("*.py"))
FIGURE_SOURCES = [SRC / "analysis" / n for n in ("figures.py", "style.py", "profiles.py")]
CALIBRATION_SOURCES = sorted((SRC / "calibration").glob("*.py"))
TABLE_SOURCES = [
    *(SRC / "analysis" / n for n in ("tables.py", "style.py", "profiles.py")),
    SRC / "calibration" / "weighting.py",
]
DATA_SOURCES = [
    *sorted((SRC / "data").glob("*.py")),
    SRC / "errors.py",
    SRC / "persist" / "atomic.py",
]
"""The modules the data preparation runs (pytask does not follow imports)."""
SOLVE_SOURCES = [*ENGINE_SOURCES, *PERSIST_SOURCES, PIPELINE_SOURCE]
"""What the solve task depends on and its fingerprint hashes."""
ESTIMATE_SOURCES = [
    *sorted((SRC / "estimation").glob("*.py")),
    *ENGINE_SOURCES,
    *SIMULATION_SOURCES,
    *PERSIST_SOURCES,
    PIPELINE_SOURCE,
]
"""What the estimation task depends on and its fingerprint hashes (it solves and simulates)."""
ESTIMATION_REPORT_SOURCES = [
    SRC / "analysis" / n for n in ("estimation.py", "style.py", "tables.py")
]
DATA_PRODUCTS = {
    "moments": BLD / "data" / "scf_moments.arrow",
    "moments_markdown": BLD / "data" / "scf_moments.md",
    "survival": BLD / "data" / "survival.arrow",
}
FIGURES, TABLES = BLD / "figures", BLD / "tables"

# Progress of our own code at INFO; other libraries' INFO chatter (orbax, absl, fontTools, dask)
# stays out of the build's output. Our records and all warnings are also appended to
# bld/logs/build.log (``project.logs``).
logging.basicConfig(level=logging.WARNING, format="%(message)s")
logging.getLogger("project").setLevel(logging.INFO)
log_to_file(BLD / "logs" / "build.log")  # every process of the build: main and workers


def _slurm_executor(n_workers: int) -> Executor:
    """Return a dask executor whose workers are SLURM jobs (``--parallel-backend custom``).

    Needs the optional dependencies: ``uv sync --extra cluster``. Settings: ``SLURM_CLUSTER``
    in src/project/config.py.
    """
    if shutil.which("sbatch") is None:
        msg = (
            "--parallel-backend custom starts SLURM jobs, but `sbatch` is not on PATH: run it "
            "on a SLURM login node, or use `pytask -n K` (loky) on this machine."
        )
        raise ConfigurationError(msg)
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    cluster = SLURMCluster(**SLURM_CLUSTER)
    cluster.scale(jobs=n_workers)
    return Client(cluster).get_executor()


registry.register_parallel_backend(ParallelBackend.CUSTOM, _slurm_executor)


def _hashed(value: object) -> PythonNode:
    """Return a node whose staleness follows the value's JSON text.

    Passed through ``@task(kwargs=...)``, which binds it per loop iteration; an ``Annotated``
    node would be evaluated lazily (postponed annotations) and see the last variant only.
    """
    return PythonNode(value=json.dumps(value, sort_keys=True), hash=True)


def _figure_paths(stem: str) -> dict[str, Path]:
    return {suffix: FIGURES / f"{stem}.{suffix}" for suffix in ("png", "pdf")}


def _table_paths(stem: str) -> dict[str, Path]:
    return {"tex": TABLES / f"{stem}.tex", "md": TABLES / f"{stem}.md"}


for variant in VARIANTS.values():
    variant_dir = BLD / variant.name

    model_fields = {k: v for k, v in asdict(variant).items() if k not in {"simulation", "estimate"}}
    model_fields["female_share"] = DATA.female_share  # mixes the life table's survival

    @task(id=variant.name, kwargs={"variant_json": _hashed(model_fields)})
    def task_define_model(
        variant_json: str,
        model_sources: list[Path] = MODEL_SOURCES,
        pipeline_source: Path = SRC / "pipeline.py",
        life_table_file: Path = vendored_path("us_life_table"),
        data_sources: list[Path] = DATA_SOURCES,
        produces: Path = variant_dir / "model.json",
    ) -> None:
        """Write the variant's model specification (only when it changed)."""
        from project.pipeline import variant_specification, write_json_if_changed

        variant_fields = json.loads(variant_json)
        specification = variant_specification(VARIANTS[variant_fields["name"]])
        write_json_if_changed(content=specification, path=produces)

    @task(id=variant.name)
    def task_solve(
        specification_file: Path = variant_dir / "model.json",
        sources: list[Path] = SOLVE_SOURCES,
        produces: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
    ) -> None:
        """Solve the variant and save V and the policy (skipped when up to date and intact)."""
        from project.pipeline import solve_variant

        solve_variant(
            specification=json.loads(specification_file.read_text()),
            directory=produces.parent,
            sources=sources,
        )

    simulation_products = {"bundle": directory_product(variant_dir / "simulation" / MARKER_NAME)}
    if variant.name == DEFAULT_VARIANT:
        simulation_products["table"] = BLD / "simulated_data.arrow"

    @task(id=variant.name, kwargs={"settings_json": _hashed(asdict(variant.simulation))})
    def task_simulate(
        settings_json: str,
        specification_file: Path = variant_dir / "model.json",
        solution_marker: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
        simulation_sources: list[Path] = SIMULATION_SOURCES,
        persist_sources: list[Path] = PERSIST_SOURCES,
        pipeline_source: Path = PIPELINE_SOURCE,
        produces: dict[str, Path] = simulation_products,
    ) -> None:
        """Simulate the variant's subjects and save the bundle (and the default table)."""
        from project.persist import save_bundle
        from project.persist.atomic import copy_atomically
        from project.pipeline import simulate_variant

        result = simulate_variant(
            specification=json.loads(specification_file.read_text()),
            settings=json.loads(settings_json),
            solution_directory=solution_marker.parent,
        )
        save_bundle(result=result, directory=produces["bundle"].parent)
        if "table" in produces:
            copy_atomically(produces["bundle"].parent / "simulated_data.arrow", produces["table"])

    calibration_dir = variant_dir / "calibration"

    @task(id=variant.name, kwargs={"settings_json": _hashed(CALIBRATION["settings"])})
    def task_calibrate(
        settings_json: str,
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        targets_file: Path = CALIBRATION["targets"],
        calibration_sources: list[Path] = CALIBRATION_SOURCES,
        variant_name: str = variant.name,
        produces: Path = directory_product(calibration_dir / MARKER_NAME),
    ) -> None:
        """Reweight the simulated subjects to the variant's aggregate targets."""
        import pandas as pd

        from project.calibration import calibrate_from_panel, save_calibration
        from project.pipeline import load_panel

        outcome = calibrate_from_panel(
            panel=load_panel(bundle_marker=bundle_marker),
            targets=pd.read_csv(targets_file),
            settings=json.loads(settings_json),
            variant=variant_name,
        )
        save_calibration(outcome, directory=produces.parent)

    if variant.estimate:

        @task(
            id=variant.name,
            kwargs={
                "settings_json": _hashed(asdict(ESTIMATION)),
                "distribution_json": _hashed(variant.simulation.initial_distribution),
            },
        )
        def task_estimate(
            settings_json: str,
            distribution_json: str,
            specification_file: Path = variant_dir / "model.json",
            moments_file: Path = DATA_PRODUCTS["moments"],
            sources: list[Path] = ESTIMATE_SOURCES,
            produces: Path = directory_product(variant_dir / "estimation" / MARKER_NAME),
        ) -> None:
            """Estimate the variant's preferences from the SCF moments by MSM."""
            from project.pipeline import estimate_variant_into

            estimate_variant_into(
                specification=json.loads(specification_file.read_text()),
                moments_file=moments_file,
                initial_distribution=json.loads(distribution_json),
                settings=json.loads(settings_json),
                directory=produces.parent,
                sources=sources,
            )

    @task(id=variant.name)
    def task_plot_policy_functions(
        specification_file: Path = variant_dir / "model.json",
        solution_marker: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
        analysis_sources: list[Path] = FIGURE_SOURCES,
        produces: dict[str, Path] = _figure_paths(f"policy_functions_{variant.name}"),
    ) -> None:
        """Plot V and optimal consumption against wealth by age and type."""
        from project.analysis import plot_policy_functions
        from project.pipeline import load_variant_solution

        solution = load_variant_solution(
            specification=json.loads(specification_file.read_text()),
            directory=solution_marker.parent,
        )
        plot_policy_functions(solution=solution, paths=produces)

    @task(id=variant.name)
    def task_plot_lifecycle_profiles(
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        analysis_sources: list[Path] = FIGURE_SOURCES,
        variant_name: str = variant.name,
        produces: dict[str, Path] = _figure_paths(f"lifecycle_profiles_{variant.name}"),
    ) -> None:
        """Plot wealth, consumption and retirement by age and type."""
        from project.analysis import plot_lifecycle_profiles
        from project.pipeline import load_panel

        plot_lifecycle_profiles(
            panel=load_panel(bundle_marker=bundle_marker), variant=variant_name, paths=produces
        )


@task(kwargs={"settings_json": _hashed(asdict(DATA))})
def task_prepare_data(
    settings_json: str,
    scf_file: Path = vendored_path("scf_wealth_income_stats"),
    life_table_file: Path = vendored_path("us_life_table"),
    data_sources: list[Path] = DATA_SOURCES,
    produces: dict[str, Path] = DATA_PRODUCTS,
) -> None:
    """Write the SCF moments by age group and the survival probabilities (checksums checked)."""
    from project.data import prepare_data

    prepare_data(settings=json.loads(settings_json), products=produces)


ESTIMATION_MARKERS = {
    v: directory_product(BLD / v / "estimation" / MARKER_NAME)
    for v, variant in VARIANTS.items()
    if variant.estimate
}


ESTIMATION_REPORT_PRODUCTS = {
    **{f"estimates_{k}": p for k, p in _table_paths("estimates").items()},
    **{f"moment_fit_{k}": p for k, p in _table_paths("moment_fit").items()},
    **{f"figure_{k}": p for k, p in _figure_paths("estimation_fit").items()},
}


def task_estimation_report(
    estimation_markers: dict[str, Path] = ESTIMATION_MARKERS,
    analysis_sources: list[Path] = ESTIMATION_REPORT_SOURCES,
    produces: dict[str, Path] = ESTIMATION_REPORT_PRODUCTS,
) -> None:
    """Tabulate the estimates and the moment fit; plot model against SCF data by age."""
    from project.analysis import write_table
    from project.analysis.estimation import (
        estimates_table,
        estimation_notes,
        j_test_notes,
        moment_fit_table,
        plot_estimation_fit,
    )
    from project.estimation.products import load_estimation

    estimates = {v: load_estimation(m.parent) for v, m in estimation_markers.items()}
    notes = j_test_notes(estimates) + estimation_notes(estimates)
    write_table(
        table=estimates_table(estimates),
        latex_path=produces["estimates_tex"],
        markdown_path=produces["estimates_md"],
        label="tab:estimates",
        caption="Preferences estimated by simulated moments from SCF wealth-to-income ratios "
        "(standard errors include the simulation noise)." + notes,
        group_column="Variant",
        formats={"Estimate": "{:.4f}", "Std. error": "{:.4f}"},
    )
    write_table(
        table=moment_fit_table(estimates),
        latex_path=produces["moment_fit_tex"],
        markdown_path=produces["moment_fit_md"],
        label="tab:moment_fit",
        caption="Mean log wealth-to-income by age group: SCF data and the model at the estimates",
        group_column="Variant",
        formats={"Data s.e.": "{:.4f}"},
    )
    plot_estimation_fit(
        estimates=estimates,
        paths={
            k.removeprefix("figure_"): p for k, p in produces.items() if k.startswith("figure_")
        },
    )


BUNDLE_MARKERS = {v: directory_product(BLD / v / "simulation" / MARKER_NAME) for v in VARIANTS}
SPECIFICATIONS = {v: BLD / v / "model.json" for v in VARIANTS}
SOLUTION_MARKERS = {v: directory_product(BLD / v / "solution" / MARKER_NAME) for v in VARIANTS}


def task_plot_variant_comparison(
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    analysis_sources: list[Path] = FIGURE_SOURCES,
    produces: dict[str, Path] = _figure_paths("variant_comparison"),
) -> None:
    """Compare retirement, consumption and wealth profiles across variants."""
    from project.analysis import plot_variant_comparison
    from project.pipeline import load_panel

    panels = {v: load_panel(bundle_marker=m) for v, m in bundle_markers.items()}
    plot_variant_comparison(panels=panels, paths=produces)


CALIBRATION_MARKERS = {
    v: directory_product(BLD / v / "calibration" / MARKER_NAME) for v in VARIANTS
}


def task_summary_statistics_table(
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    calibration_markers: dict[str, Path] = CALIBRATION_MARKERS,
    analysis_sources: list[Path] = TABLE_SOURCES,
    produces: dict[str, Path] = _table_paths("summary_statistics"),
) -> None:
    """Tabulate simulated outcomes by variant and age bracket, weighted by the calibration."""
    from project.analysis import summary_statistics, write_table
    from project.calibration import load_calibration
    from project.pipeline import load_panel

    panels = {v: load_panel(bundle_marker=m) for v, m in bundle_markers.items()}
    weights = {v: load_calibration(m.parent).weights for v, m in calibration_markers.items()}
    write_table(
        table=summary_statistics(panels=panels, weights=weights),
        latex_path=produces["tex"],
        markdown_path=produces["md"],
        label="tab:summary_statistics",
        caption="Simulated outcomes of the living by variant and age bracket (means weighted by "
        "the calibrated subject weights; N: subject-years)",
        group_column="Variant",
    )


def task_parameter_table(
    specification_files: dict[str, Path] = SPECIFICATIONS,
    solution_markers: dict[str, Path] = SOLUTION_MARKERS,
    analysis_sources: list[Path] = TABLE_SOURCES,
    produces: dict[str, Path] = _table_paths("parameters"),
) -> None:
    """Tabulate the model parameters, grid sizes and solution method of every variant."""
    from project.analysis import parameter_table, write_table
    from project.pipeline import solution_method

    specifications = {v: json.loads(p.read_text()) for v, p in specification_files.items()}
    methods = {v: solution_method(directory=m.parent) for v, m in solution_markers.items()}
    write_table(
        table=parameter_table(specifications=specifications, methods=methods),
        label="tab:parameters",
        latex_path=produces["tex"],
        markdown_path=produces["md"],
        caption="Model parameters, grid sizes and solution method by variant",
        font_size="footnotesize",
    )


@pytask.mark.skipif(
    shutil.which("latexmk") is None,
    reason="latexmk is not on PATH: install TeX Live and latexmk to build the paper",
)
@pytask.mark.latex(
    script=PAPER / "paper.tex",
    document=BLD / "paper" / "paper.pdf",
    compilation_steps=[
        compilation_steps.latexmk(
            options=("--pdf", "--interaction=nonstopmode", "--halt-on-error", "--cd", "--silent")
        ),
        lambda path_to_tex, path_to_document: remove_latex_by_products(path_to_document),
    ],
)
def task_compile_paper(inputs: dict[str, Path] = paper_inputs(bld=BLD)) -> None:
    """Compile the paper from the generated figures and tables."""
