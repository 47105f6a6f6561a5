"""The welfare table: the consumption equivalent overall and by type, and its Monte Carlo check.

Every cell is a number as ``welfare.json`` prints it (``numbers``, the strings the paper's
sentences cite) or as ``welfare_text.monte_carlo_numbers`` prints it, so the table and the text
cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.notation import percent, type_name
from project.analysis.table_output import write_table_files
from project.analysis.welfare_text import monte_carlo_numbers
from project.estimation.inference import CONFIDENCE

COLUMNS = (
    "Measure",
    "Households",
    "Value",
    "Standard error",
    f"{percent(CONFIDENCE, decimals=0)} interval",
)
LAMBDA = "Consumption equivalent λ"
CHECK = "Expected discounted utility of consumption"
CAPTION = (
    "The pension cut's consumption equivalent λ (the proportional change in a baseline "
    "household's consumption in every period and state that makes its expected lifetime utility "
    "equal to that under the cut), overall and by preference type, with its delta-method "
    f"standard error over the estimated preferences and the {percent(CONFIDENCE, decimals=0)} "
    "interval; and the check of the "
    "baseline's expected discounted utility of consumption behind λ: from the solution, and as "
    "the mean over the simulated households with its Monte Carlo standard error. Households are "
    "the baseline's simulated ones, weighted by their calibrated weights."
)
"""Plain text: each format's writer escapes it (λ becomes math in LaTeX)."""


def welfare_table(welfare: Mapping[str, Any]) -> pd.DataFrame:
    """Return the table's rows: λ overall and by type, then the Monte Carlo check (if any)."""
    printed = welfare["numbers"]
    groups = {"": "All"} | {f"_{t}": type_name(t) for t in welfare["lambda_by_type"]}
    rows = [
        {
            "Measure": LAMBDA,
            "Households": households,
            "Value": printed[f"lambda{suffix}"],
            "Standard error": printed.get(f"lambda{suffix}_se", ""),
            COLUMNS[-1]: printed.get(f"lambda{suffix}_ci", ""),
        }
        for suffix, households in groups.items()
    ]
    check = monte_carlo_numbers(welfare)
    if check:
        blank = {"Standard error": "", COLUMNS[-1]: ""}
        rows += [
            {"Measure": f"{CHECK}, solution", "Households": "All", "Value": check["exact"]} | blank,
            {
                "Measure": f"{CHECK}, Monte Carlo",
                "Households": f"All ({check['n_households']} simulated)",
                "Value": check["simulated"],
            }
            | blank
            | {"Standard error": check["simulated_se"]},
        ]
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
