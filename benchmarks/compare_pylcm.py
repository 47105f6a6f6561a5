"""Benchmark ``project.solve`` against the peer pylcm 0.0.1, side by side, as ratios.

Usage::

    uv run python benchmarks/compare_pylcm.py [--rounds 3] [--quick] [--only ijrs]

The peer runs in its own virtual environment, built by ``../shared/tools/peer_pylcm001_setup.sh``
(run automatically when missing; ``--peer-python`` points elsewhere) and timed by
``../shared/tools/peer_pylcm001_bench.py``. Every measurement is a fresh process; within a round
the peer and this project run back to back for each size (the order alternates between rounds),
so both see the same machine load: only the ratios carry over to other machines.

Each of our children starts JAX (backend and one trivial compile), builds the model, then times
the first ``solve`` (plan, trace, compile and run: the peer's ``compile_plus_first_solve``) at
``log_level="off"`` or at the default level, then warm solves at both levels. V of every period
is saved and compared with the peer's (max |dV| over finite entries). Horizon rows time our
compile (first call minus warm) at T = 50 against T = 5.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _measure import (
    child_parser,
    emit_result,
    environment,
    peak_rss_mib,
    peer_speed_warnings,
    print_table,
    print_warnings,
    repeat_seconds,
    run_child,
    time_call,
    write_json,
)

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("PROJECT_SHARED", ROOT.parent / "shared"))
PEER_SETUP = SHARED / "tools" / "peer_pylcm001_setup.sh"
PEER_BENCH = SHARED / "tools" / "peer_pylcm001_bench.py"
DEFAULT_PEER_PYTHON = Path(tempfile.gettempdir()) / "peers" / "pylcm001" / "venv" / "bin" / "python"

# (model, n_wealth, n_consumption, our wealth batch size): the sizes.
SIZES = [
    ("ijrs", 100, 500, 0),
    ("precautionary", 100, 100, 0),
    ("ijrs", 500, 2000, 0),
    ("precautionary", 500, 500, 0),
    ("ijrs", 4000, 20000, 50),
]
QUICK_SIZES = SIZES[:2]
HORIZONS = [("ijrs", 100, 500), ("precautionary", 100, 100)]
PARAMS = {
    "ijrs": {"beta": 0.98, "delta": 1.0, "r": 0.0, "wage": 20.0},
    "precautionary": {"beta": 0.95, "r": 0.0, "income_rho": 0.9, "income_sigma": 0.2},
}
# The goals, as limits on our / peer ratios.
WARM_LIMIT = 0.5
MID_WARM_LIMIT = 0.1
LARGE_WARM_LIMIT = 0.2
LARGE_RSS_LIMIT_MIB = 512
HORIZON_LIMIT = 1.5


def main() -> None:
    """Run the rounds, print the tables and write the JSON."""
    parser = child_parser(
        description=__doc__.split("\n\n")[0],
        name="compare_pylcm",
        quick_help="only the two small sizes, one round",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (>= 3)")
    parser.add_argument("--repeats", type=int, default=7, help="warm solves per process")
    parser.add_argument("--peer-python", type=Path, default=DEFAULT_PEER_PYTHON)
    parser.add_argument("--no-horizon", action="store_true", help="skip the T = 50 rows")
    args = parser.parse_args()
    if args.single:
        emit_result(run_ours(json.loads(args.single)))
        return
    peer_python = ensure_peer(args.peer_python)
    sizes = QUICK_SIZES if args.quick else SIZES
    sizes = [s for s in sizes if args.only in label(*s[:3])]
    rounds = 1 if args.quick else args.rounds
    work = Path(tempfile.mkdtemp(prefix="compare_pylcm_"))
    records: list[dict[str, Any]] = []
    for round_index in range(rounds):
        for model, n_wealth, n_consumption, batch in sizes:
            # Warm solves of the small sizes take under a millisecond: more of them (for both
            # solvers) keep a few slow early calls from moving the median.
            pairs = n_wealth * n_consumption
            repeats = 3 if pairs > 10**7 else 4 * args.repeats if pairs < 10**5 else args.repeats
            jobs = [
                (
                    "peer",
                    lambda m=model, w=n_wealth, c=n_consumption, r=repeats: run_peer(
                        peer_python, m, w, c, repeats=r, save_dir=work / f"peer_{label(m, w, c)}"
                    ),
                ),
            ]
            levels = ["off"] if n_wealth * n_consumption > 10**7 else ["off", "warning"]
            for level in levels:
                config = {
                    "model": model,
                    "n_wealth": n_wealth,
                    "n_consumption": n_consumption,
                    "n_periods": 5,
                    "wealth_batch_size": batch,
                    "first_level": level,
                    "repeats": repeats,
                    "save_dir": str(work / f"ours_{label(model, n_wealth, n_consumption)}"),
                }
                jobs.append((f"ours_{level}", lambda c=config: run_child(Path(__file__), c)))
            if round_index % 2:
                jobs.reverse()
            for who, job in jobs:
                result = job()
                result.update(
                    who=who, round=round_index, size=label(model, n_wealth, n_consumption)
                )
                records.append(result)
                print(f"round {round_index} {result['size']:>24} {who:>12}: {brief(result)}")
    horizon = [] if (args.quick or args.no_horizon) else run_horizons(args.only)
    summary = summarize(records, sizes, work)
    report(summary, horizon)
    warnings = peer_speed_warnings(
        "pylcm",
        {
            row["size"]: row["peer_warm_ms"] / 1e3
            for row in summary
            if row["peer_warm_ms"] is not None
        },
    )
    print_warnings(warnings)
    write_json(
        args.json,
        {
            "environment": environment(),
            "summary": summary,
            "horizon": horizon,
            "records": records,
            "peer_speed_warnings": warnings,
        },
    )
    print(f"\nwrote {args.json}")


def label(model: str, n_wealth: int, n_consumption: int) -> str:
    """Return the size's name, e.g. ``ijrs 100x500``."""
    return f"{model} {n_wealth}x{n_consumption}"


def ensure_peer(peer_python: Path) -> Path:
    """Return the peer's interpreter, building its environment with the shared script if absent."""
    if not peer_python.exists():
        subprocess.run(["bash", str(PEER_SETUP)], check=True)
    return peer_python


def run_peer(
    peer_python: Path,
    model: str,
    n_wealth: int,
    n_consumption: int,
    *,
    repeats: int,
    save_dir: Path,
) -> dict[str, Any]:
    """Run the shared peer script once and return its JSON (or an error)."""
    command = [
        str(peer_python),
        str(PEER_BENCH),
        "--model",
        model,
        "--n-wealth",
        str(n_wealth),
        "--n-consumption",
        str(n_consumption),
        "--repeats",
        str(repeats),
        "--save-dir",
        str(save_dir),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    if completed.returncode:
        return {"error": completed.stderr[-2000:]}
    peer = json.loads(completed.stdout.strip().splitlines()[-1])
    return {
        "first_call_seconds": peer["compile_plus_first_solve_s"],
        "warm_seconds": peer["warm_solve_median_s"],
        "peak_rss_mib": peer["peak_rss_mib"],
        "versions": peer["versions"],
    }


def run_ours(config: dict[str, Any]) -> dict[str, Any]:
    """Measure one configuration of this project in this (fresh) process."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)  # before any JAX operation, as the peer does
    import numpy as np  # noqa: PLC0415

    import project  # noqa: PLC0415
    from project.models import MODEL_BUILDERS  # noqa: PLC0415

    jax.block_until_ready(jax.jit(lambda x: x + 1)(jax.numpy.zeros(())))
    model = MODEL_BUILDERS[config["model"]](
        n_wealth=config["n_wealth"],
        n_consumption=config["n_consumption"],
        n_periods=config["n_periods"],
        wealth_batch_size=config.get("wealth_batch_size", 0),
    )
    params = PARAMS[config["model"]]

    def solve(level: str) -> Any:
        solution = project.solve(model=model, params=params, log_level=level)
        jax.block_until_ready(solution.value_function)  # V of every period, as a user reads it
        return solution

    first, solution = time_call(lambda: solve(config["first_level"]))
    repeats = config.get("repeats", 7)
    warm = {
        level: statistics.median(repeat_seconds(lambda lv=level: solve(lv), repeats=repeats))
        for level in ("off", "warning")
    }
    result = {
        "first_call_seconds": first,
        "first_level": config["first_level"],
        "warm_seconds": warm["off"],
        "warm_default_seconds": warm["warning"],
        "peak_rss_mib": peak_rss_mib(),
        "kernels": list(solution.kernels),
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
    }
    if config.get("save_dir"):
        save = Path(config["save_dir"])
        save.mkdir(parents=True, exist_ok=True)
        for t, value in enumerate(solution.value_function):
            np.save(save / f"V_period{t}.npy", np.asarray(value))
    return result


def run_horizons(only: str) -> list[dict[str, Any]]:
    """Return our compile estimate (first call - warm) at T = 5 and T = 50, in fresh processes."""
    rows = []
    for model, n_wealth, n_consumption in HORIZONS:
        if only not in label(model, n_wealth, n_consumption):
            continue
        compile_seconds = {}
        for n_periods in (5, 50):
            config = {
                "model": model,
                "n_wealth": n_wealth,
                "n_consumption": n_consumption,
                "n_periods": n_periods,
                "first_level": "off",
                "repeats": 5,
            }
            result = run_child(Path(__file__), config)
            compile_seconds[n_periods] = result["first_call_seconds"] - result["warm_seconds"]
        rows.append(
            {
                "size": label(model, n_wealth, n_consumption),
                "compile_T5": compile_seconds[5],
                "compile_T50": compile_seconds[50],
                "ratio": compile_seconds[50] / compile_seconds[5],
            }
        )
    return rows


def brief(result: dict[str, Any]) -> str:
    """Return a one-line progress message."""
    if "error" in result:
        return "ERROR " + result["error"][-300:]
    return (
        f"first {result['first_call_seconds']:.3f} s, warm {1e3 * result['warm_seconds']:.2f} ms,"
        f" RSS {result['peak_rss_mib']:.0f} MiB"
    )


def summarize(
    records: list[dict[str, Any]], sizes: list[tuple[str, int, int, int]], work: Path
) -> list[dict[str, Any]]:
    """Return per size the medians over rounds, the ratios and max |dV| against the peer."""
    import numpy as np  # noqa: PLC0415

    summary = []
    for model, n_wealth, n_consumption, batch in sizes:
        name = label(model, n_wealth, n_consumption)
        mine = [r for r in records if r["size"] == name and "error" not in r]

        def median(who: str, key: str, mine: list[dict[str, Any]] = mine) -> float | None:
            values = [r[key] for r in mine if r["who"].startswith(who) and key in r]
            return statistics.median(values) if values else None

        peer_warm, ours_warm = median("peer", "warm_seconds"), median("ours", "warm_seconds")
        ours_default = median("ours", "warm_default_seconds")
        peer_first = median("peer", "first_call_seconds")
        first_off = median("ours_off", "first_call_seconds")
        first_default = median("ours_warning", "first_call_seconds")
        difference = None
        peer_dir, ours_dir = work / f"peer_{name}", work / f"ours_{name}"
        if peer_dir.exists() and ours_dir.exists():
            differences = []
            for path in sorted(ours_dir.glob("V_period*.npy")):
                ours, peer = np.load(path), np.load(peer_dir / path.name)
                if not np.array_equal(np.isfinite(ours), np.isfinite(peer)):
                    differences.append(float("inf"))  # V is -inf or NaN at other states
                    continue
                finite = np.isfinite(ours)
                differences.append(float(np.abs(ours[finite] - peer[finite]).max()))
            difference = max(differences)
        summary.append(
            {
                "size": name,
                "wealth_batch_size": batch,
                "kernels": next((r["kernels"] for r in mine if "kernels" in r), None),
                "peer_warm_ms": _ms(peer_warm),
                "ours_warm_off_ms": _ms(ours_warm),
                "ours_warm_default_ms": _ms(ours_default),
                "ratio_off": _ratio(ours_warm, peer_warm),
                "ratio_default": _ratio(ours_default, peer_warm),
                "peer_first_s": peer_first,
                "ours_first_off_s": first_off,
                "ours_first_default_s": first_default,
                "first_ratio_off": _ratio(first_off, peer_first),
                "first_ratio_default": _ratio(first_default, peer_first),
                "peer_rss_mib": median("peer", "peak_rss_mib"),
                "ours_rss_mib": median("ours", "peak_rss_mib"),
                "max_abs_dV": difference,
            }
        )
    return summary


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else 1e3 * seconds


def _ratio(ours: float | None, peer: float | None) -> float | None:
    return None if ours is None or not peer else ours / peer


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(summary: list[dict[str, Any]], horizon: list[dict[str, Any]]) -> None:
    """Print the ratio table, the goals and the horizon rows."""
    rows = [[row["size"], *(_fmt(row[key], spec) for _, key, spec in COLUMNS)] for row in summary]
    print_table(
        "Warm solve and first call, ours / pylcm 0.0.1 (float64, T = 5, medians over rounds)",
        ["size", *(title for title, _, _ in COLUMNS)],
        rows,
    )
    goals = []
    for row in summary:
        large = row["size"].startswith("ijrs 4000")
        mid = row["size"] in {"ijrs 500x2000", "precautionary 500x500"}
        limits = (
            [WARM_LIMIT] + ([MID_WARM_LIMIT] if mid else []) + ([LARGE_WARM_LIMIT] if large else [])
        )
        for key in ("ratio_off", "ratio_default"):
            for limit in limits:
                if row[key] is not None:
                    verdict = _pass(row[key] <= limit)
                    goals.append([row["size"], f"warm {key[6:]} <= {limit} x pylcm", verdict])
        for key in ("first_ratio_off", "first_ratio_default"):
            if row[key] is not None:
                goals.append([row["size"], f"first call {key[12:]} <= pylcm", _pass(row[key] <= 1)])
        if large and row["ours_rss_mib"] is not None:
            verdict = _pass(row["ours_rss_mib"] <= LARGE_RSS_LIMIT_MIB)
            goals.append([row["size"], f"peak RSS <= {LARGE_RSS_LIMIT_MIB} MiB", verdict])
    for row in horizon:
        goals.append(
            [
                row["size"],
                f"compile T=50 / T=5 <= {HORIZON_LIMIT}",
                _pass(row["ratio"] <= HORIZON_LIMIT),
            ]
        )
    print_table("Goals", ["size", "goal", "verdict"], goals)
    if horizon:
        print_table(
            "Compile estimate (first call - warm), T = 50 against T = 5",
            ["size", "T=5 s", "T=50 s", "ratio"],
            [
                [
                    r["size"],
                    f"{r['compile_T5']:.3f}",
                    f"{r['compile_T50']:.3f}",
                    f"{r['ratio']:.2f}",
                ]
                for r in horizon
            ],
        )


COLUMNS = [  # (title, summary key, format)
    ("pylcm warm ms", "peer_warm_ms", ".2f"),
    ("ours off ms", "ours_warm_off_ms", ".2f"),
    ("ours default ms", "ours_warm_default_ms", ".2f"),
    ("ratio off", "ratio_off", ".3f"),
    ("ratio default", "ratio_default", ".3f"),
    ("pylcm first s", "peer_first_s", ".3f"),
    ("ours first off s", "ours_first_off_s", ".3f"),
    ("ours first default s", "ours_first_default_s", ".3f"),
    ("first ratio off", "first_ratio_off", ".2f"),
    ("first ratio default", "first_ratio_default", ".2f"),
    ("pylcm RSS MiB", "peer_rss_mib", ".0f"),
    ("ours RSS MiB", "ours_rss_mib", ".0f"),
    ("max |dV|", "max_abs_dV", ".1e"),
]


def _pass(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


if __name__ == "__main__":
    sys.exit(main())
