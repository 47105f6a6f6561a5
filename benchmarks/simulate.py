"""Benchmark ``project.simulation.simulate``: throughput, first call, peak memory, save/load.

Usage::

    uv run python benchmarks/simulate.py [--quick] [--json bld/benchmarks/simulate.json]

Every configuration runs in its own interpreter (``--single <json>``), so peak RSS and JAX's
compile caches are per configuration. Each child solves its model (``log_level="off"``, not part
of the timings), draws the initial conditions with ``draw_initial_conditions`` and measures:

- ``first_call``: the first ``simulate`` of the solved model in the process (trace + lower +
  compile of the simulation steps and the expectation contraction, plus the run). This call is
  instrumented: every step blocks on its result, so its time splits into the expectation
  contraction, terminal and regular steps, ``jax.device_get`` (host transfer) and the rest
  (validating initial conditions, scattering chunks into the columns, value checks). JAX's own
  compile timers (``jax.monitoring``) give the trace/lower/compile part;
- ``warm``: further, uninstrumented ``simulate`` calls (wall and process CPU seconds);
  throughput = subjects x periods / median warm seconds;
- the peak RSS of the child after the simulations (``ru_maxrss``) and the peak before the first
  simulation (after import, solve and drawing initial conditions);
- a digest of every simulated column, to check that ``subject_batch_size`` leaves results
  unchanged;
- with ``io``: ``to_dataframe()`` time, and ``result.save(directory=...)`` /
  ``SimulationResult.load(directory=...)`` time and size on disk, when ``SimulationResult`` has
  them (else "n/a"). These run after the peak RSS of the simulation was recorded.

Benchmark models: ``/work/shared/reference/benchmark_models.md`` (precautionary 10 x 10 grids,
1,000,000 subjects, initial wealth 5 and income node 2) and the default life-cycle model
(``project.models.lifecycle.build_model()``, ``DEFAULT_PARAMS``). float32 (JAX's default).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import (
    CompileEvents,
    child_parser,
    emit_result,
    environment,
    peak_rss_mib,
    print_table,
    run_child,
    summarize,
    time_call,
    write_json,
)

SEED = 0

# (model, n_subjects, subject_batch_sizes, with io); --quick uses the second list.
FULL = [
    ("precautionary", 1_000_000, (0, 100_000), True),
    ("lifecycle", 100_000, (0, 100_000), True),
]
QUICK = [
    ("precautionary", 100_000, (0, 10_000), True),
    ("lifecycle", 10_000, (0, 2_500), True),
]

INITIAL_DISTRIBUTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "precautionary": {"income": {"value": 2}, "wealth": {"value": 5.0}},
    "lifecycle": {
        "pref_type": {"probabilities": [0.5, 0.5]},
        "lagged_retirement": {"label": "working"},
        "income": {"value": 2},
        "wealth": {"uniform": [0.5, 5.0]},
    },
}

NOTES = """\
first call: first simulate of the solved model in a fresh process (compile + run); it is
  instrumented (each step blocks). warm: median of further, uninstrumented simulate calls (default
  log_level="warning", i.e. with the value checks); CPU s = process CPU time of those calls (all
  threads), so CPU/wall shows how much of the 2 cores the run got under the machine's load.
  subj-periods/s = subjects x periods / warm median. peak RSS: ru_maxrss after the simulations
  (before: after import + solve + initial draw, i.e. before the first simulate).
First-call breakdown: compile = jax.monitoring trace + lower + XLA compile events (all functions);
  expected = V_{t+1} contraction per period; steps: terminal / regular (first regular step
  includes its compile); device_get = host transfer of each finished chunk; rest = first call -
  those (validation, index bookkeeping, scatter into the columns, value checks).
Batched / one pass: a batch >= the number of subjects is one chunk, the same work as batch 0, so
  its ratios show the run-to-run noise of this machine.
I/O: to_dataframe() without targets; save/load into a fresh temporary folder each time, load
  right after save (page cache warm); 1st includes one-time costs (imports), again = median of
  the later calls; MiB on disk = sum of file sizes; columns MiB = the result's arrays in memory."""


# ----------------------------------------------------------------------------------------------
# Child: one configuration in this process.
# ----------------------------------------------------------------------------------------------


def build(config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Return ``(model, params)`` of a configuration."""
    module = importlib.import_module(f"project.models.{config['model']}")
    if config["model"] == "precautionary":
        model = module.build_model(n_wealth=10, n_consumption=10, n_periods=5)
    else:
        model = module.build_model()
    return model, module.DEFAULT_PARAMS


class StepTimer:
    """Time each simulation step, the contraction and ``jax.device_get`` during one call.

    Wraps the jitted functions cached by ``project.simulation.forward._steps`` (private, so any
    failure to install leaves the timer disabled and the breakdown "n/a").
    """

    def __init__(self, model: Any) -> None:
        import jax  # noqa: PLC0415

        self.jax = jax
        self.timings: dict[str, list[float]] = {}
        self.error: str | None = None
        try:
            from project.simulation import forward  # noqa: PLC0415

            self.steps = forward._steps(model)
            self.originals = dict(self.steps)
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"

    def _timed(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            out = self.jax.block_until_ready(func(*args, **kwargs))
            self.timings.setdefault(name, []).append(time.perf_counter() - started)
            return out

        return wrapper

    def __enter__(self) -> StepTimer:
        if self.error is None:
            for name, func in self.originals.items():
                self.steps[name] = self._timed(name, func)
            self.device_get = self.jax.device_get
            self.jax.device_get = self._timed("device_get", self.device_get)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.error is None:
            self.steps.update(self.originals)
            self.jax.device_get = self.device_get

    def summary(self, total: float) -> dict[str, Any] | None:
        """Return the seconds per part and the rest of ``total``."""
        if self.error is not None:
            return None
        parts = {name: sum(values) for name, values in self.timings.items()}
        regular = self.timings.get("regular", [])
        return {
            "parts": parts,
            "counts": {name: len(values) for name, values in self.timings.items()},
            "first_regular_step": regular[0] if regular else None,
            "median_regular_step_after_first": statistics.median(regular[1:])
            if len(regular) > 1
            else None,
            "rest_seconds": total - sum(parts.values()),
        }


def compile_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum JAX compile events per phase and per function."""
    phases = dict.fromkeys(("trace", "lower", "compile"), 0.0)
    functions: dict[str, float] = {}
    for record in records:
        phases[record["phase"]] += record["seconds"]
        functions[record["function"]] = functions.get(record["function"], 0.0) + record["seconds"]
    return {
        "phases": phases,
        "total_seconds": sum(phases.values()),
        "functions": dict(sorted(functions.items(), key=lambda kv: -kv[1])),
        "n_backend_compiles": sum(r["phase"] == "compile" for r in records),
    }


def column_digests(columns: dict[str, Any]) -> dict[str, str]:
    """Return a SHA-1 per simulated column (exact equality across batch sizes)."""
    import numpy as np  # noqa: PLC0415

    return {
        name: hashlib.sha1(np.ascontiguousarray(values).tobytes()).hexdigest()
        for name, values in sorted(columns.items())
    }


def directory_mib(path: Path) -> float:
    """Return the summed size of all files below ``path`` in MiB."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def first_and_again(samples: list[float]) -> dict[str, Any]:
    """Return the first call's seconds, the median of the later calls and all samples."""
    return {
        "first": samples[0],
        "again_median": statistics.median(samples[1:]) if len(samples) > 1 else None,
        "samples": samples,
    }


def measure_io(result: Any, *, repeats: int, tmp_dir: str | None) -> dict[str, Any]:
    """Time ``to_dataframe`` and, when available, ``save`` / ``load`` of ``result``.

    Each is called ``repeats`` times; the first call includes one-time costs (imports).
    """
    import numpy as np  # noqa: PLC0415

    from project.simulation import SimulationResult  # noqa: PLC0415

    seconds, frame = time_call(result.to_dataframe)
    io: dict[str, Any] = {
        "dataframe_shape": list(frame.shape),
        "dataframe_mib": float(frame.memory_usage(deep=True).sum()) / 2**20,
    }
    del frame
    samples = [seconds] + [time_call(result.to_dataframe)[0] for _ in range(repeats - 1)]
    io["to_dataframe_seconds"] = first_and_again(samples)
    has_save = callable(getattr(result, "save", None))
    has_load = callable(getattr(SimulationResult, "load", None))
    if not (has_save and has_load):
        missing = [n for n, ok in (("save", has_save), ("load", has_load)) if not ok]
        io["save_load"] = {"available": False, "missing": missing}
        return io
    save_load: dict[str, Any] = {"available": True}
    try:
        with tempfile.TemporaryDirectory(prefix="simulate-bench-", dir=tmp_dir) as root:
            save_seconds, load_seconds = [], []
            loaded = None
            for index in range(repeats):
                directory = Path(root) / f"result_{index}"
                save_seconds.append(time_call(lambda d=directory: result.save(directory=d))[0])
                del loaded
                seconds, loaded = time_call(lambda d=directory: SimulationResult.load(directory=d))
                load_seconds.append(seconds)
            first = Path(root) / "result_0"
            save_load["save_seconds"] = first_and_again(save_seconds)
            save_load["load_seconds"] = first_and_again(load_seconds)
            save_load["disk_mib"] = directory_mib(first)
            save_load["files"] = {
                str(f.relative_to(first)): f.stat().st_size for f in first.rglob("*") if f.is_file()
            }
            columns = getattr(loaded, "columns", None)
            save_load["round_trip_equal"] = (
                None
                if columns is None
                else set(columns) == set(result.columns)
                and all(np.array_equal(columns[k], result.columns[k]) for k in result.columns)
            )
    except Exception as error:
        save_load["error"] = f"{type(error).__name__}: {error}"[:2000]
    io["save_load"] = save_load
    return io


def run_single(
    config: dict[str, Any], *, repeats: int, io_repeats: int, tmp_dir: str | None
) -> dict[str, Any]:
    """Measure one configuration in this (fresh) process and return the result dict."""
    import jax  # noqa: PLC0415

    load_at_start = list(os.getloadavg())
    events = CompileEvents()
    events.register()

    import_seconds, project = time_call(lambda: importlib.import_module("project"))
    from project.simulation import draw_initial_conditions, simulate  # noqa: PLC0415

    model, params = build(config)
    solve_seconds, solution = time_call(
        lambda: project.solve(model=model, params=params, log_level="off")
    )
    draw_seconds, initial = time_call(
        lambda: draw_initial_conditions(
            model=model,
            n_subjects=config["n_subjects"],
            seed=SEED,
            distribution=INITIAL_DISTRIBUTIONS[config["model"]],
        )
    )
    rss_before = peak_rss_mib()

    def run() -> Any:
        return simulate(
            params=params,
            initial_conditions=initial,
            solution=solution,
            seed=SEED,
            subject_batch_size=config["subject_batch_size"],
        )

    timer = StepTimer(model)
    with events.recording() as first_events, timer:
        first_call, result = time_call(run)
    rss_after_first = peak_rss_mib()

    warm, warm_cpu = [], []
    for _ in range(repeats):
        del result
        cpu_started = time.process_time()
        seconds, result = time_call(run)
        warm_cpu.append(time.process_time() - cpu_started)
        warm.append(seconds)
    peak = peak_rss_mib()

    n_periods = model.n_periods
    subject_periods = config["n_subjects"] * n_periods
    out: dict[str, Any] = {
        "config": config,
        "label": label(config),
        "n_periods": n_periods,
        "subject_periods": subject_periods,
        "dtype": str(result.columns["value"].dtype),
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average_at_start": load_at_start,
        "import_seconds": import_seconds,
        "solve_seconds": solve_seconds,
        "draw_initial_seconds": draw_seconds,
        "first_call_seconds": first_call,
        "first_call_compile": compile_summary(first_events),
        "first_call_breakdown": timer.summary(first_call),
        "first_call_breakdown_error": timer.error,
        "warm_seconds": summarize(warm),
        "warm_cpu_seconds": summarize(warm_cpu),
        "subject_periods_per_second": subject_periods / statistics.median(warm),
        "rss_before_simulate_mib": rss_before,
        "rss_after_first_call_mib": rss_after_first,
        "peak_rss_mib": peak,
        "result_columns_mib": sum(v.nbytes for v in result.columns.values()) / 2**20,
        "digests": column_digests(result.columns),
        "value_mean": float(result.columns["value"].mean(dtype="float64")),
    }
    if config["io"]:
        out["io"] = measure_io(result, repeats=io_repeats, tmp_dir=tmp_dir)
        out["peak_rss_after_io_mib"] = peak_rss_mib()
    out["load_average_at_end"] = list(os.getloadavg())
    return out


# ----------------------------------------------------------------------------------------------
# Parent: run every configuration in a subprocess, then report.
# ----------------------------------------------------------------------------------------------


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``precautionary N=1,000,000 batch=100,000``."""
    return f"{config['model']} N={config['n_subjects']:,} batch={config['subject_batch_size']:,}"


def configurations(*, quick: bool) -> list[dict[str, Any]]:
    """Return the benchmark configurations (smaller sizes with ``quick``)."""
    return [
        {
            "model": model,
            "n_subjects": n_subjects,
            "subject_batch_size": batch,
            "io": io and batch == 0,
        }
        for model, n_subjects, batches, io in (QUICK if quick else FULL)
        for batch in batches
    ]


def fmt(value: float | None, spec: str = ".3f") -> str:
    """Format a number, or "-" when missing."""
    return "-" if value is None else format(value, spec)


def first_again(timing: dict[str, Any]) -> str:
    """Format ``first_and_again`` seconds as ``first / again``."""
    return f"{timing['first']:.3f} / {fmt(timing['again_median'])}"


def report(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Print the tables; return the batch/no-batch comparisons."""
    rows = []
    for r in results:
        if "error" in r:
            rows.append([label(r["config"]), "error", *[""] * 7])
            continue
        warm = r["warm_seconds"]["median"]
        cpu = r["warm_cpu_seconds"]["median"]
        rows.append(
            [
                r["label"],
                f"{r['config']['n_subjects']:,} x {r['n_periods']}",
                f"{r['first_call_seconds']:.2f}",
                f"{warm:.2f}",
                f"{r['warm_seconds']['min']:.2f}",
                f"{cpu:.2f} ({cpu / warm:.1f}x)",
                f"{r['subject_periods_per_second'] / 1e6:.3f}",
                f"{r['peak_rss_mib']:.0f} ({r['rss_before_simulate_mib']:.0f})",
                f"{r['solve_seconds']:.2f}",
            ]
        )
    print_table(
        "project.simulation.simulate (float32): one subprocess per row",
        [
            "configuration",
            "subjects x T",
            "first call s",
            "warm s (med)",
            "warm s (min)",
            "warm CPU s (CPU/wall)",
            "M subj-periods/s",
            "peak RSS MiB (before)",
            "solve s",
        ],
        rows,
    )

    comparisons = []
    by_model: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in results:
        if "error" not in r:
            key = (r["config"]["model"], r["config"]["n_subjects"])
            by_model.setdefault(key, []).append(r)
    for (model, n_subjects), group in by_model.items():
        base = next((r for r in group if r["config"]["subject_batch_size"] == 0), None)
        if base is None:
            continue
        for r in group:
            if r is base:
                continue
            growth = r["peak_rss_mib"] - r["rss_before_simulate_mib"]
            base_growth = base["peak_rss_mib"] - base["rss_before_simulate_mib"]
            comparisons.append(
                {
                    "model": model,
                    "n_subjects": n_subjects,
                    "subject_batch_size": r["config"]["subject_batch_size"],
                    "warm_time_ratio": r["warm_seconds"]["median"] / base["warm_seconds"]["median"],
                    "first_call_ratio": r["first_call_seconds"] / base["first_call_seconds"],
                    "peak_rss_ratio": r["peak_rss_mib"] / base["peak_rss_mib"],
                    "peak_rss_growth_mib": [base_growth, growth],
                    "peak_rss_growth_ratio": growth / base_growth if base_growth > 0 else None,
                    "identical_results": r["digests"] == base["digests"],
                }
            )
    print_table(
        "subject_batch_size: batched / one pass (same run)",
        [
            "model, subjects",
            "batch",
            "warm time",
            "first call",
            "peak RSS",
            "RSS growth MiB (0 / batch)",
            "growth ratio",
            "identical results",
        ],
        [
            [
                f"{c['model']} N={c['n_subjects']:,}",
                f"{c['subject_batch_size']:,}"
                + (" (1 chunk)" if c["subject_batch_size"] >= c["n_subjects"] else ""),
                f"{c['warm_time_ratio']:.2f}x",
                f"{c['first_call_ratio']:.2f}x",
                f"{c['peak_rss_ratio']:.2f}x",
                f"{c['peak_rss_growth_mib'][0]:.0f} / {c['peak_rss_growth_mib'][1]:.0f}",
                fmt(c["peak_rss_growth_ratio"], ".2f") + "x",
                "yes" if c["identical_results"] else "NO",
            ]
            for c in comparisons
        ],
    )

    rows = []
    for r in results:
        if "error" in r:
            continue
        b = r["first_call_breakdown"]
        c = r["first_call_compile"]
        if b is None:
            rows.append([r["label"], f"{r['first_call_seconds']:.2f}", *["n/a"] * 7])
            continue
        parts = b["parts"]
        rows.append(
            [
                r["label"],
                f"{r['first_call_seconds']:.2f}",
                f"{c['total_seconds']:.2f} ({c['n_backend_compiles']})",
                f"{parts.get('expected', 0):.2f}",
                f"{parts.get('terminal', 0):.2f} / {parts.get('regular', 0):.2f}",
                f"{fmt(b['first_regular_step'])} / {fmt(b['median_regular_step_after_first'])}",
                f"{parts.get('device_get', 0):.3f}",
                f"{b['rest_seconds']:.2f}",
                f"{b['counts'].get('regular', 0) + b['counts'].get('terminal', 0)}",
            ]
        )
    print_table(
        "First-call breakdown, seconds (steps block; compile from jax.monitoring)",
        [
            "configuration",
            "first call",
            "compile (n)",
            "expected",
            "steps T / R",
            "R step: 1st / med",
            "device_get",
            "rest",
            "step calls",
        ],
        rows,
    )

    rows = []
    for r in results:
        io = r.get("io")
        if io is None:
            continue
        sl = io["save_load"]
        if not sl["available"]:
            save = load = size = equal = "n/a"
        elif "error" in sl:
            save = load = size = equal = "error"
        else:
            save = first_again(sl["save_seconds"])
            load = first_again(sl["load_seconds"])
            size = f"{sl['disk_mib']:.1f}"
            equal = {True: "yes", False: "NO", None: "?"}[sl["round_trip_equal"]]
        rows.append(
            [
                r["label"],
                f"{io['dataframe_shape'][0]:,} x {io['dataframe_shape'][1]}",
                first_again(io["to_dataframe_seconds"]),
                f"{io['dataframe_mib']:.0f}",
                f"{r['result_columns_mib']:.0f}",
                save,
                size,
                load,
                equal,
                f"{r['peak_rss_after_io_mib']:.0f}",
            ]
        )
    print_table(
        "Results I/O, seconds as 1st call / again (after the simulation's peak RSS was taken)",
        [
            "configuration",
            "frame rows x cols",
            "to_dataframe s",
            "frame MiB",
            "columns MiB",
            "save s",
            "MiB on disk",
            "load s",
            "round trip equal",
            "peak RSS MiB",
        ],
        rows,
    )
    for r in results:
        sl = r.get("io", {}).get("save_load", {})
        if "error" in sl:
            print(f"save/load error ({r['label']}): {sl['error']}")
        elif sl and not sl["available"]:
            missing = ", ".join(sl["missing"])
            print(f"save/load n/a ({r['label']}): SimulationResult lacks {missing}")
    return comparisons


def main(argv: list[str] | None = None) -> int:
    """Run all configurations in subprocesses, print tables and write JSON."""
    parser = child_parser(
        description=__doc__.splitlines()[0], name="simulate", quick_help="smaller subject counts"
    )
    parser.add_argument("--repeats", type=int, default=2, help="warm simulate calls (>= 2)")
    parser.add_argument(
        "--io-repeats", type=int, default=2, help="calls of to_dataframe / save / load (>= 2)"
    )
    parser.add_argument("--tmp-dir", default=None, help="parent folder for saved results")
    args = parser.parse_args(argv)
    if args.repeats < 2 or args.io_repeats < 2:
        parser.error("--repeats and --io-repeats must be at least 2")

    if args.single:
        emit_result(
            run_single(
                json.loads(args.single),
                repeats=args.repeats,
                io_repeats=args.io_repeats,
                tmp_dir=args.tmp_dir,
            )
        )
        return 0

    script = Path(__file__).resolve()
    meta = environment()
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    print(f"{meta['cpu_count']} CPUs, load average {load}; one subprocess per configuration.")
    started = time.perf_counter()
    results = []
    for config in configurations(quick=args.quick):
        if args.only not in label(config):
            continue
        print(f"running {label(config)} ...", flush=True)
        result = run_child(
            script,
            config,
            extra_args=[
                f"--repeats={args.repeats}",
                f"--io-repeats={args.io_repeats}",
                *([f"--tmp-dir={args.tmp_dir}"] if args.tmp_dir else []),
            ],
        )
        if "error" in result:
            print(f"  FAILED: {result['error']}", flush=True)
        else:
            print(f"  done in {result['process_wall_seconds']:.1f} s", flush=True)
        results.append(result)
    meta["load_average_after"] = list(environment()["load_average"])
    meta["total_seconds"] = time.perf_counter() - started
    comparisons = report(results)
    write_json(
        args.json,
        {
            "benchmark": "simulate",
            "quick": args.quick,
            "environment": meta,
            "results": results,
            "batch_comparisons": comparisons,
        },
    )
    print(NOTES)
    print(f"total {meta['total_seconds']:.0f} s; wrote {args.json}")
    failed = [r for r in results if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
