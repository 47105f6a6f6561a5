"""End-to-end: build the pipeline on a temporary copy and pin the incremental contract.

Each build runs pytask programmatically in a subprocess whose ``PYTHONPATH`` points at the copy's
``src`` (so edits to the copy take effect) with the tiny ``smoke`` profile. The scenarios run in
order on one copy; each asserts exactly which tasks executed.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from project.analysis.paper import paper_headings
from project.config import STATUS_QUO, VARIANTS

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("tasks.py", "pyproject.toml", "src", "paper", "data")
RUNNER = textwrap.dedent("""
    import json, sys
    import pytask
    options = json.loads(sys.argv[1])
    session = pytask.build(**options)
    outcomes = {r.task.name.split("::")[-1]: r.outcome.name for r in session.execution_reports}
    print("OUTCOMES=" + json.dumps(outcomes))
    sys.exit(int(session.exit_code))
""")
VARIANT_TASKS = (
    "define_model",
    "solve",
    "simulate",
    "plot_policy_functions",
    "plot_lifecycle_profiles",
    "plot_retirement_policy",
)
BLD = Path("bld/smoke")
"""The smoke profile's build root (relative to the project)."""
PAPER_PDF = BLD / "paper" / "paper.pdf"
ALL_VARIANTS = tuple(VARIANTS)
"""baseline and benefit_cut."""
ESTIMATED = (STATUS_QUO,)
"""The variant whose preferences the pipeline estimates: the status quo only."""
ESTIMATION_TASKS = {"task_define_estimation_model", "task_estimate"}
SMOKE_ROBUSTNESS = ("no_bequest",)
"""The smoke profile's robustness checks (``ROBUSTNESS`` under ``PROJECT_PROFILE=smoke``)."""


def copy_project(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        elif source.exists():
            shutil.copy2(source, target / name)
    return target


def build_environment(root: Path) -> dict[str, str]:
    """Return the environment of a smoke build of the copy at ``root``."""
    return os.environ | {
        "PYTHONPATH": str(root / "src"),
        "PROJECT_PROFILE": "smoke",
        "PYTHONUNBUFFERED": "1",
    }


def build(root: Path, **options) -> dict[str, str]:
    """Run pytask on ``root``; return {task name: outcome} of this build."""
    env = build_environment(root)
    result = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(options)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("OUTCOMES=")]
    assert result.returncode == 0 and lines, result.stdout[-5000:] + result.stderr[-3000:]
    return json.loads(lines[-1].removeprefix("OUTCOMES="))


def executed(outcomes: dict[str, str]) -> set[str]:
    return {name for name, outcome in outcomes.items() if outcome == "SUCCESS"}


def lock_entries(root: Path) -> dict[str, dict]:
    """Return pytask's lock file entries of the copy at ``root`` by task id ({} when absent)."""
    path = root / BLD / "pytask.lock"
    if not path.exists():
        return {}
    return {entry["id"]: entry for entry in tomllib.loads(path.read_text()).get("task", [])}


def assert_nothing_to_do(root: Path) -> None:
    """Build again; assert nothing ran, else name what each rerun task's record lacked.

    A task reruns when its record in the lock file is missing or one of its states differs:
    the message shows, per task, the recorded states that the rebuild changed.
    """
    before = lock_entries(root)
    ran = executed(build(root))
    after = lock_entries(root)
    changed = {}
    for name in sorted(ran):
        task_id = next((i for i in before | after if i.split("::")[-1] == name), name)
        old, new = before.get(task_id), after.get(task_id, {})
        if old is None:
            changed[name] = "no record before this build"
            continue
        changed[name] = {
            f"{kind}:{node}": (old.get(kind, {}).get(node), state)
            for kind in ("depends_on", "produces")
            for node, state in new.get(kind, {}).items()
            if old.get(kind, {}).get(node) != state
        } | ({"task": (old["state"], new.get("state"))} if old["state"] != new.get("state") else {})
    assert not ran, f"a build after a complete one ran {sorted(ran)}; changed records: {changed}"


def variant_chain(variant: str) -> set[str]:
    return {f"task_{name}[{variant}]" for name in VARIANT_TASKS}


SHARED_DOWNSTREAM = {
    "task_plot_variant_comparison",
    "task_summary_statistics_table",
    "task_parameter_table",
    "task_compile_paper",
}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


NOT_PRODUCTS = ("benchmarks", "logs", "pytask.lock", ".build.lock")
"""Entries of the build root that are no build products: benchmark results, the build's log
(times and process ids; the README lists it as the one file that differs between builds) and
pytask's lock file (its state, not a product) and the build lock (the running build's pid)."""


def product_digests(root: Path) -> dict[str, str]:
    """Return SHA-256 of every product file as its path reads (through generation links).

    Orbax checkpoints included; ``NOT_PRODUCTS`` left out. Hidden generation directories are
    reached through their links; other hidden entries would be leftovers.
    """
    digests = {}
    for directory, folders, files in os.walk(root / BLD, followlinks=True):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            relative = path.relative_to(root)
            if relative.relative_to(BLD).parts[0] in NOT_PRODUCTS:
                continue
            digests[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def hidden_entries(root: Path) -> list[str]:
    """Return hidden entries in bld/ and its folders that are no product's current generation."""
    bld = root / BLD
    folders = [bld, *(p for p in bld.iterdir() if p.is_dir() and not p.name.startswith("."))]
    found = []
    for folder in folders:
        for path in sorted(folder.glob(".*")):
            if folder == bld and path.name == ".pytask":  # pytask's own state
                continue
            if path.name.endswith(".lock"):  # the build's and each product's lock file
                continue
            product = folder / path.name[1:].split(".")[0]
            if not (product.is_symlink() and product.resolve() == path.resolve()):
                found.append(str(path.relative_to(root)))
    return found


SOLVE_IMPORTS = textwrap.dedent("""
    import json, sys, tempfile
    from pathlib import Path
    from project.models import MODEL_BUILDERS
    from project.persist.solution import save_solution
    from project.dispatch import solve
    specification = json.loads(sys.argv[1])
    model = MODEL_BUILDERS[specification["model"]](**specification["sizes"])
    solution = solve(model=model, params=specification["params"])
    with tempfile.TemporaryDirectory() as directory:
        save_solution(solution=solution, directory=Path(directory) / "solution")
    loaded = [m.__file__ for n, m in sys.modules.items() if n.split(".")[0] == "project"]
    sys.path.insert(0, ".")
    import tasks
    from _pytask.task_utils import COLLECTED_TASKS
    from project.task_sources import declared_sources
    (task_solve, *_) = [
        f for found in COLLECTED_TASKS.values() for f in found if f.__name__ == "task_solve"
    ]
    tracked = [str(p) for p in declared_sources(task_solve)]
    print("FILES=" + json.dumps({"loaded": [f for f in loaded if f], "tracked": tracked}))
""")
IMPORT_PLUMBING = {"__init__.py", "_lazy.py"}
"""Files under ``src/project`` that every import runs and that cannot change a solution."""


def test_the_solve_task_tracks_every_module_the_solve_imports():
    """Solve and save the default variant as the solve task does; list the modules it loaded.

    ``project.pipeline`` imports more (the simulation, the config): the modules are listed for
    the solve and the save alone, so that every one of them belongs in the task's sources.
    """
    from project.config import DEFAULT_VARIANT, VARIANTS
    from project.pipeline import variant_specification

    specification = variant_specification(VARIANTS[DEFAULT_VARIANT])
    result = subprocess.run(
        [sys.executable, "-c", SOLVE_IMPORTS, json.dumps(specification)],
        cwd=ROOT,
        env=os.environ | {"PROJECT_PROFILE": "smoke", "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("FILES=")]
    assert result.returncode == 0 and lines, result.stdout[-3000:] + result.stderr[-3000:]
    files = json.loads(lines[-1].removeprefix("FILES="))
    src = ROOT / "src" / "project"
    loaded, tracked = (
        {Path(f).resolve().relative_to(src) for f in files[key]} for key in ("loaded", "tracked")
    )
    untracked = {p for p in loaded - tracked if str(p) not in IMPORT_PLUMBING}
    assert not untracked, f"the solve task's sources miss {sorted(map(str, untracked))}"


TASK_SOURCES = textwrap.dedent("""
    import inspect, json, sys
    sys.path.insert(0, ".")
    import tasks
    from _pytask.task_utils import COLLECTED_TASKS
    functions = [f for found in COLLECTED_TASKS.values() for f in found]
    functions += [v for k, v in vars(tasks).items() if k.startswith("task_") and callable(v)]
    sources = {
        f.__name__: [str(p) for p in inspect.signature(f).parameters["sources"].default.value]
        for f in functions
    }
    print("SOURCES=" + json.dumps(sources))
""")


def tasks_running(root: Path, relative_path: str) -> set[str]:
    """Return the tasks (names without ids) of the copy at ``root`` that run ``relative_path``."""
    result = subprocess.run(
        [sys.executable, "-c", TASK_SOURCES],
        cwd=root,
        env=build_environment(root),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("SOURCES=")]
    target = str((root / relative_path).resolve())
    sources = json.loads(line.removeprefix("SOURCES="))
    return {name for name, files in sources.items() if target in files}


@pytest.fixture(scope="module")
def serial_build(tmp_path_factory):
    root = copy_project(tmp_path_factory.mktemp("serial") / "project")
    first = build(root)
    return root, first, product_digests(root)


def test_first_build_runs_every_task_and_writes_the_products(serial_build):
    root, first, _ = serial_build
    bld = root / BLD
    assert all(outcome == "SUCCESS" for outcome in first.values()), first
    assert not (root / "bld" / "baseline").exists()  # the smoke profile keeps to its own root
    assert (bld / "pytask.lock").exists() and not (root / "pytask.lock").exists()
    for variant in ALL_VARIANTS:
        assert variant_chain(variant) <= executed(first)
        assert (bld / variant / "solution" / "COMPLETE.json").exists()
        for product in ("solution", "simulation"):
            metadata = json.loads((bld / variant / product / "metadata.json").read_text())
            assert metadata["method"] == "dcegm", (variant, product)
    assert sorted(p.parent.name for p in bld.glob("*/model.json")) == sorted(ALL_VARIANTS)
    method_row = (bld / "tables/parameters.md").read_text().splitlines()[-1]
    assert method_row.split("|")[1:-1] == [" Solution method ", " DC-EGM ", " DC-EGM ", "  "]
    table = pd.read_feather(bld / "simulated_data.arrow")
    assert {"subject_id", "period", "age", "wealth", "consumption"} <= set(table.columns)
    assert {"wealth_to_income", "income_unit"} <= set(table.columns)
    assert table["claim"].dtype == "category"
    assert "dead" in set(table["regime"].astype(str))  # life-table deaths are recorded
    assert ESTIMATED == ("baseline",)  # once, on the status quo
    for variant in ESTIMATED:
        estimation = bld / variant / "estimation"
        estimates = pd.read_feather(estimation / "estimates.arrow")
        assert list(estimates["param"]) == ["crra", "beta"]
        # a standard error, or none at a bound (the smoke estimate may sit at one)
        assert (estimates["std_error"].gt(0) | estimates["at_bound"]).all()
        assert estimates.loc[estimates["at_bound"], "std_error"].isna().all()
        summary = json.loads((estimation / "summary.json").read_text())
        assert summary["provenance"]["fingerprint"] and "warnings" in summary
    for product in ("tables/estimates.typ", "tables/moment_fit.md", "figures/estimation_fit.png"):
        assert (bld / product).stat().st_size > 0, product
    assert sorted(p.name for p in (bld / "robustness").iterdir()) == sorted(SMOKE_ROBUSTNESS)
    robustness = (bld / "tables/robustness.md").read_text()
    welfare = json.loads((bld / "results/robustness_welfare.json").read_text())
    assert sorted(welfare["checks"]) == sorted(SMOKE_ROBUSTNESS)
    for name in SMOKE_ROBUSTNESS:
        summary = json.loads((bld / "robustness" / name / "estimation/summary.json").read_text())
        assert summary["variant"] == f"robustness_{name}"
        assert summary["settings"]["n_starts"] == 1 and summary["profiles"] == {}
        assert summary["calibrated"]["param"] == "work_cost"  # calibrated again
        estimates = pd.read_feather(bld / "robustness" / name / "estimation/estimates.arrow")
        beta = estimates.set_index("param").loc["beta", "estimate"]
        assert f"| {beta:.4f} |" in robustness
        assert f"| {100 * welfare['checks'][name]['lambda']:.2f} |" in robustness
    replication = json.loads((bld / "replication/estimation/summary.json").read_text())
    assert replication["variant"] == "replication"
    assert {"efficient MSM", "published criterion"} <= set(replication["searches"])
    assert len(replication["searches"]["published criterion"]["moments"]) == 7
    replicated = pd.read_feather(bld / "replication/estimation/estimates.arrow")
    assert list(replicated["param"]) == ["beta", "crra"]
    assert (
        f"| {replicated['estimate'].iloc[1]:.3f} |" in (bld / "tables/replication.md").read_text()
    )
    numbers = json.loads((bld / "paper/numbers.json").read_text())
    assert numbers["replication"]["households"] == "10,475"
    # The status quo's cost of working, calibrated to the claiming fact with the estimate.
    calibrated = json.loads((bld / STATUS_QUO / "estimation/summary.json").read_text())[
        "calibrated"
    ]
    assert calibrated["param"] == "work_cost" and calibrated["fact"] == {"age": 62, "share": 0.36}
    assert calibrated["value"] == calibrated["rounds"][-1]["calibrated"]
    assert numbers["kappa"]["work_cost"] == f"{calibrated['value']:.3f}"
    assert f"calibrated to {calibrated['value']:.3f}" in (bld / "tables/estimates.md").read_text()
    log = (bld / "logs/build.log").read_text()
    assert "INFO project.solver: " in log and "INFO project.calibration: " in log
    assert "INFO project.estimation: " in log
    index = (bld / "index.md").read_text()
    assert "paper/paper.pdf" in index and "![" in index


def test_every_product_downstream_of_the_estimation_uses_the_estimates(serial_build):
    """Read back each variant's model, solution, simulation, the parameter table and the
    welfare measure: every preference the pipeline estimates or calibrates is its value."""
    from project.estimation.calibrated import calibrated_value
    from project.estimation.products import load_estimation
    from project.persist.solution import read_metadata

    root, _, _ = serial_build
    bld = root / BLD
    saved = load_estimation(bld / STATUS_QUO / "estimation")
    estimates, calibrated = saved.params, calibrated_value(saved.summary)
    assert sorted(estimates) == sorted(saved.summary["settings"]["estimated"]) == ["beta", "crra"]
    assert sorted(calibrated) == ["work_cost"]
    preferences = estimates | calibrated
    before = json.loads((bld / STATUS_QUO / "estimation_model.json").read_text())
    assert before["estimated"] == [] and before["calibrated"] == []
    assert any(before["params"][k] != v for k, v in preferences.items())  # estimation moved them
    for variant in ALL_VARIANTS:
        specification = json.loads((bld / variant / "model.json").read_text())
        assert specification["estimated"] == sorted(estimates)
        assert specification["calibrated"] == sorted(calibrated)
        assert {k: specification["params"][k] for k in preferences} == preferences, variant
        for product in ("solution", "simulation"):  # saved in the variant's float64
            recorded = json.loads((bld / variant / product / "metadata.json").read_text())
            for name, value in preferences.items():
                assert recorded["params"][name] == value, (variant, product, name)
        read_metadata(bld / variant / "solution")  # and the solution's metadata is intact
    table = (bld / "tables/parameters.md").read_text()
    rows = [line for line in table.splitlines() if "Estimated (MSM" in line]
    assert len(rows) == len(estimates)
    (beta_row,) = [row for row in rows if "Discount factor" in row]
    assert f"| {estimates['beta']:.4f} | {estimates['beta']:.4f} |" in beta_row, table
    (crra_row,) = [row for row in rows if "Relative risk aversion" in row]
    assert f"| {estimates['crra']:.3f} | {estimates['crra']:.3f} |" in crra_row, table
    (cost,) = [line for line in table.splitlines() if "Calibrated jointly" in line]
    assert f"| {calibrated['work_cost']:.3f} | {calibrated['work_cost']:.3f} |" in cost
    welfare = json.loads((bld / "results/welfare.json").read_text())
    assert welfare["values"]["estimated_params"] == estimates
    assert welfare["lambda_se"] > 0


def _leaves(tree: object, prefix: str = "") -> dict[str, object]:
    if isinstance(tree, dict):
        return {
            k: v for key, sub in tree.items() for k, v in _leaves(sub, f"{prefix}.{key}").items()
        }
    return {prefix.lstrip("."): tree}


def _squeezed(text: str) -> str:
    return "".join(text.split())


def test_the_paper_states_the_numbers_of_the_products(serial_build):
    """Every number the paper prints is the products' number, and is in the PDF."""
    import re

    from pypdf import PdfReader

    from project.analysis.numbers import number, percent

    root, _, _ = serial_build
    bld = root / BLD
    assert (root / PAPER_PDF).stat().st_size > 50_000
    headings = paper_headings(source=root / "paper/paper.typ", bld=bld, root=root)
    assert headings == [
        "Introduction",
        "Model",
        "Solution method and its accuracy",
        "Data and estimation",
        "The life cycle at the estimates",
        "Counterfactual: a benefit cut",
        "Robustness and limitations",
        "Replication of a published estimation",
        "Provenance",
        "References",
    ]
    numbers = json.loads((bld / "paper/numbers.json").read_text())
    pdf = _squeezed(" ".join(page.extract_text() for page in PdfReader(root / PAPER_PDF).pages))
    used = set(re.findall(r"#n\.([a-z_.]+[a-z_])", (root / "paper/paper.typ").read_text()))
    leaves = _leaves(numbers)
    for key in sorted(used):
        values = [v for k, v in leaves.items() if k == key or k.startswith(key + ".")]
        assert values, f"paper.typ uses n.{key}, which numbers.json lacks"
        for value in values:
            if isinstance(value, str) and not key.startswith("provenance.keywords"):
                for figure in re.findall(r"\u2212?\d[\d,.]*", value) or [value]:
                    assert _squeezed(figure) in pdf, (key, figure)
    for variant in ESTIMATED:
        estimates = pd.read_feather(bld / variant / "estimation/estimates.arrow")
        beta = float(estimates.set_index("param").loc["beta", "estimate"])
        assert numbers["est"][variant]["beta"] == number(beta, decimals=4)
        summary = json.loads((bld / variant / "estimation/summary.json").read_text())
        assert numbers["est"][variant]["j"] == number(summary["j_statistic"], decimals=2)
    welfare = json.loads((bld / "results/welfare.json").read_text())
    assert f"\u03bb = {welfare['numbers']['lambda']}" in numbers["text"]["welfare"]
    assert welfare["numbers"]["lambda"].startswith(percent(welfare["lambda"], decimals=2)[:4])
    summary = (bld / "tables/summary_statistics.md").read_text()
    for variant in ALL_VARIANTS:
        for key in ("claim_age", "wealth_probe"):
            assert f"| {numbers['results'][variant][key]} " in summary, (variant, key)
    metadata = PdfReader(root / PAPER_PDF).metadata
    assert "commit=" in metadata["/Keywords"] and "jax=" in metadata["/Keywords"]


def test_incremental_contract(serial_build):
    root, _, _ = serial_build
    bld = root / BLD

    # No change: nothing runs.
    assert_nothing_to_do(root)

    # Figure code: only figure tasks rerun (the paper and catalogue only if bytes changed).
    edit(root / "src/project/analysis/figures.py", '"""', '"""Edited. ')
    figures = {
        f"task_{t}[{v}]"
        for v in ALL_VARIANTS
        for t in ("plot_policy_functions", "plot_lifecycle_profiles", "plot_retirement_policy")
    } | {"task_plot_variant_comparison"}
    ran = executed(build(root))
    assert figures <= ran <= figures | {"task_compile_paper", "task_catalogue"}

    # One task's code in tasks.py: that task alone reruns (same products: nothing downstream).
    edit(
        root / "tasks.py",
        '"""Compare retirement, consumption and wealth profiles across variants."""',
        '"""Compare retirement, consumption and wealth profiles across variants (edited)."""',
    )
    assert executed(build(root)) == {"task_plot_variant_comparison"}
    # The declaration's prose, outside every task: nothing reruns.
    edit(root / "tasks.py", '"""The pipeline, declared', '"""The pipeline (edited), declared')
    assert_nothing_to_do(root)

    # A simulation setting (the seed): simulate and downstream rerun, the solves do not.
    edit(root / "src/project/config.py", "seed: int = 20_261_122", "seed: int = 7")
    ran = executed(build(root))
    assert {f"task_simulate[{v}]" for v in ALL_VARIANTS} <= ran
    assert not {t for t in ran if t.startswith(("task_solve", "task_define_model"))}

    # One variant's parameter: only that variant's chain (and shared products) rerun; in
    # parallel with loky, as `pytask -n 2` does.
    edit(root / "src/project/config.py", "PAYABLE_SHARE = 0.79", "PAYABLE_SHARE = 0.75")
    ran = executed(build(root, n_workers=2, parallel_backend="loky"))
    assert {
        "task_define_model[benefit_cut]",
        "task_solve[benefit_cut]",
        "task_simulate[benefit_cut]",
    } <= ran
    assert not {t for t in ran if t.endswith("[baseline]")}
    specification = json.loads((bld / "benefit_cut/model.json").read_text())
    assert specification["params"]["benefit_scale"] == 0.75
    baseline = json.loads((bld / "baseline/model.json").read_text())
    assert baseline["params"]["benefit_scale"] == 1.0

    # Solver source that evaluates solutions (interpolation): every task that runs it reruns,
    # the policy figures included (a hand-kept list had left them out); identical outputs stop
    # everything downstream. The estimates record the new fingerprint of their inputs, so their
    # readers rerun too, and write the same tables and numbers.
    edited = "src/project/solver/evaluate.py"
    running = tasks_running(root, edited)
    assert {"task_solve", "task_estimate", "task_simulate", "task_plot_policy_functions"} <= running
    assert "task_prepare_data" not in running
    edit(root / edited, '"""', '"""Edited. ')
    tables = product_digests(root)
    ran = executed(build(root))
    assert {f"task_plot_policy_functions[{v}]" for v in ALL_VARIANTS} <= ran
    assert (
        running
        <= {t.split("[")[0] for t in ran}
        <= running
        | {
            "task_define_model",  # the estimates' product records the new fingerprint
            "task_estimation_report",
            "task_robustness_table",
            "task_replication_tables",  # reads the replication, which runs the edited file
            "task_paper_numbers",
            "task_catalogue",  # lists the estimates' new checksums
        }
    )
    after = product_digests(root)
    reported = (f"{BLD}/tables/", f"{BLD}/figures/", f"{BLD}/paper/", f"{BLD}/results/")
    assert {k: v for k, v in after.items() if k.startswith(reported)} == {
        k: v for k, v in tables.items() if k.startswith(reported)
    }

    # The solve task's own code: its tasks rerun, but the fingerprinted solves return at once
    # without solving and their products stay untouched.
    marker = bld / "baseline/solution/COMPLETE.json"
    before = marker.stat().st_mtime_ns
    edit(
        root / "tasks.py",
        '"""Solve the variant and save V and the policy',
        '"""Solve the variant (edited) and save V and the policy',
    )
    assert executed(build(root)) == {f"task_solve[{v}]" for v in ALL_VARIANTS}
    assert marker.stat().st_mtime_ns == before


def test_parallel_dask_build_is_byte_identical_to_the_serial_build(serial_build, tmp_path):
    """Build the model, solve and simulate chains of every variant on a dask LocalCluster.

    With the tasks they start from (pytask runs a selected task's predecessors): the data and
    the status quo's estimation. The other estimations run in parallel in the loky and SLURM
    builds of the whole pipeline.
    """
    _, _, serial_digests = serial_build
    root = copy_project(tmp_path / "project")
    chains = "define_model or solve or simulate"
    outcomes = build(root, n_workers=2, parallel_backend="dask", expression=chains)
    assert executed(outcomes) == {
        f"task_{t}[{v}]" for t in ("define_model", "solve", "simulate") for v in ALL_VARIANTS
    } | ESTIMATION_TASKS | {"task_prepare_data"}
    parallel_digests = product_digests(root)
    assert parallel_digests
    assert parallel_digests == {k: serial_digests[k] for k in parallel_digests}


def test_parallel_loky_build_of_the_whole_pipeline_is_byte_identical(serial_build, tmp_path):
    """`pytask -n 4` from a clean copy writes the same bytes as a serial build, in every file."""
    _, _, serial_digests = serial_build
    root = copy_project(tmp_path / "project")
    outcomes = build(root, n_workers=4, parallel_backend="loky")
    assert all(outcome in {"SUCCESS", "SKIP"} for outcome in outcomes.values()), outcomes
    assert product_digests(root) == serial_digests
    assert hidden_entries(root) == []


def test_a_slurm_build_with_a_cancelled_job_matches_the_serial_build(
    serial_build, slurm_cluster, tmp_path
):
    """`pytask --parallel-backend custom -n 2` on a real SLURM; `scancel` a job mid-build.

    A worker job is cancelled once the first solve finished (its save is running or next); the
    adaptive cluster starts a new job, dask runs the lost tasks again, and the build ends with
    every product byte-identical to the serial build's and no staging left. Another build
    then finds nothing to do.
    """
    _, _, serial_digests = serial_build
    root = copy_project(tmp_path / "project")
    settings = {"cores": 1, "processes": 1, "memory": "2GiB", "walltime": "00:20:00"}
    # The cluster's own environment is this process's at its start: only its SLURM_CONF is
    # taken, so that a PYTHONPATH set for the test run cannot replace the copy's src (the build
    # would run the checkout's modules and record other source files than the next build).
    env = build_environment(root) | {
        "SLURM_CONF": slurm_cluster.env["SLURM_CONF"],
        "PROJECT_SLURM": json.dumps(settings),
        # dask keeps a lost worker's job for 15 s in case it comes back, and replaces it only
        # then; here it cannot come back, so the replacement is asked for after 1 s.
        "DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT": "1s",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", RUNNER, json.dumps({"parallel_backend": "custom", "n_workers": 2})],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    log = root / BLD / "logs" / "build.log"
    deadline = time.monotonic() + 600
    while not (log.exists() and "Solved '" in log.read_text()):
        assert process.poll() is None and time.monotonic() < deadline, "no solve was logged"
        time.sleep(0.05)
    jobs = slurm_cluster.run("squeue", "-h", "-o", "%i").stdout.split()
    assert jobs, "the build's worker jobs are not in the queue"
    slurm_cluster.run("scancel", jobs[0])  # one worker: the other goes on meanwhile
    output, _ = process.communicate(timeout=600)
    assert process.returncode == 0, output[-5000:] + slurm_cluster.log_tail()
    worker_logs = list((root / BLD / "logs" / "slurm").glob("*.out"))
    assert len(worker_logs) > len(jobs), "no job replaced the cancelled one"
    assert product_digests(root) == serial_digests
    assert hidden_entries(root) == []
    assert_nothing_to_do(root)


def test_damaged_products_are_noticed_and_rebuilt_byte_identically(serial_build):
    """Damage each product kind in a built bld/; the next pytask rebuilds exactly those."""
    root, _, _ = serial_build
    build(root)  # the previous test ends on a partial build (only the solves)
    assert_nothing_to_do(root)
    before = product_digests(root)
    bld = root / BLD
    array_files = [p for p in (bld / "baseline/solution/arrays").rglob("*") if p.is_file()]
    largest = max(array_files, key=lambda p: p.stat().st_size)
    data = bytearray(largest.read_bytes())
    for i in range(len(data) // 2, min(len(data), len(data) // 2 + 64)):
        data[i] ^= 0xFF
    largest.write_bytes(bytes(data))  # same size: only the time stamp and the digest tell
    table = bld / "baseline/simulation/simulated_data.arrow"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    (bld / "benefit_cut/simulation/COMPLETE.json").write_text("")
    (bld / "simulated_data.arrow").write_bytes(b"")
    metadata = bld / "benefit_cut/solution/metadata.json"
    metadata.write_text(metadata.read_text().replace('"float', '"float1', 1))
    paper = bld / "paper/paper.pdf"
    paper.write_bytes(paper.read_bytes()[:-10])  # a truncated PDF: its digest tells
    weights = bld / "baseline/calibration/calibrated_weights.arrow"
    weights.write_bytes(weights.read_bytes()[:-100])  # single files: pytask hashes their content
    figure = bld / "figures/variant_comparison.png"
    figure.write_bytes(b"\x00" + figure.read_bytes()[1:])
    estimates = bld / "baseline/estimation/estimates.arrow"
    estimates.write_bytes(estimates.read_bytes()[:-8])  # behind the marker: its digest tells

    ran = executed(build(root))
    assert {
        "task_solve[baseline]",
        "task_simulate[baseline]",
        "task_simulate[benefit_cut]",
        "task_solve[benefit_cut]",
        "task_compile_paper",
        "task_calibrate[baseline]",
        "task_plot_variant_comparison",
        "task_estimate",
    } <= ran
    assert product_digests(root) == before
    assert hidden_entries(root) == []
    assert_nothing_to_do(root)
