"""The one figure style of the project, its printed names, and byte-deterministic output.

Figures are built on ``matplotlib.figure.Figure`` directly (no pyplot, no global backend): each
plotting function creates its figure inside ``styled()`` and writes it with ``save_figure``, which
drops every timestamp and version string from the PNG and PDF metadata (and records the product's
provenance when given), so rendering the same data twice gives the same bytes.

Everything a reader sees is in words, in the paper's notation: ``variant_label``, ``type_label``,
``state_label`` and ``method_name`` turn code names ("low_pension", "leisure_loving", "node_2",
"dcegm") into "Low pension", "Leisure-loving", "median income", "DC-EGM". This module imports
matplotlib, the standard library and ``project.provenance`` only, so the analysis and the
calibration (its loss figure) both use it from below.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from project.provenance import figure_metadata

DPI = 200
"""Resolution of PNG output (dots per inch); PDF output is vector."""

PANEL_WIDTH = 2.5
PANEL_HEIGHT = 2.1
"""Size of one panel in inches; a figure is ``ncols * PANEL_WIDTH`` by ``nrows * PANEL_HEIGHT``.

Two panels side by side fill the text width of an 11pt article (5 in) at the fonts' own size.
"""

COLORS = ("#1b6ca8", "#d1495b", "#2e8b57", "#edae49", "#6a4c93", "#555555")
"""Line colours, in order: Tol/Okabe-like, distinguishable in print and for colour-blind readers."""

LINESTYLES = ("-", "--", ":", "-.")

REFERENCE_COLOR = "#999999"
"""Colour of reference lines (bounds, 45-degree lines) that must not compete with the data."""

FORMATS = ("png", "pdf")
"""The formats ``save_figure`` writes; ``paths`` passed to it map each to a file."""

RC_PARAMS: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8.0,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8.0,
    "legend.fontsize": 7.5,
    "legend.frameon": False,
    "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0,
    "figure.titlesize": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.5,
    "lines.linewidth": 1.4,
    "axes.prop_cycle": mpl.cycler(color=list(COLORS)),
    "pdf.fonttype": 42,
    "svg.hashsalt": "project",
    "path.simplify": False,
}

PNG_METADATA: dict[str, str | None] = {"Software": None}
PDF_METADATA: dict[str, str | None] = {"Creator": None, "Producer": None, "CreationDate": None}

AGE_LABEL = "Age"
CLAIM_AGE_LABEL = "Claiming age (age at the first pension)"
WEALTH_LABEL = "Wealth"
CONSUMPTION_LABEL = "Consumption"
VALUE_LABEL = "V"
SHARE_RETIRED_LABEL = "Share retired"
SHARE_RETIRING_LABEL = "Share retiring"
SHARE_CLAIMING_LABEL = "Share claiming the pension"
SHARE_OF_LIVING_LABEL = "Share of the living"
LEVEL_UNIT_LABEL = "Multiple of permanent\nincome at 25"
"""The unit of levels (wealth or consumption times ``income_unit``), comparable across
households and variants."""
RATIO_LABEL = "End-of-year assets / P\n(retirees: / pension B)"
"""The wealth-to-income ratio (m - c): over permanent income P working, the pension B retired."""
UNIT_WORDS = {"working": "permanent income P", "retired": "pension B"}
"""The unit of a regime's normalised wealth and consumption (``lifecycle_normalised``)."""
UNIT_SYMBOLS = {"working": "P", "retired": "B"}

METHOD_NAMES = {"dcegm": "DC-EGM", "egm": "EGM", "grid": "grid search"}
"""Printed names of the solution methods (a solution's ``method``)."""

VARIANT_NAMES = {
    "baseline": "Baseline",
    "low_pension": "Low pension",
    "baseline_grid": "Baseline (grid search)",
    "from_25": "From age 25",
    "benefit_cut": "Benefit cut",
}
"""Printed names of the variants (``project.config.VARIANTS``)."""

TYPE_NAMES = {"work_loving": "Work-loving", "leisure_loving": "Leisure-loving"}
"""Printed names of the preference types (labels of the state ``pref_type``)."""

STATE_VALUE_NAMES = {"working": "working", "retired": "retired", "dead": "dead", "claim": "claim"}
"""Printed names of the retirement statuses, regimes and claim choices."""

INCOME_WORDS = {
    1: ("median",),
    2: ("low", "high"),
    3: ("low", "median", "high"),
    4: ("lowest", "low", "high", "highest"),
    5: ("lowest", "low", "median", "high", "highest"),
}
"""Words for the income nodes by position, for as many nodes as the key."""


@contextmanager
def styled() -> Iterator[None]:
    """Apply the project's rcParams while the block runs; restore the previous ones after."""
    with mpl.rc_context(RC_PARAMS):
        yield


def new_figure(
    *, nrows: int, ncols: int, panel_width: float = PANEL_WIDTH, panel_height: float = PANEL_HEIGHT
) -> tuple[Figure, list[list[Axes]]]:
    """Return a figure of ``nrows`` x ``ncols`` panels and its axes as a nested list.

    Call it inside ``styled()`` so that the axes take the project's style.
    """
    figure = Figure(
        figsize=(ncols * panel_width, nrows * panel_height), dpi=DPI, layout="constrained"
    )
    axes = figure.subplots(nrows=nrows, ncols=ncols, squeeze=False)
    return figure, [list(row) for row in axes]


def save_figure(
    *,
    figure: Figure,
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``figure`` to every path in ``paths`` ("png" and/or "pdf"); return the paths.

    Metadata that would change between runs (dates, software versions) is left out. With
    ``provenance`` (``project.provenance.product_provenance``), the PDF's ``Subject`` and the
    PNG's ``Provenance`` text chunk hold it as sorted JSON.
    """
    unknown = sorted(set(paths) - set(FORMATS))
    if unknown or not paths:
        msg = f"paths must map some of {list(FORMATS)} to files; got keys {sorted(paths)}."
        raise ValueError(msg)
    written = []
    for fmt in FORMATS:
        if fmt not in paths:
            continue
        path = Path(paths[fmt])
        path.parent.mkdir(parents=True, exist_ok=True)
        if provenance is not None:
            metadata = figure_metadata(provenance, fmt=fmt)
        else:
            metadata = PNG_METADATA if fmt == "png" else PDF_METADATA
        with styled():
            figure.savefig(path, format=fmt, dpi=DPI, metadata=metadata)
        written.append(path)
    return written


def figure_legend(*, figure: Figure, axis: Axes, ncols: int | None = None) -> None:
    """Put the legend of ``axis``'s labelled lines below all panels, in one row by default.

    Below a single panel the entries are stacked (one row of them would be cut at the sides).
    """
    handles, labels = axis.get_legend_handles_labels()
    if handles:
        default = len(handles) if len(figure.axes) > 1 else 1
        figure.legend(handles, labels, loc="outside lower center", ncols=ncols or default)


def from_zero(axis: Axes, *, top: float | None = None) -> None:
    """Start ``axis``'s y axis at 0 (a level, not a change: no magnified noise); keep its top."""
    upper = axis.get_ylim()[1] if top is None else top
    axis.set_ylim(0.0, upper if upper > 0 else 1.0)


def same_limits(axes: Sequence[Axes], *, x: bool = False) -> None:
    """Give ``axes`` the union of their y limits (and x limits with ``x``), to compare panels."""
    names = ("get_ylim", "set_ylim", "get_xlim", "set_xlim") if x else ("get_ylim", "set_ylim")
    for get, set_ in zip(names[::2], names[1::2], strict=True):
        limits = [getattr(axis, get)() for axis in axes]
        low, high = min(lo for lo, _ in limits), max(hi for _, hi in limits)
        for axis in axes:
            getattr(axis, set_)(low, high)


def share_axis(axis: Axes) -> None:
    """Show ``axis``'s y axis as a share, from 0 to 1."""
    axis.set_ylim(-0.03, 1.03)


def color(index: int) -> str:
    """Return the ``index``-th line colour (cycling)."""
    return COLORS[index % len(COLORS)]


def linestyle(index: int) -> str:
    """Return the ``index``-th line style (cycling)."""
    return LINESTYLES[index % len(LINESTYLES)]


def display_name(name: str) -> str:
    """Return a label for plots: underscores become spaces ("low_pension" -> "low pension")."""
    return str(name).replace("_", " ")


def variant_label(name: str) -> str:
    """Return a variant's printed name ("low_pension" -> "Low pension"; unknown: capitalised)."""
    name = str(name)
    return VARIANT_NAMES.get(name, _capitalised(display_name(name)))


def type_label(label: str) -> str:
    """Return a preference type's printed name ("leisure_loving" -> "Leisure-loving")."""
    label = str(label)
    return TYPE_NAMES.get(label, _capitalised(display_name(label)))


def income_label(label: str, *, labels: Sequence[str]) -> str:
    """Return an income node's words by its position among ``labels`` ("node_2" of 5: median)."""
    labels = [str(x) for x in labels]
    position, n = labels.index(str(label)), len(labels)
    words = INCOME_WORDS.get(n)
    if words is not None:
        return f"{words[position]} income"
    if position in (0, n - 1):
        return f"{'lowest' if position == 0 else 'highest'} income"
    if n % 2 == 1 and position == n // 2:
        return "median income"
    return f"income state {position + 1} of {n}"


def state_label(state: str, label: str, *, labels: Sequence[str] = ()) -> str:
    """Return the words for a discrete state's label, e.g. ("income", "node_2") -> "median income".

    ``labels`` are all labels of the state (needed for income, whose nodes are named by position).
    """
    if state == "income" and labels:
        return income_label(label, labels=labels)
    if state == "pref_type":
        return type_label(label)
    return STATE_VALUE_NAMES.get(str(label), display_name(label))


def method_name(method: str) -> str:
    """Return the printed name of a solution method ("dcegm" -> "DC-EGM"; unknown ones as given)."""
    return METHOD_NAMES.get(method, method)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def normalised_label(quantity: str, *, symbol: str, regime: str) -> str:
    """Return an axis label of a normalised quantity: "Consumption c = C / P" working."""
    unit = UNIT_SYMBOLS.get(regime, "unit")
    return f"{quantity} {symbol.lower()} = {symbol.upper()} / {unit}"


def regime_unit_title(regime: str) -> str:
    """Return a regime's column title with its unit: "Workers (units of permanent income P)"."""
    people = {"working": "Workers", "retired": "Retirees"}.get(regime, _capitalised(regime))
    return f"{people} (units of {UNIT_WORDS.get(regime, 'their normaliser')})"


def value_label(*, regime: str) -> str:
    """Return the label of normalised V: V / P^(1 - gamma) working, V / B^(1 - gamma) retired."""
    unit = UNIT_SYMBOLS.get(regime, "unit")
    return f"Value $V / {unit}^{{1 - \\gamma}}$"
