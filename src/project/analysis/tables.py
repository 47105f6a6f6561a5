"""Tables of the paper: summary statistics, retirement ages and the parameters, by variant.

``summary_statistics``, ``retirement_age_table`` and ``parameter_table`` return DataFrames
whose column names are the printed headers and whose cells use the paper's notation
(``project.analysis.notation``); ``write_summary_tables`` and ``write_parameter_table`` write
them with ``write_table`` (``project.analysis.table_output``) as LaTeX, Typst and Markdown.
Statistics are of the living (``living_rows``), weighted by the calibrated subject weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.notation import (
    PARAMETERS,
    parameter_label,
    type_name,
    variant_name,
)
from project.analysis.panel_statistics import (
    income_of,
    retirements,
    weighted_mean,
    weighted_median,
    with_weights,
)
from project.analysis.profiles import check_panel
from project.analysis.table_output import (
    Cell,
    format_cells,
    format_rows,
    latex_escape,
    to_latex,
    to_markdown,
    to_typst,
    write_table,
    write_table_files,
)
from project.style import method_name

__all__ = [
    "format_cells",
    "latex_escape",
    "parameter_table",
    "retirement_age_table",
    "summary_statistics",
    "to_latex",
    "to_markdown",
    "to_typst",
    "write_parameter_table",
    "write_summary_tables",
    "write_table",
]

STATISTIC = "Statistic"
MEAN_WEALTH = "Mean wealth"
WEALTH_TO_INCOME = "Wealth-to-income ratio"
HOUSEHOLDS = "Households simulated"
CONSUMPTION_CHANGE = "Consumption change at retirement"
SHARE_YEARS_RETIRED = "Share of years retired"
SHARE_WHO_RETIRE = "Share who retire"
MEAN_RETIREMENT_AGE = "Mean retirement age"
SUMMARY_FORMATS = {
    MEAN_RETIREMENT_AGE: "{:.1f}",
    WEALTH_TO_INCOME: "{:.2f}",
    HOUSEHOLDS: "{:.0f}",
}
"""Formats of the summary statistics' rows; the others print "{:.3f}"."""
SUMMARY_DEFAULT_FORMAT = "{:.3f}"


def probe_age(specifications: Mapping[str, Mapping[str, Any]] | None) -> float | None:
    """Return the last age before mandatory retirement, when every variant states the same one."""
    ages = {
        spec.get("params", {}).get("mandatory_retirement_age")
        for spec in (specifications or {}).values()
    }
    if len(ages) != 1 or None in ages:
        return None
    return float(ages.pop()) - 1


def wealth_at_age_row(age: float) -> str:
    """Return the summary statistics' row label of mean wealth at ``age``."""
    return f"Mean wealth at age {age:.0f}"


def printed_statistic(statistic: str, value: float) -> str:
    """Return a summary statistic as its table prints it."""
    return SUMMARY_FORMATS.get(statistic, SUMMARY_DEFAULT_FORMAT).format(value)


SUMMARY_CAPTION = (
    "Simulated outcomes by variant: statistics of the living, weighted by the calibrated "
    "subject weights; wealth and consumption in model units. Retirement age: age in the first "
    "retired year, among households that retire. Consumption change at retirement: mean log "
    "change from the last working to the first retired year."
)
INCOME_NOTE = (
    " Wealth-to-income ratio: mean wealth over mean income (labour income while working, the "
    "pension in retirement)."
)
NO_INCOME_NOTE = " The wealth-to-income ratio is left out: the panels do not identify income."
RETIREMENT_CAPTION = (
    "Retirement by preference type and variant: share of households that retire while alive "
    "(weighted by the calibrated subject weights) and their mean age in the first retired year."
)
SURVIVAL = "survival_probabilities"
SUMMARISED_SIZES = frozenset(
    {"start_age", "n_periods", "n_wealth", "n_consumption", "n_savings", "n_income"}
    | {"taste_shocks", "survival"}
)
"""Sizes shown in the ages, grid, taste-shock and survival rows of the parameter table."""
PARAMETER_CAPTION = (
    "Model parameters, grid sizes and solution method by variant. Parameters marked estimated "
    "are the status quo's MSM estimates (the table of estimated preferences), the same in every "
    "variant; the others are calibrated."
)
ALL_TYPES = "All"
RETIREMENT_AGE = "Retirement age"


def summary_statistics(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame] | None = None,
    specifications: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Return one row per statistic, one column per variant (its printed name), as floats.

    Rows: mean and median wealth, mean wealth in the last year before mandatory retirement
    (only when ``specifications``, the variants' ``model.json`` contents, give every variant
    the same retirement age), mean consumption, the wealth-to-income ratio (only when
    ``specifications`` or a ``labor_income`` column give every variant's income), the share
    of years retired, the share who retire, the mean retirement age, the mean log change of
    consumption at retirement and the households simulated (a count, not weighted).
    ``weights`` (per variant: ``subject_id``, ``weight``) weight subjects; a variant without
    weights counts every subject alike.
    """
    columns: dict[str, dict[str, float]] = {}
    probe = probe_age(specifications)
    for variant, panel in panels.items():
        check_panel(panel)
        frame = with_weights(panel=panel, weights=(weights or {}).get(variant))
        subjects = retirements(frame)
        retired = subjects.loc[subjects["retires"]]
        income = income_of(frame, specification=(specifications or {}).get(variant))
        w = frame["weight"].to_numpy()
        stats = {
            MEAN_WEALTH: weighted_mean(frame["wealth"], w),
            "Median wealth": weighted_median(frame["wealth"], w),
            **(
                {}
                if probe is None
                else {wealth_at_age_row(probe): _mean_wealth_at(frame, age=probe)}
            ),
            "Mean consumption": weighted_mean(frame["consumption"], w),
            WEALTH_TO_INCOME: (
                np.nan
                if income is None
                else weighted_mean(frame["wealth"], w) / weighted_mean(income, w)
            ),
            SHARE_YEARS_RETIRED: weighted_mean(frame["retired"], w),
            SHARE_WHO_RETIRE: weighted_mean(subjects["retires"].astype(float), subjects["weight"]),
            MEAN_RETIREMENT_AGE: weighted_mean(retired["retirement_age"], retired["weight"]),
            CONSUMPTION_CHANGE: _mean_change(retired),
            HOUSEHOLDS: float(panel["subject_id"].nunique()) if "subject_id" in panel else np.nan,
        }
        name = _unique_name(variant, columns)
        columns[name] = stats
    table = pd.DataFrame(columns)
    if table.empty:
        return pd.DataFrame(columns=[STATISTIC])
    if table.loc[WEALTH_TO_INCOME].isna().all():
        table = table.drop(index=WEALTH_TO_INCOME)
    return table.rename_axis(STATISTIC).reset_index()


def _mean_wealth_at(frame: pd.DataFrame, *, age: float) -> float:
    rows = frame["age"] == age
    return weighted_mean(frame.loc[rows, "wealth"], frame.loc[rows, "weight"])


def retirement_age_table(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """Return the share who retire and their mean retirement age by variant and type.

    One row per variant and preference type (the panel's ``pref_type``, in category order)
    and a row "All" per variant; retirement age is the age of a household's first retired
    year (retired or retiring, while alive). Shares and means use the subject weights.
    """
    rows = []
    for variant, panel in panels.items():
        check_panel(panel)
        subjects = retirements(with_weights(panel=panel, weights=(weights or {}).get(variant)))
        groups: list[tuple[str, pd.DataFrame]] = []
        if "pref_type" in subjects.columns:
            groups += [
                (type_name(label), subjects.loc[subjects["pref_type"] == label])
                for label in _type_order(panel["pref_type"])
            ]
        groups.append((ALL_TYPES, subjects))
        for label, group in groups:
            retired = group.loc[group["retires"]]
            rows.append(
                {
                    "Variant": variant_name(variant),
                    "Type": label,
                    "Share who retire": weighted_mean(
                        group["retires"].astype(float), group["weight"]
                    ),
                    RETIREMENT_AGE: weighted_mean(retired["retirement_age"], retired["weight"]),
                }
            )
    return pd.DataFrame(rows, columns=["Variant", "Type", "Share who retire", RETIREMENT_AGE])


def write_summary_tables(
    *,
    panels: Mapping[str, pd.DataFrame],
    paths: Mapping[str, Mapping[str, Path]],
    weights: Mapping[str, pd.DataFrame] | None = None,
    specifications: Mapping[str, Mapping[str, Any]] | None = None,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the summary statistics and the retirement-age table; return the files written.

    ``paths`` maps "summary_statistics" and "retirement_age" to their files by suffix ("tex",
    "typ", "md"); labels are ``tab:<key>``.
    """
    summary = summary_statistics(panels=panels, weights=weights, specifications=specifications)
    has_income = WEALTH_TO_INCOME in set(summary[STATISTIC])
    written = write_table_files(
        table=format_rows(
            table=summary,
            label_column=STATISTIC,
            formats=SUMMARY_FORMATS,
            default=SUMMARY_DEFAULT_FORMAT,
        ),
        paths=paths["summary_statistics"],
        caption=SUMMARY_CAPTION + (INCOME_NOTE if has_income else NO_INCOME_NOTE),
        label="tab:summary_statistics",
        font_size="footnotesize",
        provenance=provenance,
    )
    written += write_table_files(
        table=retirement_age_table(panels=panels, weights=weights),
        paths=paths["retirement_age"],
        caption=RETIREMENT_CAPTION,
        label="tab:retirement_age",
        formats={"Share who retire": "{:.3f}", RETIREMENT_AGE: "{:.1f}"},
        group_column="Variant",
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
    """Return one row per parameter (description and symbol), one column per variant.

    ``specifications`` maps a variant to its ``model.json`` content ("params", "sizes"). Ages
    and grids are summarised in a few rows, survival probabilities by their source and ages;
    a missing entry prints empty. ``methods`` (variant to a solution's ``method``) adds a last
    row "Solution method" ("DC-EGM", "grid search").
    """
    variants = list(specifications)
    unknown = sorted(set(methods or {}) - set(variants))
    if unknown:
        msg = f"methods names variants {unknown} without a specification: {variants}."
        raise KeyError(msg)
    grid_search = [  # without the method, a variant without a savings grid searches a grid
        methods[v] == "grid"
        if methods and v in methods
        else "n_savings" not in specifications[v].get("sizes", {})
        for v in variants
    ]
    rows = _parameter_rows([specifications[v] for v in variants], grid_search=grid_search)
    if methods is not None:
        rows.append(
            ("Solution method", [method_name(methods[v]) if v in methods else "" for v in variants])
        )
    names = [variant_name(v) for v in variants]
    return pd.DataFrame([[label, *values] for label, values in rows], columns=["Parameter", *names])


def _parameter_rows(
    specifications: list[Mapping[str, Any]], *, grid_search: list[bool]
) -> list[tuple[Cell, list[str]]]:
    """Return (label, value per specification) rows; rows empty for every variant are left out.

    The consumption grid is shown only where a variant is solved by grid search (``grid_search``):
    EGM and DC-EGM compute consumption from the savings grid instead.
    """
    params = [spec.get("params", {}) for spec in specifications]
    sizes = [spec.get("sizes", {}) for spec in specifications]
    rows: list[tuple[Cell, list[str]]] = []

    def add(label: Cell, values: list[str]) -> None:
        if any(values):
            rows.append((label, values))

    add("Ages", [_ages(s) for s in sizes])
    names = {name for p in params for name in p}
    shown = [n for n in PARAMETERS if n in names and n != SURVIVAL] + sorted(
        names - set(PARAMETERS)
    )
    estimated = {name for spec in specifications for name in spec.get("estimated", ())}
    for name in shown:
        add(
            parameter_label(name, estimated=name in estimated),
            [_param_value(name, p, s) for p, s in zip(params, sizes, strict=True)],
        )
    add(parameter_label(SURVIVAL), [_survival(p, s) for p, s in zip(params, sizes, strict=True)])
    add("Wealth grid points", [_format_value(s.get("n_wealth")) for s in sizes])
    add(
        "Consumption grid points",
        [
            _format_value(s.get("n_consumption")) if searched else ""
            for s, searched in zip(sizes, grid_search, strict=True)
        ],
    )
    for name, label in (("n_savings", "Savings grid points"), ("n_income", "Income nodes")):
        add(label, [_format_value(s.get(name)) for s in sizes])
    for name in sorted({n for s in sizes for n in s} - SUMMARISED_SIZES):
        add(parameter_label(name), [_format_value(s.get(name)) for s in sizes])
    return rows


def _ages(sizes: Mapping[str, Any]) -> str:
    if not {"start_age", "n_periods"} <= set(sizes):
        return ""
    first = int(sizes["start_age"])
    return f"{first}\u2013{first + int(sizes['n_periods']) - 1}"


def _param_value(name: str, params: Mapping[str, Any], sizes: Mapping[str, Any]) -> str:
    if name == "taste_shock_scale" and sizes.get("taste_shocks") is False:
        return "none"
    return _format_value(params.get(name))


def _survival(params: Mapping[str, Any], sizes: Mapping[str, Any]) -> str:
    """Return the survival probabilities' source (the ages are the model's), never the array."""
    form = sizes.get("survival")
    probabilities = params.get(SURVIVAL)
    if probabilities is None:
        return {False: "none", "gompertz": "Gompertz hazard"}.get(form, "")
    if form == "life_table":
        return "SSA life table"
    values = list(np.ravel(probabilities))
    return f"{values[0]:.3f} \u2026 {values[-1]:.3f}"


def _format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(_format_value(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def _mean_change(retired: pd.DataFrame) -> float:
    known = retired.loc[retired["consumption_change"].notna()]
    return weighted_mean(known["consumption_change"], known["weight"])


def _type_order(pref_type: pd.Series) -> list[Any]:
    if isinstance(pref_type.dtype, pd.CategoricalDtype):
        present = set(pref_type.dropna().unique())
        return [c for c in pref_type.cat.categories if c in present]
    return sorted(pref_type.dropna().unique().tolist())


def _unique_name(variant: str, taken: Mapping[str, Any]) -> str:
    name = variant_name(variant)
    if name in taken:
        msg = f"Two variants print as {name!r}; rename one of them ({variant!r})."
        raise ValueError(msg)
    return name
