"""Save a calibration as one verified directory product; load it back, verified.

Contract: ``save_calibration(outcome, directory=...)`` publishes ``directory`` atomically (a
content-named generation behind a link, ``project.persist.atomic``) holding

- ``calibrated_weights.arrow``: the weights as feather (Arrow IPC; ``subject_id``, ``weight``);
- ``calibration_log.csv``: the per-epoch log;
- ``targets_before_after.csv`` and ``.md``: the targets table, as CSV and as Markdown;
- ``calibration_loss.png``: the loss curve, drawn on an Agg canvas with a fixed size and dpi and
  without date or software metadata, so equal outcomes give equal bytes;
- ``COMPLETE.json``: every file's size and SHA-256 (``project.persist.manifest``), written last.

``load_calibration(directory)`` checks every file against the marker before reading, and raises
``CheckpointError`` naming a damaged file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from project.calibration.outcome import CalibrationOutcome
from project.persist.atomic import atomic_directory
from project.persist.manifest import MARKER_NAME, verify_directory, write_marker

KIND = "calibration"
HINT = "Rebuild it: `uv run pytask` recalibrates a damaged calibration."
FILE_NAMES = {
    "weights": "calibrated_weights.arrow",
    "log": "calibration_log.csv",
    "table": "targets_before_after.csv",
    "table_markdown": "targets_before_after.md",
    "figure": "calibration_loss.png",
}

FIGURE_SIZE = (6.0, 4.0)
FIGURE_DPI = 100
PNG_METADATA = {"Software": None}


@dataclass(frozen=True, kw_only=True)
class SavedCalibration:
    """A calibration read back from its product: the weights, the targets table and the log."""

    weights: pd.DataFrame
    table: pd.DataFrame
    log: pd.DataFrame


def save_calibration(outcome: CalibrationOutcome, *, directory: Path) -> Path:
    """Publish ``outcome``'s products to ``directory`` atomically; return the marker's path."""
    directory = Path(directory).absolute()
    with atomic_directory(
        directory, digest_of=lambda staging: write_marker(staging, kind=KIND)
    ) as staging:
        outcome.weights.reset_index(drop=True).to_feather(staging / FILE_NAMES["weights"])
        outcome.log.to_csv(staging / FILE_NAMES["log"], index=False)
        outcome.table.to_csv(staging / FILE_NAMES["table"], index=False)
        (staging / FILE_NAMES["table_markdown"]).write_text(markdown_table(outcome.table))
        loss_figure(outcome).savefig(
            staging / FILE_NAMES["figure"], format="png", dpi=FIGURE_DPI, metadata=PNG_METADATA
        )
    return directory / MARKER_NAME


def load_calibration(directory: Path) -> SavedCalibration:
    """Return the calibration saved in ``directory`` after checking every file's digest."""
    directory = Path(directory)
    verify_directory(directory, kind=KIND, hint=HINT)
    return SavedCalibration(
        weights=pd.read_feather(directory / FILE_NAMES["weights"]),
        table=pd.read_csv(directory / FILE_NAMES["table"]),
        log=pd.read_csv(directory / FILE_NAMES["log"]),
    )


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


def _cell(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return f"{value:.6g}"
    return str(value).replace("|", "\\|")
