"""Measure the accuracy of the solution method the pipeline ran (DC-EGM, EV1 taste shocks).

Three checks, each against an oracle rather than against itself:

1. Analytical oracle: the IJRS (2017) retirement model (log utility, r = 0, no taste shocks)
   has an exact solution, which ``ijrs_exact`` computes by enumerating retirement dates (each
   date's consumption path is the tightest affordable Euler path). DC-EGM solves it with the
   taste-shock machinery at scale 0 on the variant's number of savings points; errors of V are
   relative to max(|V|, 1), consumption errors are absolute and exclude wealth within two
   savings steps of a switch of the optimal retirement date (where consumption jumps).
2. Euler-equation errors of the baseline solution on the model's wealth grid, every period
   with a successor, type, income node and feasible retirement option (``euler_errors``): the
   Euler equation with logit-weighted next-period options and survival holds exactly on
   DC-EGM's endogenous grid, so the error is that of interpolating between its points.
3. Convergence in the savings grid (n, 2n, 4n points) and the gap to grid search
   (``compare_solutions``): V and the likeliest option's consumption at common states.

Timings are logged, never written: the products stay byte-identical across builds.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.accuracy import (
    compare_solutions,
    euler_errors,
    euler_summary,
    ijrs_oracle_check,
)
from project.analysis.notation import number
from project.analysis.table_output import MINUS, Symbol, concatenated, write_table_files
from project.dispatch import solve
from project.persist.atomic import write_bytes_atomically
from project.pipeline import build_variant_model, load_variant_solution, variant_precision
from project.regimes.solution import RegimeSolution

logger = logging.getLogger("project.analysis")

COLUMNS = ["Check", "Measure", "Value", "Detail"]
CAPTION = (
    "Accuracy of the solution method, measured by the build: DC-EGM against the exact "
    "solution of the IJRS retirement model, Euler-equation errors of the baseline, convergence "
    "in the savings grid and the gap to grid search."
)


def validation_results(
    *,
    specification: Mapping[str, Any],
    solution: RegimeSolution,
    grid_solution: RegimeSolution | None = None,
    factors: Sequence[int] = (2, 4),
) -> dict[str, Any]:
    """Run the three checks on the variant ``specification`` and its loaded ``solution``.

    The savings grid of ``solution`` is refined by each of ``factors`` (the last is the
    reference); ``grid_solution`` is the same model solved by grid search (optional). Returns
    ``{"oracle", "euler", "convergence", "grid_search", "seconds"}``.
    """
    sizes, params = dict(specification["sizes"]), dict(specification["params"])
    n_savings = int(sizes["n_savings"])
    grid = solution.solutions["working"].model.states["wealth"]
    wealth = np.linspace(float(grid.start), float(grid.stop), int(grid.n_points))
    seconds, out = {}, {}
    start = time.perf_counter()
    out["oracle"] = ijrs_oracle_check(n_savings=n_savings)
    seconds["oracle"] = time.perf_counter() - start
    start = time.perf_counter()
    out["euler"] = euler_summary(euler_errors(solution=solution, wealth=wealth))
    seconds["euler"] = time.perf_counter() - start
    start = time.perf_counter()
    finer = {}
    for factor in factors:
        model = build_variant_model(
            model=specification["model"], sizes=sizes | {"n_savings": factor * n_savings}
        )
        finer[factor] = solve(model=model, params=params, log_level="warning")
    reference = finer[factors[-1]]
    out["convergence"] = [
        {"n_savings": n_savings * f, "reference": n_savings * factors[-1]}
        | compare_solutions(one=s, other=reference, wealth=wealth)
        for f, s in [(1, solution), *[(f, finer[f]) for f in factors[:-1]]]
    ]
    seconds["convergence"] = time.perf_counter() - start
    if grid_solution is not None:
        start = time.perf_counter()
        out["grid_search"] = compare_solutions(one=solution, other=grid_solution, wealth=wealth)
        seconds["grid_search"] = time.perf_counter() - start
    for check, spent in seconds.items():
        logger.info("Validation: %s took %.1f s.", check, spent)
    return out | {"seconds": seconds}


def validation_table(results: Mapping[str, Any]) -> pd.DataFrame:
    """Return the validation table (columns Check, Measure, Value, Detail) of ``results``."""
    oracle, euler = results["oracle"], results["euler"]
    rows = [
        (
            "Analytical oracle (IJRS)",
            "Max. relative error of V",
            scientific(oracle["value_error"]),
            "5 periods; wealth 1-400, 100 points; relative to max(|V|, 1)",
        ),
        (
            "Analytical oracle (IJRS)",
            "Max. abs. error of consumption",
            scientific(oracle["consumption_error"]),
            f"away from retirement-date switches ({_share(oracle['share_near_switch'])} of "
            "points left out)",
        ),
        (
            "Euler equation",
            "Mean log10 relative error",
            number(euler["mean_log10"], decimals=2),
            f"{euler['n_points']:,} unconstrained states, every feasible option",
        ),
        (
            "Euler equation",
            "Max. log10 relative error",
            number(euler["max_log10"], decimals=2),
            f"{_share(euler['share_constrained'])} of states at the borrowing limit left out",
        ),
        (
            "Euler equation",
            "95th percentile of log10 relative error",
            number(euler["p95_log10"], decimals=2),
            "model's wealth grid, every period with a successor",
        ),
    ]
    for row in results["convergence"]:
        detail = f"{row['n_savings']} vs {row['reference']} savings points"
        rows += [
            ("Savings grid", "Max. abs. difference in V", scientific(row["value_max"]), detail),
            (
                "Savings grid",
                "Mean abs. difference in consumption",
                scientific(row["consumption_mean"]),
                detail,
            ),
        ]
    if "grid_search" in results:
        gap = results["grid_search"]
        rows += [
            (
                "DC-EGM vs grid search",
                "Mean abs. difference in V",
                scientific(gap["value_mean"]),
                concatenated("baseline; max. ", scientific(gap["value_max"])),
            ),
            (
                "DC-EGM vs grid search",
                "Mean abs. difference in consumption",
                scientific(gap["consumption_mean"]),
                "baseline",
            ),
            (
                "DC-EGM vs grid search",
                "Share of states with another option",
                number(gap["choice_differs"], decimals=3),
                "workers",
            ),
        ]
    return pd.DataFrame(rows, columns=COLUMNS)


def validation_numbers(results: Mapping[str, Any]) -> dict[str, str]:
    """Return the key numbers as printed in the paper (true minus signs)."""
    finest = results["convergence"][0]
    numbers = {
        "oracle_value_error": scientific(results["oracle"]["value_error"]).text,
        "oracle_consumption_error": scientific(results["oracle"]["consumption_error"]).text,
        "euler_mean_log10": number(results["euler"]["mean_log10"], decimals=2),
        "euler_max_log10": number(results["euler"]["max_log10"], decimals=2),
        "convergence_value_max": scientific(finest["value_max"]).text,
        "convergence_consumption_mean": scientific(finest["consumption_mean"]).text,
    }
    if "grid_search" in results:
        numbers["grid_value_max"] = scientific(results["grid_search"]["value_max"]).text
        numbers["grid_choice_differs"] = _share(results["grid_search"]["choice_differs"])
    return numbers


def validation_sentence(results: Mapping[str, Any]) -> str:
    """Return the paper's sentence on the measured accuracy."""
    n = validation_numbers(results)
    return (
        f"Against the exact solution of the IJRS model, DC-EGM's value function errs by at most "
        f"{n['oracle_value_error']} (relative); the baseline's Euler-equation errors average "
        f"{n['euler_mean_log10']} in log10 (at most {n['euler_max_log10']})."
    )


def write_validation(
    *,
    specification: Mapping[str, Any],
    solution_directory: Path,
    grid_solution_directory: Path | None,
    paths: Mapping[str, Path],
    factors: Sequence[int] = (2, 4),
    provenance: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Validate the variant's solution; write the JSON result and the table; return the result.

    ``factors``: the savings grid's refinements of the grid-convergence check.

    ``paths``: "result" (JSON: numbers, sentence, robustness, values, table) and the table's
    "tex", "typ", "md".
    """
    with variant_precision(specification):
        solution = load_variant_solution(
            specification=dict(specification), directory=Path(solution_directory)
        )
        grid = None
        if grid_solution_directory is not None:
            grid_specification = dict(specification) | {
                "sizes": _without_savings(specification["sizes"])
            }
            grid = load_variant_solution(
                specification=grid_specification, directory=Path(grid_solution_directory)
            )
        results = validation_results(
            specification=specification, solution=solution, grid_solution=grid, factors=factors
        )
    table = validation_table(results)
    write_table_files(
        table=table,
        paths={k: v for k, v in paths.items() if k != "result"},
        caption=CAPTION,
        label="tab:validation",
        provenance=provenance,
    )
    values = {k: v for k, v in results.items() if k != "seconds"}
    content = {
        "numbers": validation_numbers(results),
        "sentence": validation_sentence(results),
        "robustness": _robustness(results),
        "values": values,
        "table": [{k: str(v) for k, v in row.items()} for row in table.to_dict("records")],
        "provenance": dict(provenance or {}),
    }
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(paths["result"]), text.encode())
    return content


def scientific(value: float, *, digits: int = 1) -> Symbol:
    """Return ``value`` as "a.b x 10^e" in each format's markup (true minus signs)."""
    if value == 0 or not np.isfinite(value):
        text = f"{value:g}"
        return Symbol(text=text, latex=text, typst=text)
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    power = int(exponent)
    return Symbol(
        text=f"{mantissa.replace('-', MINUS)} \u00d7 10{_superscript(power)}",
        latex=rf"${mantissa} \times 10^{{{power}}}$",
        typst=f"${mantissa} times 10^({power})$",
    )


SUPERSCRIPTS = str.maketrans(
    "0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def _superscript(power: int) -> str:
    """Return ``power`` in Unicode superscripts ("\u207b\u00b2" for -2)."""
    return ("\u207b" if power < 0 else "") + str(abs(power)).translate(SUPERSCRIPTS)


def _share(value: float) -> str:
    return f"{100 * value:.1f} %"


def _without_savings(sizes: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sizes.items() if k != "n_savings"}


def _robustness(results: Mapping[str, Any]) -> str:
    row = results["convergence"][0]
    return (
        f"Refining the savings grid from {row['n_savings']} to {row['reference']} points moves "
        f"V by at most "
        f"{scientific(row['value_max']).text} and consumption by "
        f"{scientific(row['consumption_mean']).text} on average."
    )
