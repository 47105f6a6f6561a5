"""Save a calibration as one verified directory product; load it back, verified.

Contract: ``save_calibration(outcome, directory=...)`` publishes ``directory`` atomically (a
content-named generation behind a link, ``project.persist.atomic``) holding

- ``calibrated_weights.arrow``: the weights as feather (Arrow IPC; ``subject_id``, ``weight``);
- ``calibration_log.csv``: the per-epoch log;
- ``targets_before_after.csv`` and ``.md``: the targets table, as CSV and as Markdown;
- ``calibration_summary.json``: ``CalibrationOutcome.summary()``: the Kish effective sample
  size (absolute and as a share of the subjects) and the max and min weight relative to the
  mean, of the fitted and of the base weights; fit losses, the number of fitted and held-out
  targets within tolerance, the goals, the ``warnings`` (empty: every goal met) and the
  settings (sorted keys, NaN as null, so equal outcomes give equal bytes);
- ``calibration_loss.png``: the loss curve, drawn on an Agg canvas with a fixed size and dpi and
  without date or software metadata, so equal outcomes give equal bytes;
- ``COMPLETE.json``: every file's size and SHA-256 (``project.persist.manifest``), written last.

``load_calibration(directory)`` checks every file against the marker before reading, and raises
``CheckpointError`` naming a damaged file, or the files of ``FILE_NAMES`` an older product lacks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from project.calibration.outcome import CalibrationOutcome
from project.errors import CheckpointError
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
    "summary": "calibration_summary.json",
}

FIGURE_SIZE = (6.0, 4.0)
FIGURE_DPI = 100
PNG_METADATA = {"Software": None}


@dataclass(frozen=True, kw_only=True)
class SavedCalibration:
    """A calibration read back from its product: weights, targets table, log and summary."""

    weights: pd.DataFrame
    table: pd.DataFrame
    log: pd.DataFrame
    summary: dict[str, Any]

    @property
    def warnings(self) -> list[str]:
        """Return the goals the calibration missed (empty: every goal met)."""
        return list(self.summary["warnings"])


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
        (staging / FILE_NAMES["summary"]).write_text(summary_json(outcome))
        loss_figure(outcome).savefig(
            staging / FILE_NAMES["figure"], format="png", dpi=FIGURE_DPI, metadata=PNG_METADATA
        )
    return directory / MARKER_NAME


def load_calibration(directory: Path) -> SavedCalibration:
    """Return the calibration saved in ``directory`` after checking every file's digest."""
    directory = Path(directory)
    verify_directory(directory, kind=KIND, hint=HINT)
    absent = [name for name in FILE_NAMES.values() if not (directory / name).is_file()]
    if absent:
        msg = (
            f"The calibration in {directory} lacks {absent} (written by an older version of "
            f"project.calibration?). {HINT}"
        )
        raise CheckpointError(msg)
    return SavedCalibration(
        weights=pd.read_feather(directory / FILE_NAMES["weights"]),
        table=pd.read_csv(directory / FILE_NAMES["table"]),
        log=pd.read_csv(directory / FILE_NAMES["log"]),
        summary=json.loads((directory / FILE_NAMES["summary"]).read_text()),
    )


def summary_json(outcome: CalibrationOutcome) -> str:
    """Return the outcome's summary as JSON (sorted keys; NaN written as null)."""
    return json.dumps(_finite(outcome.summary()), indent=2, sort_keys=True) + "\n"


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
        axes.plot(log["epoch"], log["objective"], color="C0", label="objective (fit + penalty)")
        axes.plot(log["epoch"], log["fit_loss"], color="C2", label="fit loss")
    axes.axhline(outcome.loss_after, color="C1", linestyle="--", label="fit loss after")
    if len(log) and (log[["objective", "fit_loss"]] > 0).all(axis=None) and outcome.loss_after > 0:
        axes.set_yscale("log")
    axes.set_xlabel("epoch")
    axes.set_ylabel("loss (in tolerances squared)")
    axes.set_title("Calibration to aggregate targets")
    axes.legend(loc="upper right")
    figure.tight_layout()
    return figure


def _finite(value: Any) -> Any:
    """Return ``value`` with non-finite floats replaced by None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _cell(value: object) -> str:
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        return f"{value:.6g}"
    return str(value).replace("|", "\\|")
