"""Benchmark our DC-EGM against the peer ``dcegm`` 0.1.3 on the IJRS model, side by side.

Usage::

    uv run python benchmarks/compare_dcegm.py [--rounds 3] [--quick]

The IJRS (2017) retirement model (beta 0.98, delta 1, wage 20, r 0), EV1 taste shocks of scale
0.01, float64, at T = 5 with 500 savings points and T = 20 with 2,000. Both solvers get the same
savings grid, ``a_k = 500 (exp(9 x_k) - 1) / (exp(9) - 1)``, dense near the borrowing limit.
The peer runs in its own environment (``benchmarks/setup_dcegm_env.sh``, run when missing;
``--peer-python`` points elsewhere) through ``benchmarks/dcegm_peer.py``, which times its jitted
solve function (not ``model.solve()``, which re-traces every call). Every measurement is a fresh
process; within a round the two run back to back for each size, the order alternating between
rounds, so both see the same load: only the ratios carry over to other machines.

Ours: ``solve`` (structure analysis, the borrowing-limit check, trace, compile and run) timed
on its first call, then warm calls of ``solve`` at the default log level (its checks and one
report read included). Agreement: period-0 V of a worker (the log-sum over work and retire) and
of a retiree at wealth 1, 2, 5, ..., 400 and on 100 points in [1, 400]; each solver's gap to the
analytical solution (taste-shock scale 0, so the worker's gap includes the value of the shocks,
about scale·log 2 per remaining decision) is relative to max(|V|, 1).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
from _measure import (
    child_parser,
    emit_result,
    ensure_peer,
    environment,
    peer_speed_warnings,
    print_table,
    print_warnings,
    repeat_seconds,
    run_child,
    run_peer_script,
    time_call,
    write_json,
)

HERE = Path(__file__).parent
ROOT = HERE.parent
SIZES = ((5, 500), (20, 2000))
SCALE = 0.01
MAX_SAVINGS, CURVATURE = 500.0, 9.0
WEALTH_LEVELS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 400.0)
N_LINSPACE = 100
DEFAULT_PEER_PYTHON = Path("/work/dcegm-env/bin/python")


def savings_points(n_savings: int) -> list[float]:
    """Return the shared savings grid (dense near zero)."""
    x = np.linspace(0.0, 1.0, n_savings)
    points = MAX_SAVINGS * np.expm1(CURVATURE * x) / np.expm1(CURVATURE)
    points[0] = 0.0
    return points.tolist()


def oracle_gaps(
    *, periods: int, wealth: np.ndarray, worker: np.ndarray, retiree: np.ndarray
) -> dict[str, float]:
    """Return the max gap (relative to max(|V|, 1)) of each V to the analytical solution."""
    sys.path.insert(0, str(ROOT / "tests"))
    from oracles.ijrs_exact import retiree_value, worker_value  # noqa: PLC0415

    exact_worker = worker_value(
        wealth=wealth, period=0, n_periods=periods, beta=0.98, delta=1.0, wage=20.0
    )
    exact_retiree = retiree_value(wealth=wealth, period=0, n_periods=periods, beta=0.98)

    def gap(got: np.ndarray, want: np.ndarray) -> float:
        return float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1.0)))

    return {"worker": gap(worker, exact_worker), "retiree": gap(retiree, exact_retiree)}


def ijrs_model(*, periods: int, n_savings: int) -> tuple[Any, dict[str, Any]]:
    """Return the compared IJRS model (taste shocks, dcegm's savings grid) and its params."""
    from project.grids import IrregSpacedGrid  # noqa: PLC0415
    from project.model import Model  # noqa: PLC0415
    from project.models import ijrs  # noqa: PLC0415

    base = ijrs.build_model(n_periods=periods, taste_shocks=True)
    model = Model(
        name="ijrs",
        states=base.states,
        actions=base.actions,
        functions=base.functions,
        constraints=base.constraints,
        n_periods=periods,
        post_decision_grid=IrregSpacedGrid(points=savings_points(n_savings), name="savings"),
        taste_shocks=True,
    )
    return model, ijrs.DEFAULT_PARAMS | {"taste_shock_scale": SCALE}


def run_ours(config: dict[str, Any]) -> dict[str, Any]:
    """Solve IJRS with our DC-EGM in this process; return timings and period-0 V."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    jax.block_until_ready(jax.jit(lambda x: x + 1)(1.0))
    from project import solve  # noqa: PLC0415

    periods, n_savings = config["periods"], config["n_savings"]
    model, params = ijrs_model(periods=periods, n_savings=n_savings)

    def run() -> Any:
        solution = solve(model=model, params=params)
        jax.block_until_ready(solution.arrays)
        return solution

    first, solution = time_call(run)
    warm = repeat_seconds(run, repeats=config["repeats"])
    wealth = np.concatenate([WEALTH_LEVELS, np.linspace(1.0, 400.0, N_LINSPACE)])
    values = {
        name: solution.value(
            period=0, states={"lagged_retirement": np.full(wealth.shape, lag), "wealth": wealth}
        )
        for name, lag in (("worker", 0), ("retiree", 1))
    }
    return {
        "first_call_s": first,
        "warm_median_s": statistics.median(warm),
        "warm_min_s": min(warm),
        "worker_value": values["worker"].tolist(),
        "retiree_value": values["retiree"].tolist(),
        "wealth": wealth.tolist(),
    }


def run_peer(config: dict[str, Any], *, peer_python: Path) -> dict[str, Any]:
    """Run the peer's script in its environment; return its JSON result."""
    arguments = [
        f"--periods={config['periods']}",
        f"--n-savings={config['n_savings']}",
        f"--repeats={config['repeats']}",
        f"--taste-shock-scale={SCALE}",
        f"--max-savings={MAX_SAVINGS}",
        f"--grid-curvature={CURVATURE}",
    ]
    return run_peer_script(peer_python, HERE / "dcegm_peer.py", arguments)


def main() -> None:
    parser = child_parser(
        description=__doc__, name="compare_dcegm", quick_help="only T = 5, 500 points, 1 round"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--peer-python", type=Path, default=DEFAULT_PEER_PYTHON)
    args = parser.parse_args()
    if args.single:
        emit_result(run_ours(json.loads(args.single)))
        return
    ensure_peer(args.peer_python, setup_script=HERE / "setup_dcegm_env.sh")
    sizes = SIZES[:1] if args.quick else SIZES
    rounds = 1 if args.quick else args.rounds
    samples: dict[tuple[int, int], dict[str, list[dict[str, Any]]]] = {
        size: {"ours": [], "peer": []} for size in sizes
    }
    for round_index in range(rounds):
        for periods, n_savings in sizes:
            config = {"periods": periods, "n_savings": n_savings, "repeats": args.repeats}
            order = ("ours", "peer") if round_index % 2 == 0 else ("peer", "ours")
            for who in order:
                result = (
                    run_child(Path(__file__), config)
                    if who == "ours"
                    else run_peer(config, peer_python=args.peer_python)
                )
                if "error" in result:
                    raise SystemExit(f"{who} failed at T={periods}, n={n_savings}: {result}")
                samples[(periods, n_savings)][who].append(result)
    rows, records = [], []
    for (periods, n_savings), by_who in samples.items():
        summary: dict[str, Any] = {"periods": periods, "n_savings": n_savings}
        for who, results in by_who.items():
            summary[who] = {
                key: statistics.median(r[key] for r in results)
                for key in ("first_call_s", "warm_median_s", "warm_min_s")
            }
        ours, peer = by_who["ours"][-1], by_who["peer"][-1]
        summary["peer_versions"] = {
            key: peer.get(key)
            for key in ("python_version", "jax_version", "jaxlib_version", "dcegm_version")
        }
        wealth = np.asarray(ours["wealth"])
        agreement = {
            name: float(
                np.max(
                    np.abs(np.asarray(ours[f"{name}_value"]) - np.asarray(peer[f"{name}_value"]))
                )
            )
            for name in ("worker", "retiree")
        }
        gaps = {
            who: oracle_gaps(
                periods=periods,
                wealth=wealth,
                worker=np.asarray(result["worker_value"]),
                retiree=np.asarray(result["retiree_value"]),
            )
            for who, result in (("ours", ours), ("peer", peer))
        }
        ratio = summary["ours"]["warm_median_s"] / summary["peer"]["warm_median_s"]
        first_ratio = summary["ours"]["first_call_s"] / summary["peer"]["first_call_s"]
        levels = {
            f"{w:g}": {
                "ours_worker": ours["worker_value"][i],
                "peer_worker": peer["worker_value"][i],
                "ours_retiree": ours["retiree_value"][i],
                "peer_retiree": peer["retiree_value"][i],
            }
            for i, w in enumerate(WEALTH_LEVELS)
        }
        summary |= {
            "warm_ratio": ratio,
            "first_call_ratio": first_ratio,
            "max_abs_dV": agreement,
            "oracle_gap": gaps,
            "values_at_levels": levels,
        }
        records.append(summary)
        rows.append(
            [
                f"T={periods}, {n_savings} points",
                f"{1e3 * summary['peer']['warm_median_s']:.2f}",
                f"{1e3 * summary['ours']['warm_median_s']:.2f}",
                f"{ratio:.3f}",
                f"{summary['peer']['first_call_s']:.2f}",
                f"{summary['ours']['first_call_s']:.2f}",
                f"{agreement['worker']:.1e} / {agreement['retiree']:.1e}",
                f"{gaps['peer']['worker']:.1e} / {gaps['peer']['retiree']:.1e}",
                f"{gaps['ours']['worker']:.1e} / {gaps['ours']['retiree']:.1e}",
            ]
        )
    print_table(
        f"DC-EGM vs dcegm 0.1.3 on IJRS (scale {SCALE}, float64; medians of {rounds} rounds)",
        [
            "size",
            "dcegm warm ms",
            "ours warm ms",
            "ours/dcegm",
            "dcegm first s",
            "ours first s",
            "max|dV| worker/retiree",
            "dcegm oracle gap w/r",
            "ours oracle gap w/r",
        ],
        rows,
    )
    warnings = peer_speed_warnings(
        "dcegm",
        {f"T={r['periods']}, {r['n_savings']} points": r["peer"]["warm_median_s"] for r in records},
    )
    print_warnings(warnings)
    write_json(
        args.json,
        {
            "environment": environment(),
            "rounds": rounds,
            "results": records,
            "peer_speed_warnings": warnings,
        },
    )


if __name__ == "__main__":
    main()
