"""Benchmark the default pipeline model against an earlier commit of this engine, as a ratio.

Usage::

    uv run python benchmarks/lifecycle_speedup.py [--baseline 577aa63] [--rounds 3]

The baseline commit is checked out into a temporary git worktree and imported from there
(``PYTHONPATH``), in the same virtual environment. Each measurement is a fresh process; within a
round the baseline and this working tree run back to back for each configuration (the order
alternates between rounds). Configurations: the life-cycle model at its pipeline default
(100 x 100, 30 periods) and at a 4x finer grid (400 x 400), in the pipeline's float32 at the
pipeline's ``log_level="progress"`` and at ``"off"``, and in float64 at ``"off"``.
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

from _measure import child_parser, emit_result, environment, print_table, run_child, write_json

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "577aa63"
CONFIGS = [
    {"n": n, "x64": x64, "level": level}
    for n in (100, 400)
    for x64, level in ((False, "progress"), (False, "off"), (True, "off"))
]
SPEEDUP_GOAL = 5.0


def main() -> None:
    """Run the rounds, print the table and write the JSON."""
    parser = child_parser(
        description=__doc__.split("\n\n")[0],
        name="lifecycle_speedup",
        quick_help="the 100 x 100 grid only, one round",
    )
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git ref to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7, help="warm solves per process")
    args = parser.parse_args()
    if args.single:
        emit_result(run_single(json.loads(args.single)))
        return
    configs = [c for c in CONFIGS if not args.quick or c["n"] == 100]
    configs = [c for c in configs if args.only in label(c)]
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="baseline_") as folder:
        worktree = Path(folder) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.baseline],
            check=True,
            capture_output=True,
        )
        try:
            records = measure(configs, rounds=rounds, repeats=args.repeats, worktree=worktree)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                check=False,
                capture_output=True,
            )
    summary = summarize(records, configs)
    report(summary, baseline=args.baseline)
    write_json(
        args.json,
        {
            "environment": environment(),
            "baseline": args.baseline,
            "summary": summary,
            "records": records,
        },
    )
    print(f"\nwrote {args.json}")


def label(config: dict[str, Any]) -> str:
    """Return e.g. ``lifecycle 100x100 f32 progress``."""
    bits = "f64" if config["x64"] else "f32"
    return f"lifecycle {config['n']}x{config['n']} {bits} {config['level']}"


def measure(
    configs: list[dict[str, Any]], *, rounds: int, repeats: int, worktree: Path
) -> list[dict[str, Any]]:
    """Run every configuration for the baseline and for this tree, interleaved."""
    records = []
    for round_index in range(rounds):
        for config in configs:
            jobs = [("baseline", worktree / "src"), ("current", ROOT / "src")]
            if round_index % 2:
                jobs.reverse()
            for who, source in jobs:
                result = run_child(
                    Path(__file__),
                    config | {"repeats": repeats},
                    env=os.environ | {"PYTHONPATH": str(source)},
                )
                result.update(who=who, round=round_index, label=label(config))
                records.append(result)
                warm = result.get("warm_seconds")
                text = "ERROR" if warm is None else f"{1e3 * warm:.1f} ms"
                print(f"round {round_index} {label(config):>32} {who:>9}: {text}", flush=True)
    return records


def run_single(config: dict[str, Any]) -> dict[str, Any]:
    """Time warm solves of the life-cycle model in this process (either engine)."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", config["x64"])
    import project  # noqa: PLC0415
    from project.models import lifecycle  # noqa: PLC0415

    model = lifecycle.build_model(n_wealth=config["n"], n_consumption=config["n"])

    def solve() -> float:
        import time  # noqa: PLC0415

        started = time.perf_counter()
        solution = project.solve(
            model=model, params=lifecycle.DEFAULT_PARAMS, log_level=config["level"]
        )
        jax.block_until_ready(solution.value_function)
        return time.perf_counter() - started

    first = solve()
    warm = [solve() for _ in range(config["repeats"])]
    return {
        "source": project.__file__,
        "first_call_seconds": first,
        "warm_seconds": statistics.median(warm),
        "warm_samples": warm,
    }


def summarize(records: list[dict[str, Any]], configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return per configuration the median warm time of each engine over rounds and the ratio."""
    summary = []
    for config in configs:
        name = label(config)

        def median(who: str, name: str = name) -> float | None:
            values = [
                r["warm_seconds"]
                for r in records
                if r["label"] == name and r["who"] == who and "warm_seconds" in r
            ]
            return statistics.median(values) if values else None

        baseline, current = median("baseline"), median("current")
        summary.append(
            {
                "configuration": name,
                "baseline_ms": None if baseline is None else 1e3 * baseline,
                "current_ms": None if current is None else 1e3 * current,
                "speedup": None if not baseline or not current else baseline / current,
            }
        )
    return summary


def report(summary: list[dict[str, Any]], *, baseline: str) -> None:
    """Print the speed-up table."""
    rows = [
        [
            row["configuration"],
            "-" if row["baseline_ms"] is None else f"{row['baseline_ms']:.1f}",
            "-" if row["current_ms"] is None else f"{row['current_ms']:.1f}",
            "-" if row["speedup"] is None else f"{row['speedup']:.2f}",
            "-"
            if row["speedup"] is None
            else ("PASS" if row["speedup"] >= SPEEDUP_GOAL else "FAIL"),
        ]
        for row in summary
    ]
    print_table(
        f"Default pipeline model: warm solve, {baseline} against this tree (medians over rounds)",
        ["configuration", f"{baseline} ms", "current ms", "speed-up", f">= {SPEEDUP_GOAL:g}x"],
        rows,
    )


if __name__ == "__main__":
    sys.exit(main())
