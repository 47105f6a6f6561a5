"""The targets table: what each target measures, its value, tolerance, variant and role.

Contract: ``parse_targets(targets=frame, variant=...)`` validates a DataFrame (e.g.
``data/targets.csv``) with one row per target and variant and the columns

- ``name``: identifier, unique among the rows of one variant;
- ``kind``: ``sum`` (the sum of ``column`` over the living subject-periods in the age bin) or
  ``count`` (the number of living subject-periods in the age bin with ``column == label``);
- ``column``, ``label`` (``count`` only), ``age_min``, ``age_max``: the bin is
  ``age_min <= age < age_max``; an empty bound is open;
- ``value``: the target, for the weighted population;
- optional ``tolerance`` (relative, in (0, 1); default ``DEFAULT_TOLERANCE`` = 0.01),
  ``normalization`` (default 1), ``held_out`` (default false: true means evaluated before and
  after but not fitted; the old column name ``excluded`` is still read, with a warning),
  ``floor`` (an absolute floor of the target's denominator; empty: none) and ``variant``
  (``all``, or one or more variant names separated by ``;``; default ``all``).

``targets_for_variant`` selects the rows of one variant: those marked ``all`` or naming it. A
table that names variants refuses a variant it does not name (a typo would otherwise fit only
the shared rows) and refuses ``variant=None``. ``parse_targets`` returns the definitions (for
``panel``) and the ``TargetProblem`` (for the fit).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from project.calibration.errors import CalibrationError
from project.calibration.objective import TargetProblem

logger = logging.getLogger("project.calibration")

KINDS = ("sum", "count")
REQUIRED = ("name", "kind", "column", "value")
OPTIONAL = (
    "label", "age_min", "age_max", "tolerance", "normalization", "held_out", "floor", "variant",
)  # fmt: skip
LEGACY = {"excluded": "held_out"}
TRUE_TEXT = {"true", "yes", "1", "y", "t"}
FALSE_TEXT = {"false", "no", "0", "n", "f", ""}
ALL_VARIANTS = "all"
VARIANT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass(frozen=True)
class TargetDefinition:
    """What one target measures on the panel."""

    name: str
    kind: str
    column: str
    label: str | None
    age_min: float
    age_max: float


def targets_for_variant(*, targets: pd.DataFrame, variant: str | None) -> pd.DataFrame:
    """Return the rows of ``variant`` (marked ``all`` or naming it), without ``variant``."""
    if "variant" not in targets.columns:
        return targets.reset_index(drop=True)
    frame = targets.reset_index(drop=True)
    names = frame["name"].tolist() if "name" in frame.columns else list(range(len(frame)))
    applies = [_variants(value=v, name=n) for v, n in zip(frame["variant"], names, strict=True)]
    named = sorted({v for a in applies if a is not None for v in a})
    if variant is None and named:
        msg = (
            f"The targets table has rows for the variants {named}; pass variant=<name> to pick "
            "one variant's targets (rows marked 'all' apply to every variant)."
        )
        raise CalibrationError(msg)
    if variant is not None and named and variant not in named:
        msg = (
            f"The targets table has no rows for variant {variant!r}; it names {named}. Add "
            f"rows for {variant!r} (or list it in the variant column of shared rows, e.g. "
            f"'{named[0]};{variant}'), or check the variant's name."
        )
        raise CalibrationError(msg)
    keep = [a is None or variant in a for a in applies]
    return frame.loc[keep].drop(columns="variant").reset_index(drop=True)


def parse_targets(
    *, targets: pd.DataFrame, variant: str | None = None
) -> tuple[list[TargetDefinition], TargetProblem]:
    """Return one variant's definitions and problem; raise naming the offending target."""
    targets = _renamed(targets)
    known = [*REQUIRED, *OPTIONAL]
    missing = [c for c in REQUIRED if c not in targets.columns]
    if missing:
        msg = (
            f"The targets table lacks columns {missing}; it needs {list(REQUIRED)} and may have "
            f"{list(OPTIONAL)} (see data/README.md)."
        )
        raise CalibrationError(msg)
    unknown = sorted(set(targets.columns) - set(known))
    if unknown:
        msg = f"The targets table has unknown columns {unknown}; known are {known}."
        raise CalibrationError(msg)
    if targets.empty:
        msg = "The targets table has no rows."
        raise CalibrationError(msg)
    frame = targets_for_variant(targets=targets, variant=variant)
    definitions = [_definition(row) for row in frame.to_dict("records")]
    names = [d.name for d in definitions]
    problem = TargetProblem.build(
        names=names,
        values=_numbers(frame=frame, column="value", names=names, default=np.nan),
        normalization=_numbers(frame=frame, column="normalization", names=names, default=1.0),
        held_out=[
            _flag(value=v, name=n) for v, n in zip(_get(frame, "held_out"), names, strict=True)
        ],
        tolerances=_numbers(frame=frame, column="tolerance", names=names, default=np.nan),
        floors=_numbers(frame=frame, column="floor", names=names, default=np.nan),
    )
    return definitions, problem


def _renamed(targets: pd.DataFrame) -> pd.DataFrame:
    """Return the table with legacy column names replaced (both present: an error)."""
    for old, new in LEGACY.items():
        if old not in targets.columns:
            continue
        if new in targets.columns:
            msg = (
                f"The targets table has both {old!r} (the old name) and {new!r}; keep only {new!r}."
            )
            raise CalibrationError(msg)
        logger.warning("The targets column %r is now called %r; rename it.", old, new)
        targets = targets.rename(columns={old: new})
    return targets


def _variants(*, value: object, name: object) -> frozenset[str] | None:
    """Return the variants a row names (None: all)."""
    if _empty(value):
        msg = f"Target {name!r}: variant is empty; write 'all' or variant names joined by ';'."
        raise CalibrationError(msg)
    parts = [p.strip() for p in str(value).split(";")]
    if [p.lower() for p in parts] == [ALL_VARIANTS]:
        return None
    bad = [p for p in parts if not VARIANT_NAME.fullmatch(p) or p.lower() == ALL_VARIANTS]
    if bad:
        msg = (
            f"Target {name!r}: variant {value!r} is not 'all' or a list of variant names "
            f"joined by ';' (bad: {bad})."
        )
        raise CalibrationError(msg)
    return frozenset(parts)


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
    msg = f"Target {name!r}: held_out must be true or false, got {value!r}."
    raise CalibrationError(msg)


def _empty(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and np.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()
