"""Benchmark the accuracy-versus-time frontier of EGM and the grid solver on ``iid_income``.

Usage::

    uv run python benchmarks/accuracy.py [--income 2 3] [--quick] [--out docs]

The model is ``project.models.iid_income`` (10 periods, wealth in [0.1, 20], 2 or 3 iid income
values), float64. Every configuration runs in its own interpreter (``--single <json>``), so
the first call compiles from scratch. Each child builds a fresh model and measures:

- ``first_call``: the first ``solve(..., method=...)`` of the model, blocked on the result,
  after JAX started (JAX start-up -- backend and a trivial compilation -- is timed apart);
- ``warm``: further solves of the same model (EGM: ``jax.block_until_ready(sol.arrays)``,
  grid: ``jax.block_until_ready(sol.values)``), min and median over the repeats;
- the consumption policy of periods 0..9 at ``CONSUMPTION_WEALTH`` (50 points in [0.1, 20]);
- the relative Euler-equation errors (``project.egm.accuracy.euler_errors``) of periods 0..8
  at ``EULER_WEALTH``: the midpoints of 1,000 equal cells of [0.1, 20], off every solve grid.

The parent runs the reference (EGM with ``REFERENCE_SAVINGS`` savings points) first and
reports, per configuration, the max |consumption - reference| over all periods and the 50
points, and the median log10 Euler error pooled over periods 0..8 and the 1,000 points,
ignoring NaN (where ``euler_errors`` finds the borrowing limit binding). The JSON also keeps
the median over the points where the *reference* is unconstrained: the grid solver picks
consumption on its grid, so at constrained states it usually leaves savings of less than one
grid step, which ``euler_errors`` does not mark as binding.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
from _measure import (
    emit_result,
    environment,
    print_table,
    repeat_seconds,
    run_child,
    summarize,
    time_call,
    write_json,
)

N_PERIODS = 10
WEALTH_RANGE = (0.1, 20.0)
CONSUMPTION_WEALTH = np.linspace(*WEALTH_RANGE, 50)
N_EULER = 1000
EULER_WEALTH = WEALTH_RANGE[0] + (np.arange(N_EULER) + 0.5) * (
    (WEALTH_RANGE[1] - WEALTH_RANGE[0]) / N_EULER
)
EULER_PERIODS = range(N_PERIODS - 1)

REFERENCE_SAVINGS = 10_000
EGM_SIZES = (25, 50, 100, 200, 500, 1000)
GRID_SIZES = ((100, 200), (200, 500), (300, 1000), (300, 2000), (500, 4000), (700, 5000))
QUICK_EGM_SIZES = (25, 100)
QUICK_GRID_SIZES = ((100, 200), (200, 500))
INCOME_MARKERS = {2: "o", 3: "s"}
METHOD_COLORS = {"egm": "tab:blue", "grid": "tab:orange"}

NOTES = """\
warm: solve(log_level=...) of an already compiled model, blocked on the result; min / median
  over the repeats. first call: the first solve of a fresh model in a fresh process (trace +
  compile + run), JAX start-up excluded. max |dc|: max over periods 0..9 and 50 wealth values
  of |consumption - reference|. Euler: median log10 relative Euler error, periods 0..8 pooled,
  1,000 off-grid wealth values, NaN (borrowing limit binds) ignored."""


# ----------------------------------------------------------------------------------------------
# Child: one configuration in this (fresh) process.
# ----------------------------------------------------------------------------------------------


def run_single(config: dict[str, Any], *, repeats: int, log_level: str) -> dict[str, Any]:
    """Solve one configuration, time it and evaluate its policy; return the result dict."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    from project.dispatch import solve  # noqa: PLC0415
    from project.egm.accuracy import euler_errors  # noqa: PLC0415
    from project.models import iid_income  # noqa: PLC0415

    startup_seconds, _ = time_call(start_jax)
    method = config["method"]
    model = iid_income.build_model(n_periods=N_PERIODS, **model_sizes(config))
    params = iid_income.DEFAULT_PARAMS

    def solve_once() -> Any:
        solution = solve(model=model, params=params, method=method, log_level=log_level)
        jax.block_until_ready(solution.arrays if method == "egm" else solution.values)
        return solution

    load_before = environment()["load_average"]
    first_call, solution = time_call(solve_once)
    warm = repeat_seconds(solve_once, repeats=repeats)
    load_after = environment()["load_average"]

    consumption = [
        np.asarray(
            solution.policy(period=t, states={"wealth": CONSUMPTION_WEALTH})["consumption"]
        ).tolist()
        for t in range(N_PERIODS)
    ]
    euler = [
        np.asarray(euler_errors(solution, period=t, states={"wealth": EULER_WEALTH})).tolist()
        for t in EULER_PERIODS
    ]
    return {
        "config": config,
        "label": label(config),
        "dtype": str(jax.numpy.zeros(()).dtype),
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "log_level": log_level,
        "kernels": list(solution.kernels),
        "jax_startup_seconds": startup_seconds,
        "first_call_seconds": first_call,
        "warm_seconds": summarize(warm),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "consumption": consumption,
        "euler_errors": euler,
    }


def start_jax() -> None:
    """Start the backend and compile one trivial program (JAX's one-time per-process set-up)."""
    import jax  # noqa: PLC0415

    jax.devices()
    jax.block_until_ready(jax.jit(lambda x: x + 1)(jax.numpy.zeros(())))


def model_sizes(config: dict[str, Any]) -> dict[str, int]:
    """Return the ``build_model`` size arguments of a configuration."""
    sizes = {"n_income": config["n_income"]}
    if config["method"] == "egm":
        return sizes | {"n_savings": config["n_savings"]}
    return sizes | {"n_wealth": config["n_wealth"], "n_consumption": config["n_consumption"]}


# ----------------------------------------------------------------------------------------------
# Parent: run every configuration in a subprocess, then compare with the reference.
# ----------------------------------------------------------------------------------------------


def size_label(config: dict[str, Any]) -> str:
    """Return e.g. ``500 savings`` or ``300x1000`` (wealth x consumption)."""
    if config["method"] == "egm":
        return f"{config['n_savings']} savings"
    return f"{config['n_wealth']}x{config['n_consumption']}"


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``egm 500 savings income=2``."""
    reference = " (reference)" if config.get("reference") else ""
    return f"{config['method']} {size_label(config)} income={config['n_income']}{reference}"


def configurations(*, income: list[int], quick: bool) -> list[dict[str, Any]]:
    """Return the reference first, then EGM and grid sizes, for every income count."""
    egm_sizes = QUICK_EGM_SIZES if quick else EGM_SIZES
    grid_sizes = QUICK_GRID_SIZES if quick else GRID_SIZES
    configs = []
    for n_income in income:
        configs.append(
            {
                "method": "egm",
                "n_savings": REFERENCE_SAVINGS,
                "n_income": n_income,
                "reference": True,
            }
        )
        configs += [{"method": "egm", "n_savings": n, "n_income": n_income} for n in egm_sizes]
        configs += [
            {"method": "grid", "n_wealth": w, "n_consumption": c, "n_income": n_income}
            for w, c in grid_sizes
        ]
    return configs


def accuracy(result: dict[str, Any], reference: dict[str, Any] | None) -> dict[str, Any]:
    """Return the consumption and Euler-error summaries of a result against the reference."""
    consumption = np.asarray(result["consumption"], dtype=float)
    errors = np.asarray(result["euler_errors"], dtype=float)
    with np.errstate(divide="ignore"):
        log_errors = np.log10(errors)
    summary: dict[str, Any] = {
        "euler_log10_median": float(np.nanmedian(log_errors)),
        "euler_log10_mean": float(np.nanmean(log_errors[np.isfinite(log_errors)])),
        "euler_log10_p90": float(np.nanpercentile(log_errors, 90)),
        "euler_log10_max": float(np.nanmax(log_errors)),
        "euler_binding_points": int(np.isnan(errors).sum()),
        "euler_points": int(errors.size),
    }
    if reference is None:
        return summary
    difference = np.abs(consumption - np.asarray(reference["consumption"], dtype=float))
    free = ~np.isnan(np.asarray(reference["euler_errors"], dtype=float))
    return summary | {
        "max_abs_consumption_error": float(difference.max()),
        "max_abs_consumption_error_by_period": difference.max(axis=1).tolist(),
        "euler_log10_median_reference_unconstrained": float(np.nanmedian(log_errors[free])),
    }


def summarize_results(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Replace each result's raw policy and Euler errors by their accuracy summary."""
    references = {
        r["config"]["n_income"]: r
        for r in results
        if r["config"].get("reference") and "error" not in r
    }
    summarized = []
    for result in results:
        if "error" in result:
            summarized.append(result)
            continue
        reference = references.get(result["config"]["n_income"])
        summary = accuracy(result, reference)
        kept = {k: v for k, v in result.items() if k not in ("consumption", "euler_errors")}
        summarized.append(kept | {"accuracy": summary})
    return summarized


def sanity_lines(results: list[dict[str, Any]]) -> list[str]:
    """Return, per income count, the reference's max |dc| to the finest grid-solver solution."""
    lines = []
    for n_income in sorted({r["config"]["n_income"] for r in results}):
        grids = [
            r
            for r in results
            if r["config"]["n_income"] == n_income
            and r["config"]["method"] == "grid"
            and "accuracy" in r
            and "max_abs_consumption_error" in r["accuracy"]
        ]
        if not grids:
            continue
        finest = max(grids, key=lambda r: r["config"]["n_wealth"] * r["config"]["n_consumption"])
        config = finest["config"]
        spacing = (WEALTH_RANGE[1] - 0.01) / (config["n_consumption"] - 1)
        lines.append(
            f"sanity, income={n_income}: max |c_reference - c_grid {size_label(config)}| = "
            f"{finest['accuracy']['max_abs_consumption_error']:.2e} "
            f"(consumption grid step {spacing:.2e})"
        )
    return lines


def table_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    """Return one row per result: method, size, income, timings and accuracy."""
    rows = []
    for result in results:
        config = result["config"]
        method = config["method"] + (" (ref)" if config.get("reference") else "")
        head = [method, size_label(config), str(config["n_income"])]
        if "error" in result:
            rows.append([*head, "error", "", "", "", ""])
            continue
        warm, summary = result["warm_seconds"], result["accuracy"]
        difference = summary.get("max_abs_consumption_error")
        rows.append(
            [
                *head,
                f"{warm['min'] * 1e3:.2f}",
                f"{warm['median'] * 1e3:.2f}",
                f"{result['first_call_seconds']:.2f}",
                "0 (ref)" if config.get("reference") else f"{difference:.1e}",
                f"{summary['euler_log10_median']:.2f}",
            ]
        )
    return rows


COLUMNS = [
    "method",
    "size",
    "income",
    "warm ms (min)",
    "warm ms (median)",
    "first call s",
    "max |dc|",
    "median log10 Euler",
]


def markdown_table(rows: list[list[str]]) -> str:
    """Return the table as GitHub markdown, right-aligning the numbers."""
    lines = [
        "| " + " | ".join(c.replace("|", "\\|") for c in COLUMNS) + " |",
        "| " + " | ".join(["---"] * 3 + ["---:"] * (len(COLUMNS) - 3)) + " |",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], *, path: Path) -> None:
    """Draw max |dc| and the median Euler error against warm time (min), log-log, to ``path``."""
    import matplotlib as mpl  # noqa: PLC0415

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.lines import Line2D  # noqa: PLC0415

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
    ok = [r for r in results if "accuracy" in r]
    for n_income in sorted({r["config"]["n_income"] for r in ok}):
        marker = INCOME_MARKERS.get(n_income, "^")
        for method, color in METHOD_COLORS.items():
            line = [
                r
                for r in ok
                if r["config"]["n_income"] == n_income
                and r["config"]["method"] == method
                and not r["config"].get("reference")
            ]
            if not line:
                continue
            ms = [r["warm_seconds"]["min"] * 1e3 for r in line]
            style = {"color": color, "marker": marker, "markersize": 5, "linewidth": 1.2}
            left.plot(ms, [r["accuracy"]["max_abs_consumption_error"] for r in line], **style)
            right.plot(ms, [10 ** r["accuracy"]["euler_log10_median"] for r in line], **style)
            if n_income == min(INCOME_MARKERS):
                for r, x in zip(line, ms, strict=True):
                    y = r["accuracy"]["max_abs_consumption_error"]
                    left.annotate(
                        size_label(r["config"]).removesuffix(" savings"),
                        (x, y),
                        textcoords="offset points",
                        xytext=(4, 4),
                        fontsize=7,
                        color=color,
                        rotation=30 if method == "grid" else 0,
                    )
        for r in ok:
            if r["config"].get("reference") and r["config"]["n_income"] == n_income:
                right.plot(
                    r["warm_seconds"]["min"] * 1e3,
                    10 ** r["accuracy"]["euler_log10_median"],
                    marker=marker,
                    color="black",
                    fillstyle="none",
                    linestyle="none",
                )
    left.set(
        xscale="log",
        yscale="log",
        xlabel="warm solve time, min over repeats (ms)",
        ylabel="max |consumption - reference|, periods 0-9",
        title="Consumption error vs time",
    )
    right.set(
        xscale="log",
        yscale="log",
        xlabel="warm solve time, min over repeats (ms)",
        ylabel="median relative Euler error, periods 0-8",
        title="Euler-equation error vs time",
    )
    handles = [
        Line2D([], [], color=c, label="EGM (n savings)" if m == "egm" else "grid (wealth x cons.)")
        for m, c in METHOD_COLORS.items()
    ]
    handles += [
        Line2D([], [], color="gray", marker=k, linestyle="none", label=f"{n} income values")
        for n, k in INCOME_MARKERS.items()
    ]
    handles.append(
        Line2D(
            [],
            [],
            color="black",
            marker="o",
            fillstyle="none",
            linestyle="none",
            label=f"reference: EGM {REFERENCE_SAVINGS} savings",
        )
    )
    for axis in (left, right):
        axis.grid(visible=True, which="major", alpha=0.3)
        axis.margins(x=0.08, y=0.12)
    right.legend(handles=handles, fontsize=8, loc="center right")
    figure.suptitle("iid_income, 10 periods, float64: accuracy vs warm solve time", fontsize=11)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=150)
    plt.close(figure)


def parser() -> argparse.ArgumentParser:
    """Return the command-line parser (children get ``--single <json>``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--income", type=int, nargs="+", default=[2, 3], choices=[2, 3], help="income counts"
    )
    parser.add_argument("--quick", action="store_true", help="two sizes per method (smoke run)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for accuracy.json and accuracy.png (default: docs, or "
        "bld/benchmarks/accuracy-quick with --quick)",
    )
    parser.add_argument("--only", default="", help="only configurations whose label contains this")
    parser.add_argument("--egm-repeats", type=int, default=50, help="warm EGM solves per size")
    parser.add_argument("--grid-repeats", type=int, default=5, help="warm grid solves per size")
    parser.add_argument(
        "--log-level", default="off", help="solve's log_level in every timed call (default off)"
    )
    parser.add_argument("--single", help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run all configurations in subprocesses, print the table, write JSON and the figure."""
    args = parser().parse_args(argv)
    if args.single:
        emit_result(
            run_single(json.loads(args.single), repeats=args.repeats, log_level=args.log_level)
        )
        return 0

    out = args.out or Path("bld/benchmarks/accuracy-quick" if args.quick else "docs")
    script = Path(__file__).resolve()
    meta = environment()
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    print(f"{meta['cpu_count']} CPUs, load average {load}; one subprocess per configuration.")
    raw = []
    for config in configurations(income=args.income, quick=args.quick):
        if args.only not in label(config) and not config.get("reference"):
            continue
        repeats = args.egm_repeats if config["method"] == "egm" else args.grid_repeats
        print(f"running {label(config)} ...", flush=True)
        result = run_child(
            script,
            config,
            extra_args=[f"--repeats={repeats}", f"--log-level={args.log_level}"],
        )
        if "error" in result:
            print(f"  FAILED: {result['error']}", flush=True)
        raw.append(result)
    meta["load_average_after"] = list(environment()["load_average"])
    results = summarize_results(raw)
    rows = table_rows(results)
    print_table(
        f"iid_income accuracy vs time (float64, log_level={args.log_level!r}, "
        f"{args.egm_repeats} EGM / {args.grid_repeats} grid warm repeats)",
        COLUMNS,
        rows,
    )
    sanity = sanity_lines(results)
    for line in sanity:
        print(line)
    print(NOTES)
    print()
    print(markdown_table(rows))
    command = "uv run python benchmarks/accuracy.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    write_json(
        out / "accuracy.json",
        {
            "benchmark": "accuracy",
            "command": command.strip(),
            "quick": args.quick,
            "environment": meta,
            "settings": {
                "n_periods": N_PERIODS,
                "reference_savings": REFERENCE_SAVINGS,
                "consumption_wealth": CONSUMPTION_WEALTH.tolist(),
                "euler_wealth": "midpoints of 1000 equal cells of [0.1, 20]",
                "euler_periods": list(EULER_PERIODS),
                "egm_repeats": args.egm_repeats,
                "grid_repeats": args.grid_repeats,
                "log_level": args.log_level,
            },
            "sanity": sanity,
            "results": results,
        },
    )
    plot(results, path=out / "accuracy.png")
    print(f"wrote {out / 'accuracy.json'} and {out / 'accuracy.png'}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
