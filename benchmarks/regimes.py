"""The default model as one state space and restated as regimes: time, state space, agreement.

Usage::

    uv run python benchmarks/regimes.py [--rounds 3] [--quick]

The pipeline's life-cycle model (30 periods, taste-shock scale 0.01, float32) solved by DC-EGM on
200 savings points and by grid search on 100 x 100, as one model (``lifecycle``: V over type,
lagged retirement, income and wealth) and as regimes (``lifecycle_regimes`` without mortality:
working over type, income, wealth; retired over type, wealth). Every measurement is a fresh
process; within a round the two run back to back for each method, the order alternating between
rounds. Reported: the first call, the median warm solve (of ``--repeats``), the number of V
points per period, and the largest |dV| between the two at the grid points both define.
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

METHODS = {"dcegm": {"n_savings": 200}, "grid": {"n_wealth": 100, "n_consumption": 100}}
SCALE = 0.01
WEALTH = np.linspace(0.5, 15.0, 30)


def run(config: dict[str, Any]) -> dict[str, Any]:
    """Solve one configuration in this process; return timings and V on test states."""
    import jax  # noqa: PLC0415

    jax.block_until_ready(jax.jit(lambda x: x + 1)(1.0))
    from project import solve  # noqa: PLC0415
    from project.models import lifecycle, lifecycle_regimes  # noqa: PLC0415

    sizes = METHODS[config["method"]] | {"taste_shocks": True}
    params = lifecycle.DEFAULT_PARAMS | {"taste_shock_scale": SCALE}
    if config["model"] == "regimes":
        model = lifecycle_regimes.build_model(**sizes, survival=False)
        points = sum(_points(v) for v in model.regimes.values())
    else:
        model = lifecycle.build_model(**sizes)
        points = _points(model)

    def solve_once() -> Any:
        solution = solve(model=model, params=params, method=config["method"])
        parts = solution.solutions.values() if hasattr(solution, "solutions") else [solution]
        jax.block_until_ready([getattr(p, "arrays", getattr(p, "values", None)) for p in parts])
        return solution

    first, solution = time_call(solve_once)
    warm = repeat_seconds(solve_once, repeats=config["repeats"])
    return {
        "first_call_s": first,
        "warm_median_s": statistics.median(warm),
        "points_per_period": points,
        "values": _values(solution, regimes=config["model"] == "regimes"),
    }


def _points(model: Any) -> int:
    return int(np.prod([g.n_points for g in model.states.values()]))


def _values(solution: Any, *, regimes: bool) -> list[float]:
    """Return period-0 V of workers and retirees on every type and income, at ``WEALTH``."""
    out = []
    for lag, regime in ((0, "working"), (1, "retired")):
        for typ in (0, 1):
            for income in range(5):
                states = {"pref_type": typ, "income": income, "wealth": WEALTH}
                if regimes:
                    if regime == "retired":
                        states = {"pref_type": typ, "wealth": WEALTH}
                    values = solution.value(period=0, regime=regime, states=states)
                else:
                    values = solution.value(period=0, states=states | {"lagged_retirement": lag})
                out.extend(np.asarray(values, dtype=float).tolist())
    return out


def main() -> None:
    parser = child_parser(description=__doc__, name="regimes", quick_help="one round, few repeats")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    if args.single:
        emit_result(run(json.loads(args.single)))
        return
    rounds = 1 if args.quick else args.rounds
    repeats = 3 if args.quick else args.repeats
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for round_index in range(rounds):
        for method in METHODS:
            order = ("single", "regimes") if round_index % 2 == 0 else ("regimes", "single")
            for model in order:
                config = {"method": method, "model": model, "repeats": repeats}
                result = run_child(Path(__file__), config)
                if "error" in result:
                    raise SystemExit(f"{model}/{method} failed: {result}")
                samples.setdefault((method, model), []).append(result)
    rows, records = [], []
    for method in METHODS:
        single, regimes = samples[(method, "single")], samples[(method, "regimes")]
        summary = {
            who: {
                key: statistics.median(r[key] for r in results)
                for key in ("first_call_s", "warm_median_s")
            }
            | {"points_per_period": results[0]["points_per_period"]}
            for who, results in (("single", single), ("regimes", regimes))
        }
        gap = float(
            np.max(np.abs(np.asarray(single[-1]["values"]) - np.asarray(regimes[-1]["values"])))
        )
        ratio = summary["regimes"]["warm_median_s"] / summary["single"]["warm_median_s"]
        records.append({"method": method, **summary, "warm_ratio": ratio, "max_abs_dV": gap})
        rows.append(
            [
                method,
                f"{summary['single']['points_per_period']:,} / "
                f"{summary['regimes']['points_per_period']:,}",
                f"{1e3 * summary['single']['warm_median_s']:.1f}",
                f"{1e3 * summary['regimes']['warm_median_s']:.1f}",
                f"{ratio:.2f}",
                f"{summary['single']['first_call_s']:.2f}",
                f"{summary['regimes']['first_call_s']:.2f}",
                f"{gap:.1e}",
            ]
        )
    print_table(
        f"Life-cycle model: one state space vs regimes (medians of {rounds} rounds, float32)",
        [
            "method",
            "V points per period (one / regimes)",
            "one warm ms",
            "regimes warm ms",
            "regimes/one",
            "one first s",
            "regimes first s",
            "max |dV|",
        ],
        rows,
    )
    write_json(args.json, {"environment": environment(), "rounds": rounds, "results": records})


if __name__ == "__main__":
    main()
