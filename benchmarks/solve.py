"""Benchmark ``project.solve``: first-call (compile) time, warm time, peak memory, kernel count.

Usage::

    uv run python benchmarks/solve.py [--quick] [--json bld/benchmarks/solve.json]

Every configuration runs in its own interpreter (``--single <json>``), so peak RSS and JAX's
compile caches are per configuration. Each child measures, for the benchmark models of
``/work/shared/reference/benchmark_models.md``:

- ``jax_startup``: starting JAX in the process: the backend and its first compilation of any
  program (MLIR and LLVM set-up, about 0.25 s here), timed on its own before the first call;
- ``first_call``: the first ``solve(..., log_level="off")`` of a freshly built model in a fresh
  process where JAX has started (trace + lower + compile + run, and the first use of the jitted
  helpers that build grids and convert params);
- ``fresh_model_first_call``: the same for further freshly built models in the now warm process
  (new kernels, so trace + lower + compile + run again, but no one-time start-up cost);
- ``warm``: further ``solve`` calls of the first model (``solve`` blocks on its result);
- a breakdown of the first call from JAX's own compile timers (``jax.monitoring``): trace, lower
  to MLIR and XLA compile of the solve program (every period in one program), other jitted
  operations (grids), and the rest (running the program, dispatch);
- the kernel that solved each period (``Solution.kernels``), and first/warm time at the
  default log level;
- the peak RSS of the child process and the number of compiled programs.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from _measure import (
    CompileEvents,
    child_parser,
    emit_result,
    environment,
    peak_rss_mib,
    print_table,
    repeat_seconds,
    run_child,
    summarize,
    time_call,
    verdict,
    write_json,
)

SIZES = {
    "precautionary": [(100, 100), (500, 500)],
    "ijrs": [(100, 500), (500, 2000)],
}
HORIZON = 5
LONG_HORIZON = 50

# The goals of the engine issue are checked against the peer in ``compare_pylcm.py``; this
# benchmark keeps the horizon ratio: compile time may not grow with the number of periods.
ROW_BARS: dict[tuple[str, int, int], tuple[str, float]] = {}
HORIZON_RATIO_LIMIT = 1.5


NOTES = """\
first call: first solve of a new model in a new process (trace + lower + compile + run), after
  JAX started (JAX start-up = backend + its first, trivial compilation, timed before).
  fresh model: median first solve of further new models in the same, warm process.
  compile est.: fresh model - warm. warm: median of further solves (they block on the result).
Breakdown (first call, from jax.monitoring): program = the solve program (all periods); other
  jit ops = grids (their first use in the process); rest = first call - all compile events
  (planning, running, dispatch); cold extra = first call - fresh model.
  warning: fresh-model first call and warm median with solve's default log_level="warning"."""


# ----------------------------------------------------------------------------------------------
# Child: one configuration in this process.
# ----------------------------------------------------------------------------------------------


def run_single(config: dict[str, Any], *, repeats: int, fresh_repeats: int) -> dict[str, Any]:
    """Measure one configuration in this (fresh) process and return the result dict."""
    import jax  # noqa: PLC0415

    # Before any JAX operation.
    jax.config.update("jax_enable_x64", config["x64"])
    events = CompileEvents()
    events.register()

    # Resolve ``project.solve`` here: the package exports lazily, and importing the solver
    # modules is import time, not part of the first call.
    import_seconds, solve_function = time_call(lambda: importlib.import_module("project").solve)
    from project.solver.program import compiled_programs  # noqa: PLC0415

    rss_after_import = peak_rss_mib()
    startup_seconds, _ = time_call(start_jax)
    module = importlib.import_module(f"project.models.{config['model']}")
    params = module.DEFAULT_PARAMS

    def build() -> Any:
        kwargs = {
            "n_wealth": config["n_wealth"],
            "n_consumption": config["n_consumption"],
            "n_periods": config["n_periods"],
        }
        if config["model"] == "precautionary":
            kwargs["n_income"] = 5
        return module.build_model(**kwargs)

    def solve(model: Any, log_level: str = "off") -> Any:
        return solve_function(model=model, params=params, log_level=log_level)

    build_seconds, model = time_call(build)
    with events.recording() as first_events:
        first_call, solution = time_call(lambda: solve(model))
    rss_after_first_call = peak_rss_mib()
    n_compiled_first = compiled_programs(model)

    warm = repeat_seconds(lambda: solve(model), repeats=repeats)
    n_compiled = compiled_programs(model)

    fresh, fresh_breakdowns = [], []
    for _ in range(fresh_repeats):
        fresh_model = build()
        with events.recording() as fresh_events:
            seconds, _ = time_call(lambda m=fresh_model: solve(m))
        fresh.append(seconds)
        fresh_breakdowns.append(breakdown(fresh_events, seconds))

    default_level = default_log_level_timings(build, solve, repeats=2)

    value = solution.value_function[0]
    return {
        "config": config,
        "label": label(config),
        "dtype": str(value.dtype),
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "import_seconds": import_seconds,
        "jax_startup_seconds": startup_seconds,
        "build_seconds": build_seconds,
        "first_call_seconds": first_call,
        "first_call_breakdown": breakdown(first_events, first_call),
        "fresh_model_first_call_seconds": summarize(fresh),
        "fresh_model_breakdowns": fresh_breakdowns,
        "warm_seconds": summarize(warm),
        "default_log_level": default_level,
        "kernels": list(solution.kernels),
        "n_compiled_after_first_call": n_compiled_first,
        "n_compiled": n_compiled,
        "peak_rss_mib": peak_rss_mib(),
        "rss_after_import_mib": rss_after_import,
        "rss_after_first_call_mib": rss_after_first_call,
        "value_checksum": float(
            jax.numpy.nansum(jax.numpy.where(jax.numpy.isfinite(value), value, 0.0))
        ),
    }


def start_jax() -> None:
    """Start the backend and compile one trivial program (JAX's one-time per-process set-up)."""
    import jax  # noqa: PLC0415

    jax.devices()
    jax.block_until_ready(jax.jit(lambda x: x + 1)(jax.numpy.zeros(())))


def breakdown(records: list[dict[str, Any]], total: float) -> dict[str, Any]:
    """Split JAX compile events of one ``solve`` call into kernels, other ops and the rest.

    The solve program (every period in one program) is the jitted function ``program``.
    """
    phases = ("trace", "lower", "compile")
    parts: dict[str, dict[str, float]] = {}
    other_functions: dict[str, float] = {}
    n_kernel_traces = 0
    for record in records:
        if record["function"] == "program":
            n_kernel_traces += record["phase"] == "trace"
            key = "program"
        else:
            key = "other"
            other_functions[record["function"]] = (
                other_functions.get(record["function"], 0.0) + record["seconds"]
            )
        bucket = parts.setdefault(key, dict.fromkeys(phases, 0.0))
        bucket[record["phase"]] += record["seconds"]
    accounted = sum(sum(b.values()) for b in parts.values())
    return {
        "parts": parts,
        "other_functions": dict(sorted(other_functions.items(), key=lambda kv: -kv[1])),
        "n_kernel_traces": n_kernel_traces,
        "n_compile_events": sum(r["phase"] == "compile" for r in records),
        "compile_events_seconds": accounted,
        "rest_seconds": total - accounted,
    }


def default_log_level_timings(build: Any, solve: Any, *, repeats: int) -> dict[str, Any]:
    """Time a fresh model's first and warm solves at solve's default ``log_level="warning"``."""
    model = build()
    first, _ = time_call(lambda: solve(model, "warning"))
    warm = repeat_seconds(lambda: solve(model, "warning"), repeats=repeats)
    return {
        "log_level": "warning",
        "fresh_model_first_call_seconds": first,
        "warm_seconds": summarize(warm),
    }


# ----------------------------------------------------------------------------------------------
# Parent: run every configuration in a subprocess, then report.
# ----------------------------------------------------------------------------------------------


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``ijrs 100x500 f64 T=5``."""
    precision = "f64" if config["x64"] else "f32"
    return (
        f"{config['model']} {config['n_wealth']}x{config['n_consumption']} {precision} "
        f"T={config['n_periods']}"
    )


def configurations(*, quick: bool) -> list[dict[str, Any]]:
    """Return the benchmark configurations (only the small sizes with ``quick``)."""
    configs = []
    for model, sizes in SIZES.items():
        for n_wealth, n_consumption in sizes[:1] if quick else sizes:
            for x64 in (True, False):
                configs.append(
                    {
                        "model": model,
                        "n_wealth": n_wealth,
                        "n_consumption": n_consumption,
                        "n_periods": HORIZON,
                        "x64": x64,
                    }
                )
    configs.append(
        {
            "model": "ijrs",
            "n_wealth": 100,
            "n_consumption": 500,
            "n_periods": LONG_HORIZON,
            "x64": True,
        }
    )
    return configs


def find(results: list[dict[str, Any]], **config: Any) -> dict[str, Any] | None:
    """Return the successful result whose config matches ``config``."""
    for result in results:
        if "error" not in result and all(result["config"][k] == v for k, v in config.items()):
            return result
    return None


def metric(result: dict[str, Any] | None, name: str) -> float | None:
    """Return ``first_call`` / ``warm`` / ``fresh`` / ``compile_estimate`` seconds of a result."""
    if result is None:
        return None
    warm = result["warm_seconds"]["median"]
    fresh = result["fresh_model_first_call_seconds"]["median"]
    return {
        "first_call": result["first_call_seconds"],
        "warm": warm,
        "fresh": fresh,
        "compile_estimate": fresh - warm,
    }[name]


def evaluate_bars(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return every bar of the issue with the measured value and PASS/FAIL."""
    bars = []
    for (model, n_wealth, n_consumption), (name, limit) in ROW_BARS.items():
        result = find(
            results,
            model=model,
            n_wealth=n_wealth,
            n_consumption=n_consumption,
            n_periods=HORIZON,
            x64=True,
        )
        if result is None:
            continue
        what = "warm solve" if name == "warm" else "first call"
        value = metric(result, name)
        bars.append(
            {
                "bar": f"{what} {model} {n_wealth}x{n_consumption} f64",
                "value": value,
                "limit": limit,
                "unit": "s",
                "result": verdict(value, limit),
            }
        )
    short = find(
        results, model="ijrs", n_wealth=100, n_consumption=500, n_periods=HORIZON, x64=True
    )
    long = find(
        results, model="ijrs", n_wealth=100, n_consumption=500, n_periods=LONG_HORIZON, x64=True
    )
    if short and long:
        for name, what in (
            ("first_call", "first call"),
            ("compile_estimate", "fresh-model first call - warm"),
        ):
            ratio = metric(long, name) / metric(short, name)
            bars.append(
                {
                    "bar": f"ijrs 100x500 f64 T={LONG_HORIZON}/T={HORIZON}: {what}",
                    "value": ratio,
                    "limit": HORIZON_RATIO_LIMIT,
                    "unit": "ratio",
                    "result": verdict(ratio, HORIZON_RATIO_LIMIT),
                }
            )
    return bars


def row_bar(result: dict[str, Any]) -> tuple[str, str]:
    """Return the bar column and verdict for one result row."""
    config = result["config"]
    key = (config["model"], config["n_wealth"], config["n_consumption"])
    if not config["x64"] or config["n_periods"] != HORIZON or key not in ROW_BARS:
        return "", ""
    name, limit = ROW_BARS[key]
    text = f"warm < {limit * 1e3:.0f} ms" if name == "warm" else f"first < {limit:g} s"
    return text, verdict(metric(result, name), limit)


def report(results: list[dict[str, Any]], bars: list[dict[str, Any]]) -> None:
    """Print the main table, the bars and the first-call breakdown."""
    rows = []
    for result in results:
        if "error" in result:
            rows.append([label(result["config"]), "error", *[""] * 8])
            continue
        bar, outcome = row_bar(result)
        rows.append(
            [
                result["label"],
                f"{result['first_call_seconds']:.3f}",
                f"{metric(result, 'fresh'):.3f}",
                f"{metric(result, 'compile_estimate'):.3f}",
                f"{result['warm_seconds']['median'] * 1e3:.1f}",
                f"{result['warm_seconds']['min'] * 1e3:.1f}",
                f"{result['peak_rss_mib']:.0f} ({result['rss_after_import_mib']:.0f})",
                f"{result['n_compiled']} ({'/'.join(sorted(set(result['kernels'])))})",
                bar,
                outcome,
            ]
        )
    print_table(
        "project.solve(log_level='off'): one subprocess per row",
        [
            "configuration",
            "first call s",
            "fresh model s",
            "compile est. s",
            "warm ms (med)",
            "warm ms (min)",
            "peak RSS MiB (import)",
            "programs (kernels)",
            "bar",
            "result",
        ],
        rows,
    )
    print_table(
        "Horizon: compile time may not grow with the number of periods",
        ["bar", "measured", "limit", "result"],
        [
            [
                b["bar"],
                f"{b['value'] * 1e3:.1f} ms"
                if b["unit"] == "s" and b["value"] < 1
                else f"{b['value']:.3f}" + (" s" if b["unit"] == "s" else ""),
                f"{b['limit'] * 1e3:.0f} ms"
                if b["unit"] == "s" and b["limit"] < 0.1
                else f"{b['limit']:g}" + (" s" if b["unit"] == "s" else "x"),
                b["result"],
            ]
            for b in bars
        ],
    )
    rows = []
    for result in results:
        if "error" in result:
            continue
        parts = result["first_call_breakdown"]["parts"]
        kernel = parts.get("program", {})
        other = parts.get("other", {})
        n_other = len(result["first_call_breakdown"]["other_functions"])
        default = result["default_log_level"]
        rows.append(
            [
                result["label"],
                f"{result['jax_startup_seconds']:.3f}",
                f"{result['first_call_seconds']:.3f}",
                f"{kernel.get('trace', 0):.3f}",
                f"{kernel.get('lower', 0):.3f}",
                f"{kernel.get('compile', 0):.3f}",
                f"{sum(other.values()):.3f} ({n_other})",
                f"{result['first_call_breakdown']['rest_seconds']:.3f}",
                f"{result['first_call_seconds'] - metric(result, 'fresh'):.3f}",
                f"{default['fresh_model_first_call_seconds']:.3f} / "
                f"{default['warm_seconds']['median'] * 1e3:.1f} ms",
            ]
        )
    print_table(
        "First-call breakdown, seconds (jax.monitoring)",
        [
            "configuration",
            "JAX start-up",
            "first call",
            "program trace",
            "lower",
            "XLA compile",
            "other jit ops (n)",
            "rest",
            "cold extra",
            "warning: fresh / warm",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    """Run all configurations in subprocesses, print tables and write JSON."""
    parser = child_parser(
        description=__doc__.splitlines()[0], name="solve", quick_help="only the small sizes"
    )
    parser.add_argument("--repeats", type=int, default=5, help="warm calls per configuration")
    parser.add_argument(
        "--fresh-repeats",
        type=int,
        default=3,
        help="freshly built models solved per configuration after the first",
    )
    args = parser.parse_args(argv)

    if args.single:
        emit_result(
            run_single(
                json.loads(args.single), repeats=args.repeats, fresh_repeats=args.fresh_repeats
            )
        )
        return 0

    script = Path(__file__).resolve()
    meta = environment()
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    print(f"{meta['cpu_count']} CPUs, load average {load}; one subprocess per configuration.")
    results = []
    for config in configurations(quick=args.quick):
        if args.only not in label(config):
            continue
        print(f"running {label(config)} ...", flush=True)
        result = run_child(
            script,
            config,
            extra_args=[f"--repeats={args.repeats}", f"--fresh-repeats={args.fresh_repeats}"],
        )
        if "error" in result:
            print(f"  FAILED: {result['error']}", flush=True)
        results.append(result)
    meta["load_average_after"] = list(environment()["load_average"])
    bars = evaluate_bars(results)
    report(results, bars)
    write_json(
        args.json,
        {
            "benchmark": "solve",
            "quick": args.quick,
            "environment": meta,
            "results": results,
            "bars": bars,
        },
    )
    print(NOTES)
    print(f"wrote {args.json}")
    failed = [r for r in results if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
