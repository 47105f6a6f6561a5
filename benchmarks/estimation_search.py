"""Compare one estimation search: drawn moments without derivatives, smooth ones with exact ones.

Usage::

    uv run python benchmarks/estimation_search.py [--moments bld/data/scf_moments.arrow]

On the pipeline's baseline variant and estimation settings (``config.ESTIMATION``, float64), one
local search from the settings' start on the SCF moments (``estimate_variant`` with
``n_starts=1``), each search in its own process with an empty compilation cache (so its time
includes its compiles), run one after the other:

- ``drawn``: today's search, drawn moments and ``pounders`` (no derivatives; the standard errors'
  Jacobian by central differences with the settings' step);
- ``smooth``: smooth moments (expectations over the retirement choice) with their exact Jacobian
  (forward mode), for ``scipy_ls_trf`` and for the standard errors.

For each: seconds, simulations (each of the smooth search's simulations computes the moments
and their Jacobian), the estimate, its standard errors, and the criterion g'Wg at the estimate
under both kinds of moments (computed after the timing). The JSON
(``bld/benchmarks/estimation_search.json``) records the versions, XLA_FLAGS and the device.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import child_parser, emit_result, print_table, run_child, write_json
from estimation_speed import estimation_moments, setup, versions

SEARCHES = {
    "drawn": {},
    "smooth": {"smooth": True, "algorithm": "scipy_ls_trf", "algo_options": {}},
}


def search(kind: str, *, moments_file: str) -> dict[str, Any]:
    """Time one search from the start; return its result and both criteria at its estimate."""
    from dataclasses import asdict  # noqa: PLC0415

    import pandas as pd  # noqa: PLC0415

    from project.config import VARIANTS  # noqa: PLC0415
    from project.estimation.variant import estimate_variant  # noqa: PLC0415

    model, specification, settings, initial = setup()
    started = time.perf_counter()
    outcome = estimate_variant(
        model=model,
        specification=specification,
        moments=pd.read_feather(moments_file),
        initial_distribution=VARIANTS["baseline"].simulation.initial_distribution,
        settings=asdict(settings) | {"n_starts": 1} | SEARCHES[kind],
    )
    seconds = time.perf_counter() - started
    result = outcome.result
    criteria = {}
    for smooth in (False, True):
        moments = estimation_moments(model, specification, settings, initial, smooth=smooth)
        gap = moments(result.params) - result.data_moments
        criteria["smooth" if smooth else "drawn"] = float(gap @ result.weighting @ gap)
    return {
        "seconds": seconds,
        "algorithm": result.algorithm,
        "n_simulations": result.n_simulations,
        "converged": result.converged,
        "message": result.message,
        "estimate": result.params,
        "standard_errors": dict(
            zip(result.param_names, map(float, result.standard_errors), strict=True)
        ),
        "criterion": float(result.objective),
        "criterion_at_estimate": criteria,
    }


def main() -> None:
    """Run each search in its own process, print the table and write the JSON."""
    parser = child_parser(
        description=__doc__.splitlines()[0],
        name="estimation_search",
        quick_help="(no quick mode: each search runs once)",
    )
    parser.add_argument("--moments", type=Path, default=Path("bld/data/scf_moments.arrow"))
    args = parser.parse_args()
    if args.single:
        config = json.loads(args.single)
        emit_result(
            {"config": config, "environment": versions()}
            | search(config["kind"], moments_file=config["moments"])
        )
        return
    if not args.moments.exists():
        sys.exit(f"{args.moments} is missing: build it with `uv run pytask -k prepare_data`.")
    records = {}
    for kind in SEARCHES:
        if args.only not in kind:
            continue
        env = dict(os.environ) | {"JAX_COMPILATION_CACHE_DIR": tempfile.mkdtemp()}
        config = {"kind": kind, "moments": str(args.moments.resolve())}
        records[kind] = run_child(Path(__file__), config, env=env, timeout=1800)
    write_json(args.json, {"records": records})
    rows = [
        [
            f"{kind} ({record['algorithm']})",
            f"{record['seconds']:.1f} s",
            str(record["n_simulations"]),
            ", ".join(f"{name} {value:.5g}" for name, value in record["estimate"].items()),
            ", ".join(f"{value:.3g}" for value in record["standard_errors"].values()),
            f"{record['criterion_at_estimate']['drawn']:.4g}",
            f"{record['criterion_at_estimate']['smooth']:.4g}",
        ]
        for kind, record in records.items()
        if "seconds" in record
    ]
    columns = ["search", "time", "simulations", "estimate", "SE", "drawn g'Wg", "smooth g'Wg"]
    print_table("One search from the start (baseline, SCF moments, float64)", columns, rows)
    for kind, record in records.items():
        if "error" in record:
            print(f"ERROR in {kind}:", record["error"][-2000:])


if __name__ == "__main__":
    main()
