"""Monte Carlo recovery of (crra, beta) by MSM on a small life-cycle model.

Usage::

    uv run python benchmarks/recovery.py [--replications 100] [--quick]
        [--n-data 1000] [--n-simulated 4000] [--json bld/benchmarks/recovery.json]

The model: ``lifecycle.build_model`` with 40 annual periods from age 30, 3 income nodes, wealth
and consumption grids of 20 points, a savings grid of 40 (DC-EGM) and EV1 taste shocks on
retirement; float64. Moments: mean log wealth-to-income in the eight age groups 31-35, ...,
66-70 (``project.estimation.lifecycle``). The truth is the model's default (crra 2, beta 0.96).

Each replication r

1. draws "data" with the SCF's sampling design, a cross-section: ``--n-data`` households per age
   group, each a fresh simulated subject (initial conditions and shocks from seed 1000 + r)
   observed at one age drawn uniformly within its group; the data moments are the group means,
   their sampling variances the groups' sample variances over ``n_data``;
2. re-estimates (crra, beta) with ``estimate_msm`` from the start (3.0, 0.94), simulating
   ``--n-simulated`` subjects (a panel, every subject-year of a group counts) with another seed
   (100000 + r), pounders (derivative-free least squares) with an initial trust region of 0.05,
   central differences with relative step 1e-2 for the Jacobian (the simulated moments jump when
   a subject's retirement choice flips; smaller steps and radii see those jumps: with 1e-3 and
   0.01, 11 of 100 replications stopped at the start and the 95 % intervals covered 76-78 %),
   and ``on_failure="warn"`` (a replication that does not converge is counted, not dropped
   silently). One start per replication (the pipeline's estimation uses multistart): the
   benchmark measures the estimator's sampling properties at a cost of one local search.

Reported per param over converged replications: bias, RMSE, the standard deviation of the
estimates, the mean standard error (close to that sd when the sandwich is right), and the
coverage of the 95 % intervals; plus the rejection rate of the J-test at 5 % and the seconds
per replication. ``--quick`` runs 10 replications. Besides the JSON it writes the table as
LaTeX and Markdown (same path, suffixes ``.tex`` and ``.md``); ``--from-json PATH`` only
redraws those tables from an earlier run's JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _measure import child_parser, environment, print_table, write_json

from project.analysis import write_table

TRUTH = {"crra": 2.0, "beta": 0.96}
START = {"crra": 3.0, "beta": 0.94}
BOUNDS = {"crra": (1.2, 6.0), "beta": (0.85, 0.995)}
START_AGE, N_PERIODS = 30, 40
AGE_GROUPS = [(30 + 5 * i, 35 + 5 * i) for i in range(8)]
SIZES = {"n_wealth": 20, "n_consumption": 20, "n_income": 3, "n_savings": 40}
DISTRIBUTION = {
    "pref_type": {"probabilities": [0.5, 0.5]},
    "lagged_retirement": {"label": "working"},
    "income": {"label": "node_1"},
    "wealth": {"uniform": [0.2, 1.0]},
}
DATA_SEED, SIMULATION_SEED = 1000, 100_000
RELATIVE_STEP = 1e-2
ALGORITHM = "pounders"
ALGO_OPTIONS = {"trustregion_initial_radius": 0.05}


def parse_arguments() -> argparse.Namespace:
    """Return the command line (replications, sizes, the JSON path, --from-json)."""
    parser = child_parser(
        description=__doc__.splitlines()[0], name="recovery", quick_help="run 10 replications"
    )
    parser.add_argument("--replications", type=int, default=100, help="Monte Carlo replications")
    parser.add_argument("--n-data", type=int, default=1000, help="households per age group")
    parser.add_argument("--n-simulated", type=int, default=4000, help="simulated subjects")
    parser.add_argument(
        "--from-json", default=None, help="only write the tables of an earlier run's JSON"
    )
    return parser.parse_args()


def setup() -> tuple[Any, dict[str, Any]]:
    """Return the model and the base params (float64 on)."""
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    from project.models import lifecycle  # noqa: PLC0415

    model = lifecycle.build_model(
        **SIZES, n_periods=N_PERIODS, start_age=START_AGE, taste_shocks=True
    )
    base = lifecycle.default_params() | {
        "taste_shock_scale": lifecycle.DEFAULT_TASTE_SHOCK_SCALE,
        **TRUTH,
    }
    return model, base


def draw_data(
    *, model: Any, params: dict[str, Any], n_data: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return data moments and their sampling variances from a simulated cross-section."""
    from project.estimation import simulate_log_wealth_to_income  # noqa: PLC0415
    from project.simulation import draw_initial_conditions  # noqa: PLC0415

    n_groups = len(AGE_GROUPS)
    initial = draw_initial_conditions(
        model=model, n_subjects=n_groups * n_data, seed=seed, distribution=DISTRIBUTION
    )
    frame = simulate_log_wealth_to_income(
        model=model, params=params, initial_conditions=initial, seed=seed
    )
    values = frame["log_wealth_income"].to_numpy().reshape(n_groups * n_data, N_PERIODS)
    ages = frame["age"].to_numpy()[:N_PERIODS]
    rng = np.random.default_rng([seed, 1])
    means, variances = np.empty(n_groups), np.empty(n_groups)
    for group, (low, high) in enumerate(AGE_GROUPS):
        columns = np.flatnonzero((ages > low) & (ages <= high))
        rows = np.arange(group * n_data, (group + 1) * n_data)
        observed = values[rows, rng.choice(columns, size=n_data)]
        means[group], variances[group] = observed.mean(), observed.var(ddof=1) / n_data
    return means, variances


def replicate(
    *, model: Any, base: dict[str, Any], replication: int, n_data: int, n_simulated: int
) -> dict[str, Any]:
    """Run one replication; return its estimates, standard errors and diagnostics."""
    from project.estimation import estimate_msm, lifecycle_moment_simulator  # noqa: PLC0415
    from project.simulation import draw_initial_conditions  # noqa: PLC0415

    started = time.perf_counter()
    data, variances = draw_data(
        model=model, params=base, n_data=n_data, seed=DATA_SEED + replication
    )
    seed = SIMULATION_SEED + replication
    initial = draw_initial_conditions(
        model=model, n_subjects=n_simulated, seed=seed, distribution=DISTRIBUTION
    )
    simulate_moments = lifecycle_moment_simulator(
        model=model,
        base_params=base,
        initial_conditions=initial,
        seed=seed,
        age_groups=AGE_GROUPS,
        estimated=tuple(TRUTH),
    )
    result = estimate_msm(
        simulate_moments=simulate_moments,
        data_moments=data,
        data_variances=variances,
        n_data=n_data,
        n_simulated=n_simulated,
        start_params=START,
        bounds=BOUNDS,
        moment_names=simulate_moments.moment_names,
        algorithm=ALGORITHM,
        algo_options=ALGO_OPTIONS,
        relative_step=RELATIVE_STEP,
        on_failure="warn",
    )
    truth = np.array([TRUTH[name] for name in result.param_names])
    return {
        "replication": replication,
        "estimates": result.params,
        "standard_errors": dict(
            zip(result.param_names, result.standard_errors.tolist(), strict=True)
        ),
        "covered": dict(
            zip(
                result.param_names,
                ((result.ci_lower <= truth) & (truth <= result.ci_upper)).tolist(),
                strict=True,
            )
        ),
        **result.summary(),
        "seconds": time.perf_counter() - started,
    }


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Return bias, RMSE, sd, mean SE and coverage per param over converged replications."""
    kept = [r for r in records if r["converged"]]
    summary: dict[str, Any] = {
        "replications": len(records),
        "converged": len(kept),
        "j_rejection_rate_5pct": float(np.mean([r["j_p_value"] < 0.05 for r in kept]))
        if kept
        else None,
        "seconds_per_replication": float(np.mean([r["seconds"] for r in records])),
        "simulations_per_replication": float(np.mean([r["n_simulations"] for r in records])),
        "params": {},
    }
    for name, true_value in TRUTH.items():
        estimates = np.array([r["estimates"][name] for r in kept])
        errors = estimates - true_value
        summary["params"][name] = {
            "truth": true_value,
            "mean_estimate": float(estimates.mean()),
            "bias": float(errors.mean()),
            "rmse": float(np.sqrt(np.mean(errors**2))),
            "sd_estimates": float(estimates.std(ddof=1)) if len(kept) > 1 else None,
            "mean_se": float(np.mean([r["standard_errors"][name] for r in kept])),
            "coverage_95": float(np.mean([r["covered"][name] for r in kept])),
        }
    return summary


def recovery_table(summary: dict[str, Any]) -> pd.DataFrame:
    """Return one row per param: truth, mean estimate, bias, RMSE, sd, mean SE, coverage."""
    return pd.DataFrame(
        [
            {
                "Parameter": name,
                "Truth": s["truth"],
                "Mean estimate": s["mean_estimate"],
                "Bias": s["bias"],
                "RMSE": s["rmse"],
                "SD of estimates": np.nan if s["sd_estimates"] is None else s["sd_estimates"],
                "Mean SE": s["mean_se"],
                "Coverage of 95% CI": s["coverage_95"],
            }
            for name, s in summary["params"].items()
        ]
    )


def write_recovery_tables(*, summary: dict[str, Any], json_path: Path) -> list[Path]:
    """Write the recovery table as LaTeX and Markdown beside the JSON (same stem)."""
    caption = (
        f"Monte Carlo recovery of (crra, beta) by MSM: {summary['converged']} of "
        f"{summary['replications']} replications converged; the J-test rejects at 5% in "
        f"{summary['j_rejection_rate_5pct']:.0%} of them"
    )
    return write_table(
        table=recovery_table(summary),
        latex_path=json_path.with_suffix(".tex"),
        markdown_path=json_path.with_suffix(".md"),
        caption=caption,
        label="tab:recovery",
        formats={"Truth": "{:g}", "Mean estimate": "{:.4f}", "Bias": "{:+.4f}"}
        | {c: "{:.4f}" for c in ("RMSE", "SD of estimates", "Mean SE")},
    )


def main() -> None:
    """Run the replications, print the table and write the JSON (and the tables)."""
    arguments = parse_arguments()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if arguments.from_json is not None:  # only redraw the tables of an earlier run
        saved = json.loads(Path(arguments.from_json).read_text())
        paths = write_recovery_tables(summary=saved["summary"], json_path=Path(arguments.from_json))
        print("Wrote " + ", ".join(map(str, paths)) + ".")
        return
    replications = 10 if arguments.quick else arguments.replications
    model, base = setup()
    records = []
    started = time.perf_counter()
    for replication in range(replications):
        record = replicate(
            model=model,
            base=base,
            replication=replication,
            n_data=arguments.n_data,
            n_simulated=arguments.n_simulated,
        )
        records.append(record)
        print(
            f"replication {replication + 1}/{replications}: "
            f"crra {record['estimates']['crra']:.3f} ({record['standard_errors']['crra']:.3f}), "
            f"beta {record['estimates']['beta']:.4f} ({record['standard_errors']['beta']:.4f}), "
            f"converged {record['converged']}, {record['seconds']:.1f} s",
            flush=True,
        )
    summary = summarize(records)
    rows = [
        [
            name,
            f"{s['truth']:g}",
            f"{s['mean_estimate']:.4f}",
            f"{s['bias']:+.4f}",
            f"{s['rmse']:.4f}",
            "n/a" if s["sd_estimates"] is None else f"{s['sd_estimates']:.4f}",
            f"{s['mean_se']:.4f}",
            f"{s['coverage_95']:.2f}",
        ]
        for name, s in summary["params"].items()
    ]
    print_table(
        f"MSM recovery: {summary['converged']}/{replications} converged, "
        f"{summary['seconds_per_replication']:.1f} s per replication, J rejects at 5 % in "
        f"{summary['j_rejection_rate_5pct']:.0%} of replications",
        ["param", "truth", "mean", "bias", "RMSE", "sd", "mean SE", "coverage 95 %"],
        rows,
    )
    write_json(
        arguments.json,
        {
            "benchmark": "recovery",
            "environment": environment(),
            "settings": {
                "replications": replications,
                "n_data_per_group": arguments.n_data,
                "n_simulated": arguments.n_simulated,
                "truth": TRUTH,
                "start": START,
                "bounds": BOUNDS,
                "age_groups": AGE_GROUPS,
                "sizes": SIZES | {"n_periods": N_PERIODS, "start_age": START_AGE},
                "algorithm": ALGORITHM,
                "algo_options": ALGO_OPTIONS,
                "relative_step": RELATIVE_STEP,
            },
            "summary": summary,
            "total_seconds": time.perf_counter() - started,
            "replications": records,
        },
    )
    tables = write_recovery_tables(summary=summary, json_path=Path(arguments.json))
    print(f"Wrote {arguments.json} and " + ", ".join(map(str, tables)) + ".")


if __name__ == "__main__":
    main()
