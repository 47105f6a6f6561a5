# ruff: noqa: RUF001 (the Greek letters of the table)
"""The welfare table: the consumption equivalent, its standard errors, the values and C's check.

Every cell is a number as ``welfare.json`` prints it (``numbers``, the strings the paper's
sentences cite), so the table and the text cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.notation import percent
from project.analysis.table_output import write_table_files
from project.estimation.inference import CONFIDENCE

INTERVAL = f"{percent(CONFIDENCE, decimals=0)} interval"
COLUMNS = ("Measure", "Value", "Standard error", INTERVAL)
ROWS = (
    ("Consumption equivalent λ", "lambda", "lambda_se", "lambda_ci"),
    ("λ, cost of working held fixed", "lambda", "lambda_se_fixed_cost", "lambda_ci_fixed_cost"),
    ("Expected lifetime utility at entry, status quo (V0)", "base_value", None, None),
    ("Expected lifetime utility at entry, benefit cut (V1)", "counterfactual_value", None, None),
    ("Difference V1 − V0", "value_difference", None, None),
    ("Expected discounted utility of consumption C, solution", "consumption_utility", None, None),
    ("C, Monte Carlo", "consumption_utility_mc", "consumption_utility_mc_se", None),
)
"""Each row's label and the keys of ``numbers`` of its value, standard error and interval."""
CAPTION = (
    "The benefit cut's consumption equivalent λ: the proportional change in a household's "
    "consumption under the status quo, in every period and state with its behaviour held fixed, "
    "that makes its expected lifetime utility at entry, averaged over the status quo's simulated "
    "households, equal to that under the cut (V1). Its delta-method standard error and "
    f"{INTERVAL} carry the sampling uncertainty of the estimated preferences, with the cost of "
    "working calibrated again at each value of them; the second row holds it fixed. C is the "
    "consumption part of V0, from the solution and as the mean of the simulated households' "
    "realised discounted utility of consumption with its Monte Carlo standard error."
)
"""Plain text: each format's writer escapes it (λ becomes math in LaTeX; κ would not)."""


def welfare_table(welfare: Mapping[str, Any]) -> pd.DataFrame:
    """Return the table's rows: λ with both standard errors, V0, V1, their gap, C and its check.

    A row whose value ``numbers`` lacks is left out, and so is the fixed-cost row without its
    standard error (an estimate at a bound); another missing standard error prints empty.
    """
    printed = welfare["numbers"]
    rows = []
    for label, value, error, interval in ROWS:
        if value not in printed or (error == "lambda_se_fixed_cost" and error not in printed):
            continue
        households = f" ({printed.get('n_households')} simulated households)"
        rows.append(
            {
                "Measure": label + (households if value == "consumption_utility_mc" else ""),
                "Value": printed[value],
                "Standard error": printed.get(error or "", ""),
                INTERVAL: printed.get(interval or "", ""),
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMNS))


def write_welfare_table(*, welfare_path: Path, paths: Mapping[str, Path]) -> list[Path]:
    """Write the welfare table of ``welfare.json`` to ``paths`` ("tex", "typ", "md")."""
    welfare = json.loads(Path(welfare_path).read_text())
    return write_table_files(
        table=welfare_table(welfare),
        paths=paths,
        caption=CAPTION,
        label="tab:welfare",
        provenance=welfare.get("provenance"),
    )
