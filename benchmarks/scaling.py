"""Benchmark the two scaling knobs: sharding (``distributed=True``) and splay (``batch_size``).

Usage::

    uv run python benchmarks/scaling.py [--quick] [--json bld/benchmarks/scaling.json]
    uv run python benchmarks/scaling.py --report bld/benchmarks/scaling.json  # re-print only

Every configuration runs in its own interpreter (``--single <json>``), so peak RSS, the number
of fake CPU devices (``jax_num_cpu_devices``, set before the first JAX operation) and JAX's
compile caches are per configuration.

1. Sharded solve: the default life-cycle model (``lifecycle.build_model()`` default sizes, 4
   preference types, ``distributed_types=True``; ``default_params(n_types=4)``; float32) solved
   on 1, 2 and 4 fake CPU devices, plus the unsharded model on 1 device as the reference. Each
   child reports the first ``solve(log_level="off")`` (trace + compile + run), the warm solves
   (wall and process CPU seconds), the peak RSS, ``device.memory_stats()`` of every device
   (``None`` on CPU, reported as "n/a") and, instead, per-device bytes: one device's shard of
   V (one period), of the whole solution (V and policy of every period), and of the regular
   solve program's compiled buffers (``lower(...).compile().memory_analysis()``: temporaries,
   arguments, outputs; per device for an SPMD program).
2. Splay curve: the IJRS model (float64, 5 periods) at ``n_wealth x n_consumption`` for several
   ``wealth_batch_size`` values (0 = unsplayed). Each child reports the first call, one or two
   warm calls (fewer when the point is slow, see ``--warm-budget``), the process peak RSS, the
   RSS right after import and their difference ("solve peak"), and the solve program's
   temporaries from ``memory_analysis()``. The target -- solve peak at most 0.5 GiB and warm
   time no slower than unsplayed -- is checked per batch size.

Fake CPU devices share the machine's cores (``os.cpu_count()``), so the sharding speed-up is
bounded by the core count, and by the load other processes put on the machine (recorded per
child as ``os.getloadavg()`` at its start and end).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _measure import (
    child_parser,
    current_rss_mib,
    emit_result,
    environment,
    peak_rss_mib,
    print_table,
    run_child,
    summarize,
    time_call,
    write_json,
)

N_TYPES = 4
DEVICE_COUNTS = (1, 2, 4)
BATCH_SIZES = (0, 25, 50, 100, 200, 400, 1000)
QUICK_BATCH_SIZES = (0, 25, 100, 400)
IJRS_SIZES = {"n_wealth": 4000, "n_consumption": 20000, "n_periods": 5}
QUICK_IJRS_SIZES = {"n_wealth": 1000, "n_consumption": 5000, "n_periods": 5}
# lifecycle.build_model() defaults; --quick makes them smaller.
LIFECYCLE_SIZES: dict[str, int] = {}
QUICK_LIFECYCLE_SIZES = {"n_wealth": 50, "n_consumption": 50, "n_periods": 10}
MEMORY_TARGET_MIB = 512.0
SLOW_FIRST_CALL_SECONDS = 240.0
MIB = 1024 * 1024


# ----------------------------------------------------------------------------------------------
# Child: one configuration in this process.
# ----------------------------------------------------------------------------------------------


def run_single(config: dict[str, Any], *, repeats: int, warm_budget: float) -> dict[str, Any]:
    """Measure one configuration in this (fresh) process and return the result dict."""
    import jax  # noqa: PLC0415

    # Before any JAX operation.
    jax.config.update("jax_num_cpu_devices", config["n_devices"])
    jax.config.update("jax_enable_x64", config["x64"])
    load_start = list(os.getloadavg())
    import_seconds, project = time_call(lambda: importlib.import_module("project"))
    rss_after_import = current_rss_mib()
    if config["part"] == "shard":
        model, params = _lifecycle(config)
    else:
        model, params = _ijrs(config)

    def solve() -> Any:
        return project.solve(model=model, params=params, log_level="off")

    result: dict[str, Any] = {
        "config": config,
        "label": label(config),
        "backend": jax.default_backend(),
        "jax_version": jax.__version__,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "n_devices_visible": len(jax.devices()),
        "cpu_count": os.cpu_count(),
        "load_average_start": load_start,
        "import_seconds": import_seconds,
        "rss_after_import_mib": rss_after_import,
    }
    first_cpu = time.process_time()
    first_call, solution = time_call(solve)
    result["first_call_seconds"] = first_call
    result["first_call_cpu_seconds"] = time.process_time() - first_cpu
    result["dtype"] = str(solution.value_function[0].dtype)
    result["peak_rss_mib"] = peak_rss_mib()
    result["load_average_end"] = list(os.getloadavg())
    emit_result(result)  # partial result, in case the warm calls run past the parent's timeout

    walls, cpus = [], []
    started = time.perf_counter()
    too_slow = first_call > SLOW_FIRST_CALL_SECONDS
    while not too_slow and len(walls) < repeats:
        # Skip further warm calls once the next one would overrun the budget; always take one.
        if len(walls) >= 1 and time.perf_counter() - started + walls[-1] > warm_budget:
            break
        cpu = time.process_time()
        seconds, solution = time_call(solve)
        walls.append(seconds)
        cpus.append(time.process_time() - cpu)
    result["warm_seconds"] = summarize(walls) if walls else None
    result["warm_cpu_seconds"] = summarize(cpus) if cpus else None
    result["warm_skipped_reason"] = (
        f"first call took more than {SLOW_FIRST_CALL_SECONDS:.0f} s" if too_slow else None
    )
    # The peak of the solves, before memory_analysis below (which may compile).
    result["peak_rss_mib"] = peak_rss_mib()
    result["solve_peak_mib"] = result["peak_rss_mib"] - rss_after_import
    result["load_average_end"] = list(os.getloadavg())
    result["digest"] = solution_digest(solution)
    result["per_device"] = per_device_bytes(solution)
    result["memory_stats"] = [_jsonable(d.memory_stats()) for d in jax.devices()]
    emit_result(result)

    result["kernel_memory"] = kernel_memory(model, params, solution)
    result["n_compiled"] = _n_compiled(model)
    result["load_average_end"] = list(os.getloadavg())
    return result


def _lifecycle(config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from project.models import lifecycle  # noqa: PLC0415

    model = lifecycle.build_model(
        **config["sizes"], n_types=N_TYPES, distributed_types=config["distributed"]
    )
    return model, lifecycle.default_params(n_types=N_TYPES)


def _ijrs(config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    from project.models import ijrs  # noqa: PLC0415

    model = ijrs.build_model(**config["sizes"], wealth_batch_size=config["wealth_batch_size"])
    return model, dict(ijrs.DEFAULT_PARAMS)


def _mesh(model: Any) -> Any:
    from project.devices import state_mesh  # noqa: PLC0415

    return state_mesh(model)


def _n_compiled(model: Any) -> int:
    from project.solver.program import compiled_programs  # noqa: PLC0415

    return compiled_programs(model)


def solution_digest(solution: Any) -> str:
    """Return a SHA-256 of every period's V and policy (bit-identical results match)."""
    import numpy as np  # noqa: PLC0415

    digest = hashlib.sha256()
    for value, policy in zip(solution.value_function, solution.policy_indices, strict=True):
        digest.update(np.asarray(value).tobytes())
        for name in sorted(policy):
            digest.update(np.asarray(policy[name]).tobytes())
    return digest.hexdigest()[:16]


def per_device_bytes(solution: Any) -> dict[str, Any]:
    """Return bytes per device of V (period 0) and of the whole solution (V and policy)."""
    value_bytes: dict[str, int] = {}
    for shard in solution.value_function[0].addressable_shards:
        value_bytes[str(shard.device.id)] = value_bytes.get(str(shard.device.id), 0) + int(
            shard.data.nbytes
        )
    solution_bytes: dict[str, int] = {}
    arrays = [*solution.value_function, *(a for p in solution.policy_indices for a in p.values())]
    for array in arrays:
        for shard in array.addressable_shards:
            key = str(shard.device.id)
            solution_bytes[key] = solution_bytes.get(key, 0) + int(shard.data.nbytes)
    return {
        "value_shape": list(solution.value_function[0].shape),
        "value_total_bytes": int(solution.value_function[0].nbytes),
        "value_sharding": str(solution.value_function[0].sharding),
        "value_bytes": value_bytes,
        "solution_bytes": solution_bytes,
    }


def kernel_memory(model: Any, params: dict[str, Any], solution: Any) -> dict[str, Any]:
    """Lower and compile the solve program as ``solve`` calls it; return its buffers.

    ``memory_analysis()`` of an SPMD executable describes one device's program, so the sizes
    are per device. With the arguments ``solve`` passes, JAX returns the executable those calls
    compiled (``compile_seconds`` is then about a millisecond); the peak RSS is read before.
    """
    from project.devices import replicate  # noqa: PLC0415
    from project.model.params import pack_params, params_on_host  # noqa: PLC0415
    from project.solver import grid_points_of  # noqa: PLC0415
    from project.solver.plan import plan_for  # noqa: PLC0415
    from project.solver.program import solve_program  # noqa: PLC0415

    mesh = _mesh(model)
    flat = pack_params(params_on_host(model=model, params=params))
    if mesh is not None:
        flat = replicate(flat, mesh=mesh)
    program = solve_program(plan_for(model), kernels=solution.kernels, mesh=mesh)
    arguments = (flat, grid_points_of(model, mesh=mesh))
    seconds, compiled = time_call(lambda: program.lower(*arguments).compile())
    analysis = compiled.memory_analysis()
    if analysis is None:
        return {"compile_seconds": seconds, "error": "memory_analysis() returned None"}
    fields = (
        "temp_size_in_bytes",
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "generated_code_size_in_bytes",
    )
    sizes = {f: int(getattr(analysis, f, 0) or 0) for f in fields}
    sizes["live_estimate_bytes"] = (
        sizes["temp_size_in_bytes"]
        + sizes["argument_size_in_bytes"]
        + sizes["output_size_in_bytes"]
        - sizes["alias_size_in_bytes"]
    )
    return {"compile_seconds": seconds, **sizes}


def _jsonable(stats: Any) -> Any:
    if stats is None:
        return None
    return {str(k): v if isinstance(v, int | float | str) else str(v) for k, v in stats.items()}


# ----------------------------------------------------------------------------------------------
# Parent: run every configuration in a subprocess, then report.
# ----------------------------------------------------------------------------------------------


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``lifecycle sharded 4 dev`` or ``ijrs 4000x20000 batch=100``."""
    if config["part"] == "shard":
        kind = "sharded" if config["distributed"] else "unsharded"
        return f"lifecycle {kind} {config['n_devices']} dev"
    sizes = config["sizes"]
    return f"ijrs {sizes['n_wealth']}x{sizes['n_consumption']} batch={config['wealth_batch_size']}"


def configurations(*, quick: bool, batch_sizes: list[int]) -> list[dict[str, Any]]:
    """Return the sharding configurations, then the splay configurations."""
    lifecycle_sizes = QUICK_LIFECYCLE_SIZES if quick else LIFECYCLE_SIZES
    configs = [
        {
            "part": "shard",
            "n_devices": 1,
            "distributed": False,
            "x64": False,
            "sizes": lifecycle_sizes,
        }
    ]
    configs += [
        {
            "part": "shard",
            "n_devices": n,
            "distributed": True,
            "x64": False,
            "sizes": lifecycle_sizes,
        }
        for n in DEVICE_COUNTS
    ]
    ijrs_sizes = QUICK_IJRS_SIZES if quick else IJRS_SIZES
    configs += [
        {
            "part": "splay",
            "n_devices": 1,
            "x64": True,
            "sizes": ijrs_sizes,
            "wealth_batch_size": b,
        }
        for b in batch_sizes
    ]
    return configs


def _bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, size in (("GiB", 1024**3), ("MiB", MIB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def _load(result: dict[str, Any]) -> str:
    return f"{result['load_average_start'][0]:.1f}->{result['load_average_end'][0]:.1f}"


def _warm(result: dict[str, Any], key: str = "warm_seconds") -> float | None:
    summary = result.get(key)
    return None if summary is None else summary["median"]


def _per_device(values: dict[str, int]) -> str:
    distinct = sorted(set(values.values()))
    text = " / ".join(_bytes(v) for v in distinct)
    return f"{text} x{len(values)}" if len(distinct) == 1 else text


def shard_report(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the sharding table; return the speed-ups."""
    ok = [r for r in results if "error" not in r and "warm_seconds" in r]
    one = next(
        (r for r in ok if r["config"]["distributed"] and r["config"]["n_devices"] == 1), None
    )
    ref = next((r for r in ok if not r["config"]["distributed"]), None)
    speedups = {}
    rows = []
    for result in results:
        if "error" in result or "warm_seconds" not in result:
            rows.append([label(result["config"]), "error", *[""] * 13])
            continue
        warm = _warm(result)
        vs_one = _warm(one) / warm if one and warm else None
        vs_ref = _warm(ref) / warm if ref and warm else None
        speedups[result["label"]] = {"vs_1_device_sharded": vs_one, "vs_unsharded": vs_ref}
        stats = result["memory_stats"]
        stats_text = (
            "n/a"
            if all(s is None for s in stats)
            else " / ".join(_bytes(s.get("peak_bytes_in_use")) if s else "n/a" for s in stats)
        )
        kernel = result.get("kernel_memory", {})
        rows.append(
            [
                result["label"],
                f"{result['first_call_seconds']:.2f}",
                f"{warm:.3f}",
                f"{result['warm_seconds']['min']:.3f}",
                f"{_warm(result, 'warm_cpu_seconds'):.2f}",
                f"{vs_one:.2f}x" if vs_one else "-",
                f"{vs_ref:.2f}x" if vs_ref else "-",
                f"{result['peak_rss_mib']:.0f} ({result['rss_after_import_mib']:.0f})",
                stats_text,
                _per_device(result["per_device"]["value_bytes"]),
                _per_device(result["per_device"]["solution_bytes"]),
                _bytes(kernel.get("temp_size_in_bytes")),
                _bytes(
                    kernel.get("argument_size_in_bytes", 0) + kernel.get("output_size_in_bytes", 0)
                )
                if "temp_size_in_bytes" in kernel
                else "n/a",
                "yes" if ref and result["digest"] == ref["digest"] else "NO",
                _load(result),
            ]
        )
    print_table(
        "Sharded solve: lifecycle, 4 pref types, fake CPU devices (one subprocess per row)",
        [
            "configuration",
            "first call s",
            "warm s (med)",
            "warm s (min)",
            "warm CPU s",
            "speed-up vs 1 dev",
            "vs unsharded",
            "peak RSS MiB (import)",
            "memory_stats peak",
            "V shard / dev",
            "solution / dev",
            "kernel temp / dev",
            "kernel arg+out / dev",
            "V = unsharded",
            "load 1m",
        ],
        rows,
    )
    return speedups


def splay_report(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Print the splay table; return the verdict on the memory and time target."""
    unsplayed = next(
        (r for r in results if "error" not in r and r["config"]["wealth_batch_size"] == 0), None
    )
    base = _warm(unsplayed) if unsplayed else None
    base_cpu = _warm(unsplayed, "warm_cpu_seconds") if unsplayed else None
    rows, points = [], []
    for result in results:
        config = result["config"]
        if "error" in result:
            rows.append([str(config["wealth_batch_size"]), "error", *[""] * 13])
            continue
        warm, cpu = _warm(result), _warm(result, "warm_cpu_seconds")
        ratio = warm / base if warm and base else None
        cpu_ratio = cpu / base_cpu if cpu and base_cpu else None
        memory_ok = result.get("solve_peak_mib", result["peak_rss_mib"]) <= MEMORY_TARGET_MIB
        time_ok = None if ratio is None else ratio <= 1.0
        kernel = result.get("kernel_memory", {})
        n_warm = len(result["warm_seconds"]["samples"]) if result.get("warm_seconds") else 0
        point = {
            "wealth_batch_size": config["wealth_batch_size"],
            "warm_seconds": warm,
            "warm_ratio_to_unsplayed": ratio,
            "warm_cpu_ratio_to_unsplayed": cpu_ratio,
            "solve_peak_mib": result.get("solve_peak_mib"),
            "memory_ok": memory_ok,
            "time_ok": time_ok,
            "value_identical_to_unsplayed": bool(
                unsplayed and result.get("digest") == unsplayed.get("digest")
            ),
        }
        points.append(point)
        timed_out = " (timed out)" if "timed_out_after_seconds" in result else ""
        rows.append(
            [
                str(config["wealth_batch_size"] or "0 (unsplayed)"),
                f"{result['first_call_seconds']:.1f}{timed_out}",
                f"{warm:.1f} (n={n_warm})" if warm else result.get("warm_skipped_reason") or "-",
                f"{cpu:.1f}" if cpu else "-",
                f"{ratio:.2f} / {cpu_ratio:.2f}" if ratio and cpu_ratio else "-",
                f"{result['peak_rss_mib']:.0f}",
                f"{result['rss_after_import_mib']:.0f}",
                f"{result['solve_peak_mib']:.0f}" if "solve_peak_mib" in result else "-",
                _bytes(kernel.get("temp_size_in_bytes")),
                _bytes(kernel.get("live_estimate_bytes")),
                "yes" if memory_ok else "no",
                "-" if time_ok is None else "yes" if time_ok else "no",
                "yes" if point["value_identical_to_unsplayed"] else "NO",
                _load(result),
            ]
        )
    sizes = results[0]["config"]["sizes"] if results else {}
    print_table(
        f"Splay curve: ijrs {sizes.get('n_wealth')}x{sizes.get('n_consumption')} f64 "
        f"T={sizes.get('n_periods')} (one subprocess per row)",
        [
            "wealth_batch_size",
            "first call s",
            "warm s (med)",
            "warm CPU s",
            "vs unsplayed wall / CPU",
            "peak RSS MiB",
            "RSS import MiB",
            "solve peak MiB",
            "kernel temp",
            "kernel live est.",
            "<= 0.5 GiB",
            "<= unsplayed",
            "V = unsplayed",
            "load 1m",
        ],
        rows,
    )
    met = [p["wealth_batch_size"] for p in points if p["memory_ok"] and p["time_ok"]]
    met_cpu = [
        p["wealth_batch_size"]
        for p in points
        if p["memory_ok"]
        and p["warm_cpu_ratio_to_unsplayed"] is not None
        and p["warm_cpu_ratio_to_unsplayed"] <= 1.0
    ]
    return {"points": points, "target_met_at": met, "target_met_at_by_cpu_time": met_cpu}


NOTES = """\
Sharding: warm = median of solve(log_level="off") calls (>= 3); warm CPU = process CPU seconds of
  one warm solve (all threads). Speed-up = warm of the 1-device sharded run / warm of this row
  (and of the unsharded reference / this row), measured in this run. The fake CPU devices
  (jax_num_cpu_devices) share this machine's {cpus} cores and whatever the other processes leave
  of them (load 1m = os.getloadavg()[0] at the child's start -> end), so the speed-up is bounded
  by the core count and is no prediction for real accelerators. memory_stats() is None on CPU
  ("n/a"); instead: V shard / dev = one device's block of V (one period), solution / dev = its
  blocks of V and policy of all periods, kernel temp / arg+out = the solve program's buffers
  from compile().memory_analysis(), per device for an SPMD program.
Splay: first call = trace + compile + run; warm = further calls (at most --repeats, fewer when
  slow). solve peak = peak RSS - RSS right after import (JAX itself). kernel temp = the solve
  program's temporaries (compile().memory_analysis()); live est. = temp + arguments + outputs -
  aliased. Target: solve peak <= 0.5 GiB and warm wall time <= unsplayed (also shown by CPU)."""


def main(argv: list[str] | None = None) -> int:
    """Run all configurations in subprocesses, print tables and write JSON."""
    parser = child_parser(
        description=__doc__.splitlines()[0], name="scaling", quick_help="smaller models"
    )
    parser.add_argument("--repeats", type=int, default=5, help="warm calls of the sharded solve")
    parser.add_argument("--splay-repeats", type=int, default=2, help="most warm calls per splay")
    parser.add_argument(
        "--warm-budget",
        type=float,
        default=90.0,
        help="seconds of warm calls per splay point: no further call once it would overrun",
    )
    parser.add_argument(
        "--batch-sizes",
        default="",
        help="comma-separated wealth_batch_size values (default: 0,25,50,100,200,400,1000)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds per subprocess")
    parser.add_argument(
        "--report", type=Path, help="only print the tables of a JSON file this script wrote"
    )
    args = parser.parse_args(argv)

    if args.report:
        saved = json.loads(args.report.read_text())
        report(saved["results"], saved["environment"])
        return 0
    if args.single:
        config = json.loads(args.single)
        shard = config["part"] == "shard"
        emit_result(
            run_single(
                config,
                repeats=args.repeats if shard else args.splay_repeats,
                warm_budget=float("inf") if shard else args.warm_budget,
            )
        )
        return 0

    if args.batch_sizes:
        batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    else:
        batch_sizes = list(QUICK_BATCH_SIZES if args.quick else BATCH_SIZES)
    script = Path(__file__).resolve()
    meta = environment()
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    print(f"{meta['cpu_count']} CPUs, load average {load}; one subprocess per configuration.")
    started = time.perf_counter()
    results = []
    for config in configurations(quick=args.quick, batch_sizes=batch_sizes):
        if args.only not in label(config):
            continue
        print(f"running {label(config)} ...", flush=True)
        result = run_child(
            script,
            config,
            extra_args=[
                f"--repeats={args.repeats}",
                f"--splay-repeats={args.splay_repeats}",
                f"--warm-budget={args.warm_budget}",
            ],
            timeout=args.timeout,
            partial_on_timeout=True,
        )
        if "error" in result:
            print(f"  FAILED: {result['error']}", flush=True)
        else:
            print(
                f"  first {result['first_call_seconds']:.2f} s, warm "
                f"{_warm(result) or float('nan'):.3f} s, peak RSS {result['peak_rss_mib']:.0f} "
                f"MiB, load {_load(result)}",
                flush=True,
            )
        results.append(result)
    meta["load_average_after"] = list(os.getloadavg())
    meta["total_seconds"] = time.perf_counter() - started
    speedups, splay = report(results, meta)
    write_json(
        args.json,
        {
            "benchmark": "scaling",
            "quick": args.quick,
            "environment": meta,
            "results": results,
            "speedups": speedups,
            "splay": splay,
        },
    )
    print(f"wrote {args.json}")
    return 1 if any("error" in r for r in results) else 0


def report(
    results: list[dict[str, Any]], meta: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Print both tables, the notes, the splay verdict and the machine load."""
    shard_results = [r for r in results if r["config"]["part"] == "shard"]
    splay_results = [r for r in results if r["config"]["part"] == "splay"]
    speedups = shard_report(shard_results) if shard_results else {}
    splay = splay_report(splay_results) if splay_results else {}
    print(NOTES.format(cpus=meta["cpu_count"]))
    if splay:
        met = splay["target_met_at"]
        print(
            "Splay target (solve peak <= 0.5 GiB and warm wall time <= unsplayed): "
            + (f"met at wealth_batch_size {met}" if met else "not met at any batch size")
            + f"; judged by CPU time instead: {splay['target_met_at_by_cpu_time'] or 'none'}."
        )
    loads = [
        r[key][0]
        for r in results
        if "error" not in r
        for key in ("load_average_start", "load_average_end")
    ]
    if loads:
        print(
            f"Load average (1 min) during the children: {min(loads):.1f} to {max(loads):.1f} "
            f"on {meta['cpu_count']} CPUs."
        )
        if max(loads) > (meta["cpu_count"] or 1):
            print(
                "WARNING: the load exceeded the core count, so the processes competed for CPU: "
                "wall-clock comparisons between rows are unreliable; prefer the CPU-seconds "
                "columns."
            )
    after = ", ".join(f"{x:.2f}" for x in meta["load_average_after"])
    print(f"Load average at the end: {after}; total {meta['total_seconds']:.0f} s.")
    return speedups, splay


if __name__ == "__main__":
    sys.exit(main())
