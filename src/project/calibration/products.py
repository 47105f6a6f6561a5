"""Write a calibration's products: weights, log, targets table and the loss curve.

Contract: ``write_calibration_products(outcome, weights_path=..., log_path=..., table_path=...,
figure_path=...)`` writes

- the weights as feather (Arrow IPC; columns ``subject_id``, ``weight``);
- the per-epoch log as CSV (``.csv``) or feather (``.arrow`` / ``.feather``);
- the targets table as CSV at ``table_path`` with suffix ``.csv`` and as a Markdown table next to
  it (suffix ``.md``);
- the loss curve as PNG, PDF or SVG (by suffix), drawn on an Agg canvas with a fixed size and dpi
  and without date or software metadata, so equal outcomes give equal bytes.

Each file is written to a temporary sibling and renamed into place (never half-written). Returns
the paths written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from project.calibration.errors import CalibrationError
from project.calibration.outcome import CalibrationOutcome
from project.persist.atomic import atomic_file

FIGURE_SIZE = (6.0, 4.0)
FIGURE_DPI = 100
FIGURE_METADATA = {
    ".png": {"Software": None},
    ".pdf": {"CreationDate": None},
    ".svg": {"Date": None},
}
FEATHER_SUFFIXES = (".arrow", ".feather")


def write_calibration_products(
    outcome: CalibrationOutcome,
    *,
    weights_path: Path,
    log_path: Path,
    table_path: Path,
    figure_path: Path,
) -> dict[str, Path]:
    """Write weights, log, table (CSV and Markdown) and the loss figure; return the paths."""
    weights_path, log_path = Path(weights_path), Path(log_path)
    table_csv = Path(table_path).with_suffix(".csv")
    table_markdown = Path(table_path).with_suffix(".md")
    figure_path = Path(figure_path)
    if log_path.suffix not in (".csv", *FEATHER_SUFFIXES):
        msg = f"The log is written as .csv, .arrow or .feather; got {log_path.name!r}."
        raise CalibrationError(msg)
    if figure_path.suffix not in FIGURE_METADATA:
        msg = f"The figure is written as {sorted(FIGURE_METADATA)}; got {figure_path.name!r}."
        raise CalibrationError(msg)

    _atomic(weights_path, lambda p: outcome.weights.reset_index(drop=True).to_feather(p))
    if log_path.suffix == ".csv":
        _atomic(log_path, lambda p: outcome.log.to_csv(p, index=False))
    else:
        _atomic(log_path, lambda p: outcome.log.reset_index(drop=True).to_feather(p))
    _atomic(table_csv, lambda p: outcome.table.to_csv(p, index=False))
    _atomic(table_markdown, lambda p: Path(p).write_text(markdown_table(outcome.table)))
    _atomic(
        figure_path,
        lambda p: _save_figure(outcome=outcome, path=Path(p), suffix=figure_path.suffix),
    )
    return {
        "weights": weights_path,
        "log": log_path,
        "table": table_csv,
        "table_markdown": table_markdown,
        "figure": figure_path,
    }


def markdown_table(table: pd.DataFrame) -> str:
    """Return the targets table as a Markdown table (numbers to 6 significant digits)."""
    header = list(table.columns)
    lines = [
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" if c == header[0] else "---:" for c in header) + " |",
    ]
    for row in table.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(value) for value in row) + " |")
    return "\n".join(lines) + "\n"


def loss_figure(outcome: CalibrationOutcome) -> Figure:
    """Return the loss per epoch (log scale) with the final loss without dropout."""
    figure = Figure(figsize=FIGURE_SIZE, dpi=FIGURE_DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    log = outcome.log
    if len(log):
        axes.plot(log["epoch"], log["loss"], color="C0", label="loss (epoch start, its mask)")
    axes.axhline(outcome.loss_after, color="C1", linestyle="--", label="loss after (no dropout)")
    if len(log) and (log["loss"] > 0).all() and outcome.loss_after > 0:
        axes.set_yscale("log")
    axes.set_xlabel("epoch")
    axes.set_ylabel("loss")
    axes.set_title("Calibration to aggregate targets")
    axes.legend(loc="upper right")
    figure.tight_layout()
    return figure


def _save_figure(*, outcome: CalibrationOutcome, path: Path, suffix: str) -> None:
    loss_figure(outcome).savefig(
        path, format=suffix.lstrip("."), dpi=FIGURE_DPI, metadata=FIGURE_METADATA[suffix]
    )


def _cell(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return f"{value:.6g}"
    return str(value).replace("|", "\\|")


def _atomic(path: Path, write: Callable[[str], object]) -> None:
    """Write through ``write(temporary path)`` next to ``path``, then rename into place."""
    with atomic_file(Path(path)) as temporary:
        write(str(temporary))
