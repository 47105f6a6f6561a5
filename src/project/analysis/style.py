"""The one figure style of the project and byte-deterministic figure output.

Figures are built on ``matplotlib.figure.Figure`` directly (no pyplot, no global backend): each
plotting function creates its figure inside ``styled()`` and writes it with ``save_figure``, which
drops every timestamp and version string from the PNG and PDF metadata, so rendering the same data
twice gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib as mpl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

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

FORMATS = ("png", "pdf")
"""The formats ``save_figure`` writes; ``paths`` passed to it map each to a file."""

RC_PARAMS: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 8.0,
    "axes.titlesize": 9.0,
    "axes.labelsize": 8.0,
    "legend.fontsize": 7.0,
    "legend.frameon": False,
    "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0,
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

AGE_LABEL = "age (years)"
WEALTH_LABEL = "wealth (model units)"
CONSUMPTION_LABEL = "consumption (model units)"
VALUE_LABEL = "value (utils)"
SHARE_RETIRED_LABEL = "share retired"

METHOD_NAMES = {"dcegm": "DC-EGM", "egm": "EGM", "grid": "grid search"}
"""Printed names of the solution methods (a solution's ``method``)."""


@contextmanager
def styled() -> Iterator[None]:
    """Apply the project's rcParams while the block runs; restore the previous ones after."""
    with mpl.rc_context(RC_PARAMS):
        yield


def new_figure(*, nrows: int, ncols: int) -> tuple[Figure, list[list[Axes]]]:
    """Return a figure of ``nrows`` x ``ncols`` panels and its axes as a nested list.

    Call it inside ``styled()`` so that the axes take the project's style.
    """
    figure = Figure(
        figsize=(ncols * PANEL_WIDTH, nrows * PANEL_HEIGHT), dpi=DPI, layout="constrained"
    )
    axes = figure.subplots(nrows=nrows, ncols=ncols, squeeze=False)
    return figure, [list(row) for row in axes]


def save_figure(*, figure: Figure, paths: Mapping[str, Path]) -> list[Path]:
    """Write ``figure`` to every path in ``paths`` ("png" and/or "pdf"); return the paths.

    Metadata that would change between runs (dates, software versions) is left out.
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
        metadata = PNG_METADATA if fmt == "png" else PDF_METADATA
        with styled():
            figure.savefig(path, format=fmt, dpi=DPI, metadata=metadata)
        written.append(path)
    return written


def color(index: int) -> str:
    """Return the ``index``-th line colour (cycling)."""
    return COLORS[index % len(COLORS)]


def linestyle(index: int) -> str:
    """Return the ``index``-th line style (cycling)."""
    return LINESTYLES[index % len(LINESTYLES)]


def display_name(name: str) -> str:
    """Return a label for plots: underscores become spaces ("low_pension" -> "low pension")."""
    return str(name).replace("_", " ")


def method_name(method: str) -> str:
    """Return the printed name of a solution method ("dcegm" -> "DC-EGM"; unknown ones as given)."""
    return METHOD_NAMES.get(method, method)
