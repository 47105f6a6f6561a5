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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FLOAT_FORMAT = "{:.3f}"
INT_FORMAT = "{:d}"
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
"""A formatted number: optional minus, digits, optional decimals (no grouping, no exponent)."""
MINUS = "\u2212"
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
    "\u2013": "--",
    "\u2014": "---",
    "\u00d7": r"\ensuremath{\times}",
    MINUS: r"\ensuremath{-}",
    "\u2026": r"\ldots{}",
    **{
        letter: rf"\ensuremath{{\{name}}}"
        for letter, name in zip(
            "αβγδεζηθκλμνξπρστφχψω",
            (
                *("alpha", "beta", "gamma", "delta", "varepsilon", "zeta", "eta", "theta"),
                *("kappa", "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "chi"),
                *("psi", "omega"),
            ),
            strict=True,
        )
    },
}
_TYPST_SPECIAL = frozenset("\\#$*_@<>[]`~/=-+")
"""Characters with a meaning in Typst markup; a backslash makes each print as itself."""


@dataclass(frozen=True)
class Symbol:
    """A cell (or caption) in each format's markup: Unicode ``text``, ``latex``, ``typst``."""

    text: str
    latex: str
    typst: str

    def __str__(self) -> str:
        """Return the plain text."""
        return self.text


Cell = str | Symbol


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


def format_cells(*, table: pd.DataFrame, formats: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Return ``table``'s cells as text or ``Symbol`` with fixed number formats ("" if missing)."""
    formats = dict(formats or {})
    unknown = sorted(set(formats) - set(table.columns))
    if unknown:
        msg = f"formats names columns {unknown} that the table lacks: {list(table.columns)}."
        raise KeyError(msg)
    out = {}
    for column in table.columns:
        formatter = _formatter(table[column], fmt=formats.get(column))
        out[column] = [_format_cell(v, formatter) for v in table[column]]
    return pd.DataFrame(out, columns=table.columns, index=table.index, dtype=object)


def format_rows(
    *, table: pd.DataFrame, label_column: str, formats: Mapping[str, str], default: str
) -> pd.DataFrame:
    """Return ``table`` with each row's numbers formatted by the format of its label.

    For tables whose rows are statistics: ``formats`` maps a row's ``label_column`` value to
    its format ("{:.1f}"); other rows take ``default``. Non-numbers stay as they are.
    """
    out = table.copy().astype(object)
    for index, row in table.iterrows():
        fmt = formats.get(str(row[label_column]), default)
        for column in table.columns:
            value = row[column]
            numeric = isinstance(value, int | float | np.number) and not isinstance(value, bool)
            if column != label_column and numeric:
                text = "" if _is_missing(value) else _signed_zero_dropped(fmt.format(value))
                out.at[index, column] = text
    return out


def numeric_columns(cells: pd.DataFrame) -> list[bool]:
    """Return, per column, whether every non-empty formatted cell is a number (and one is)."""
    flags = []
    for column in cells.columns:
        values = [c for c in cells[column] if not (isinstance(c, str) and c == "")]
        flags.append(bool(values) and all(isinstance(c, str) and NUMBER.match(c) for c in values))
    return flags


def number_shape(values: Sequence[Cell]) -> tuple[bool, int, int]:
    """Return whether any number is negative, the most integer digits and the most decimals."""
    numbers = [str(v) for v in values if NUMBER.match(str(v))]
    negative = any(n.startswith("-") for n in numbers)
    integers = max((len(n.lstrip("-").split(".")[0]) for n in numbers), default=1)
    decimals = max((len(n.split(".")[1]) if "." in n else 0 for n in numbers), default=0)
    return negative, integers, decimals


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


def render(cell: Cell, *, fmt: str) -> str:
    """Return ``cell`` in format ``fmt`` ("latex", "typst", "markdown"): escaped or its markup."""
    if isinstance(cell, Symbol):
        return {"latex": cell.latex, "typst": cell.typst, "markdown": markdown_escape(cell.text)}[
            fmt
        ]
    escape = {"latex": latex_escape, "typst": typst_escape, "markdown": markdown_escape}[fmt]
    return escape(str(cell))


def concatenated(*parts: str | Symbol) -> Symbol:
    """Return ``parts`` one after another as a cell: plain text escaped, symbols as marked up."""
    cells = [part if isinstance(part, Symbol) else None for part in parts]
    return Symbol(
        text="".join(str(part) for part in parts),
        latex="".join(c.latex if c else latex_escape(p) for c, p in zip(cells, parts, strict=True)),
        typst="".join(c.typst if c else typst_escape(p) for c, p in zip(cells, parts, strict=True)),
    )


def latex_escape(text: str) -> str:
    """Return ``text`` with LaTeX's special characters escaped."""
    return "".join(_LATEX_SPECIAL.get(char, char) for char in str(text))


def typst_escape(text: str) -> str:
    """Return ``text`` as Typst markup that prints it as given (specials backslash-escaped)."""
    text = " ".join(str(text).splitlines())
    escaped = "".join("\\" + c if c in _TYPST_SPECIAL else c for c in text)
    return re.sub(r"^(\d+)\.", r"\1\\.", escaped)  # "1. x" would start a numbered list


def markdown_escape(text: str) -> str:
    """Return ``text`` safe inside a Markdown table cell."""
    return " ".join(str(text).splitlines()).replace("|", r"\|")


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


def _format_cell(value: Any, formatter: Callable[[Any], str]) -> Cell:
    if _is_missing(value):
        return ""
    if isinstance(value, Symbol):
        return value
    if isinstance(value, str):
        return value
    return _signed_zero_dropped(formatter(value))


def _signed_zero_dropped(text: str) -> str:
    """Return "0.000" for "-0.000": a number that rounds to zero has no sign."""
    if NUMBER.match(text) and text.startswith("-") and float(text) == 0.0:
        return text[1:]
    return text


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float | np.floating) and np.isnan(value))
