# ruff: noqa: RUF002 (the paper's Greek letters)
r"""Write a table as a LaTeX float, a Typst figure and a Markdown table, byte-deterministically.

A table is a DataFrame whose column names are the printed headers. Its cells are numbers
(formatted with one fixed format per column, so that decimals align), plain text (escaped for
each format) or ``Symbol`` values, which carry their own markup for each format (e.g. the
parameter "Relative risk aversion γ": ``$\gamma$`` in LaTeX, ``$gamma$`` in Typst). After
formatting, a column whose every non-empty cell is a number is numeric: LaTeX aligns it on the
decimal point with a siunitx ``S`` column, Typst right-aligns it with the decimals padded by
figure spaces and prints negatives with a true minus sign, Markdown right-aligns it.

``provenance`` (a flat ``{str: str}`` mapping) is recorded as a comment: ``%`` in LaTeX, ``//``
in Typst, ``<!-- -->`` in Markdown, as sorted JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.table_cells import (
    MINUS,
    Cell,
    Symbol,
    format_cells,
    number_shape,
    numeric_columns,
    render,
)

FIGURE_SPACE = "\u2007"
"""As wide as a digit (with tabular figures): pads the missing decimals of a Typst number."""
PUNCTUATION_SPACE = "\u2008"
"""As wide as the decimal point: stands for it in a Typst number without decimals."""
LINE_CHARS = 69
"""Characters of a line of the LaTeX text width at ``\\normalsize`` (10pt article: 345pt)."""
SIZE_FACTORS = {"normalsize": 1.0, "small": 1.11, "footnotesize": 1.25, "scriptsize": 1.43}
COLUMN_SEP_CHARS = 3
"""Characters a LaTeX column separation (2 tabcolsep) takes, in the width estimate."""
TYPST_RULES = {"top": "0.08em", "mid": "0.05em", "bottom": "0.08em"}
"""Strokes of Typst's booktabs-like rules."""


def write_table(
    *,
    table: pd.DataFrame,
    latex_path: Path,
    markdown_path: Path,
    caption: str | Symbol,
    label: str,
    typst_path: Path | None = None,
    formats: Mapping[str, str] | None = None,
    group_column: str | None = None,
    font_size: str | None = "small",
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``table`` as LaTeX, Markdown and (given ``typst_path``) Typst; return the paths.

    ``formats`` maps columns to format strings (default: floats "{:.3f}", ints "{:d}", others
    as text). ``caption`` is plain text (escaped) or a ``Symbol``. ``label`` ("tab:x") labels
    the LaTeX float and the Typst figure. ``group_column`` prints a repeated value once and
    separates its groups by a rule. ``font_size`` is a LaTeX size command without backslash
    (None: the document's size). ``provenance`` is recorded as a comment in every file.
    """
    cells = format_cells(table=table, formats=formats)
    texts = {
        Path(latex_path): to_latex(
            cells=cells,
            caption=caption,
            label=label,
            group_column=group_column,
            font_size=font_size,
            provenance=provenance,
        ),
        Path(markdown_path): to_markdown(cells=cells, caption=caption, provenance=provenance),
    }
    if typst_path is not None:
        texts[Path(typst_path)] = to_typst(
            cells=cells,
            caption=caption,
            label=label,
            group_column=group_column,
            provenance=provenance,
        )
    for path, text in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(texts)


def write_table_files(
    *, table: pd.DataFrame, paths: Mapping[str, Path], **options: Any
) -> list[Path]:
    """Write ``table`` to ``paths`` keyed by suffix ("tex", "md", "typ"); return the paths.

    ``options`` are ``write_table``'s other keyword arguments (caption, label, ...).
    """
    missing = sorted({"tex", "md"} - set(paths))
    if missing or not set(paths) <= {"tex", "md", "typ"}:
        msg = f"paths must map 'tex', 'md' and optionally 'typ' to files; got {sorted(paths)}."
        raise KeyError(msg)
    return write_table(
        table=table,
        latex_path=paths["tex"],
        markdown_path=paths["md"],
        typst_path=paths.get("typ"),
        **options,
    )


def to_latex(
    *,
    cells: pd.DataFrame,
    caption: str | Symbol,
    label: str,
    group_column: str | None = None,
    font_size: str | None = "small",
    provenance: Mapping[str, str] | None = None,
) -> str:
    """Return a booktabs ``table`` float with siunitx ``S`` columns for the numeric columns."""
    numeric = numeric_columns(cells)
    spec = " ".join(
        _siunitx_spec(cells[c]) if is_numeric else "l"
        for c, is_numeric in zip(cells.columns, numeric, strict=True)
    )
    header = [
        "{" + render(c, fmt="latex") + "}" if is_numeric else render(c, fmt="latex")
        for c, is_numeric in zip(cells.columns, numeric, strict=True)
    ]
    resize = _too_wide(cells, font_size=font_size, numeric=numeric)
    lines = [
        *_comment(provenance, prefix="% "),
        r"\begin{table}[htbp]",
        r"\centering",
        rf"\caption{{{render(caption, fmt='latex')}}}",
        rf"\label{{{label}}}",
        *([rf"\{font_size}"] if font_size else []),
        *([r"\resizebox{\textwidth}{!}{%"] if resize else []),
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]
    for row, new_group in _rows(cells, group_column=group_column):
        if new_group:
            lines.append(r"\midrule")
        lines.append(" & ".join(render(v, fmt="latex") for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", *(["}"] if resize else []), r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_typst(
    *,
    cells: pd.DataFrame,
    caption: str | Symbol,
    label: str,
    group_column: str | None = None,
    provenance: Mapping[str, str] | None = None,
) -> str:
    """Return a Typst ``#figure(table(...), kind: table) <label>`` of the formatted ``cells``."""
    numeric = numeric_columns(cells)
    padders = [
        _typst_padder(cells[c]) if is_numeric else None
        for c, is_numeric in zip(cells.columns, numeric, strict=True)
    ]
    align = ", ".join("right" if is_numeric else "left" for is_numeric in numeric)
    header = ", ".join(f"[{render(c, fmt='typst')}]" for c in cells.columns)
    lines = [
        *_comment(provenance, prefix="// "),
        "#figure(",
        "  {",
        '    set text(number-width: "tabular")',
        "    table(",
        f"      columns: {len(cells.columns)},",
        f"      align: ({align},),",
        f"      table.hline(stroke: {TYPST_RULES['top']}),",
        f"      table.header({header}),",
        f"      table.hline(stroke: {TYPST_RULES['mid']}),",
    ]
    for row, new_group in _rows(cells, group_column=group_column):
        if new_group:
            lines.append(f"      table.hline(stroke: {TYPST_RULES['mid']}),")
        shown = [
            padder(v) if padder is not None and v != "" else render(v, fmt="typst")
            for v, padder in zip(row, padders, strict=True)
        ]
        lines.append("      " + ", ".join(f"[{v}]" for v in shown) + ",")
    lines += [
        f"      table.hline(stroke: {TYPST_RULES['bottom']}),",
        "    )",
        "  },",
        f"  caption: [{render(caption, fmt='typst')}],",
        "  kind: table,",
        f") <{label}>",
    ]
    return "\n".join(lines) + "\n"


def to_markdown(
    *,
    cells: pd.DataFrame,
    caption: str | Symbol | None = None,
    provenance: Mapping[str, str] | None = None,
) -> str:
    """Return a GitHub-flavoured Markdown table of the formatted ``cells``."""
    numeric = numeric_columns(cells)
    rule = ["---:" if is_numeric else "---" for is_numeric in numeric]
    lines = [f"<!-- {line} -->" for line in _comment(provenance, prefix="")]
    lines += [f"**{render(caption, fmt='markdown')}**", ""] if caption else []
    lines.append("| " + " | ".join(render(c, fmt="markdown") for c in cells.columns) + " |")
    lines.append("| " + " | ".join(rule) + " |")
    lines.extend(
        "| " + " | ".join(render(v, fmt="markdown") for v in row) + " |"
        for row in cells.itertuples(index=False)
    )
    return "\n".join(lines) + "\n"


def _rows(cells: pd.DataFrame, *, group_column: str | None) -> list[tuple[list[Cell], bool]]:
    """Return each row (group value blanked when repeated) and whether a new group starts."""
    position = None if group_column is None else list(cells.columns).index(group_column)
    rows, previous = [], None
    for index, row in enumerate(cells.itertuples(index=False)):
        values = list(row)
        new_group = False
        if position is not None:
            current = values[position]
            new_group = index > 0 and current != previous
            if index > 0 and current == previous:
                values[position] = ""
            previous = current
        rows.append((values, new_group))
    return rows


def _siunitx_spec(column: pd.Series) -> str:
    negative, integers, decimals = number_shape(list(column))
    sign = "-" if negative else ""
    return f"S[table-format={sign}{integers}.{decimals}]"


def _typst_padder(column: pd.Series) -> Callable[[str], str]:
    """Return a function printing a number with true minus and padding to the most decimals."""
    _, _, decimals = number_shape(list(column))

    def pad(number: str) -> str:
        own = len(number.split(".")[1]) if "." in number else 0
        point = PUNCTUATION_SPACE if decimals and "." not in number else ""
        return number.replace("-", MINUS) + point + FIGURE_SPACE * (decimals - own)

    return pad


def _too_wide(cells: pd.DataFrame, *, font_size: str | None, numeric: Sequence[bool]) -> bool:
    """Return whether the table likely overflows the LaTeX text width (by a character count).

    A numeric column is as wide as its ``S`` column's ``table-format`` reserves for every cell
    (the sign, the most integer digits, the point and the most decimals), or its header.
    """
    widths = []
    for column, is_numeric in zip(cells.columns, numeric, strict=True):
        if is_numeric:
            negative, integers, decimals = number_shape(list(cells[column]))
            cell = int(negative) + integers + (1 + decimals if decimals else 0)
        else:
            cell = max((_printed_length(v) for v in cells[column]), default=0)
        widths.append(max(_printed_length(column), cell) + COLUMN_SEP_CHARS)
    return sum(widths) > LINE_CHARS * SIZE_FACTORS.get(font_size or "normalsize", 1.0)


def _printed_length(cell: object) -> int:
    """Return the characters ``cell`` prints (a symbol's subscript marks print nothing)."""
    if isinstance(cell, Symbol):
        return len(cell.text.replace("_", ""))
    return len(str(cell))


def _comment(provenance: Mapping[str, str] | None, *, prefix: str) -> list[str]:
    if not provenance:
        return []
    text = json.dumps({str(k): str(v) for k, v in provenance.items()}, sort_keys=True)
    return [prefix + "provenance: " + text.replace("--", "-\\u002d")]
