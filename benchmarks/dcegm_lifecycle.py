"""DC-EGM against the grid solver on the default life-cycle model: time at equal accuracy.

Usage::

    uv run python benchmarks/dcegm_lifecycle.py [--quick]

The pipeline's model (30 periods, 2 types, 5 income nodes, retirement choice, taste-shock scale
0.01), float32 as in the pipeline. Every configuration is a fresh process: first solve, then the
median of warm solves. Accuracy is measured against a reference, DC-EGM on 4,000 savings points
in float64: on every discrete context (type, lagged retirement, income node), 60 wealth levels
in [0.5, 15] and every period but the last,

- ``V error``: the largest |V - V_ref| (V is the log-sum over work and retire: smooth, and the
  quantity both solvers define the same way);
- ``c error``: the mean |c - c_ref| of consumption given the likeliest choice, where both pick
  the same one.

The speed-up at equal accuracy compares each DC-EGM size with the cheapest grid size that is at
least as accurate in both measures (or, if none is, with the largest grid: a lower bound).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from _measure import (
    child_parser,
    emit_result,
    environment,
    print_table,
    repeat_seconds,
    run_child,
    time_call,
    write_json,
)

SCALE = 0.01
DCEGM_SIZES = (50, 100, 200, 400)
GRID_SIZES = ((100, 100), (200, 400), (400, 1000), (1000, 4000), (2000, 8000))
REFERENCE = 4000
WEALTH = np.linspace(0.5, 15.0, 60)


def run(config: dict[str, Any]) -> dict[str, Any]:
    """Solve one configuration in this process; return timings and V, c on the test states."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", config.get("x64", False))
    jax.block_until_ready(jax.jit(lambda x: x + 1)(1.0))
    from project import solve  # noqa: PLC0415
    from project.grids import code_combinations  # noqa: PLC0415
    from project.models import lifecycle  # noqa: PLC0415

    if config["method"] == "dcegm":
        model = lifecycle.build_model(n_savings=config["n_savings"], taste_shocks=True)
    else:
        model = lifecycle.build_model(
            n_wealth=config["n_wealth"], n_consumption=config["n_consumption"], taste_shocks=True
        )
    params = lifecycle.DEFAULT_PARAMS | {"taste_shock_scale": SCALE}

    def solve_once() -> Any:
        solution = solve(model=model, params=params, method=config["method"])
        jax.block_until_ready(solution.arrays if config["method"] == "dcegm" else solution.values)
        return solution

    first, solution = time_call(solve_once)
    warm = repeat_seconds(solve_once, repeats=config["repeats"])
    discrete = [s for s in model.state_names if s != "wealth"]
    codes = code_combinations([model.states[s].n_points for s in discrete])
    rows = np.repeat(codes, WEALTH.size, axis=0)
    states = {s: rows[:, i] for i, s in enumerate(discrete)}
    states["wealth"] = np.tile(WEALTH, codes.shape[0])
    values, consumption, choice = [], [], []
    for period in range(model.n_periods - 1):
        values.append(np.asarray(solution.value(period=period, states=states), float).tolist())
        policy = solution.policy(period=period, states=states)
        consumption.append(np.asarray(policy["consumption"], float).tolist())
        choice.append(np.asarray(policy["retirement"], int).tolist())
    return {
        "config": config,
        "first_s": first,
        "warm_s": statistics.median(warm),
        "value": values,
        "consumption": consumption,
        "choice": choice,
    }


def errors(result: dict[str, Any], reference: dict[str, Any]) -> tuple[float, float]:
    """Return (max |V - V_ref|, mean |c - c_ref| where the likeliest choices agree)."""
    value, ref_value = np.asarray(result["value"]), np.asarray(reference["value"])
    same = np.asarray(result["choice"]) == np.asarray(reference["choice"])
    gap = np.abs(np.asarray(result["consumption"]) - np.asarray(reference["consumption"]))
    return float(np.max(np.abs(value - ref_value))), float(gap[same].mean())


def main() -> None:
    parser = child_parser(
        description=__doc__, name="dcegm_lifecycle", quick_help="two sizes of each method"
    )
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.single:
        emit_result(run(json.loads(args.single)))
        return
    script = Path(__file__)
    reference = run_child(
        script,
        {"method": "dcegm", "n_savings": REFERENCE, "x64": True, "repeats": 1},
        timeout=1200,
    )
    dcegm_sizes = DCEGM_SIZES[1:3] if args.quick else DCEGM_SIZES
    grid_sizes = GRID_SIZES[:2] if args.quick else GRID_SIZES
    configs = [{"method": "dcegm", "n_savings": n, "repeats": args.repeats} for n in dcegm_sizes]
    configs += [
        {"method": "grid", "n_wealth": w, "n_consumption": c, "repeats": args.repeats}
        for w, c in grid_sizes
    ]
    results = []
    for config in configs:
        result = run_child(script, config, timeout=1800)
        if "error" in result:
            raise SystemExit(f"{config} failed: {result['error']}")
        value_error, consumption_error = errors(result, reference)
        results.append(
            {
                "config": config,
                "first_s": result["first_s"],
                "warm_s": result["warm_s"],
                "value_error": value_error,
                "consumption_error": consumption_error,
            }
        )
    grids = [r for r in results if r["config"]["method"] == "grid"]
    rows = []
    for record in results:
        config = record["config"]
        label = (
            f"DC-EGM, {config['n_savings']} savings points"
            if config["method"] == "dcegm"
            else f"grid, {config['n_wealth']} x {config['n_consumption']}"
        )
        speedup = ""
        if config["method"] == "dcegm":
            as_good = [
                g
                for g in grids
                if g["value_error"] <= record["value_error"]
                and g["consumption_error"] <= record["consumption_error"]
            ]
            match = min(as_good, key=lambda g: g["warm_s"]) if as_good else grids[-1]
            record["speedup_at_equal_accuracy"] = match["warm_s"] / record["warm_s"]
            record["speedup_is_lower_bound"] = not as_good
            speedup = f"{'>=' if not as_good else ''}{record['speedup_at_equal_accuracy']:.0f}x"
        rows.append(
            [
                label,
                f"{1e3 * record['warm_s']:.1f}",
                f"{record['first_s']:.2f}",
                f"{record['value_error']:.2e}",
                f"{record['consumption_error']:.2e}",
                speedup,
            ]
        )
    print_table(
        f"Life-cycle model, taste-shock scale {SCALE}, float32; errors against DC-EGM on "
        f"{REFERENCE} points in float64",
        ["solver", "warm ms", "first s", "max |dV|", "mean |dc|", "speed-up at equal accuracy"],
        rows,
    )
    write_json(args.json, {"environment": environment(), "results": results})


if __name__ == "__main__":
    main()
