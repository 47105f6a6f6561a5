"""Benchmark memory planning: predicted against measured peak; planned against hand-picked splay.

Usage::

    uv run python benchmarks/memory.py [--quick] [--rounds 3] [--json bld/benchmarks/memory.json]
    uv run python benchmarks/memory.py --report bld/benchmarks/memory.json  # re-print only
    uv run python benchmarks/memory.py --part speed --rounds 5  # only part 2

Every configuration runs in its own interpreter (``--single <json>``).

1. Prediction (float64): for each model and size (1e6 to 1e9 state-action points per period),
   the child solves once (compiling), then measures two further solves. Before each it
   resets the process's peak resident set (``/proc/self/clear_refs``, Linux) and reads the
   resident set; the *measured* figure is the largest rise of the peak over it, i.e. what the
   solve adds to the process. The *predicted* figure is what ``solve`` plans with
   (``budget.fit_solve``: the solution and the kernel's per-period arrays), less the
   arguments (params and grid points), which are already resident when a solve starts. Also
   shown: XLA's own buffer assignment of the same program (``memory_analysis()``: outputs and
   temporaries) and the process's resident set before the solve (Python, the JAX runtime and
   the compiled program: not predicted). Children run with ``MALLOC_MMAP_THRESHOLD_=65536``
   so that glibc returns freed buffers to the system at once: otherwise a buffer freed by one
   solve is reused by the next without raising the resident set, and the rise undercounts.
   On a GPU the child also reads ``memory_stats()["peak_bytes_in_use"]``.
2. Planned splay (float64): a ``memory_limit`` below the unsplayed prediction; ``solve`` picks
   the batch size, and hand-picked batch sizes that the prediction says fit the same limit are
   timed against it, interleaved over ``--rounds`` rounds (median of warm solves per process).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _measure import (
    child_parser,
    emit_result,
    environment,
    peak_rss_mib,
    print_table,
    run_child,
    write_json,
)

MIB = 2**20
TOLERANCE = 0.25
SPEED_TOLERANCE = 0.10
# (kernel, n_wealth, n_consumption, n_periods): state-action points per period in the label.
PREDICT = [
    ("shift", 20_000, 10, 50),
    ("shift", 100_000, 20, 20),
    ("shift", 200_000, 100, 10),
    ("shift", 400_000, 150, 6),
    ("shift", 1_000_000, 200, 4),
    ("row", 5_000, 50, 10),
    ("row", 25_000, 100, 6),
    ("row", 50_000, 500, 3),
    ("general", 20_000, 10, 10),
    ("general", 100_000, 200, 3),
    ("general", 400_000, 500, 2),
]
QUICK_PREDICT = [
    ("shift", 20_000, 10, 20),
    ("shift", 100_000, 20, 10),
    ("row", 5_000, 50, 5),
    ("general", 20_000, 10, 5),
    ("general", 50_000, 200, 2),
]
# (kernel, n_wealth, n_consumption, n_periods, limit as a share of the unsplayed prediction)
SPEED = [("general", 100_000, 200, 3, 0.5), ("row", 25_000, 100, 6, 0.7)]
QUICK_SPEED = [("general", 20_000, 200, 2, 0.5)]
SHARES = (1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 40, 1 / 100, 1 / 400)
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "65536"}


# ----------------------------------------------------------------------------------------------
# Child: one configuration in this process.
# ----------------------------------------------------------------------------------------------


def build(config: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Return (model, params): precautionary (shift, general) or the life-cycle model (row)."""
    from project.models import lifecycle, precautionary  # noqa: PLC0415

    sizes = {
        "n_wealth": config["n_wealth"],
        "n_consumption": config["n_consumption"],
        "n_periods": config["n_periods"],
        "wealth_batch_size": config.get("batch_size", 0),
    }
    if config["kernel"] == "row":
        return lifecycle.build_model(**sizes), lifecycle.default_params()
    return precautionary.build_model(**sizes), dict(precautionary.DEFAULT_PARAMS)


def points_per_period(config: dict[str, Any]) -> int:
    """Return states x actions: precautionary 5 income nodes; life-cycle 20 contexts x 2 choices."""
    if config["kernel"] == "row":
        return 40 * config["n_wealth"] * config["n_consumption"]
    return 5 * config["n_wealth"] * config["n_consumption"]


def _status_bytes(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def run_single(config: dict[str, Any]) -> dict[str, Any]:
    """Measure one configuration in this (fresh) process."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    import project  # noqa: PLC0415
    from project.model.params import pack_params, params_on_host  # noqa: PLC0415
    from project.solver.budget import fit_solve  # noqa: PLC0415
    from project.solver.facts import fingerprint, known_facts  # noqa: PLC0415
    from project.solver.grid_cache import grid_points_of  # noqa: PLC0415
    from project.solver.plan import general_plan, plan_for  # noqa: PLC0415
    from project.solver.program import solve_program  # noqa: PLC0415

    model, params = build(config)
    structure = config["kernel"] != "general"
    limit = config.get("memory_limit")

    def solve() -> Any:
        return project.solve(
            model=model,
            params=params,
            log_level="off",
            exploit_structure=structure,
            memory_limit=limit,
        )

    rss_start = _status_bytes("VmRSS")
    started = time.perf_counter()
    solution = solve()
    first = time.perf_counter() - started
    kernels = sorted(set(solution.kernels))
    del solution
    plan = plan_for(model) if structure else general_plan(model)
    flat = pack_params(params_on_host(model=model, params=params))
    known = known_facts(model, key=fingerprint(flat))
    memory = fit_solve(plan, memory_limit=limit, mesh=None, slopes=known.unit_slope)
    parts = dict(memory.estimate.parts)
    result: dict[str, Any] = {
        "config": config,
        "label": label(config),
        "points_per_period": points_per_period(config),
        "kernels": kernels,
        "batch_sizes": dict(memory.estimate.batch_sizes),
        "predicted_bytes": memory.estimate.total,
        "predicted_parts": parts,
        "predicted_rise_bytes": memory.estimate.total - parts["arguments"],
        "first_call_seconds": first,
        "rss_before_first_call_bytes": rss_start,
    }
    gc.collect()
    rises, walls, peaks = [], [], []
    for _ in range(config.get("repeats", 2)):
        gc.collect()
        before = _status_bytes("VmRSS")
        resettable = _reset_peak()
        started = time.perf_counter()
        solution = solve()
        jax.block_until_ready(solution.values)
        walls.append(time.perf_counter() - started)
        rises.append(_status_bytes("VmHWM") - before if resettable else None)
        result["rss_before_solve_bytes"] = before
        del solution
        peaks.append(_device_peak(jax.devices()[0]))
    result["measured_rise_bytes"] = max(r for r in rises if r is not None) if any(rises) else None
    result["warm_seconds"] = walls
    result["device_peak_bytes"] = peaks[-1]
    result["process_peak_mib"] = peak_rss_mib()
    if config.get("xla", True):
        program = solve_program(memory.plan, kernels=tuple(_kernels(memory.plan, known)), mesh=None)
        analysis = program.lower(flat, grid_points_of(model)).compile().memory_analysis()
        result["xla_bytes"] = {
            "temp": int(analysis.temp_size_in_bytes),
            "output": int(analysis.output_size_in_bytes),
            "argument": int(analysis.argument_size_in_bytes),
        }
    return result


def _kernels(plan: Any, known: Any) -> list[str]:
    from project.solver.selection import choose_kernels  # noqa: PLC0415

    slopes = known.unit_slope or (True,) * plan.model.n_periods
    return [c.name for c in choose_kernels(plan, unit_slope=slopes)]


def _device_peak(device: Any) -> int | None:
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return None if not stats else stats.get("peak_bytes_in_use")


def predicted_for(config: dict[str, Any]) -> int:
    """Return the planned peak of a configuration (in the parent, without solving)."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    from project.solver.budget import fit_solve  # noqa: PLC0415
    from project.solver.plan import general_plan, plan_for  # noqa: PLC0415

    model, _ = build(config)
    plan = plan_for(model) if config["kernel"] != "general" else general_plan(model)
    slopes = None if config["kernel"] != "row" else (False,) * model.n_periods
    if config["kernel"] == "shift":
        slopes = (True,) * model.n_periods
    return fit_solve(plan, memory_limit=2**60, mesh=None, slopes=slopes).estimate.total


# ----------------------------------------------------------------------------------------------
# Parent.
# ----------------------------------------------------------------------------------------------


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``shift precautionary 20000x10 T=50`` (plus the batch size or limit)."""
    model = "lifecycle" if config["kernel"] == "row" else "precautionary"
    text = (
        f"{config['kernel']}: {model} {config['n_wealth']}x{config['n_consumption']} "
        f"T={config['n_periods']}"
    )
    if config.get("memory_limit"):
        text += f", limit {config['memory_limit'] / MIB:.0f} MiB (planned)"
    elif config.get("batch_size"):
        text += f", batch_size={config['batch_size']}"
    return text


def prediction_configs(*, quick: bool) -> list[dict[str, Any]]:
    """Return the prediction configurations."""
    return [
        {"part": "predict", "kernel": k, "n_wealth": w, "n_consumption": c, "n_periods": t}
        for k, w, c, t in (QUICK_PREDICT if quick else PREDICT)
    ]


def speed_configs(*, quick: bool) -> list[list[dict[str, Any]]]:
    """Return per speed case: the planned configuration, then the hand-picked ones that fit."""
    cases = []
    for kernel, n_wealth, n_consumption, n_periods, share in QUICK_SPEED if quick else SPEED:
        base = {
            "part": "speed",
            "kernel": kernel,
            "n_wealth": n_wealth,
            "n_consumption": n_consumption,
            "n_periods": n_periods,
            "repeats": 3,
            "xla": False,
        }
        limit = int(share * predicted_for(base))
        case = [base | {"memory_limit": limit}]
        for batch in sorted({max(1, int(n_wealth * s)) for s in SHARES}, reverse=True):
            hand = base | {"batch_size": batch}
            if predicted_for(hand) <= limit:
                case.append(hand)
        cases.append(case)
    return cases


def main(argv: list[str] | None = None) -> int:
    """Run the configurations in subprocesses, print the tables and write JSON."""
    parser = child_parser(
        description=__doc__.splitlines()[0], name="memory", quick_help="smaller sizes"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of part 2")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per subprocess")
    parser.add_argument("--report", type=Path, help="only print the tables of a saved JSON")
    parser.add_argument(
        "--part", choices=("both", "predict", "speed"), default="both", help="which part to run"
    )
    args = parser.parse_args(argv)
    if args.report:
        saved = json.loads(args.report.read_text())
        report(saved["prediction"], saved["speed"])
        return 0
    if args.single:
        emit_result(run_single(json.loads(args.single)))
        return 0
    env = os.environ | MALLOC_ENV
    script = Path(__file__)
    prediction = []
    for config in prediction_configs(quick=args.quick) if args.part != "speed" else []:
        if args.only and args.only not in label(config):
            continue
        print(f"running {label(config)}", file=sys.stderr, flush=True)
        prediction.append(run_child(script, config, timeout=args.timeout, env=env))
    speed: list[list[list[dict[str, Any]]]] = []
    for case in speed_configs(quick=args.quick) if args.part != "predict" else []:
        rounds: list[list[dict[str, Any]]] = [[] for _ in case]
        for round_index in range(args.rounds):
            order = case if round_index % 2 == 0 else case[::-1]
            for config in order:
                print(f"round {round_index + 1}: {label(config)}", file=sys.stderr, flush=True)
                rounds[case.index(config)].append(
                    run_child(script, config, timeout=args.timeout, env=env)
                )
        speed.append(rounds)
    summary = report(prediction, speed)
    write_json(
        args.json,
        {
            "environment": environment(),
            "prediction": prediction,
            "speed": speed,
            "summary": summary,
        },
    )
    print(f"wrote {args.json}")
    return 0


def report(prediction: list[dict[str, Any]], speed: list[Any]) -> dict[str, Any]:
    """Print both tables and the verdicts; return the verdicts."""
    rows, worst = [], 0.0
    for result in prediction:
        if "error" in result:
            rows.append([label(result["config"]), "error", result["error"][-60:], *[""] * 6])
            continue
        predicted = result["predicted_rise_bytes"]
        measured = result["measured_rise_bytes"]
        ratio = predicted / measured if measured else None
        worst = max(worst, abs(ratio - 1)) if ratio else worst
        xla = result.get("xla_bytes")
        rows.append(
            [
                result["label"],
                f"{result['points_per_period']:.1e}",
                "/".join(result["kernels"]),
                f"{predicted / MIB:.1f}",
                f"{(xla['temp'] + xla['output']) / MIB:.1f}" if xla else "",
                f"{measured / MIB:.1f}" if measured else "n/a",
                f"{ratio:.3f}" if ratio else "n/a",
                f"{result['rss_before_solve_bytes'] / MIB:.0f}",
                f"{min(result['warm_seconds']):.2f}",
            ]
        )
    print_table(
        "Predicted against measured peak (float64; rise of the peak RSS during a warm solve)",
        [
            "configuration",
            "points/period",
            "kernel",
            "predicted MiB",
            "XLA MiB",
            "measured MiB",
            "ratio",
            "process RSS MiB",
            "warm s",
        ],
        rows,
    )
    verdicts: dict[str, Any] = {"worst_prediction_error": worst if rows else None}
    if rows:
        print(
            f"Prediction within {TOLERANCE:.0%} at every size: "
            + ("PASS" if worst <= TOLERANCE else "FAIL")
            + f" (worst |predicted/measured - 1| = {worst:.3f})."
        )
    speed_rows, ratios = [], []
    for rounds in speed:
        medians = []
        for results in rounds:
            ok = [r for r in results if "error" not in r]
            samples = [min(r["warm_seconds"]) for r in ok]
            medians.append(statistics.median(samples) if samples else None)
        planned, hand = medians[0], [m for m in medians[1:] if m is not None]
        best = min(hand) if hand else None
        ratio = planned / best if planned and best else None
        if ratio:
            ratios.append(ratio)
        for index, results in enumerate(rounds):
            ok = [r for r in results if "error" not in r]
            if not ok:
                speed_rows.append([label(results[0]["config"]), "error", "", "", ""])
                continue
            first = ok[0]
            batch = first["batch_sizes"].get("wealth", 0)
            speed_rows.append(
                [
                    first["label"],
                    str(batch),
                    f"{first['predicted_rise_bytes'] / MIB:.1f}",
                    f"{max(r['measured_rise_bytes'] or 0 for r in ok) / MIB:.1f}",
                    f"{medians[index]:.3f}" if medians[index] else "",
                    f"{medians[index] / best:.3f}" if best and medians[index] else "",
                ]
            )
    print_table(
        "Planned splay against hand-picked batch sizes that fit the same limit (interleaved)",
        [
            "configuration",
            "wealth batch size",
            "predicted MiB",
            "measured MiB",
            "warm s (median)",
            "/ best hand-picked",
        ],
        speed_rows,
    )
    verdicts["planned_over_best_hand_picked"] = ratios
    if ratios:
        print(
            f"Planned batch sizes within {SPEED_TOLERANCE:.0%} of the best hand-picked: "
            + ("PASS" if max(ratios) <= 1 + SPEED_TOLERANCE else "FAIL")
            + f" (ratios {', '.join(f'{r:.3f}' for r in ratios)})."
        )
    return verdicts


if __name__ == "__main__":
    sys.exit(main())
