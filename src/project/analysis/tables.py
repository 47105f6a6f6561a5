"""Tables of the paper: summary statistics by variant and age bracket, and the parameters.

``summary_statistics`` and ``parameter_table`` return DataFrames whose column names are the
printed headers; ``write_table`` writes one as a LaTeX float (booktabs) and as a Markdown table.
Numbers are formatted with fixed formats, so equal inputs give byte-identical files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.profiles import (
    age_bracket_label,
    age_bracket_start,
    check_panel,
    is_retired,
)
from project.analysis.style import method_name
from project.calibration.panel import living_rows
from project.calibration.weighting import attach_weights

BRACKET_WIDTH = 5
MAX_LISTED = 4
"""Array params longer than this are shown as their first and last entry and their length."""
FLOAT_FORMAT = "{:.3f}"
INT_FORMAT = "{:d}"
SUMMARY_COLUMNS = (
    "Variant",
    "Ages",
    "Mean wealth",
    "Mean consumption",
    "Share retired",
    "N",
)
"""Columns of ``summary_statistics``; N counts the living's subject-years in the bracket."""

PARAMETER_DESCRIPTIONS: dict[str, str] = {
    "beta": "discount factor",
    "crra": "risk aversion",
    "r": "interest rate",
    "wage": "wage level",
    "pension": "pension per period",
    "disutility_of_work": "disutility of work",
    "mandatory_retirement_age": "retirement age",
    "income_rho": "income persistence",
    "income_sigma": "income shock s.d.",
    "n_wealth": "wealth points",
    "n_consumption": "consumption points",
    "n_income": "income nodes",
    "n_periods": "periods",
    "start_age": "first age",
    "n_savings": "savings points",
    "taste_shocks": "EV1 taste shocks",
    "taste_shock_scale": "taste-shock scale",
    "survival_probabilities": "one-year survival",
    "survival": "mortality",
    "method": "solution method",
}
"""Descriptions of the life-cycle model's parameters and grid sizes (others get none)."""

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def summary_statistics(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame] | None = None,
    bracket_width: int = BRACKET_WIDTH,
) -> pd.DataFrame:
    """Return mean wealth, mean consumption, share retired and N by variant and age bracket.

    Statistics of the living. ``weights`` (per variant: ``subject_id``, ``weight``, the
    calibrated weights) make the means population means; a variant without weights counts every
    subject alike. Brackets are ``bracket_width`` years from multiples of it ("50-54", "55-59",
    ...); variants keep the order of ``panels``, brackets are ascending.
    """
    rows = []
    for variant, panel in panels.items():
        check_panel(panel)
        alive = living_rows(panel=panel)
        subject_weights = (weights or {}).get(variant)
        weight = (
            np.ones(len(alive))
            if subject_weights is None
            else attach_weights(panel=alive[["subject_id"]], weights=subject_weights)[
                "weight"
            ].to_numpy(dtype=float)
        )
        frame = pd.DataFrame(
            {
                "start": age_bracket_start(alive["age"], width=bracket_width),
                "weight": weight,
                "wealth": alive["wealth"].astype(float).to_numpy() * weight,
                "consumption": alive["consumption"].astype(float).to_numpy() * weight,
                "retired": is_retired(alive).to_numpy() * weight,
            }
        )
        grouped = frame.groupby("start", sort=True).agg(
            weight=("weight", "sum"),
            wealth=("wealth", "sum"),
            consumption=("consumption", "sum"),
            retired=("retired", "sum"),
            n=("weight", "size"),
        )
        rows.extend(
            (
                variant,
                age_bracket_label(int(start), width=bracket_width),
                float(row.wealth / row.weight),
                float(row.consumption / row.weight),
                float(row.retired / row.weight),
                int(row.n),
            )
            for start, row in grouped.iterrows()
        )
    table = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    return table.astype({"N": np.int64})


def parameter_table(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    methods: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Return one row per parameter (then grid size), one column per variant, as text.

    ``specifications`` maps a variant to its ``bld/<variant>/model.json`` content (its "params"
    and, if present, "sizes"). Lists print as "(0.05, 0.25)"; a missing entry prints empty.
    ``methods`` maps variants to the method that solved them (a solution's ``method``, e.g.
    "dcegm"): given, a last row "method" prints it ("DC-EGM").
    """
    variants = list(specifications)
    unknown = sorted(set(methods or {}) - set(variants))
    if unknown:
        msg = f"methods names variants {unknown} without a specification: {variants}."
        raise KeyError(msg)
    params = _union(specifications, key="params")
    sizes = _union(specifications, key="sizes")
    rows = [
        [
            name,
            PARAMETER_DESCRIPTIONS.get(name, ""),
            *(_format_value(specifications[v].get(key, {}).get(name)) for v in variants),
        ]
        for key, names in (("params", params), ("sizes", sizes))
        for name in names
    ]
    if methods is not None:
        shown = [method_name(methods[v]) if v in methods else "" for v in variants]
        rows.append(["method", PARAMETER_DESCRIPTIONS["method"], *shown])
    return pd.DataFrame(rows, columns=["Parameter", "Description", *variants])


def write_table(
    *,
    table: pd.DataFrame,
    latex_path: Path,
    markdown_path: Path,
    caption: str,
    label: str,
    formats: Mapping[str, str] | None = None,
    group_column: str | None = None,
    font_size: str | None = "small",
) -> list[Path]:
    """Write ``table`` as a LaTeX table float and as Markdown; return both paths.

    ``formats`` maps columns to format strings (default: floats "{:.3f}", ints "{:d}", others
    as text). ``caption`` is plain text (escaped for LaTeX). LaTeX only: ``group_column``
    prints a repeated value once and separates its groups by a rule; ``font_size`` is a LaTeX
    size command without backslash ("small", "footnotesize"; None: the document's size).
    """
    cells = format_cells(table=table, formats=formats)
    numeric = [pd.api.types.is_numeric_dtype(table[c]) for c in table.columns]
    latex_path, markdown_path = Path(latex_path), Path(markdown_path)
    for path in (latex_path, markdown_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    latex_path.write_text(
        to_latex(
            cells=cells,
            numeric=numeric,
            caption=caption,
            label=label,
            group_column=group_column,
            font_size=font_size,
        )
    )
    markdown_path.write_text(to_markdown(cells=cells, numeric=numeric, caption=caption))
    return [latex_path, markdown_path]


def format_cells(*, table: pd.DataFrame, formats: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Return ``table`` as strings with fixed formats; missing values become empty strings."""
    formats = dict(formats or {})
    unknown = sorted(set(formats) - set(table.columns))
    if unknown:
        msg = f"formats names columns {unknown} that the table lacks: {list(table.columns)}."
        raise KeyError(msg)
    out = {}
    for column in table.columns:
        formatter = _formatter(table[column], fmt=formats.get(column))
        out[column] = [("" if _is_missing(v) else formatter(v)) for v in table[column]]
    return pd.DataFrame(out, columns=table.columns, index=table.index, dtype=object)


def to_latex(
    *,
    cells: pd.DataFrame,
    numeric: list[bool],
    caption: str,
    label: str,
    group_column: str | None = None,
    font_size: str | None = "small",
) -> str:
    """Return a booktabs ``table`` float of the formatted ``cells`` (escaped for LaTeX)."""
    spec = "".join("r" if is_numeric else "l" for is_numeric in numeric)
    header = " & ".join(latex_escape(str(c)) for c in cells.columns) + r" \\"
    lines = [
        r"\begin{table}[htbp]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\label{{{label}}}",
        *([rf"\{font_size}"] if font_size else []),
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        header,
        r"\midrule",
    ]
    previous = None
    for _, row in cells.iterrows():
        values = [latex_escape(v) for v in row]
        if group_column is not None:
            position = list(cells.columns).index(group_column)
            current = row[group_column]
            if previous is not None and current != previous:
                lines.append(r"\midrule")
            if current == previous:
                values[position] = ""
            previous = current
        lines.append(" & ".join(values) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_markdown(*, cells: pd.DataFrame, numeric: list[bool], caption: str | None = None) -> str:
    """Return a GitHub-flavoured Markdown table of the formatted ``cells``."""
    header = [_markdown_escape(str(c)) for c in cells.columns]
    rule = ["---:" if is_numeric else "---" for is_numeric in numeric]
    lines = [f"**{caption}**", ""] if caption else []
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| " + " | ".join(rule) + " |")
    lines.extend(
        "| " + " | ".join(_markdown_escape(v) for v in row) + " |"
        for row in cells.itertuples(index=False)
    )
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    """Return ``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(char, char) for char in str(text))


def _markdown_escape(text: str) -> str:
    return str(text).replace("|", r"\|")


def _formatter(column: pd.Series, *, fmt: str | None) -> Callable[[Any], str]:
    if fmt is not None:
        return fmt.format
    if pd.api.types.is_bool_dtype(column):
        return str
    if pd.api.types.is_integer_dtype(column):
        return lambda v: INT_FORMAT.format(int(v))
    if pd.api.types.is_float_dtype(column):
        return lambda v: FLOAT_FORMAT.format(float(v))
    return str


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def _format_sequence(values: list | tuple) -> str:
    """Return "(a, b)", or "first ... last (n values)" for a long array (e.g. survival by age)."""
    if len(values) > MAX_LISTED:
        first, last = _format_value(values[0]), _format_value(values[-1])
        return f"{first} ... {last} ({len(values)} values)"
    return "(" + ", ".join(_format_value(v) for v in values) + ")"


def _format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return _format_sequence(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def _union(specifications: Mapping[str, Mapping[str, Any]], *, key: str) -> list[str]:
    """Return the names under ``key`` of all specifications: known ones first, then sorted."""
    names = {name for spec in specifications.values() for name in spec.get(key, {})}
    known = [n for n in PARAMETER_DESCRIPTIONS if n in names]
    return known + sorted(names - set(known))
