"""One-year survival probabilities from the period life table ``data/life_tables/USactuarial.txt``.

The file has one line per exact age 0, 1, ...: age, then for men the probability ``q`` of dying
within the year, the survivors ``l`` of 100,000 births and the life expectancy ``e`` in years,
then the same three for women (whitespace separated, thousands separators in ``l``). See
data/README.md for what is known about its source and year.

``survival_probabilities`` mixes the sexes by their death probabilities,
``1 - ((1 - f) * q_male + f * q_female)`` with a fixed female share ``f`` at every age (0.5 by
default). That is the survival of a group whose sex composition is ``f`` at that age; it does not
let the female share rise with age as men die earlier (for that, weight by ``l``), which is
acceptable for a model without a sex dimension but understates survival at old ages slightly.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from project.data.vendored import display_path
from project.errors import DataError

COLUMNS = ("age", "q_male", "l_male", "e_male", "q_female", "l_female", "e_female")
"""The file's columns, in order: age, then death probability, survivors, life expectancy."""
INTEGER_COLUMNS = frozenset({"age", "l_male", "l_female"})
_RESTORE = "Restore the file from git (see data/README.md)."

logger = logging.getLogger(__name__)


def life_table(*, path: Path) -> pd.DataFrame:
    """Return the life table, one row per age, with the columns ``COLUMNS``.

    Raise ``DataError`` naming the file, line and column when it is missing or malformed:
    a line without 7 fields, a field that is no number, ages not strictly increasing,
    ``q`` outside [0, 1], ``l`` negative or increasing with age.
    """
    path = Path(path)
    shown = display_path(path)
    if not path.is_file():
        msg = f"Life table {shown} is missing: restore it from git (see data/README.md)."
        raise DataError(msg)
    try:
        text = path.read_text(encoding="ascii")
    except UnicodeDecodeError as error:
        msg = f"Life table {shown} is no ASCII text ({error}). {_RESTORE}"
        raise DataError(msg) from error
    rows = [
        _parse_line(line=line, number=number, shown=shown)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]
    if not rows:
        msg = f"Life table {shown} has no rows. {_RESTORE}"
        raise DataError(msg)
    table = pd.DataFrame.from_records(rows, columns=COLUMNS)
    _check(table=table, shown=shown)
    logger.debug("Read the life table %s (ages %d to %d).", shown, *table["age"].iloc[[0, -1]])
    return table


def survival_probabilities(
    *, path: Path, ages: Iterable[int], female_share: float = 0.5
) -> np.ndarray:
    """Return the probability of surviving from each age in ``ages`` to the next one.

    ``1 - ((1 - female_share) * q_male + female_share * q_female)`` at each age (see the module
    docstring). Raise ``DataError`` when ``female_share`` is outside [0, 1], an age is no integer
    or not in the table, or the table is malformed.
    """
    share = _female_share(female_share)
    wanted = _ages(ages)
    table = life_table(path=path).set_index("age")
    absent = sorted({int(a) for a in wanted} - set(table.index))
    if absent:
        msg = (
            f"Ages {absent} are not in the life table {display_path(path)}, which covers ages "
            f"{table.index.min()} to {table.index.max()}: ask for ages in that range."
        )
        raise DataError(msg)
    rows = table.loc[wanted]
    death = (1 - share) * rows["q_male"].to_numpy(float) + share * rows["q_female"].to_numpy(float)
    return 1.0 - death


def _parse_line(*, line: str, number: int, shown: str) -> tuple[float | int, ...]:
    fields = line.split()
    if len(fields) != len(COLUMNS):
        msg = (
            f"Life table {shown}, line {number}: expected {len(COLUMNS)} fields "
            f"({', '.join(COLUMNS)}), got {len(fields)}. {_RESTORE}"
        )
        raise DataError(msg)
    return tuple(
        _parse_field(field=field, column=column, number=number, shown=shown)
        for field, column in zip(fields, COLUMNS, strict=True)
    )


def _parse_field(*, field: str, column: str, number: int, shown: str) -> float | int:
    try:
        if column in INTEGER_COLUMNS:
            return int(field.replace(",", ""))
        value = float(field)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        kind = "an integer" if column in INTEGER_COLUMNS else "a finite number"
        msg = f"Life table {shown}, line {number}, column {column!r}: {field!r} is not {kind}. "
        raise DataError(msg + _RESTORE)
    return value


def _check(*, table: pd.DataFrame, shown: str) -> None:
    """Refuse ages out of order, probabilities outside [0, 1] and survivors that increase."""
    steps = np.diff(table["age"].to_numpy())
    if table["age"].iloc[0] < 0 or (steps <= 0).any():
        msg = f"Life table {shown}: ages must be non-negative and strictly increasing. {_RESTORE}"
        raise DataError(msg)
    for sex in ("male", "female"):
        q, survivors = table[f"q_{sex}"], table[f"l_{sex}"]
        outside = table["age"][(q < 0) | (q > 1)].tolist()
        if outside:
            msg = f"Life table {shown}: q_{sex} is outside [0, 1] at ages {outside}. {_RESTORE}"
            raise DataError(msg)
        rising = table["age"].iloc[1:][np.diff(survivors.to_numpy()) > 0].tolist()
        negative = table["age"][survivors < 0].tolist()
        if rising or negative:
            msg = (
                f"Life table {shown}: l_{sex} (survivors) must be non-negative and "
                f"non-increasing with age; it rises at ages {rising} and is negative at ages "
                f"{negative}. {_RESTORE}"
            )
            raise DataError(msg)


def _female_share(value: float) -> float:
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = math.nan
    if not 0.0 <= share <= 1.0:  # also refuses NaN
        msg = f"female_share must be a number in [0, 1], got {value!r}."
        raise DataError(msg)
    return share


def _ages(ages: Iterable[int]) -> list[int]:
    values = np.asarray(list(ages) if not isinstance(ages, np.ndarray) else ages)
    if values.ndim != 1 or values.size == 0:
        msg = f"ages must be a non-empty sequence of integers, got shape {values.shape}."
        raise DataError(msg)
    if values.dtype.kind not in "iu":
        numeric = values.dtype.kind == "f" and np.isfinite(values).all()
        if not numeric or (values != np.round(values)).any():
            msg = f"ages must be integers (years of exact age), got {values.tolist()!r}."
            raise DataError(msg)
    return [int(a) for a in values]
