"""Benchmark savings grids for EGM: accuracy everywhere (convergence table) and warm solve time.

Usage::

    uv run python benchmarks/savings_grids.py [--part accuracy|timing|all] [--quick]

**accuracy** (one process, x64): the iid-income model (``models/iid_income.py``, CRRA 2,
beta 0.96, R 1.03, T = 10) with 1, 2 and 3 income atoms. Consumption of every period on a sweep
every 1e-3 in wealth over [0.1, 20], against a 40,000-point log1p solution; max |dc| per grid
kind (linspace, log1p, power 2, exponential with 3 nests), size N and top of the grid (20, 40),
plus log1p with the kinks switched off (``build_program(kink_slots=0)``, the solver before
issue 31). Written to ``docs/savings_grids.json`` (key ``accuracy``) and as the tables of
``docs/savings_grids.md`` (between the markers, so the numbers in the doc are the JSON's).

**timing**: warm ``solve`` of the 2-atom (and 3-atom) model at N = 500 and 2,000, today's
source tree against the baseline (``--baseline-src``, default /work/baseline/src, run as
``PYTHONPATH``), each configuration in its own interpreter, processes interleaved, several
repetitions; every warm call blocks on the solution's arrays (V, consumption and the grids of
every period: ``Solution`` objects are not pytrees). Prints a table and writes it to
``docs/savings_grids.json`` (key ``timing``) with Python, jax, jaxlib, XLA_FLAGS and device.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from _measure import (
    child_parser,
    emit_result,
    environment,
    print_table,
    run_child,
    write_json,
)

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("linspace", "log1p", "power", "exponential")
SIZES = (100, 200, 500, 1000, 2000)
STOPS = (20.0, 40.0)
ATOMS = (1, 2, 3)
REFERENCE_POINTS = 40_000
GOAL = 1e-4
MARKERS = ("<!-- savings-grids-table:start -->", "<!-- savings-grids-table:end -->")


def savings_grid(kind: str, *, n_points: int, stop: float) -> Any:
    """Return the savings grid of ``kind`` from 0 to ``stop``."""
    from project import LinSpacedGrid, exponential_grid, log1p_grid, power_grid  # noqa: PLC0415

    if kind == "linspace":
        return LinSpacedGrid(start=0.0, stop=stop, n_points=n_points, name="savings")
    build = {"log1p": log1p_grid, "power": power_grid, "exponential": exponential_grid}[kind]
    return build(stop=stop, n_points=n_points)


def sweep_consumption(solution: Any) -> Any:
    """Return consumption of every period on the sweep, (period, wealth)."""
    import numpy as np  # noqa: PLC0415

    wealth = np.round(np.arange(0.1, 20.0 + 5e-4, 1e-3), 10)
    return np.stack(
        [
            solution.policy(period=t, states={"wealth": wealth})["consumption"]
            for t in range(solution.model.n_periods)
        ]
    )


def without_kinks(model: Any, params: dict[str, float]) -> Any:
    """Return the EGM solution with the kinks switched off (the grid as given)."""
    import jax  # noqa: PLC0415

    from project.egm.program import build_program  # noqa: PLC0415
    from project.egm.solution import EGMSolution  # noqa: PLC0415
    from project.model.params import pack_params, params_on_host  # noqa: PLC0415

    host = params_on_host(model=model, params=params)
    savings = model.post_decision_grid.to_jax()
    arrays, _ = build_program(model, window=1, kink_slots=0)(
        jax.device_put(pack_params(host)), savings
    )
    return EGMSolution(model=model, params=host, arrays=arrays, savings=savings)


def accuracy(*, quick: bool) -> dict[str, Any]:
    """Return max |dc| per period for every configuration, per atom count."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    import numpy as np  # noqa: PLC0415

    from project.dispatch import solve  # noqa: PLC0415
    from project.models import iid_income  # noqa: PLC0415

    params = iid_income.DEFAULT_PARAMS
    sizes = (100, 500) if quick else SIZES
    rows = []
    for n_income in ATOMS:
        started = time.perf_counter()
        reference = sweep_consumption(
            solve(
                model=iid_income.build_model(n_savings=REFERENCE_POINTS, n_income=n_income),
                params=params,
            )
        )
        seconds = time.perf_counter() - started
        configs = [(k, n, s, True) for k in KINDS for n in sizes for s in STOPS]
        configs += [("log1p", n, 20.0, False) for n in sizes]
        for kind, n_points, stop, kinks in configs:
            grid = savings_grid(kind, n_points=n_points, stop=stop)
            model = iid_income.build_model(n_income=n_income, savings=grid)
            solution = solve(model=model, params=params) if kinks else without_kinks(model, params)
            gaps = np.max(np.abs(sweep_consumption(solution) - reference), axis=1)
            rows.append(
                {
                    "n_income": n_income,
                    "grid": kind,
                    "n_points": n_points,
                    "stop": stop,
                    "kinks": kinks,
                    "max_abs_dc": float(gaps.max()),
                    "max_abs_dc_per_period": gaps.tolist(),
                }
            )
        rows.append({"n_income": n_income, "reference_seconds_with_sweep": seconds})
    return {
        "sweep": {"start": 0.1, "stop": 20.0, "step": 1e-3, "periods": "all"},
        "reference": {"grid": "log1p", "n_points": REFERENCE_POINTS, "stop": 20.0},
        "goal": GOAL,
        "rows": rows,
    }


def markdown_tables(payload: dict[str, Any]) -> str:
    """Return the convergence tables (one per atom count) as markdown."""
    rows = [r for r in payload["rows"] if "grid" in r]
    sizes = sorted({r["n_points"] for r in rows})
    lines = []
    for n_income in ATOMS:
        lines += [
            f"**{n_income} income atom{'s' if n_income > 1 else ''}**: max |dc| over every period "
            f"and the sweep",
            "",
            "| grid | top | " + " | ".join(f"N={n}" for n in sizes) + " |",
            "|---|---|" + "---:|" * len(sizes),
        ]
        labels = [(k, s, True) for k in KINDS for s in STOPS] + [("log1p", 20.0, False)]
        for kind, stop, kinks in labels:
            cells = []
            for n in sizes:
                match = [
                    r
                    for r in rows
                    if (r["n_income"], r["grid"], r["n_points"], r["stop"], r["kinks"])
                    == (n_income, kind, n, stop, kinks)
                ]
                cells.append(f"{match[0]['max_abs_dc']:.1e}" if match else "")
            label = kind if kinks else f"{kind}, kinks off (before)"
            lines.append(f"| {label} | {stop:g} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_doc(payload: dict[str, Any], path: Path) -> None:
    """Replace the tables between the markers of ``path`` with those of ``payload``."""
    text = path.read_text()
    head, rest = text.split(MARKERS[0])
    _, tail = rest.split(MARKERS[1])
    path.write_text(f"{head}{MARKERS[0]}\n{markdown_tables(payload)}\n{MARKERS[1]}{tail}")


def timing_child(config: dict[str, Any]) -> dict[str, Any]:
    """Return warm solve seconds of one configuration (run in a fresh interpreter)."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", config["x64"])
    import jaxlib  # noqa: PLC0415

    import project  # noqa: PLC0415
    from project.dispatch import solve  # noqa: PLC0415
    from project.models import iid_income  # noqa: PLC0415

    iid_income.INCOME_NODES.setdefault(1, (1.0,))  # the baseline has no 1-atom model
    model = iid_income.build_model(n_savings=config["n_points"], n_income=config["n_income"])
    params = iid_income.DEFAULT_PARAMS

    def call() -> None:
        solution = solve(model=model, params=params, log_level="off")
        jax.block_until_ready(solution.arrays)

    call()
    seconds = []
    for _ in range(config["calls"]):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    device = jax.devices()[0]
    return {
        "config": config,
        "seconds": seconds,
        "source": str(Path(project.__file__).parent),
        "versions": {"jax": jax.__version__, "jaxlib": jaxlib.__version__},
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "device": f"{device.platform}:{getattr(device, 'device_kind', '')}",
    }


def timing(*, quick: bool, baseline_src: Path, repetitions: int) -> dict[str, Any]:
    """Return warm solve times, baseline and now, processes interleaved."""
    script = Path(__file__).resolve()
    sources = {"baseline": baseline_src, "now": ROOT / "src"}
    configs = [
        {"n_points": n, "n_income": a, "calls": 10 if quick else 30, "x64": True}
        for n in ((500,) if quick else (500, 2000))
        for a in ((2,) if quick else (2, 3))
    ]
    samples: dict[tuple[str, int, int], list[float]] = {}
    children = []
    for _ in range(repetitions):
        for config in configs:
            for label, source in sources.items():
                env = dict(os.environ, PYTHONPATH=str(source))
                result = run_child(script, config, extra_args=["--part", "timing"], env=env)
                if "error" in result:
                    raise RuntimeError(result["error"])
                key = (label, config["n_points"], config["n_income"])
                samples.setdefault(key, []).append(statistics.median(result["seconds"]))
                children.append({"label": label, **result})
    rows = [
        {
            "n_points": n,
            "n_income": a,
            "label": label,
            "median_of_process_medians_ms": 1e3 * statistics.median(v),
            "min_of_process_medians_ms": 1e3 * min(v),
            "process_medians_ms": [1e3 * x for x in v],
        }
        for (label, n, a), v in samples.items()
    ]
    first = children[0]
    return {
        "environment": environment()
        | {"versions": first["versions"], "device": first["device"]}
        | {"xla_flags_in_child": first["xla_flags"]},
        "repetitions": repetitions,
        "rows": rows,
        "children": children,
    }


def print_timing(payload: dict[str, Any]) -> None:
    """Print the timing table: per (N, atoms) baseline and now."""
    by_key = {(r["label"], r["n_points"], r["n_income"]): r for r in payload["rows"]}
    table = []
    for n, a in sorted({(r["n_points"], r["n_income"]) for r in payload["rows"]}):
        base, now = by_key[("baseline", n, a)], by_key[("now", n, a)]
        ratio = now["median_of_process_medians_ms"] / base["median_of_process_medians_ms"]
        table.append(
            [
                f"N={n}, {a} atoms",
                f"{base['median_of_process_medians_ms']:.2f}",
                f"{now['median_of_process_medians_ms']:.2f}",
                f"{ratio:.2f}",
            ]
        )
    print_table(
        "Warm EGM solve (ms, median over processes of each process's median)",
        ["configuration", "baseline", "now", "now / baseline"],
        table,
    )


def main() -> None:
    """Run the parts asked for."""
    parser = child_parser(
        description=__doc__.splitlines()[0],
        name="savings_grids_timing",
        quick_help="fewer sizes and repetitions",
    )
    parser.add_argument("--part", choices=("accuracy", "timing", "all"), default="all")
    parser.add_argument("--baseline-src", type=Path, default=Path("/work/baseline/src"))
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs/savings_grids.md")
    args = parser.parse_args()
    if args.single:
        emit_result(timing_child(json.loads(args.single)))
        return
    path = args.doc.with_suffix(".json")
    stored = json.loads(path.read_text()) if path.exists() else {}
    if args.part in ("accuracy", "all"):
        stored["accuracy"] = accuracy(quick=args.quick) | {"environment": environment()}
        write_json(path, stored)
        write_doc(stored["accuracy"], args.doc)
        print(markdown_tables(stored["accuracy"]))
    if args.part in ("timing", "all"):
        repetitions = 2 if args.quick else args.repetitions
        stored["timing"] = timing(
            quick=args.quick, baseline_src=args.baseline_src, repetitions=repetitions
        )
        write_json(path, stored)
        print_timing(stored["timing"])


if __name__ == "__main__":
    main()
