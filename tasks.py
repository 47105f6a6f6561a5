"""The pipeline, declared: which task consumes which product. No logic lives here.

Once, on the status quo (``STATUS_QUO``): ``define_estimation_model`` writes its specification
before estimation to ``<bld>/<status quo>/estimation_model.json``; ``estimate`` estimates its
preferences (relative risk aversion and the discount factor) from the SCF by MSM, with the
cost of working calibrated jointly to a claiming fact, into ``<bld>/<status quo>/estimation/``;
``estimate_robustness`` estimates them again for each robustness check (``ROBUSTNESS``: one
assumption changed) into ``<bld>/robustness/<check>/estimation/``, which only the robustness
table and the paper read; ``estimate_replication`` estimates a published buffer-stock model
again on its own data.

Per variant (see ``VARIANTS`` in src/project/config.py), every one at those estimates and that
calibrated cost:

- ``define_model`` writes the full model specification, the estimated and calibrated
  preferences in place of the defaults, to ``<bld>/<variant>/model.json``;
- ``solve`` solves it (by DC-EGM) into ``<bld>/<variant>/solution/`` (declared through its
  marker);
- ``simulate`` writes the simulation bundle to ``<bld>/<variant>/simulation/``; the default
  variant's table is also copied to ``<bld>/simulated_data.arrow``;
- ``calibrate`` reweights the simulated subjects to ``data/targets.csv`` (synthetic targets:
  a check of the reweighting, which no other product uses);
- the ``plot_*`` tasks write ``<bld>/figures/``.

Once: ``prepare_data`` turns the vendored real data into ``<bld>/data/``. Across variants: the
comparison figure, the tables (``<bld>/tables/``: LaTeX, Typst and Markdown), the validation
of the solution method, the benefit cut's welfare measure, the paper's numbers, the paper
(``<bld>/paper/paper.pdf``, Typst) and the catalogue of every product (``<bld>/index.md``).
``<bld>`` is ``bld/``, or ``bld/smoke/`` with ``PROJECT_PROFILE=smoke``.

A task's state is its own source (``project.task_hooks``): editing one task reruns it and what
depends on its products, nothing else. The modules a task runs are its dependencies, found in
its code (``@runs_sources``, ``project.task_sources``). The solve and the estimation are
fingerprinted as well, so they return at once when their inputs did not change. Heavy modules
(JAX, pandas, matplotlib) are imported inside the task bodies, so collecting the pipeline, and a
no-op rebuild, stays fast.
"""

from __future__ import annotations

import gc
import json
import logging
import os
from dataclasses import asdict
from pathlib import Path

from project.config import (
    BLD,
    BUILD_GC_THRESHOLDS,
    CALIBRATION,
    COMPILATION_CACHE,
    DATA,
    DEFAULT_VARIANT,
    ESTIMATION,
    PAPER,
    REPLICATION,
    ROBUSTNESS,
    ROOT,
    STATUS_QUO,
    VALIDATION_FACTORS,
    VARIANTS,
)

# Workers that share a GPU must not each preallocate most of its memory; compiled programs are
# cached on disk and reused by every process and build (project.config.COMPILATION_CACHE); set
# before JAX starts (pytask-parallel's workers import this module too).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(COMPILATION_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
# The smoke build traces many small programs: full garbage collections less often, in the main
# process and in the workers, which import this module (project.config.BUILD_GC_THRESHOLDS).
if BUILD_GC_THRESHOLDS is not None:
    gc.set_threshold(*BUILD_GC_THRESHOLDS)
# dask's scheduler and workers log every start and stop at INFO: keep the build's output to
# warnings and errors unless the user configured dask's logging themselves.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")

from pytask import PythonNode, task
from pytask_parallel import ParallelBackend, registry

from project.analysis.paper import PAPER_SOURCES, paper_inputs
from project.cluster import slurm_executor
from project.data.vendored import vendored_path
from project.logs import log_to_file
from project.nodes import directory_product, source_files
from project.persist import MARKER_NAME
from project.task_sources import RUNS, runs_sources

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


registry.register_parallel_backend(ParallelBackend.CUSTOM, slurm_executor)


def _hashed(value: object) -> PythonNode:
    """Return a node whose staleness follows the value's JSON text.

    Passed through ``@task(kwargs=...)``, which binds it per loop iteration; an ``Annotated``
    node would be evaluated lazily (postponed annotations) and see the last variant only.
    """
    return PythonNode(value=json.dumps(value, sort_keys=True), hash=True)


DECLARED_FILES: list[Path] = []
"""Every figure and table file declared below (the catalogue depends on all of them)."""


def _figure_paths(stem: str) -> dict[str, Path]:
    paths = {suffix: FIGURES / f"{stem}.{suffix}" for suffix in ("png", "pdf")}
    DECLARED_FILES.extend(paths.values())
    return paths


def _table_paths(stem: str) -> dict[str, Path]:
    paths = {suffix: TABLES / f"{stem}.{suffix}" for suffix in ("tex", "typ", "md")}
    DECLARED_FILES.extend(paths.values())
    return paths


def _model_fields(name: str) -> dict[str, object]:
    """Return what a variant's specification is made of (hashed: an edit reruns its chain)."""
    fields = {k: v for k, v in asdict(VARIANTS[name]).items() if k != "simulation"}
    return fields | {"female_share": DATA.female_share}  # mixes the life table's survival


ESTIMATION_DIR = BLD / STATUS_QUO / "estimation"
ESTIMATION_MARKER = directory_product(ESTIMATION_DIR / MARKER_NAME)
ESTIMATION_MODEL = BLD / STATUS_QUO / "estimation_model.json"


@task(kwargs={"variant_json": _hashed(_model_fields(STATUS_QUO))})
@runs_sources
def task_define_estimation_model(
    variant_json: str,
    sources: list[Path] = RUNS,
    life_table_file: Path = vendored_path("us_life_table"),
    produces: Path = ESTIMATION_MODEL,
) -> None:
    """Write the status quo's specification before estimation: the estimation's model."""
    from project.pipeline import variant_specification
    from project.up_to_date import write_json_if_changed

    specification = variant_specification(VARIANTS[json.loads(variant_json)["name"]])
    write_json_if_changed(content=specification, path=produces)


@task(
    kwargs={
        "settings_json": _hashed(asdict(ESTIMATION)),
        "distribution_json": _hashed(VARIANTS[STATUS_QUO].simulation.initial_distribution),
    },
)
@runs_sources
def task_estimate(
    settings_json: str,
    distribution_json: str,
    specification_file: Path = ESTIMATION_MODEL,
    moments_file: Path = DATA_PRODUCTS["moments"],
    sources: list[Path] = RUNS,
    produces: Path = ESTIMATION_MARKER,
) -> None:
    """Estimate the status quo's preferences from the SCF moments by MSM (once)."""
    from project.pipeline import estimate_variant_into
    from project.up_to_date import read_specification

    estimate_variant_into(
        specification=read_specification(specification_file),
        moments_file=moments_file,
        initial_distribution=json.loads(distribution_json),
        settings=json.loads(settings_json),
        directory=produces.parent,
        sources=sources,
    )


ROBUSTNESS_MARKERS = {
    check.name: directory_product(BLD / "robustness" / check.name / "estimation" / MARKER_NAME)
    for check in ROBUSTNESS
}

for check in ROBUSTNESS:

    @task(
        id=check.name,
        kwargs={
            "check_json": _hashed(asdict(check)),
            "settings_json": _hashed(asdict(ESTIMATION)),
            "distribution_json": _hashed(VARIANTS[STATUS_QUO].simulation.initial_distribution),
        },
    )
    @runs_sources
    def task_estimate_robustness(
        check_json: str,
        settings_json: str,
        distribution_json: str,
        specification_file: Path = ESTIMATION_MODEL,
        estimation_marker: Path = ESTIMATION_MARKER,
        moments_file: Path = DATA_PRODUCTS["moments"],
        sources: list[Path] = RUNS,
        produces: Path = ROBUSTNESS_MARKERS[check.name],
    ) -> None:
        """Estimate the status quo's preferences again with one assumption changed."""
        from project.estimation.robustness import robustness_settings, robustness_specification
        from project.pipeline import calibrated_params, estimate_variant_into, estimated_params
        from project.up_to_date import read_specification

        check, settings = json.loads(check_json), json.loads(settings_json)
        calibrated = calibrated_params(estimation_marker.parent)
        estimate_variant_into(
            specification=robustness_specification(
                check=check,
                specification=read_specification(specification_file),
                protected=[*settings["estimated"], *calibrated],
            ),
            moments_file=moments_file,
            initial_distribution=json.loads(distribution_json),
            settings=robustness_settings(
                check=check,
                settings=settings,
                estimates=estimated_params(estimation_marker.parent),
                calibrated=calibrated,
            ),
            directory=produces.parent,
            sources=sources,
        )


REPLICATION_MARKER = directory_product(BLD / "replication" / "estimation" / MARKER_NAME)
REPLICATION_PROFILES = vendored_path(f"profiles_{REPLICATION.calibration}")
REPLICATION_TABLES = {
    "estimates": _table_paths("replication"),
    "fit": _table_paths("replication_fit"),
}


@task(kwargs={"settings_json": _hashed(asdict(REPLICATION))})
@runs_sources
def task_estimate_replication(
    settings_json: str,
    profiles_file: Path = REPLICATION_PROFILES,
    households_file: Path = vendored_path("scf_wealth_income_ratios"),
    sources: list[Path] = RUNS,
    produces: Path = REPLICATION_MARKER,
) -> None:
    """Estimate the published buffer-stock model again, on its own data and calibration."""
    from project.estimation.replication import estimate_replication_into

    estimate_replication_into(
        settings=json.loads(settings_json),
        profiles_file=profiles_file,
        households_file=households_file,
        directory=produces.parent,
    )


@task(kwargs={"settings_json": _hashed(asdict(REPLICATION))})
@runs_sources
def task_replication_tables(
    settings_json: str,
    replication_marker: Path = REPLICATION_MARKER,
    sources: list[Path] = RUNS,
    produces: dict[str, dict[str, Path]] = REPLICATION_TABLES,
) -> None:
    """Tabulate the published estimates beside ours, and the medians' fit."""
    from project.analysis.replication import write_replication_tables
    from project.estimation.products import load_estimation
    from project.provenance import product_provenance

    settings = json.loads(settings_json)
    write_replication_tables(
        saved=load_estimation(replication_marker.parent),
        paths=produces,
        provenance=product_provenance(config=settings, seed=settings["seed"]),
    )


for variant in VARIANTS.values():
    variant_dir = BLD / variant.name

    @task(id=variant.name, kwargs={"variant_json": _hashed(_model_fields(variant.name))})
    @runs_sources
    def task_define_model(
        variant_json: str,
        estimation_marker: Path = ESTIMATION_MARKER,
        sources: list[Path] = RUNS,
        life_table_file: Path = vendored_path("us_life_table"),
        produces: Path = variant_dir / "model.json",
    ) -> None:
        """Write the variant's model specification at the estimates (only when it changed)."""
        from project.pipeline import calibrated_params, estimated_params, variant_specification
        from project.up_to_date import write_json_if_changed

        specification = variant_specification(
            VARIANTS[json.loads(variant_json)["name"]],
            estimates=estimated_params(estimation_marker.parent),
            calibrated=calibrated_params(estimation_marker.parent),
        )
        write_json_if_changed(content=specification, path=produces)

    @task(id=variant.name)
    @runs_sources
    def task_solve(
        specification_file: Path = variant_dir / "model.json",
        sources: list[Path] = RUNS,
        produces: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
    ) -> None:
        """Solve the variant and save V and the policy (skipped when up to date and intact)."""
        from project.pipeline import solve_variant
        from project.up_to_date import read_specification

        solve_variant(
            specification=read_specification(specification_file),
            directory=produces.parent,
            sources=sources,
        )

    simulation_products = {"bundle": directory_product(variant_dir / "simulation" / MARKER_NAME)}
    if variant.name == DEFAULT_VARIANT:
        simulation_products["table"] = BLD / "simulated_data.arrow"

    @task(id=variant.name, kwargs={"settings_json": _hashed(asdict(variant.simulation))})
    @runs_sources
    def task_simulate(
        settings_json: str,
        specification_file: Path = variant_dir / "model.json",
        solution_marker: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
        sources: list[Path] = RUNS,
        produces: dict[str, Path] = simulation_products,
    ) -> None:
        """Simulate the variant's subjects and save the bundle (and the default table)."""
        from project.persist.atomic import copy_atomically
        from project.pipeline import save_variant_bundle, simulate_variant
        from project.up_to_date import read_specification

        specification = read_specification(specification_file)
        result = simulate_variant(
            specification=specification,
            settings=json.loads(settings_json),
            solution_directory=solution_marker.parent,
        )
        save_variant_bundle(
            result=result, specification=specification, directory=produces["bundle"].parent
        )
        if "table" in produces:
            copy_atomically(produces["bundle"].parent / "simulated_data.arrow", produces["table"])

    calibration_dir = variant_dir / "calibration"

    @task(id=variant.name, kwargs={"settings_json": _hashed(CALIBRATION["settings"])})
    @runs_sources
    def task_calibrate(
        settings_json: str,
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        targets_file: Path = CALIBRATION["targets"],
        sources: list[Path] = RUNS,
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

    @task(id=variant.name)
    @runs_sources
    def task_plot_policy_functions(
        specification_file: Path = variant_dir / "model.json",
        solution_marker: Path = directory_product(variant_dir / "solution" / MARKER_NAME),
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        sources: list[Path] = RUNS,
        produces: dict[str, Path] = _figure_paths(f"policy_functions_{variant.name}"),
    ) -> None:
        """Plot V and consumption against cash on hand by age and regime, where subjects live."""
        from project.analysis import plot_policy_functions
        from project.pipeline import load_panel, load_variant_solution, variant_precision
        from project.provenance import product_provenance
        from project.up_to_date import read_specification

        specification = read_specification(specification_file)
        with variant_precision(specification):
            plot_policy_functions(
                solution=load_variant_solution(
                    specification=specification, directory=solution_marker.parent
                ),
                panel=load_panel(bundle_marker=bundle_marker),
                variant=specification["name"],
                paths=produces,
                provenance=product_provenance(config=specification),
            )

    @task(id=variant.name, kwargs={"settings_json": _hashed(asdict(variant.simulation))})
    @runs_sources
    def task_plot_lifecycle_profiles(
        settings_json: str,
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        sources: list[Path] = RUNS,
        variant_name: str = variant.name,
        produces: dict[str, Path] = _figure_paths(f"lifecycle_profiles_{variant.name}"),
    ) -> None:
        """Plot wealth, consumption, the wealth-to-income ratio and retirement by age."""
        from project.analysis import plot_lifecycle_profiles
        from project.pipeline import load_panel
        from project.provenance import product_provenance

        settings = json.loads(settings_json)
        plot_lifecycle_profiles(
            panel=load_panel(bundle_marker=bundle_marker),
            variant=variant_name,
            paths=produces,
            provenance=product_provenance(config=settings, seed=settings["seed"]),
        )

    @task(id=variant.name, kwargs={"settings_json": _hashed(asdict(variant.simulation))})
    @runs_sources
    def task_plot_retirement_policy(
        settings_json: str,
        bundle_marker: Path = directory_product(variant_dir / "simulation" / MARKER_NAME),
        sources: list[Path] = RUNS,
        variant_name: str = variant.name,
        produces: dict[str, Path] = _figure_paths(f"retirement_policy_{variant.name}"),
    ) -> None:
        """Plot the share of workers who claim by age and wealth third."""
        from project.analysis import plot_retirement_policy
        from project.pipeline import load_panel
        from project.provenance import product_provenance

        settings = json.loads(settings_json)
        plot_retirement_policy(
            panel=load_panel(bundle_marker=bundle_marker),
            variant=variant_name,
            paths=produces,
            provenance=product_provenance(config=settings, seed=settings["seed"]),
        )


@task(kwargs={"settings_json": _hashed(asdict(DATA))})
@runs_sources
def task_prepare_data(
    settings_json: str,
    scf_file: Path = vendored_path("scf_wealth_income_stats"),
    life_table_file: Path = vendored_path("us_life_table"),
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = DATA_PRODUCTS,
) -> None:
    """Write the SCF moments by age group and the survival probabilities (checksums checked)."""
    from project.data import prepare_data

    prepare_data(settings=json.loads(settings_json), products=produces)


ESTIMATION_MARKERS = {STATUS_QUO: ESTIMATION_MARKER}
"""The estimates the report tabulates: the status quo's."""
BUNDLE_MARKERS = {v: directory_product(BLD / v / "simulation" / MARKER_NAME) for v in VARIANTS}
SPECIFICATIONS = {v: BLD / v / "model.json" for v in VARIANTS}
SOLUTION_MARKERS = {v: directory_product(BLD / v / "solution" / MARKER_NAME) for v in VARIANTS}
CALIBRATION_MARKERS = {
    v: directory_product(BLD / v / "calibration" / MARKER_NAME) for v in VARIANTS
}
RESULTS = {
    "validation": BLD / "results" / "validation.json",
    "welfare": BLD / "results" / "welfare.json",
    "robustness_welfare": BLD / "results" / "robustness_welfare.json",
}
ESTIMATION_REPORT_PRODUCTS = {
    **{f"estimates_{k}": p for k, p in _table_paths("estimates").items()},
    **{f"moment_fit_{k}": p for k, p in _table_paths("moment_fit").items()},
    **{f"estimation_searches_{k}": p for k, p in _table_paths("estimation_searches").items()},
    **{f"identification_{k}": p for k, p in _table_paths("identification").items()},
    **{f"profiles_{k}": p for k, p in _figure_paths("estimation_profiles").items()},
    **{f"figure_{k}": p for k, p in _figure_paths("estimation_fit").items()},
}


@task(kwargs={"settings_json": _hashed(asdict(ESTIMATION))})
@runs_sources
def task_estimation_report(
    settings_json: str,
    estimation_markers: dict[str, Path] = ESTIMATION_MARKERS,
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = ESTIMATION_REPORT_PRODUCTS,
) -> None:
    """Tabulate the estimates and the moment fit; plot model against SCF data by age."""
    from project.analysis.estimation import write_estimation_report
    from project.estimation.products import load_estimation
    from project.provenance import product_provenance

    settings = json.loads(settings_json)
    write_estimation_report(
        estimates={v: load_estimation(m.parent) for v, m in estimation_markers.items()},
        paths=produces,
        provenance=product_provenance(config=settings, seed=settings["seed"]),
    )


ROBUSTNESS_SPECS = {check.name: asdict(check) for check in ROBUSTNESS}
WELFARE_SPECIFICATIONS = SPECIFICATIONS
"""The status quo's and the counterfactual's specifications."""


@task(kwargs={"specs_json": _hashed(ROBUSTNESS_SPECS)})
@runs_sources
def task_robustness_welfare(
    specs_json: str,
    specification_files: dict[str, Path] = WELFARE_SPECIFICATIONS,
    robustness_markers: dict[str, Path] = ROBUSTNESS_MARKERS,
    bundle_marker: Path = BUNDLE_MARKERS[DEFAULT_VARIANT],
    sources: list[Path] = RUNS,
    produces: Path = RESULTS["robustness_welfare"],
) -> None:
    """Measure the benefit cut's λ at each robustness check's estimates and assumptions."""
    from project.analysis.robustness_welfare import write_robustness_welfare
    from project.estimation.products import load_estimation
    from project.up_to_date import read_specification

    write_robustness_welfare(
        specifications={v: read_specification(p) for v, p in specification_files.items()},
        checks={name: load_estimation(m.parent) for name, m in robustness_markers.items()},
        specs=json.loads(specs_json),
        bundle_directory=bundle_marker.parent,
        path=produces,
    )


@task(kwargs={"specs_json": _hashed(ROBUSTNESS_SPECS)})
@runs_sources
def task_robustness_table(
    specs_json: str,
    estimation_marker: Path = ESTIMATION_MARKER,
    robustness_markers: dict[str, Path] = ROBUSTNESS_MARKERS,
    results: dict[str, Path] = RESULTS,
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = _table_paths("robustness"),
) -> None:
    """Tabulate the estimates and λ of every robustness check beside the status quo's."""
    from project.analysis.robustness import read_welfare, write_robustness_table
    from project.estimation.products import load_estimation
    from project.provenance import product_provenance

    specs = json.loads(specs_json)
    write_robustness_table(
        baseline=load_estimation(estimation_marker.parent),
        checks={name: load_estimation(m.parent) for name, m in robustness_markers.items()},
        specs=specs,
        welfare=read_welfare(results),
        paths=produces,
        provenance=product_provenance(config=specs),
    )


@runs_sources
def task_plot_variant_comparison(
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = _figure_paths("variant_comparison"),
) -> None:
    """Compare retirement, consumption and wealth profiles across variants."""
    from project.analysis import plot_variant_comparison
    from project.pipeline import load_panel
    from project.provenance import product_provenance

    plot_variant_comparison(
        panels={v: load_panel(bundle_marker=m) for v, m in bundle_markers.items()},
        paths=produces,
        provenance=product_provenance(config=sorted(bundle_markers)),
    )


SUMMARY_TABLES = {
    "summary_statistics": _table_paths("summary_statistics"),
    "claiming_ages": _table_paths("claiming_ages"),
}
VALIDATION_PRODUCTS = {"result": RESULTS["validation"], **_table_paths("validation")}


@runs_sources
def task_summary_tables(
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    sources: list[Path] = RUNS,
    produces: dict[str, dict[str, Path]] = SUMMARY_TABLES,
) -> None:
    """Tabulate the living's outcomes and the claiming ages by variant."""
    from project.analysis.tables import write_summary_tables
    from project.pipeline import load_panel
    from project.provenance import product_provenance

    write_summary_tables(
        panels={v: load_panel(bundle_marker=m) for v, m in bundle_markers.items()},
        paths=produces,
        provenance=product_provenance(config=sorted(bundle_markers)),
    )


@runs_sources
def task_parameter_table(
    specification_files: dict[str, Path] = SPECIFICATIONS,
    solution_markers: dict[str, Path] = SOLUTION_MARKERS,
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = _table_paths("parameters"),
) -> None:
    """Tabulate the model parameters, grid sizes and solution method of every variant."""
    from project.analysis.tables import write_parameter_table
    from project.pipeline import solution_method
    from project.provenance import product_provenance
    from project.up_to_date import read_specification

    specifications = {v: read_specification(p) for v, p in specification_files.items()}
    write_parameter_table(
        specifications=specifications,
        methods={v: solution_method(directory=m.parent) for v, m in solution_markers.items()},
        paths=produces,
        provenance=product_provenance(config=specifications),
    )


@task(kwargs={"factors_json": _hashed(VALIDATION_FACTORS)})
@runs_sources
def task_validate_solution_method(
    factors_json: str,
    specification_file: Path = SPECIFICATIONS[DEFAULT_VARIANT],
    solution_marker: Path = SOLUTION_MARKERS[DEFAULT_VARIANT],
    bundle_marker: Path = BUNDLE_MARKERS[DEFAULT_VARIANT],
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = VALIDATION_PRODUCTS,
) -> None:
    """Measure the method's accuracy: Euler errors, savings-grid convergence, the IJRS oracle."""
    from project.analysis.validation import write_validation
    from project.provenance import product_provenance
    from project.up_to_date import read_specification

    specification = read_specification(specification_file)
    write_validation(
        specification=specification,
        solution_directory=solution_marker.parent,
        bundle_directory=bundle_marker.parent,
        factors=json.loads(factors_json),
        paths=produces,
        provenance=product_provenance(config=specification),
    )


@runs_sources
def task_welfare(
    specification_files: dict[str, Path] = SPECIFICATIONS,
    solution_markers: dict[str, Path] = SOLUTION_MARKERS,
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    estimation_marker: Path = ESTIMATION_MARKER,
    sources: list[Path] = RUNS,
    produces: Path = RESULTS["welfare"],
) -> None:
    """Measure the benefit cut's welfare effect as a consumption equivalent, with its s.e."""
    from project.analysis.welfare import write_welfare
    from project.provenance import product_provenance
    from project.up_to_date import read_specification

    specifications = {v: read_specification(p) for v, p in specification_files.items()}
    write_welfare(
        specifications=specifications,
        solution_directories={v: m.parent for v, m in solution_markers.items()},
        bundle_directories={v: m.parent for v, m in bundle_markers.items()},
        estimation_directory=estimation_marker.parent,
        path=produces,
        provenance=product_provenance(config=specifications),
    )


@runs_sources
def task_welfare_table(
    welfare: Path = RESULTS["welfare"],
    sources: list[Path] = RUNS,
    produces: dict[str, Path] = _table_paths("welfare"),
) -> None:
    """Write the welfare table (λ, its standard errors, its check) from ``welfare.json``."""
    from project.analysis.welfare_table import write_welfare_table

    write_welfare_table(welfare_path=welfare, paths=produces)


@task(
    kwargs={
        "female_share": _hashed(DATA.female_share),
        "robustness_json": _hashed(ROBUSTNESS_SPECS),
        "distribution_json": _hashed(VARIANTS[STATUS_QUO].simulation.initial_distribution),
    }
)
@runs_sources
def task_paper_numbers(
    female_share: str,
    robustness_json: str,
    distribution_json: str,
    specification_files: dict[str, Path] = SPECIFICATIONS,
    solution_markers: dict[str, Path] = SOLUTION_MARKERS,
    estimation_markers: dict[str, Path] = ESTIMATION_MARKERS,
    robustness_markers: dict[str, Path] = ROBUSTNESS_MARKERS,
    replication_marker: Path = REPLICATION_MARKER,
    replication_profiles: Path = REPLICATION_PROFILES,
    calibration_markers: dict[str, Path] = CALIBRATION_MARKERS,
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    results: dict[str, Path] = RESULTS,
    sources: list[Path] = RUNS,
    produces: Path = BLD / "paper" / "numbers.json",
) -> None:
    """Write every number and result sentence of the paper, from the products."""
    from project.analysis.numbers import write_paper_numbers

    write_paper_numbers(
        specification_files=specification_files,
        solution_directories={v: m.parent for v, m in solution_markers.items()},
        estimation_directories={v: m.parent for v, m in estimation_markers.items()},
        robustness_directories={c: m.parent for c, m in robustness_markers.items()},
        robustness_specs=json.loads(robustness_json),
        replication_directory=replication_marker.parent,
        replication_profiles=replication_profiles,
        calibration_directories={v: m.parent for v, m in calibration_markers.items()},
        bundle_directories={v: m.parent for v, m in bundle_markers.items()},
        results=results,
        initial_distribution=json.loads(distribution_json),
        female_share=json.loads(female_share),
        path=produces,
    )


@runs_sources
def task_compile_paper(
    inputs: dict[str, Path] = paper_inputs(bld=BLD),
    paper_files: list[Path] = source_files(PAPER / name for name in PAPER_SOURCES),
    sources: list[Path] = RUNS,
    produces: Path = BLD / "paper" / "paper.pdf",
) -> None:
    """Compile the paper (Typst) from the generated numbers, figures and tables."""
    from project.analysis.paper import compile_paper

    compile_paper(source=PAPER / "paper.typ", document=produces, bld=BLD, root=ROOT)


CATALOGUE = {
    "simulated_data.arrow": "The default variant's simulated panel (one row per subject and year).",
    "*/model.json": "A variant's full specification at the estimates: model, grids, params.",
    "*/estimation_model.json": "The status quo's specification before estimation (its input).",
    "*/solution": "A variant's solution (orbax checkpoint, metadata, marker with digests).",
    "*/simulation": "A variant's simulation bundle: arrays, metadata and the panel table.",
    "*/estimation": "The status quo's MSM estimates, moments and summary (J-test, calibration).",
    "robustness/*/estimation": "A robustness check's re-estimation (same layout as above).",
    "replication/estimation": "The published buffer-stock estimation, estimated again.",
    "*/calibration": "A variant's calibrated weights, targets before/after and diagnostics.",
    "data/*": "Real data prepared for estimation: SCF moments and survival (data/README.md).",
    "figures/*": "A figure of the paper (PNG and PDF).",
    "tables/*": "A table of the paper (LaTeX, Typst and Markdown).",
    "results/validation.json": "The solution method's measured accuracy.",
    "results/welfare.json": "The benefit cut's consumption-equivalent welfare effect.",
    "results/robustness_welfare.json": "The benefit cut's λ under each robustness check.",
    "paper/numbers.json": "Every number and result sentence of the paper.",
    "paper/paper.pdf": "The paper.",
}
"""What the catalogue (``<bld>/index.md``) says each product is (patterns relative to ``<bld>``)."""


@task(kwargs={"descriptions": _hashed(CATALOGUE)})
@runs_sources
def task_catalogue(
    descriptions: str,
    paper: Path = BLD / "paper" / "paper.pdf",
    figures_and_tables: list[Path] = DECLARED_FILES,
    results: dict[str, Path] = RESULTS,
    specification_files: dict[str, Path] = SPECIFICATIONS,
    default_table: Path = BLD / "simulated_data.arrow",
    estimation_model: Path = ESTIMATION_MODEL,
    bundle_markers: dict[str, Path] = BUNDLE_MARKERS,
    calibration_markers: dict[str, Path] = CALIBRATION_MARKERS,
    estimation_markers: dict[str, Path] = ESTIMATION_MARKERS,
    robustness_markers: dict[str, Path] = ROBUSTNESS_MARKERS,
    replication_marker: Path = REPLICATION_MARKER,
    solution_markers: dict[str, Path] = SOLUTION_MARKERS,
    data_products: dict[str, Path] = DATA_PRODUCTS,
    sources: list[Path] = RUNS,
    produces: Path = BLD / "index.md",
) -> None:
    """List every product with its description, size and checksum; embed the figures."""
    from project.catalogue import write_catalogue

    declared = [paper, default_table, estimation_model, *figures_and_tables]
    for group in (
        results,
        specification_files,
        bundle_markers,
        calibration_markers,
        estimation_markers,
        robustness_markers,
        solution_markers,
        data_products,
    ):
        declared += list(group.values())
    declared.append(replication_marker)
    write_catalogue(bld=BLD, products=json.loads(descriptions), path=produces, declared=declared)
