"""Measure the accuracy of the solution method on the pipeline's model (DC-EGM, baseline).

Three checks, each against an oracle rather than against itself, each stated on the model it
was measured on, with its mean and its maximum (and where the maximum is):

1. Euler-equation errors of the baseline solution (``project.analysis.euler``) at the states of
   the first ``N_HOUSEHOLDS`` simulated households (living rows with a successor period, both
   regimes, each at its chosen option): log10 |c_implied / c - 1|, leaving out the borrowing
   limit and, reported apart, the states within one savings-grid step of a switch of next
   period's claim decision.
2. Convergence in the savings grid: the baseline solved again on ``factors`` times the savings
   points; the consumption rule (absolute, in units of permanent income) and V (relative) of
   the coarser solutions against the finest, at the same simulated states
   (``compare_at_states``).
3. The IJRS oracle: DC-EGM against the closed form of *another* model, the IJRS (2017)
   retirement model (``ijrs_oracle_check``), on the baseline's number of savings points: a check
   of the method, not of the pipeline's model.

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

from project.analysis.accuracy import compare_at_states, ijrs_oracle_check, panel_states
from project.analysis.euler import euler_errors, euler_summary
from project.analysis.notation import log10, percent, scientific, significant
from project.analysis.table_cells import concatenated
from project.analysis.table_output import write_table_files
from project.dispatch import solve
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.pipeline import build_variant_model, load_variant_solution, variant_precision
from project.regimes.solution import RegimeSolution

logger = logging.getLogger("project.analysis")

N_HOUSEHOLDS = 2_000
"""Households of the simulated panel whose states the Euler errors and the grid gaps use."""
COLUMNS = ["Check", "Measure", "Value", "Detail"]
EULER = "Euler equation (baseline)"
GRID = "Savings grid (baseline)"
ORACLE = "IJRS model (not the baseline)"
CAPTION = (
    "Accuracy of the solution method, measured by the build. The Euler-equation errors "
    "(log10 of |c_implied / c - 1|) and the savings-grid gaps are measured on the baseline "
    "model, at the states of simulated households (wealth: cash on hand over permanent "
    "income, over the pension after the claim); the IJRS rows measure DC-EGM against the "
    "exact solution of another model, the IJRS retirement model, not the baseline's."
)


def validation_results(
    *,
    specification: Mapping[str, Any],
    solution: RegimeSolution,
    panel: pd.DataFrame,
    factors: Sequence[int] = (2, 4),
    n_households: int = N_HOUSEHOLDS,
) -> dict[str, Any]:
    """Run the three checks on the variant's loaded ``solution`` and simulated ``panel``.

    Call inside ``variant_precision(specification)``. The savings grid is refined by each of
    ``factors`` (the last is the reference). Returns ``{"sample", "euler", "convergence",
    "oracle", "seconds"}``.
    """
    sizes, params = dict(specification["sizes"]), dict(specification["params"])
    n_savings = int(sizes["n_savings"])
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    states = panel_states(panel, n_households=n_households)
    errors = euler_errors(solution=solution, states=states)
    savings = np.asarray(solution.solutions["working"].savings, dtype=np.float64)
    euler = euler_summary(errors) | {"first_step": float(savings[1] - savings[0])}
    beyond = errors.loc[errors["wealth"] - errors["consumption"] >= savings[1]]
    euler["beyond_first_step"] = euler_summary(beyond)
    seconds["euler"] = time.perf_counter() - start
    start = time.perf_counter()
    finer = {}
    for factor in factors:
        model = build_variant_model(
            model=specification["model"], sizes=sizes | {"n_savings": factor * n_savings}
        )
        finer[factor] = solve(model=model, params=params, log_level="warning")
    reference = finer[factors[-1]]
    convergence = [
        {"n_savings": n_savings * f, "reference": n_savings * factors[-1]}
        | compare_at_states(one=s, reference=reference, states=states)
        for f, s in [(1, solution), *[(f, finer[f]) for f in factors[:-1]]]
    ]
    seconds["convergence"] = time.perf_counter() - start
    start = time.perf_counter()
    oracle = ijrs_oracle_check(n_savings=n_savings) | {"n_savings": n_savings}
    seconds["oracle"] = time.perf_counter() - start
    for check, spent in seconds.items():
        logger.info("Validation: %s took %.1f s.", check, spent)
    sample = {
        "n_households": int(states["subject_id"].nunique()),
        "n_simulated": int(panel["subject_id"].nunique()),
        "n_states": len(states),
    }
    return {
        "sample": sample,
        "euler": euler,
        "convergence": convergence,
        "oracle": oracle,
        "seconds": seconds,
    }


def validation_table(results: Mapping[str, Any]) -> pd.DataFrame:
    """Return the validation table (columns Check, Measure, Value, Detail) of ``results``."""
    rows = _euler_rows(results)
    for row in results["convergence"]:
        rows += _grid_rows(row)
    oracle = results["oracle"]
    rows += [
        (
            ORACLE,
            "Max. relative error of V",
            scientific(oracle["value_error"]),
            f"DC-EGM on {oracle['n_savings']} points against the closed form; 5 periods, "
            "wealth 1-400",
        ),
        (
            ORACLE,
            "Max. abs. error of consumption",
            scientific(oracle["consumption_error"]),
            f"away from retirement-date switches ({percent(oracle['share_near_switch'])} of "
            "points left out)",
        ),
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def _euler_rows(results: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Return the table's rows of the Euler errors (baseline)."""
    euler, near, sample = results["euler"], results["euler"]["near_switch"], results["sample"]
    rows = [
        (
            EULER,
            "Mean log10 relative error",
            log10(euler["mean_log10"]),
            f"{euler['n_points']:,} states of {sample['n_households']:,} simulated households, "
            f"both regimes; {euler['n_constrained']:,} at the borrowing limit left out",
        ),
        (EULER, "95th percentile", log10(euler["p95_log10"]), "same states"),
        (EULER, "Max. log10 relative error", log10(euler["max_log10"]), where(euler["max_at"])),
    ]
    if near["n_points"]:
        rows.append(
            (
                EULER,
                "Max. next to a claim switch",
                log10(near["max_log10"]),
                f"{near['n_points']:,} states within a savings-grid step of next period's "
                f"switch; mean {log10(near['mean_log10'])}",
            )
        )
    return rows


def _grid_rows(row: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Return the table's rows of one savings grid against the reference (baseline)."""
    versus = f"{row['n_savings']} vs {row['reference']} points"
    return [
        (
            GRID,
            "Mean abs. gap in consumption",
            scientific(row["consumption_mean"]),
            concatenated(
                f"{versus}; max. ",
                scientific(row["consumption_max"]),
                f" ({where(row['consumption_max_at'])})",
            ),
        ),
        (
            GRID,
            "Mean relative gap in V",
            scientific(row["value_mean"]),
            concatenated(
                f"{versus}; max. ",
                scientific(row["value_max"]),
                f" ({where(row['value_max_at'])})",
            ),
        ),
        (
            GRID,
            "Workers' states with another option",
            f"{row['option_differs']:,}",
            f"of {row['n_working']:,}; {versus}",
        ),
    ]


def validation_numbers(results: Mapping[str, Any]) -> dict[str, str]:
    """Return every number the paper prints, as printed (true minus signs)."""
    euler, near = results["euler"], results["euler"]["near_switch"]
    beyond = euler["beyond_first_step"]
    numbers = {
        "euler_households": f"{results['sample']['n_households']:,}",
        "euler_simulated_households": f"{results['sample']['n_simulated']:,}",
        "euler_points": f"{euler['n_points']:,}",
        "euler_constrained": f"{euler['n_constrained']:,}",
        "euler_near_switch": f"{euler['n_near_switch']:,}",
        "euler_mean_log10": log10(euler["mean_log10"]),
        "euler_p95_log10": log10(euler["p95_log10"]),
        "euler_max_log10": log10(euler["max_log10"]),
        **{f"euler_max_{k}": v for k, v in _where_numbers(euler["max_at"]).items()},
        "euler_max_savings": significant(euler["max_at"]["savings"]),
        "euler_first_step": significant(euler["first_step"]),
    }
    if beyond["n_points"]:
        numbers["euler_beyond_first_step_max_log10"] = log10(beyond["max_log10"])
        where_max = _where_numbers(beyond["max_at"])
        numbers |= {f"euler_beyond_first_step_max_{k}": v for k, v in where_max.items()}
    if near["n_points"]:
        numbers["euler_near_switch_mean_log10"] = log10(near["mean_log10"])
        numbers["euler_near_switch_max_log10"] = log10(near["max_log10"])
    for row in results["convergence"]:
        key = f"convergence_{row['n_savings']}"
        for measure in ("consumption", "value"):
            numbers[f"{key}_{measure}_mean"] = scientific(row[f"{measure}_mean"]).text
            numbers[f"{key}_{measure}_max"] = scientific(row[f"{measure}_max"]).text
            where_max = _where_numbers(row[f"{measure}_max_at"])
            numbers |= {f"{key}_{measure}_max_{k}": v for k, v in where_max.items()}
        numbers[f"{key}_option_differs"] = f"{row['option_differs']:,}"
        numbers[f"{key}_working_states"] = f"{row['n_working']:,}"
    numbers["convergence_reference"] = str(results["convergence"][0]["reference"])
    oracle = results["oracle"]
    numbers |= {
        "oracle_n_savings": str(oracle["n_savings"]),
        "oracle_value_error": scientific(oracle["value_error"]).text,
        "oracle_consumption_error": scientific(oracle["consumption_error"]).text,
        "oracle_consumption_error_mean": scientific(oracle["consumption_error_mean"]).text,
        "oracle_share_near_switch": percent(oracle["share_near_switch"]),
    }
    return numbers


def validation_sentence(results: Mapping[str, Any]) -> str:
    """Return the paper's paragraph on the measured accuracy, each measure on its model."""
    n, near = validation_numbers(results), results["euler"]["near_switch"]
    text = (
        f"On the baseline model, at the {n['euler_points']} states (both regimes) of "
        f"{n['euler_households']} of the {n['euler_simulated_households']} simulated households, "
        f"away from the borrowing limit ({n['euler_constrained']} states left out) and from "
        f"switches of next period's claim decision, the Euler-equation errors average "
        f"{n['euler_mean_log10']} in log10 (95th percentile {n['euler_p95_log10']}) and reach "
        f"{n['euler_max_log10']} at most ({_at(n, 'euler_max')}, savings "
        f"{n['euler_max_savings']})"
    )
    beyond = n.get("euler_beyond_first_step_max_log10")
    if beyond is not None and beyond != n["euler_max_log10"]:  # the largest in the first step
        text += (
            f"; where savings exceed the savings grid's first step ({n['euler_first_step']}), "
            f"the maximum is {n['euler_beyond_first_step_max_log10']} "
            f"({_at(n, 'euler_beyond_first_step_max')})"
        )
    text += ". "
    if near["n_points"]:
        text += (
            f"At the {n['euler_near_switch']} states within one savings-grid step of a switch "
            f"of next period's claim decision they average {n['euler_near_switch_mean_log10']} "
            f"and reach {n['euler_near_switch_max_log10']}. "
        )
    first = results["convergence"][0]
    key = f"convergence_{first['n_savings']}"
    return text + (
        f"Refining the baseline's savings grid from {first['n_savings']} to "
        f"{first['reference']} points moves its consumption rule by {n[key + '_consumption_mean']}"
        f" on average and {n[key + '_consumption_max']} at most (in units of permanent income; "
        f"{_at(n, key + '_consumption_max')}), and V by {n[key + '_value_mean']} on average "
        f"and {n[key + '_value_max']} at most (relative; {_at(n, key + '_value_max')}); the "
        f"optimal claim option differs at {n[key + '_option_differs']} of "
        f"{n[key + '_working_states']} workers' states. "
        f"As a check of the method on another model with a known solution, DC-EGM on "
        f"{n['oracle_n_savings']} points misses the exact value function of the IJRS retirement "
        f"model by at most {n['oracle_value_error']} (relative) and its consumption by at most "
        f"{n['oracle_consumption_error']} away from switches of the retirement date."
    )


def _at(numbers: Mapping[str, str], key: str) -> str:
    """Return "age 28, working, normalised cash on hand 0.00915" from ``key``'s numbers."""
    return (
        f"age {numbers[key + '_age']}, {numbers[key + '_regime']}, normalised cash on hand "
        f"{numbers[key + '_wealth']}"
    )


def write_validation(
    *,
    specification: Mapping[str, Any],
    solution_directory: Path,
    bundle_directory: Path,
    factors: Sequence[int],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Validate the variant's solution; write the JSON result and the table; return the result.

    ``bundle_directory`` holds the variant's simulated panel; ``factors`` the savings grid's
    refinements of the convergence check (the last is the reference). ``paths``: "result"
    (JSON: numbers, sentence, robustness, values, table, provenance) and the table's "tex",
    "typ", "md".
    """
    panel = load_table(Path(bundle_directory))
    with variant_precision(specification):
        solution = load_variant_solution(
            specification=dict(specification), directory=Path(solution_directory)
        )
        results = validation_results(
            specification=specification, solution=solution, panel=panel, factors=factors
        )
    table = validation_table(results)
    write_table_files(
        table=table,
        paths={k: v for k, v in paths.items() if k != "result"},
        caption=CAPTION,
        label="tab:validation",
        provenance=provenance,
    )
    content = {
        "numbers": validation_numbers(results),
        "sentence": validation_sentence(results),
        "robustness": robustness_sentence(results),
        "values": {k: v for k, v in results.items() if k != "seconds"},
        "table": [{k: str(v) for k, v in row.items()} for row in table.to_dict("records")],
        "provenance": dict(provenance or {}),
    }
    text = json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(paths["result"]), text.encode())
    return content


def robustness_sentence(results: Mapping[str, Any]) -> str:
    """Return the savings grid's sentence of the robustness paragraph (baseline model)."""
    row = results["convergence"][0]
    return (
        f"Refining the baseline's savings grid from {row['n_savings']} to {row['reference']} "
        f"points moves its V by at most {scientific(row['value_max']).text} (relative) and its "
        f"consumption rule by {scientific(row['consumption_mean']).text} on average (at most "
        f"{scientific(row['consumption_max']).text}, in units of permanent income)."
    )


def where(at: Mapping[str, Any]) -> str:
    """Return where a maximum is: "age 28, working, wealth 0.00915" (normalised)."""
    parts = _where_numbers(at)
    return f"age {parts['age']}, {parts['regime']}, wealth {parts['wealth']}"


def _where_numbers(at: Mapping[str, Any]) -> dict[str, str]:
    """Return the age, regime (a worker's option where known) and wealth, as printed."""
    regime = "working, claiming" if at.get("option") == "claim" else str(at["regime"])
    return {
        "age": f"{float(at['age']):.0f}",
        "regime": regime,
        "wealth": significant(float(at["wealth"])),
    }
