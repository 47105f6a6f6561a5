"""The cells of a table: each column formatted once, numbers told from text, text escaped.

A cell is a number formatted with its column's one format (so that decimals align), plain text
(escaped for each format) or a ``Symbol``, which carries its own markup for each format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

FLOAT_FORMAT = "{:.3f}"
INT_FORMAT = "{:d}"
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
"""A formatted number: optional minus, digits, optional decimals (no grouping, no exponent)."""


MINUS = "\u2212"

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
