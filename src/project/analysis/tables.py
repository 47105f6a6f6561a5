"""Tables of the paper: summary statistics, claiming ages and the parameters, by variant.

``summary_statistics``, ``claiming_table`` and ``parameter_table`` return DataFrames whose
column names are the printed headers and whose cells use the paper's notation
(``project.analysis.notation``); ``write_summary_tables`` and ``write_parameter_table`` write
them with ``write_table_files`` (``project.analysis.table_output``) as LaTeX, Typst and
Markdown. Statistics are of the living, every simulated household counting once; wealth and
consumption are levels in units of permanent income at 25 (``panel_statistics``), which the
variants share.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.notation import (
    PARAMETERS,
    number,
    parameter_label,
    printed_decimals,
    variant_name,
)
from project.analysis.panel_statistics import (
    at_ages,
    claims,
    living_levels,
    share_claiming_at,
    weighted_median,
)
from project.analysis.table_cells import Cell, format_rows
from project.analysis.table_output import write_table_files
from project.models import buffer_stock, lifecycle_normalised
from project.style import method_name

STATISTIC = "Statistic"
PROBE_AGE = lifecycle_normalised.EARLIEST_CLAIM - 1
"""The last age before anyone may claim: the age at which the summary compares wealth."""
RATIO_AGES = (45.0, 60.0)
MEAN_WEALTH_AT_PROBE = f"Mean wealth at {PROBE_AGE}"
MEDIAN_RATIO = "Median wealth-to-income ratio at {age:.0f}"
MEAN_CONSUMPTION = "Mean consumption, ages 25\u201399"
SHARE_AT_EARLIEST = f"Share of workers claiming at {lifecycle_normalised.EARLIEST_CLAIM}"
MEAN_CLAIM_AGE = "Mean claiming age"
SHARE_YEARS_RETIRED = "Share of years retired"
CONSUMPTION_CHANGE = "Consumption change at retirement"
HOUSEHOLDS = "Households simulated"
SUMMARY_FORMATS = {MEAN_CLAIM_AGE: "{:.2f}", HOUSEHOLDS: "{:.0f}"}
"""Formats of the summary statistics' rows; the others print "{:.3f}"."""
SUMMARY_DEFAULT_FORMAT = "{:.3f}"
SUMMARY_CAPTION = (
    "Simulated outcomes by variant, of the living. Wealth (cash on hand) and consumption are "
    "in units of permanent income at age 25, which the variants share (the same simulated "
    "shocks); the wealth-to-income ratio is the assets kept at the end of the year over "
    "permanent income (over the pension after the claim), the statistic the estimation "
    "matches. Claiming age: the age of the first pension (decided in the last working year, "
    f"the year before). {SHARE_AT_EARLIEST}: of the workers alive at "
    f"{lifecycle_normalised.EARLIEST_CLAIM - lifecycle_normalised.CLAIM_LAG}, those who decide "
    f"to claim at {lifecycle_normalised.EARLIEST_CLAIM}. Consumption change at retirement: "
    "mean log change from the last working year to the first retired year."
)
CLAIM_BINS = tuple(
    (age, age)
    for age in range(
        lifecycle_normalised.EARLIEST_CLAIM, max(lifecycle_normalised.CLAIMING_FACTORS) + 1
    )
)
"""The claiming ages of the claiming table, one column each (62 to 70)."""
CLAIMING_CAPTION = (
    "Claiming ages by variant: the share of all claims made at each age (of the households "
    "that claim while alive) and the mean claiming age."
)
PARAMETER_CAPTION = (
    "Model parameters by variant and their sources. Relative risk aversion and the discount "
    "factor are estimated by MSM on the SCF (the table of estimates), and the cost of working "
    "is calibrated jointly with them, once, under the status quo; every variant keeps these "
    "values. Age profiles are by period (ages 25\u201399); after 64 income stops growing and "
    "keeps the age-64 shock dispersion."
)


def printed_statistic(statistic: str, value: float) -> str:
    """Return a summary statistic as its table prints it."""
    return SUMMARY_FORMATS.get(statistic, SUMMARY_DEFAULT_FORMAT).format(value)


def summary_statistics(*, panels: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Return one row per statistic, one column per variant (its printed name), as floats."""
    columns: dict[str, dict[str, float]] = {}
    for variant, panel in panels.items():
        frame = living_levels(panel)
        subjects = claims(frame)
        claimed = subjects.loc[subjects["claimed"]]
        change = claimed["consumption_change"].dropna()
        stats = {
            MEAN_WEALTH_AT_PROBE: float(at_ages(frame, "wealth", ages=[PROBE_AGE]).mean()),
            **{
                MEDIAN_RATIO.format(age=age): _median(at_ages(frame, "assets_ratio", ages=[age]))
                for age in RATIO_AGES
                if "assets_ratio" in frame
            },
            MEAN_CONSUMPTION: float(frame["consumption"].mean()),
            SHARE_AT_EARLIEST: share_claiming_at(
                frame, age=float(lifecycle_normalised.EARLIEST_CLAIM)
            ),
            MEAN_CLAIM_AGE: float(claimed["claim_age"].mean()),
            SHARE_YEARS_RETIRED: float(frame["retired"].mean()),
            CONSUMPTION_CHANGE: float(change.mean()) if len(change) else float("nan"),
            HOUSEHOLDS: float(frame["subject_id"].nunique()),
        }
        name = variant_name(variant)
        if name in columns:
            msg = f"Two variants print as {name!r}; rename one of them ({variant!r})."
            raise ValueError(msg)
        columns[name] = stats
    table = pd.DataFrame(columns)
    return table.rename_axis(STATISTIC).reset_index()


def claiming_table(*, panels: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Return, per variant, the share of claims in each age bin and the mean claiming age."""
    rows = []
    for variant, panel in panels.items():
        claimed = claims(living_levels(panel))
        ages = claimed["claim_age"].dropna().to_numpy()
        row: dict[str, Any] = {"Variant": variant_name(variant)}
        for low, high in CLAIM_BINS:
            share = float(((ages >= low) & (ages <= high)).mean()) if ages.size else np.nan
            row[_bin_label(low, high)] = share
        row[MEAN_CLAIM_AGE] = float(ages.mean()) if ages.size else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _bin_label(low: int, high: int) -> str:
    return f"{low}" if low == high else f"{low}\u2013{high}"


def _median(values: pd.Series) -> float:
    return weighted_median(values.to_numpy(dtype=float), np.ones(len(values)))


def write_summary_tables(
    *,
    panels: Mapping[str, pd.DataFrame],
    paths: Mapping[str, Mapping[str, Path]],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the summary statistics and the claiming ages; return the files written.

    ``paths`` maps "summary_statistics" and "claiming_ages" to their files by suffix ("tex",
    "typ", "md"); labels are ``tab:<key>``.
    """
    written = write_table_files(
        table=format_rows(
            table=summary_statistics(panels=panels),
            label_column=STATISTIC,
            formats=SUMMARY_FORMATS,
            default=SUMMARY_DEFAULT_FORMAT,
        ),
        paths=paths["summary_statistics"],
        caption=SUMMARY_CAPTION,
        label="tab:summary_statistics",
        font_size="footnotesize",
        provenance=provenance,
    )
    bins = {_bin_label(lo, hi): "{:.3f}" for lo, hi in CLAIM_BINS}
    written += write_table_files(
        table=claiming_table(panels=panels),
        paths=paths["claiming_ages"],
        caption=CLAIMING_CAPTION,
        label="tab:claiming_ages",
        formats=bins | {MEAN_CLAIM_AGE: "{:.2f}"},
        provenance=provenance,
    )
    return written


def write_parameter_table(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    paths: Mapping[str, Path],
    methods: Mapping[str, str] | None = None,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``parameter_table`` to ``paths`` ("tex", "typ", "md"; label ``tab:parameters``)."""
    return write_table_files(
        table=parameter_table(specifications=specifications, methods=methods),
        paths=paths,
        caption=PARAMETER_CAPTION,
        label="tab:parameters",
        font_size="footnotesize",
        provenance=provenance,
    )


def parameter_table(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    methods: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Return one row per parameter: its label, its value in each variant and its source.

    ``specifications`` maps a variant to its ``model.json`` content ("params", "sizes",
    "estimated", "calibrated"). Age profiles print as their range; the source of an estimated
    or jointly calibrated param says so, that of another param is the model's ``SOURCES``.
    ``methods`` (variant to a solution's ``method``) adds a row "Solution method".
    """
    variants = list(specifications)
    specs = [specifications[v] for v in variants]
    params = [spec.get("params", {}) for spec in specs]
    estimated = {n for spec in specs for n in spec.get("estimated", ())}
    calibrated = {n for spec in specs for n in spec.get("calibrated", ())}
    rows: list[list[Cell]] = [["Ages", *[_ages(spec) for spec in specs], ""]]
    names = {name for p in params for name in p}
    for name in [n for n in PARAMETERS if n in names]:
        marked = name in estimated or name in calibrated
        values = [
            _param_value(name, p, decimals=printed_decimals(name) if marked else None)
            for p in params
        ]
        rows.append([parameter_label(name), *values, _source(name, estimated, calibrated)])
    sizes = [spec.get("sizes", {}) for spec in specs]
    rows.append(["Savings grid points", *[str(s.get("n_savings", "")) for s in sizes], ""])
    if methods is not None:
        rows.append(["Solution method", *[method_name(methods.get(v, "")) for v in variants], ""])
    header = ["Parameter", *[variant_name(v) for v in variants], "Source"]
    return pd.DataFrame(rows, columns=header)


def _ages(specification: Mapping[str, Any]) -> str:
    if specification.get("model") != "lifecycle_normalised":
        return ""
    return f"{lifecycle_normalised.FIRST_AGE}\u2013{lifecycle_normalised.LAST_AGE}"


def _source(name: str, estimated: set[str], calibrated: set[str]) -> str:
    if name in estimated:
        return "Estimated (MSM on SCF wealth-to-income by age)"
    if name in calibrated:
        fact = lifecycle_normalised.CLAIMING_FACT
        return (
            f"Calibrated jointly: {fact['share']:.0%} claim at {fact['age']} "
            "(Munnell and Chen 2015)"
        ).replace("%", " %")
    return lifecycle_normalised.SOURCES.get(name, "")


def _param_value(name: str, params: Mapping[str, Any], *, decimals: int | None) -> str:
    """Return a scalar (with ``decimals``, else as it is), an age profile as its range."""
    value = params.get(name)
    if value is None:
        return ""
    if name in PROFILE_TEXTS:
        return PROFILE_TEXTS[name]
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return f"{float(array):g}" if decimals is None else number(float(array), decimals=decimals)
    if array.min() == array.max():
        return f"{array.min():g} at every age"
    return f"{array.min():.3f} \u2026 {array.max():.3f} by age"


_FACTORS = lifecycle_normalised.CLAIMING_FACTORS
PROFILE_TEXTS = {
    "survival_probabilities": "by age",
    "claiming_factor": (
        f"{_FACTORS[min(_FACTORS)]:g} at {min(_FACTORS)} \u2026 "
        f"{_FACTORS[max(_FACTORS)]:g} at {max(_FACTORS)}"
    ),
    "permanent_nodes": f"{buffer_stock.N_NODES} equiprobable nodes by age",
    "transitory_nodes": f"{buffer_stock.N_NODES} equiprobable nodes by age",
}
"""How the parameter table prints the params that are tables, not values."""
