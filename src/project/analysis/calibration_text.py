"""The paper's sentence on the calibration targets, read from a calibration's targets table.

The table (``targets_before_after.csv`` of ``project.calibration``) names each target
``<statistic>_<first age>_<last age>`` (``wealth_50_54``), says whether it was held out and gives
its tolerance and relative miss after weighting; the sentence lists the targets by statistic and
age group, so it describes whichever targets file the build used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from project.analysis.notation import joined, percent

STATISTICS = {
    "wealth": "total wealth",
    "consumption": "total consumption",
    "working": "working years",
    "retirees": "retiree years",
    "claims": "claims",
    "work_loving": "work-loving years",
}
"""How a target's statistic (its name's prefix) reads in the text."""
NAME = re.compile(r"^(?P<statistic>.+)_(?P<first>\d+)_(?P<last>\d+)$")


def calibration_targets_sentence(table: pd.DataFrame, *, whose: str = "The weights") -> str:
    """Return which targets the weights fit and which they hold out, and how well both fare."""
    fitted = table.loc[~table["held_out"].astype(bool)]
    held = table.loc[table["held_out"].astype(bool)]
    sentence = (
        f"{whose} fit {len(fitted)} targets within {_tolerances(fitted)} "
        f"(largest miss {percent(fitted['relative_miss_after'].abs().max(), decimals=2)}): "
        f"{_listed(fitted['target'])}."
    )
    if len(held):
        met = int(held["within_tolerance_after"].astype(bool).sum())
        sentence += (
            f" Held out as checks, {_listed(held['target'])}: {met} of {len(held)} lie within "
            f"{_tolerances(held)} after weighting"
        )
        if "within_tolerance_before" in held:  # what the weighting itself achieved
            before = int(held["within_tolerance_before"].astype(bool).sum())
            sentence += f", {before} before"
        missed = held.loc[~held["within_tolerance_after"].astype(bool)]
        misses = [
            f"{_described(row.target)}: {_miss(row.relative_miss_after)} its target after "
            "weighting"
            + (
                f", {_miss(row.relative_miss_before)} before"
                if hasattr(row, "relative_miss_before")
                else ""
            )
            for row in missed.itertuples()
        ]
        sentence += f" ({'; '.join(misses)})." if misses else "."
    return sentence


def _miss(relative: float) -> str:
    """Return a relative miss as "5.2 % above" or "0.4 % below"."""
    return f"{percent(abs(relative))} {'above' if relative > 0 else 'below'}"


def _tolerances(rows: pd.DataFrame) -> str:
    low, high = float(rows["tolerance"].min()), float(rows["tolerance"].max())
    if low == high:
        return percent(low, decimals=0)
    return f"{percent(low, decimals=0)} to {percent(high, decimals=0)}"


def _parts(name: str) -> tuple[str, str | None]:
    """Return a target's statistic as the text reads it and its age group (None: no ages)."""
    match = NAME.match(name)
    if match is None:
        return name.replace("_", " "), None
    statistic = STATISTICS.get(match["statistic"], match["statistic"].replace("_", " "))
    return statistic, f"{match['first']}\u2013{match['last']}"


def _described(name: str) -> str:
    statistic, ages = _parts(name)
    return statistic if ages is None else f"{statistic} at {ages}"


def _listed(names: Sequence[str]) -> str:
    """Return "total wealth at 50-54 and 55-59; working years at 50-54" (en dashes)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        statistic, ages = _parts(name)
        groups.setdefault(statistic, []).extend([] if ages is None else [ages])
    return "; ".join(
        f"{statistic} at {joined(ages)}" if ages else statistic
        for statistic, ages in groups.items()
    )
