"""How fast the replication's estimation runs: one evaluation of its moments, and the whole of it.

On the pipeline's replication (``config.REPLICATION``: the published buffer-stock model on the
2019 profiles, 10,000 simulated households, 150 savings points, float64), each configuration in
its own process, interleaved over ``--rounds``:

- ``moments``: ``ReplicationMoments`` (solve by EGM, simulate, the seven medians): its first
  evaluation (compile included) and the median of ``--warm`` evaluations at changing params;
- ``estimate`` (``--estimate``): the whole estimation (``estimate_replication``: the published
  criterion's three Nelder-Mead searches and efficient MSM with its standard errors).

With ``--baseline-src`` (the ``src`` folder of another checkout, e.g. ``git worktree add
/tmp/old <commit>``) each configuration runs on that tree too, in the same rounds, and the table
gives this tree's time over its. The JSON (``bld/benchmarks/replication_speed.json``) records
Python, jax, jaxlib, XLA_FLAGS, the device, the machine's load and the medians with every
figure. JAX's persistent compilation cache stays on (as in a build) unless ``--cold``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _measure import (
    child_parser,
    emit_result,
    environment,
    print_table,
    run_child,
    write_json,
)

ROOT = Path(__file__).resolve().parents[1]


def parse_arguments() -> Any:
    parser = child_parser(
        description=__doc__.splitlines()[0],
        name="replication_speed",
        quick_help="1 round, 3 warm evaluations, no whole estimation",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--warm", type=int, default=10, help="warm evaluations per process")
    parser.add_argument("--estimate", action="store_true", help="also time whole estimations")
    parser.add_argument("--cold", action="store_true", help="an empty compilation cache")
    parser.add_argument("--baseline-src", type=Path, default=None)
    return parser.parse_args()


def run_single(config: dict[str, Any]) -> None:
    import jax  # noqa: PLC0415

    import project  # noqa: PLC0415
    from project.config import REPLICATION  # noqa: PLC0415
    from project.data.replication import read_profiles, read_wealth_ratios  # noqa: PLC0415
    from project.data.vendored import verified_path  # noqa: PLC0415
    from project.estimation.replication import (  # noqa: PLC0415
        ReplicationMoments,
        estimate_replication,
    )
    from project.points import precision  # noqa: PLC0415

    settings = json.loads(json.dumps(dataclasses.asdict(REPLICATION)))
    profiles = read_profiles(verified_path(f"profiles_{settings['calibration']}"))
    result: dict[str, Any] = {"config": config, "project_source": str(Path(project.__file__))}
    result["environment"] = environment() | {"device": str(jax.devices()[0])}
    if config["kind"] == "estimate":
        households = read_wealth_ratios(verified_path("scf_wealth_income_ratios"))
        started = time.perf_counter()
        outcome = estimate_replication(profiles=profiles, households=households, settings=settings)
        result["seconds"] = time.perf_counter() - started
        result["estimate"] = dict(outcome.result.params)
    else:
        with precision(x64=True):
            moments = ReplicationMoments(
                profiles=profiles,
                n_subjects=int(settings["n_subjects"]),
                seed=int(settings["seed"]),
                n_savings=int(settings["n_savings"]),
            )
            started = time.perf_counter()
            first = moments({"beta": 1.0, "crra": 4.5})
            result["first"] = time.perf_counter() - started
            warm = []
            for i in range(int(config["warm"])):
                started = time.perf_counter()
                moments({"beta": 1.0 + 1e-3 * (i + 1), "crra": 4.5})
                warm.append(time.perf_counter() - started)
            result["warm"] = statistics.median(warm)
            result["medians_at_first"] = [float(x) for x in first]
    emit_result(result)


def main() -> None:
    args = parse_arguments()
    if args.single:
        run_single(json.loads(args.single))
        return
    rounds, warm = (1, 3) if args.quick else (args.rounds, args.warm)
    kinds = ["moments", *(["estimate"] if args.estimate and not args.quick else [])]
    trees = {"this tree": ROOT / "src"}
    if args.baseline_src is not None:
        trees["baseline"] = args.baseline_src.resolve()
    records: dict[str, list[dict[str, Any]]] = {f"{k} | {t}": [] for k in kinds for t in trees}
    for _ in range(rounds):
        for kind in kinds:
            for tree, src in trees.items():
                inherited = os.environ.get("PYTHONPATH", "")
                env = dict(os.environ) | {
                    "PYTHONPATH": ":".join(filter(None, (str(src), str(src.parent), inherited)))
                }
                if args.cold:
                    env["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp()
                config = {"kind": kind, "warm": warm, "tree": tree}
                records[f"{kind} | {tree}"].append(
                    run_child(Path(__file__), config, env=env, timeout=1800)
                )
                write_json(args.json, {"rounds": rounds, "records": records})
    _print(records, trees=list(trees))


def _median(records: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in records if key in r]
    return statistics.median(values) if values else None


def _print(records: dict[str, list[dict[str, Any]]], *, trees: list[str]) -> None:
    rows = []
    for label, runs in records.items():
        kind, tree = label.split(" | ")
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            rows.append([kind, tree, "failed", errors[0][-80:], ""])
            continue
        figures = ["first", "warm"] if kind == "moments" else ["seconds"]
        cells = [f"{_median(runs, f):.3f} s" for f in figures]
        ratio = ""
        if tree != trees[0]:
            ours = records[f"{kind} | {trees[0]}"]
            key = figures[-1]
            if _median(ours, key) and _median(runs, key):
                ratio = f"{_median(ours, key) / _median(runs, key):.2f}x"
        rows.append([kind, tree, *cells, *([""] * (2 - len(cells))), ratio])
    print_table(
        "The replication's estimation (medians over rounds)",
        ["what", "tree", "first / whole", "warm", "this tree / it"],
        rows,
    )


if __name__ == "__main__":
    main()
