"""Benchmark ``calibrate_weights``: time per epoch and peak memory, full batch against batches.

Usage::

    uv run python benchmarks/calibrate.py [--records 1000000] [--targets 200]
        [--batch-size 100000] [--epochs 6] [--json bld/benchmarks/calibrate.json]

A synthetic estimate matrix A (N x K, float32, uniform on [0, 1)) is drawn from a seeded RNG in
fixed chunks of rows, so every configuration sees the same numbers; the targets are
``w_true @ A`` for log-normal ``w_true`` (an exact solution exists). Configurations, each in its
own interpreter (``--single <json>``) so that peak RSS is per configuration:

- ``full / in memory``: A materialised as one (N, K) array, one batch of N records;
- ``batched / in memory``: the same array, batches of ``--batch-size`` records;
- ``batched / streamed``: A never materialised; a callable draws the rows of each batch
  (the time per epoch then includes drawing A twice, once per pass: "drawing A s / pass" is
  one such pass timed on its own).

Each child runs ``--epochs`` epochs with dropout 0.1 and reports the first epoch (compiles
included), the median of the others, the time of the whole call (two scans of A included),
RSS before calibrating (A included where materialised) and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _measure import emit_result, environment, peak_rss_mib, print_table, run_child, write_json

CHUNK_ROWS = 50_000
SEED = 20_261_122
DROPOUT = 0.1


def rows_of_a(*, start: int, stop: int, n_targets: int) -> np.ndarray:
    """Return rows ``start:stop`` of the synthetic A, drawn chunk by chunk from fixed seeds."""
    out = np.empty((stop - start, n_targets), dtype=np.float32)
    first, last = start // CHUNK_ROWS, (stop - 1) // CHUNK_ROWS if stop > start else -1
    for chunk in range(first, last + 1):
        rng = np.random.default_rng([SEED, chunk])
        rows = rng.random((CHUNK_ROWS, n_targets), dtype=np.float32)
        lo, hi = max(start, chunk * CHUNK_ROWS), min(stop, (chunk + 1) * CHUNK_ROWS)
        out[lo - start : hi - start] = rows[lo - chunk * CHUNK_ROWS : hi - chunk * CHUNK_ROWS]
    return out


def true_targets(*, n_records: int, n_targets: int) -> np.ndarray:
    """Return w_true @ A in float64, accumulated over chunks."""
    weights = np.random.default_rng(SEED + 1).lognormal(sigma=0.2, size=n_records)
    total = np.zeros(n_targets)
    for start in range(0, n_records, CHUNK_ROWS):
        stop = min(start + CHUNK_ROWS, n_records)
        block = rows_of_a(start=start, stop=stop, n_targets=n_targets)
        total += weights[start:stop] @ block.astype(np.float64)
    return total


def run_single(config: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration in this process and return its measurements."""
    import jax  # noqa: PLC0415

    from project.calibration import (  # noqa: PLC0415
        CalibrationSettings,
        TargetProblem,
        calibrate_weights,
    )

    n, k = config["records"], config["targets"]
    started = time.perf_counter()
    targets = true_targets(n_records=n, n_targets=k)
    if config["source"] == "in memory":
        estimates: Any = rows_of_a(start=0, stop=n, n_targets=k)
    else:

        def estimates(start: int, stop: int) -> np.ndarray:
            return rows_of_a(start=start, stop=stop, n_targets=k)

    setup_seconds = time.perf_counter() - started
    source_seconds = source_pass_seconds(estimates=estimates, config=config)
    rss_before = peak_rss_mib()
    problem = TargetProblem.build(names=[f"t{j}" for j in range(k)], values=targets)
    settings = CalibrationSettings(
        epochs=config["epochs"], dropout=DROPOUT, batch_size=config["batch_size"], seed=1
    )
    started = time.perf_counter()
    fit = calibrate_weights(
        weights=np.ones(n), estimates=estimates, problem=problem, settings=settings
    )
    total_seconds = time.perf_counter() - started
    epochs = list(fit.epoch_seconds)
    return {
        "config": config,
        "device": str(jax.devices()[0]),
        "setup_seconds": setup_seconds,
        "source_pass_seconds": source_seconds,
        "first_epoch_seconds": epochs[0],
        "epoch_seconds_median": statistics.median(epochs[1:]) if len(epochs) > 1 else None,
        "epoch_seconds": epochs,
        "call_seconds": total_seconds,
        "rss_before_calibration_mib": rss_before,
        "peak_rss_mib": peak_rss_mib(),
        "loss_before": fit.loss_before,
        "loss_after": fit.loss_after,
        "weights_checksum": float(np.sum(fit.weights)),
    }


def source_pass_seconds(*, estimates: Any, config: dict[str, Any]) -> float | None:
    """Return the seconds one pass of a streamed A takes without JAX (None: in memory)."""
    if not callable(estimates):
        return None
    n, step = config["records"], config["batch_size"] or config["records"]
    started = time.perf_counter()
    for start in range(0, n, step):
        estimates(start, min(start + step, n))
    return time.perf_counter() - started


def label(config: dict[str, Any]) -> str:
    """Return a short name of a configuration."""
    batch = "full" if config["batch_size"] is None else f"batch {config['batch_size']:,}"
    return f"{batch} / {config['source']}"


def configurations(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Return the configurations to run."""
    common = {"records": args.records, "targets": args.targets, "epochs": args.epochs}
    return [
        {**common, "batch_size": None, "source": "in memory"},
        {**common, "batch_size": args.batch_size, "source": "in memory"},
        {**common, "batch_size": args.batch_size, "source": "streamed"},
    ]


def report(results: list[dict[str, Any]]) -> None:
    """Print one row per configuration."""
    rows = []
    for result in results:
        if "error" in result:
            rows.append([label(result["config"]), "error", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                label(result["config"]),
                f"{result['epoch_seconds_median']:.3f}",
                "-"
                if result["source_pass_seconds"] is None
                else f"{result['source_pass_seconds']:.2f}",
                f"{result['first_epoch_seconds']:.2f}",
                f"{result['call_seconds']:.2f}",
                f"{result['rss_before_calibration_mib']:,.0f}",
                f"{result['peak_rss_mib']:,.0f}",
                f"{result['peak_rss_mib'] - result['rss_before_calibration_mib']:,.0f}",
            ]
        )
    config = results[0]["config"]
    print_table(
        f"calibrate_weights, N = {config['records']:,}, K = {config['targets']}, "
        f"{config['epochs']} epochs, dropout {DROPOUT}",
        [
            "configuration",
            "s / epoch",
            "drawing A s / pass",
            "first epoch s",
            "whole call s",
            "RSS before MiB",
            "peak RSS MiB",
            "peak - before MiB",
        ],
        rows,
    )


def main(argv: list[str] | None = None) -> int:
    """Run every configuration in a subprocess, print the table and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=100_000)
    parser.add_argument("--epochs", type=int, default=6, help="the first one includes compiles")
    parser.add_argument("--json", type=Path, default=Path("bld/benchmarks/calibrate.json"))
    parser.add_argument("--single", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.single:
        emit_result(run_single(json.loads(args.single)))
        return 0

    meta = environment()
    load = ", ".join(f"{x:.2f}" for x in meta["load_average"])
    print(f"{meta['cpu_count']} CPUs, load average {load}; one subprocess per configuration.")
    results = []
    for config in configurations(args):
        print(f"running {label(config)} ...", flush=True)
        result = run_child(Path(__file__).resolve(), config, timeout=1800)
        if "error" in result:
            print(f"  FAILED: {result['error']}", flush=True)
        results.append(result)
    meta["load_average_after"] = list(environment()["load_average"])
    report(results)
    write_json(args.json, {"benchmark": "calibrate", "environment": meta, "results": results})
    print(f"wrote {args.json}")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
