"""Save a calibration as one verified directory product; load it back, verified.

Contract: ``save_calibration(outcome, directory=...)`` publishes ``directory`` atomically (a
content-named generation behind a link, ``project.persist.atomic``) holding

- ``calibrated_weights.arrow``: the weights as feather (Arrow IPC; ``subject_id``, ``weight``),
  the provenance (``project.provenance``) in its schema metadata;
- ``calibration_log.csv``: the per-epoch log;
- ``targets_before_after.csv`` and ``.md``: the targets table, as CSV and as Markdown;
- ``calibration_summary.json``: ``CalibrationOutcome.summary()``: the Kish effective sample
  size (absolute and as a share of the subjects) and the max and min weight relative to the
  mean, of the fitted and of the base weights; fit losses, the number of fitted and held-out
  targets within tolerance, the goals, the ``warnings`` (empty: every goal met), the
  settings and the ``provenance`` (sorted keys, NaN as null, so equal outcomes give equal
  bytes);
- ``calibration_loss.png``: the distance to the targets per optimisation step, in the project's
  figure style (``project.style``), without date or software metadata but with the
  provenance, so equal outcomes give equal bytes;
- ``COMPLETE.json``: every file's size and SHA-256 (``project.persist.manifest``), written last.

``load_calibration(directory)`` checks every file against the marker before reading, and raises
``CheckpointError`` naming a damaged file, or the files of ``FILE_NAMES`` an older product lacks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from project.provenance import product_provenance, with_provenance, write_arrow
from project.style import REFERENCE_COLOR, color, save_figure, styled, variant_label

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

FIGURE_SIZE = (5.0, 3.2)
"""Width and height of the figure in inches (the text width of the paper)."""


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


def save_calibration(
    outcome: CalibrationOutcome,
    *,
    directory: Path,
    provenance: Mapping[str, str] | None = None,
) -> Path:
    """Publish ``outcome``'s products to ``directory`` atomically; return the marker's path.

    ``provenance`` goes to the weights' schema, the summary and the figure; by default
    ``product_provenance`` of the outcome's settings with their seed.
    """
    directory = Path(directory).absolute()
    if provenance is None:
        provenance = calibration_provenance(outcome)
    with atomic_directory(
        directory, digest_of=lambda staging: write_marker(staging, kind=KIND)
    ) as staging:
        write_arrow(
            frame=outcome.weights.reset_index(drop=True),
            path=staging / FILE_NAMES["weights"],
            provenance=provenance,
        )
        outcome.log.to_csv(staging / FILE_NAMES["log"], index=False)
        outcome.table.to_csv(staging / FILE_NAMES["table"], index=False)
        (staging / FILE_NAMES["table_markdown"]).write_text(markdown_table(outcome.table))
        (staging / FILE_NAMES["summary"]).write_text(summary_json(outcome, provenance=provenance))
        save_figure(
            figure=loss_figure(outcome),
            paths={"png": staging / FILE_NAMES["figure"]},
            provenance=provenance,
        )
    return directory / MARKER_NAME


def calibration_provenance(outcome: CalibrationOutcome) -> dict[str, str]:
    """Return the provenance of ``outcome``: its settings' digest and seed (and the checkout)."""
    settings = json.loads(json.dumps(_finite(outcome.settings)))
    seed = settings.get("seed")
    return product_provenance(config=settings, seed=seed if isinstance(seed, int) else None)


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


def summary_json(
    outcome: CalibrationOutcome, *, provenance: Mapping[str, str] | None = None
) -> str:
    """Return the outcome's summary as JSON (sorted keys; NaN written as null).

    With ``provenance``, the summary holds it under ``"provenance"``.
    """
    summary = outcome.summary()
    if provenance is not None:
        summary = with_provenance(summary, provenance)
    return json.dumps(_finite(summary), indent=2, sort_keys=True) + "\n"


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


def loss_figure(outcome: CalibrationOutcome, *, variant: str | None = None) -> Figure:
    """Return how far the weights are from the targets at each optimisation step.

    Plotted: the distance to the targets (the mean squared miss in tolerances: 1 means every
    target misses by one tolerance), what the optimiser minimises (that distance plus the
    divergence of the weights from the base weights), and the distance at the final weights.
    ``variant`` (default: the outcome's) names the panel in the title.
    """
    variant = outcome.variant if variant is None else variant
    log = outcome.log
    with styled():
        figure = Figure(figsize=FIGURE_SIZE, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        if len(log):
            axes.plot(log["epoch"], log["fit_loss"], color=color(0), label="Distance to targets")
            axes.plot(
                log["epoch"],
                log["objective"],
                color=color(1),
                linestyle="--",
                label="Distance + divergence from base weights (minimised)",
            )
        axes.axhline(
            outcome.loss_after,
            color=color(2),
            linestyle=":",
            label=f"Distance at the final weights ({outcome.loss_after:.3g})",
        )
        axes.axhline(
            1.0, color=REFERENCE_COLOR, linewidth=0.8, label="Every target off by one tolerance"
        )
        values = [outcome.loss_after, *log.get("objective", []), *log.get("fit_loss", [])]
        logarithmic = all(np.isfinite(v) and v > 0 for v in values)
        if logarithmic:
            axes.set_yscale("log")
        axes.set_xlabel("Optimisation step")
        axes.set_ylabel(
            "Mean squared miss, in tolerances" + (" (log scale)" if logarithmic else "")
        )
        title = "reweighting the simulated subjects to the targets"
        axes.set_title(f"{variant_label(variant)}: {title}" if variant else title.capitalize())
        axes.legend(loc="best")
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
