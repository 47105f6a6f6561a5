"""Save an estimate as one verified directory product; load it back, verified.

Contract: ``save_estimation(outcome, directory=...)`` publishes ``directory`` atomically (a
content-named generation behind a link, ``project.persist.atomic``) holding

- ``estimates.arrow``: one row per param (estimate, standard error, 95 % interval, start,
  bounds, at_bound, converged), Arrow IPC (feather);
- ``moments.arrow``: one row per moment (data, simulated, residual, standard errors, t, counts);
- ``summary.json``: the variant, the J-test, convergence, evaluations, the estimates'
  covariance, the warnings a reader must see, each search's objective, params and local
  searches (``searches``), the criterion along each param through the estimate (``profiles``),
  the moments' Jacobian and the estimates' sensitivity to the moments (``sensitivity``,
  ``project.estimation.profiles``), a param calibrated with the estimate (``calibrated``, where
  one is), the settings and the provenance
  (``project.provenance.product_provenance`` of the settings, with their seed, and the
  fingerprint of the inputs); the seconds it took go to the build log, so that equal inputs
  give equal bytes. Both tables hold the same provenance in their Arrow schema metadata;
- ``COMPLETE.json``: every file's size and SHA-256 (``project.persist.manifest``), written last.

``load_estimation(directory)`` checks every file against the marker before reading and raises
``CheckpointError`` naming a damaged file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.errors import CheckpointError
from project.estimation.profiles import sensitivity
from project.estimation.variant import EstimationOutcome
from project.persist.atomic import atomic_directory
from project.persist.manifest import (
    MARKER_NAME,
    read_json_object,
    verify_directory,
    write_marker,
)
from project.provenance import PROVENANCE_KEY, product_provenance, write_arrow

KIND = "estimation"
HINT = "Rebuild it: `uv run pytask` estimates a damaged estimation again."
FILE_NAMES = {
    "estimates": "estimates.arrow",
    "moments": "moments.arrow",
    "summary": "summary.json",
}


@dataclass(frozen=True, kw_only=True)
class SavedEstimation:
    """An estimate read back from its product."""

    estimates: pd.DataFrame
    moments: pd.DataFrame
    summary: dict[str, Any]

    @property
    def warnings(self) -> list[str]:
        """Return the warnings recorded with the estimate."""
        return list(self.summary["warnings"])

    @property
    def params(self) -> dict[str, float]:
        """Return the estimates by param name."""
        return {
            str(name): float(value)
            for name, value in zip(self.estimates["param"], self.estimates["estimate"], strict=True)
        }

    @property
    def covariance(self) -> np.ndarray:
        """Return the estimates' covariance matrix, rows and columns in the order of ``params``.

        Raises ``CheckpointError`` for an estimate saved without it (an older build).
        """
        names = self.summary.get("param_names")
        if names != list(self.params) or "covariance" not in self.summary:
            msg = f"The estimation summary has no covariance of {list(self.params)}. {HINT}"
            raise CheckpointError(msg)
        return np.asarray(self.summary["covariance"], dtype=np.float64)

    @property
    def correlation(self) -> float:
        """Return the correlation of the first two estimates (from ``covariance``)."""
        covariance = self.covariance
        return float(covariance[0, 1] / np.sqrt(covariance[0, 0] * covariance[1, 1]))


def save_estimation(
    outcome: EstimationOutcome, *, directory: Path, provenance: Mapping[str, Any] | None = None
) -> Path:
    """Publish ``outcome`` to ``directory`` atomically; return the marker's path.

    The product's provenance (``product_provenance`` of the settings, with their seed) updated
    with ``provenance`` (e.g. the fingerprint of the inputs) goes to the summary and to both
    tables' schema metadata.
    """
    directory = Path(directory).absolute()
    settings = json.loads(json.dumps(outcome.settings, default=_plain))
    seed = settings.get("seed") if isinstance(settings.get("seed"), int) else None
    recorded = {**product_provenance(config=settings, seed=seed), **(provenance or {})}
    summary = {
        "variant": outcome.variant,
        **outcome.result.summary(),
        "warnings": outcome.warnings,
        "searches": outcome.searches,
        "profiles": outcome.profiles,
        "jacobian": np.asarray(outcome.result.jacobian, dtype=np.float64).tolist(),
        "sensitivity": sensitivity(outcome.result).tolist(),
        "settings": outcome.settings,
        PROVENANCE_KEY: recorded,
    }
    if outcome.calibrated:
        summary["calibrated"] = outcome.calibrated
    with atomic_directory(
        directory, digest_of=lambda staging: write_marker(staging, kind=KIND)
    ) as staging:
        tables = {
            "estimates": outcome.result.to_frame(),
            "moments": outcome.result.to_frame(table="moments"),
        }
        for name, frame in tables.items():
            write_arrow(frame=frame, path=staging / FILE_NAMES[name], provenance=recorded)
        text = json.dumps(summary, indent=2, sort_keys=True, default=_plain) + "\n"
        (staging / FILE_NAMES["summary"]).write_text(text)
    return directory / MARKER_NAME


def load_estimation(directory: Path) -> SavedEstimation:
    """Return the estimate saved in ``directory`` after checking every file's digest."""
    directory = Path(directory)
    verify_directory(directory, kind=KIND, hint=HINT)
    return SavedEstimation(
        estimates=pd.read_feather(directory / FILE_NAMES["estimates"]),
        moments=pd.read_feather(directory / FILE_NAMES["moments"]),
        summary=read_json_object(
            directory / FILE_NAMES["summary"],
            kind=KIND,
            hint=HINT,
            required=("warnings", PROVENANCE_KEY),
        ),
    )


def _plain(value: Any) -> Any:
    """Return numpy scalars and tuples as JSON-friendly Python values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple | set):
        return list(value)
    msg = f"Cannot write {type(value).__name__} to the estimation summary."
    raise TypeError(msg)
