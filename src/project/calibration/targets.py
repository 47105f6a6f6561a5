"""The targets table: what each target measures, its value and how it is fitted.

Contract: ``parse_targets(targets=frame)`` validates a DataFrame (e.g. ``data/targets.csv``) with
one row per target and the columns

- ``name``: unique identifier;
- ``kind``: ``sum`` (the sum of ``column`` over the subject-periods in the age bin) or ``count``
  (the number of subject-periods in the age bin with ``column == label``);
- ``column``, ``label`` (``count`` only), ``age_min``, ``age_max``: the bin is
  ``age_min <= age < age_max``; an empty bound is open;
- ``value``: the target, for the weighted population (initial weights all 1);
- optional ``normalization`` (default 1), ``excluded`` (default false: reported, not fitted) and
  ``floor`` (an absolute floor of the target's denominator; empty: none).

It returns the definitions (for ``panel``) and the ``TargetProblem`` (for the fit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.objective import TargetProblem

KINDS = ("sum", "count")
REQUIRED = ("name", "kind", "column", "value")
OPTIONAL = ("label", "age_min", "age_max", "normalization", "excluded", "floor")
TRUE_TEXT = {"true", "yes", "1", "y", "t"}
FALSE_TEXT = {"false", "no", "0", "n", "f", ""}


@dataclass(frozen=True)
class TargetDefinition:
    """What one target measures on the panel."""

    name: str
    kind: str
    column: str
    label: str | None
    age_min: float
    age_max: float


def parse_targets(*, targets: pd.DataFrame) -> tuple[list[TargetDefinition], TargetProblem]:
    """Return the target definitions and the problem; raise naming the offending target."""
    missing = [c for c in REQUIRED if c not in targets.columns]
    if missing:
        msg = (
            f"The targets table lacks columns {missing}; it needs {list(REQUIRED)} and may have "
            f"{list(OPTIONAL)}."
        )
        raise CalibrationError(msg)
    unknown = sorted(set(targets.columns) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        known = [*REQUIRED, *OPTIONAL]
        msg = f"The targets table has unknown columns {unknown}; known are {known}."
        raise CalibrationError(msg)
    if targets.empty:
        msg = "The targets table has no rows."
        raise CalibrationError(msg)
    frame = targets.reset_index(drop=True)
    definitions = [_definition(row) for row in frame.to_dict("records")]
    names = [d.name for d in definitions]
    problem = TargetProblem.build(
        names=names,
        values=_numbers(frame=frame, column="value", names=names, default=np.nan),
        normalization=_numbers(frame=frame, column="normalization", names=names, default=1.0),
        excluded=[
            _flag(value=v, name=n) for v, n in zip(_get(frame, "excluded"), names, strict=True)
        ],
        floors=_numbers(frame=frame, column="floor", names=names, default=np.nan),
    )
    return definitions, problem


def _definition(row: dict) -> TargetDefinition:
    name = str(row["name"])
    kind = str(row["kind"]).strip().lower()
    if kind not in KINDS:
        msg = f"Target {name!r}: unknown kind {row['kind']!r}; use one of {list(KINDS)}."
        raise CalibrationError(msg)
    if _empty(row["column"]):
        msg = f"Target {name!r}: the column to {kind} is empty."
        raise CalibrationError(msg)
    label = None if _empty(row.get("label")) else str(row["label"])
    if kind == "count" and label is None:
        msg = f"Target {name!r}: a count needs a label (count rows with column == label)."
        raise CalibrationError(msg)
    if kind == "sum" and label is not None:
        msg = f"Target {name!r}: a sum takes no label (got {label!r}); leave it empty."
        raise CalibrationError(msg)
    age_min = _bound(value=row.get("age_min"), default=-np.inf, name=name)
    age_max = _bound(value=row.get("age_max"), default=np.inf, name=name)
    if not age_min < age_max:
        msg = f"Target {name!r}: the age bin [{age_min:g}, {age_max:g}) is empty."
        raise CalibrationError(msg)
    return TargetDefinition(
        name=name, kind=kind, column=str(row["column"]), label=label,
        age_min=age_min, age_max=age_max,
    )  # fmt: skip


def _get(frame: pd.DataFrame, column: str) -> list:
    return frame[column].tolist() if column in frame.columns else [None] * len(frame)


def _numbers(*, frame: pd.DataFrame, column: str, names: list[str], default: float) -> np.ndarray:
    out = []
    for value, name in zip(_get(frame, column), names, strict=True):
        if _empty(value):
            out.append(default)
            continue
        try:
            out.append(float(value))
        except (TypeError, ValueError) as error:
            msg = f"Target {name!r}: {column} {value!r} is not a number."
            raise CalibrationError(msg) from error
    return np.asarray(out, dtype=float)


def _bound(*, value: object, default: float, name: str) -> float:
    if _empty(value):
        return default
    try:
        return float(value)
    except (TypeError, ValueError) as error:
        msg = f"Target {name!r}: age bound {value!r} is not a number."
        raise CalibrationError(msg) from error


def _flag(*, value: object, name: str) -> bool:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return False
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | float | np.number) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in TRUE_TEXT | FALSE_TEXT:
        return text in TRUE_TEXT
    msg = f"Target {name!r}: excluded must be true or false, got {value!r}."
    raise CalibrationError(msg)


def _empty(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()
