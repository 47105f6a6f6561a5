"""Each subject's contributions to the targets, built batch by batch from a simulated panel.

Contract: ``PanelEstimates.from_panel(panel=..., definitions=...)`` takes the panel of
``SimulationResult.to_dataframe`` (one row per subject and period, any row order; it needs
``subject_id``, ``age`` and the columns the targets name) and the target definitions of
``targets.parse_targets``. Record i is the subject with the i-th smallest ``subject_id``
(``subject_ids``), every subject of the panel included. Targets are statistics of the living:
rows whose ``regime`` is in ``excluded_regimes`` (default ``("dead",)``: a regimes model keeps a
dead subject's rows, with missing states) contribute nothing; a panel without a ``regime``
column keeps every row. Calling it with ``(start, stop)`` returns the contributions of records
``start:stop`` as a float64 array of shape (stop - start, K):

- ``sum``: the sum of ``column`` over the subject's living rows with age_min <= age < age_max;
- ``count``: the number of the subject's living rows in that bin with ``column == label`` (a
  label of a categorical, or a value that equals the label as text or as a number). A count of
  retirees uses the regime (``column`` ``regime``, ``label`` ``retired``), not the retirement
  choice, which is missing once a subject has retired.

A call touches only the rows of the requested subjects, so the N x K matrix is never built
unless asked for with (0, N). NaN in a summed column inside a bin gives a NaN contribution,
which the calibration reports naming the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.targets import TargetDefinition

SHOWN = 10
EXCLUDED_REGIMES = ("dead",)


@dataclass(frozen=True)
class _Term:
    column: str
    age_min: float
    age_max: float
    code: int | None


@dataclass(frozen=True)
class PanelEstimates:
    """The batch function ``(start, stop) -> (stop - start, K)`` of one panel and targets."""

    subject_ids: np.ndarray
    names: tuple[str, ...]
    offsets: np.ndarray
    ages: np.ndarray
    columns: dict[str, np.ndarray]
    terms: tuple[_Term, ...]

    @classmethod
    def from_panel(
        cls,
        *,
        panel: pd.DataFrame,
        definitions: Sequence[TargetDefinition],
        excluded_regimes: Sequence[str] = EXCLUDED_REGIMES,
    ) -> PanelEstimates:
        """Sort the panel by subject, drop the dead rows and prepare the targets' columns."""
        for needed in ("subject_id", "age"):
            if needed not in panel.columns:
                msg = f"The panel needs a {needed!r} column; it has {list(panel.columns)}."
                raise CalibrationError(msg)
        ids = panel["subject_id"].to_numpy()
        if pd.isna(ids).any():
            msg = "The panel's subject_id column has missing values."
            raise CalibrationError(msg)
        subject_ids = np.unique(ids)
        panel = living_rows(panel=panel, excluded_regimes=excluded_regimes)
        ids = panel["subject_id"].to_numpy()
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
        # offsets[i]:offsets[i + 1] are the living rows of subject_ids[i] (possibly none)
        first = np.searchsorted(sorted_ids, subject_ids, side="left")
        offsets = np.append(first, sorted_ids.size).astype(np.int64)
        ages = pd.to_numeric(panel["age"], errors="coerce").to_numpy(dtype=float)[order]

        columns: dict[str, np.ndarray] = {}
        categories: dict[str, pd.Index] = {}
        terms = []
        for definition in definitions:
            series = _column(panel=panel, definition=definition)
            if definition.kind == "sum":
                key = f"sum:{definition.column}"
                if key not in columns:
                    columns[key] = series.to_numpy(dtype=float)[order]
                code = None
            else:
                key = f"count:{definition.column}"
                if key not in columns:
                    categorical = pd.Categorical(series)
                    columns[key] = np.asarray(categorical.codes)[order]
                    categories[key] = categorical.categories
                code = _label_code(categories=categories[key], definition=definition)
            terms.append(_Term(key, definition.age_min, definition.age_max, code))
        return cls(
            subject_ids=subject_ids,
            names=tuple(d.name for d in definitions),
            offsets=offsets,
            ages=ages,
            columns=columns,
            terms=tuple(terms),
        )

    @property
    def n_records(self) -> int:
        """Return N, the number of subjects."""
        return self.subject_ids.size

    def __call__(self, start: int, stop: int) -> np.ndarray:
        """Return the contributions of subjects ``start:stop``, shape (stop - start, K)."""
        if not 0 <= start <= stop <= self.n_records:
            msg = f"Records {start}:{stop} are outside 0:{self.n_records}."
            raise CalibrationError(msg)
        first, last = self.offsets[start], self.offsets[stop]
        counts = np.diff(self.offsets[start : stop + 1])
        local = np.repeat(np.arange(stop - start), counts)
        ages = self.ages[first:last]
        in_bin: dict[tuple[float, float], np.ndarray] = {}
        out = np.empty((stop - start, len(self.terms)), dtype=np.float64)
        for j, term in enumerate(self.terms):
            bounds = (term.age_min, term.age_max)
            if bounds not in in_bin:
                in_bin[bounds] = (ages >= term.age_min) & (ages < term.age_max)
            values = self.columns[term.column][first:last]
            if term.code is None:
                contribution = np.where(in_bin[bounds], values, 0.0)
            else:
                contribution = (in_bin[bounds] & (values == term.code)).astype(np.float64)
            out[:, j] = np.bincount(local, weights=contribution, minlength=stop - start)
        return out


def living_rows(
    *, panel: pd.DataFrame, excluded_regimes: Sequence[str] = EXCLUDED_REGIMES
) -> pd.DataFrame:
    """Return the rows whose ``regime`` is not excluded (all rows without a regime column)."""
    if "regime" not in panel.columns or not len(excluded_regimes):
        return panel
    regime = panel["regime"]
    excluded = regime.astype("string").isin([str(r) for r in excluded_regimes])
    return panel.loc[~excluded.fillna(False).to_numpy(dtype=bool)]


def _column(*, panel: pd.DataFrame, definition: TargetDefinition) -> pd.Series:
    if definition.column not in panel.columns:
        msg = (
            f"Target {definition.name!r}: the panel has no column {definition.column!r}; "
            f"it has {list(panel.columns)}."
        )
        raise CalibrationError(msg)
    series = panel[definition.column]
    numeric = pd.api.types.is_numeric_dtype(series) and not isinstance(
        series.dtype, pd.CategoricalDtype
    )
    if definition.kind == "sum" and not numeric:
        msg = (
            f"Target {definition.name!r}: column {definition.column!r} ({series.dtype}) is not "
            "numeric, so it cannot be summed; count one of its labels instead."
        )
        raise CalibrationError(msg)
    return series


def _label_code(*, categories: pd.Index, definition: TargetDefinition) -> int:
    label = definition.label
    for code, category in enumerate(categories):
        if str(category) == label or _same_number(category, label):
            return code
    shown = [str(c) for c in categories[:SHOWN]]
    more = f" and {len(categories) - SHOWN} more" if len(categories) > SHOWN else ""
    msg = (
        f"Target {definition.name!r}: label {label!r} is not a value of column "
        f"{definition.column!r} (values: {shown}{more})."
    )
    raise CalibrationError(msg)


def _same_number(category: object, label: str | None) -> bool:
    try:
        return float(category) == float(label)
    except (TypeError, ValueError):
        return False
