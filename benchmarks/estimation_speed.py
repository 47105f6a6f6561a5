"""How fast the estimation's objective runs: solve alone, one evaluation, a batch, an estimation.

On the pipeline's baseline variant (``config.VARIANTS["baseline"]``, float64, the estimation's
own ``n_subjects``, seed and age groups; ``config.ESTIMATION``), each configuration in its own
process, the configurations interleaved over ``--rounds``:

- ``solve``: ``solve(model, params, log_level="off")`` blocked on every regime's endogenous-grid
  arrays (what the objective needs; first call and warm median), and warm with V of every period
  on the state grids read back as well (``grid_values``);
- ``compiled``: the estimation's objective, one program (``estimation/program.py``): first
  evaluation (compile included) and warm evaluations at changing params;
- ``table``: the same moments by solve, simulate and the simulated table (``compiled=False``,
  the path every evaluation took before the one-program objective);
- ``batch``: ``--batch`` points in one call, against the same points one at a time;
- ``smooth``: the smooth moments (expectations over the exit choice, ``estimation/smooth.py``),
  first and warm evaluations;
- ``gradient``: the smooth moments with their exact Jacobian (forward mode), first and warm,
  against the smooth evaluation in the same process;
- ``estimate`` (``--estimate``): the variant's whole estimation (``estimate_variant``: the
  search from the start and the multistart) on the SCF moments in ``bld/data``.

The JSON (``bld/benchmarks/estimation_speed.json``) records Python, jax, jaxlib, XLA_FLAGS, the
device and the machine's load with every figure. ``--compilation-cache`` keeps JAX's persistent
cache (by default each child starts with an empty one, so first calls include the compile).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (
    child_parser,
    emit_result,
    environment,
    print_table,
    run_child,
    summarize,
    write_json,
)

CONFIGS = ("solve", "compiled", "table", "batch", "smooth", "gradient")
WARM = 8


def parse_arguments() -> Any:
    parser = child_parser(
        description=__doc__.splitlines()[0],
        name="estimation_speed",
        quick_help="2 rounds, 3 warm evaluations (a smoke run of the benchmark)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=8, help="points per batched evaluation")
    parser.add_argument("--estimate", action="store_true", help="also time whole estimations")
    parser.add_argument("--compilation-cache", action="store_true")
    parser.add_argument(
        "--moments",
        type=Path,
        default=Path("bld/data/scf_moments.arrow"),
        help="with --estimate: the SCF moment table (`uv run pytask -k prepare_data` makes it)",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=Path("/work/baseline/src"),
        help="with --estimate: the src folder of the commit to compare the estimation with "
        "(skipped where missing)",
    )
    return parser.parse_args()


def setup() -> tuple[Any, dict[str, Any], Any, dict[str, Any]]:
    """Return the baseline model, its params, the estimation settings and initial conditions."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    from project.config import ESTIMATION, VARIANTS  # noqa: PLC0415
    from project.pipeline import build_variant_model, variant_specification  # noqa: PLC0415
    from project.simulation import draw_initial_conditions  # noqa: PLC0415

    variant = VARIANTS["baseline"]
    specification = variant_specification(variant)
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    initial = draw_initial_conditions(
        model=model,
        n_subjects=ESTIMATION.n_subjects,
        seed=ESTIMATION.seed,
        distribution=variant.simulation.initial_distribution,
    )
    return model, specification, ESTIMATION, initial


def points(n: int, *, offset: int = 0) -> list[dict[str, float]]:
    """Return ``n`` distinct points near the estimate (crra, beta)."""
    return [
        {"crra": 2.0 + 0.05 * (i + offset), "beta": 0.95 - 0.002 * (i + offset)} for i in range(n)
    ]


def time_solve(model: Any, params: dict[str, Any], *, warm: int) -> dict[str, Any]:
    import jax  # noqa: PLC0415

    from project import solve  # noqa: PLC0415

    def once(beta: float, *, read: str) -> float:
        started = time.perf_counter()
        solution = solve(model=model, params=params | {"beta": beta}, log_level="off")
        jax.block_until_ready([getattr(solution.solution(r), read) for r in model.regimes])
        return time.perf_counter() - started

    first = once(0.95, read="arrays")
    return {
        "first": first,
        "warm": summarize([once(0.95 - 1e-3 * i, read="arrays") for i in range(warm)]),
        "warm_with_grid_values": summarize(
            [once(0.95 - 1e-3 * i, read="grid_values") for i in range(warm)]
        ),
    }


def time_moments(simulator: Any, *, warm: int) -> dict[str, Any]:
    started = time.perf_counter()
    simulator(points(1)[0])
    first = time.perf_counter() - started
    seconds = []
    for point in points(warm, offset=1):
        started = time.perf_counter()
        simulator(point)
        seconds.append(time.perf_counter() - started)
    traces = getattr(simulator.program, "traces", None)
    return {"first": first, "warm": summarize(seconds), "traces": traces}


def time_gradient(simulator: Any, *, warm: int) -> dict[str, Any]:
    """Time the moments with their Jacobian (first, warm) and the smooth moments alone (warm)."""
    started = time.perf_counter()
    simulator.jacobian(points(1)[0])
    first = time.perf_counter() - started
    simulator(points(1)[0])
    with_jacobian, alone = [], []
    for point in points(warm, offset=1):
        started = time.perf_counter()
        simulator.jacobian(point)
        with_jacobian.append(time.perf_counter() - started)
        started = time.perf_counter()
        simulator(point)
        alone.append(time.perf_counter() - started)
    ratio = statistics.median(with_jacobian) / statistics.median(alone)
    return {
        "first": first,
        "warm": summarize(with_jacobian),
        "evaluation_warm": summarize(alone),
        "over_evaluation": ratio,
    }


def time_batch(simulator: Any, *, size: int, warm: int) -> dict[str, Any]:
    simulator.batch(points(size))  # compile the batch's program and the one-point program
    simulator(points(1)[0])
    batched, one_by_one = [], []
    for round_ in range(max(1, warm // 2)):
        chosen = points(size, offset=1 + size * round_)
        started = time.perf_counter()
        simulator.batch(chosen)
        batched.append(time.perf_counter() - started)
        started = time.perf_counter()
        for point in chosen:
            simulator(point)
        one_by_one.append(time.perf_counter() - started)
    return {
        "size": size,
        "batched": summarize(batched),
        "one_by_one": summarize(one_by_one),
        "evaluations_per_second_batched": size / statistics.median(batched),
        "evaluations_per_second_one_by_one": size / statistics.median(one_by_one),
    }


def time_estimation(
    model: Any, specification: dict, settings: Any, *, moments_file: str
) -> dict[str, Any]:
    from dataclasses import asdict  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    from project.config import VARIANTS  # noqa: PLC0415
    from project.estimation.variant import estimate_variant  # noqa: PLC0415

    moments = pd.read_feather(moments_file)
    started = time.perf_counter()
    outcome = estimate_variant(
        model=model,
        specification=specification,
        moments=moments,
        initial_distribution=VARIANTS["baseline"].simulation.initial_distribution,
        settings=asdict(settings),
    )
    return {
        "seconds": time.perf_counter() - started,
        "estimate": dict(
            zip(outcome.result.param_names, map(float, outcome.result.estimates), strict=True)
        ),
        "searches": {name: search.get("objective") for name, search in outcome.searches.items()},
        "criterion": float(outcome.result.objective),
    }


def estimation_moments(
    model: Any, specification: dict, settings: Any, initial: Any, **options: Any
) -> Any:
    """Return the estimation's ``LifecycleMoments`` (its seed, groups, params; ``options``)."""
    from project.estimation.lifecycle import LifecycleMoments  # noqa: PLC0415

    return LifecycleMoments(
        model=model,
        base_params=specification["params"],
        initial_conditions=initial,
        seed=settings.seed + 1,
        age_groups=[tuple(g) for g in settings.age_groups],
        estimated=settings.estimated,
        **options,
    )


def run_single(config: dict[str, Any]) -> None:
    model, specification, settings, initial = setup()
    kind, warm = config["kind"], config["warm"]
    import project  # noqa: PLC0415

    result: dict[str, Any] = {"config": config, "environment": versions()}
    result["project_source"] = str(Path(project.__file__).parent)
    if kind == "solve":
        result |= time_solve(model, specification["params"], warm=warm)
    elif kind == "estimate":
        result |= time_estimation(model, specification, settings, moments_file=config["moments"])
    else:
        simulator = estimation_moments(
            model,
            specification,
            settings,
            initial,
            compiled=kind != "table",
            smooth=kind in ("smooth", "gradient"),
        )
        if kind == "batch":
            result |= time_batch(simulator, size=config["batch"], warm=warm)
        elif kind == "gradient":
            result |= time_gradient(simulator, warm=warm)
        else:
            result |= time_moments(simulator, warm=warm)
    emit_result(result)


def versions() -> dict[str, Any]:
    from importlib.metadata import version  # noqa: PLC0415

    import jax  # noqa: PLC0415

    return environment() | {
        "jax": version("jax"),
        "jaxlib": version("jaxlib"),
        "device": str(jax.devices()[0]),
    }


def main() -> None:
    args = parse_arguments()
    if args.single:
        run_single(json.loads(args.single))
        return
    if args.estimate and not args.moments.exists():
        sys.exit(f"{args.moments} is missing: build it with `uv run pytask -k prepare_data`.")
    rounds, warm = (2, 3) if args.quick else (args.rounds, WARM)
    kinds = [*CONFIGS, *(["estimate", "estimate_baseline"] if args.estimate else [])]
    wanted = args.only.split(",")  # e.g. --only solve,compiled,gradient
    kinds = [k for k in kinds if any(part in k for part in wanted)]
    if "estimate_baseline" in kinds and not args.baseline_src.is_dir():
        print(f"{args.baseline_src} is missing: the whole estimation runs on this tree alone.")
        kinds.remove("estimate_baseline")
    records: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for _ in range(rounds):
        for kind in kinds:
            if kind.startswith("estimate") and records[kind]:
                continue  # one whole estimation is minutes of the old path; once is enough
            env = dict(os.environ)
            if not args.compilation_cache:
                env["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp()
            if kind == "estimate_baseline":
                env["PYTHONPATH"] = str(args.baseline_src.resolve())
            config = {"kind": "estimate" if kind.startswith("estimate") else kind, "warm": warm}
            config |= {"batch": args.batch, "label": kind, "moments": str(args.moments.resolve())}
            records[kind].append(run_child(Path(__file__), config, env=env, timeout=1800))
            payload = {"rounds": rounds, "records": records, "summary": _summary(records)}
            write_json(args.json, payload)  # after every child: a run cut short keeps its part
    _print(payload["summary"])


def _median(records: list[dict[str, Any]], *path: str) -> float | None:
    values = []
    for record in records:
        value: Any = record
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            values.append(float(value))
    return statistics.median(values) if values else None


def _summary(records: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    solve_warm = _median(records.get("solve", []), "warm", "median")
    out: dict[str, Any] = {
        "solve_warm_with_grid_values_s": _median(
            records.get("solve", []), "warm_with_grid_values", "median"
        )
    }
    out["gradient_over_smooth_evaluation"] = _median(records.get("gradient", []), "over_evaluation")
    for kind in ("solve", "compiled", "table", "smooth", "gradient"):
        out[f"{kind}_first_s"] = _median(records.get(kind, []), "first")
        out[f"{kind}_warm_s"] = _median(records.get(kind, []), "warm", "median")
        if solve_warm and out[f"{kind}_warm_s"]:
            out[f"{kind}_warm_over_solve"] = out[f"{kind}_warm_s"] / solve_warm
    out["compiled_traces"] = _median(records.get("compiled", []), "traces")
    if solve_warm and out["compiled_warm_s"]:
        grid_values = out["solve_warm_with_grid_values_s"]
        out["compiled_warm_over_solve_with_grid_values"] = out["compiled_warm_s"] / grid_values
    for key in ("evaluations_per_second_batched", "evaluations_per_second_one_by_one"):
        out[key] = _median(records.get("batch", []), key)
    for kind in ("estimate", "estimate_baseline"):
        if records.get(kind):
            out[kind] = records[kind][0]
    errors = [r["error"] for rs in records.values() for r in rs if "error" in r]
    out["errors"] = errors
    return out


def _print(summary: dict[str, Any]) -> None:
    def fmt(value: Any, unit: str = "s") -> str:
        return "n/a" if value is None else f"{value:.4g} {unit}".strip()

    labels = {
        "solve": "solve alone (endogenous-grid arrays)",
        "compiled": "objective, one program",
        "table": "objective, solve + simulate + table",
        "smooth": "smooth moments, one program",
        "gradient": "smooth moments + exact Jacobian",
    }
    rows = [
        [
            label,
            fmt(summary[f"{kind}_first_s"]),
            fmt(summary[f"{kind}_warm_s"]),
            fmt(summary.get(f"{kind}_warm_over_solve"), "x"),
        ]
        for kind, label in labels.items()
    ]
    rows.append(
        [
            "solve, V on the state grids read too",
            "",
            fmt(summary["solve_warm_with_grid_values_s"]),
            "",
        ]
    )
    columns = ["", "first", "warm", "warm / solve"]
    print_table("Estimation objective (baseline, float64)", columns, rows)
    print("Jacobian / smooth evaluation:", fmt(summary["gradient_over_smooth_evaluation"], "x"))
    print(
        "evaluations per second: batched",
        fmt(summary["evaluations_per_second_batched"], ""),
        "one at a time",
        fmt(summary["evaluations_per_second_one_by_one"], ""),
    )
    for kind in ("estimate", "estimate_baseline"):
        if kind in summary:
            found = summary[kind]
            print(kind, found.get("seconds"), "s", found.get("estimate"), found.get("searches"))
    for error in summary["errors"]:
        print("ERROR:", error[-2000:])


if __name__ == "__main__":
    main()
