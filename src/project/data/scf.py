"""Moments of log wealth and log permanent income by age group from the SCF summary table.

The table (``data/scf/WealthIncomeStats.csv``, see data/README.md) has one row per education
level x survey wave x five-year age group, with ``All`` marking a pooled dimension.
``scf_moments`` picks one education level and one wave (or the pooled ones) and returns one row
per age group with the moments and their sampling variances.

``variance_of_mean_*`` is ``sd ** 2 / n_households``, with ``n_households = n_obs / 5``: ``obs``
counts the records of the SCF summary files, which hold five imputed copies (implicates) of every
household, so the independent observations are a fifth of them. It is the variance of a sample
mean under simple random sampling of households; it still ignores the SCF's design effects (the
weights and the oversample of wealthy households) and the between-implicate imputation variance,
so it is a lower bound of the true sampling variance rather than an estimate of it.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from project.data.vendored import display_path
from project.errors import DataError

GROUP_COLUMNS = ("Educ", "YEAR", "Age_grp")
MOMENT_SOURCES = {
    "log_wealth_to_income": "lnNrmWealth",
    "log_permanent_income": "lnPermIncome",
    "log_wealth": "lnWealth",
}
"""Our name of each moment -> the prefix of its ``.mean`` and ``.sd`` columns in the file."""
COUNT_COLUMNS = ("w.obs", "obs")
NUMERIC_COLUMNS = (
    *COUNT_COLUMNS,
    *(f"{prefix}.{stat}" for prefix in MOMENT_SOURCES.values() for stat in ("mean", "sd")),
)
REQUIRED_COLUMNS = (*GROUP_COLUMNS, *NUMERIC_COLUMNS)
MISSING_MARKERS = frozenset({"", "NA"})
"""Cells read as missing (R writes ``NA``). A selected row whose statistics are all missing is a
group without observations and is left out (with a warning); one missing some is refused."""
ALL = "All"
AGE_GROUP = re.compile(r"\((\d+),(\d+)\]")
MIN_OBS = 2
IMPLICATES = 5
"""Imputed copies of each household in the SCF summary files (``obs`` counts all of them)."""
WAVES = (1995, 1998, 2001, 2004, 2007, 2010, 2013, 2016, 2019)
"""The SCF waves of the vendored table (its ``YEAR`` values besides ``All``; checked against the
file by ``tests/test_data.py``): ``YEAR = All`` pools them without re-weighting."""
FIRST_DATA_LINE = 2
"""The file's line number of the first data row (line 1 is the header)."""
_RESTORE = "Restore the file from git (see data/README.md)."

logger = logging.getLogger(__name__)


def moment_columns() -> list[str]:
    """Return the columns of ``scf_moments``'s table, in order."""
    columns = ["age_min", "age_max", "n_obs", "n_households", "weighted_count"]
    for name in MOMENT_SOURCES:
        columns += [f"mean_{name}", f"sd_{name}", f"variance_of_mean_{name}"]
    return columns


def scf_moments(*, path: Path, education: str = ALL, year: str | int = ALL) -> pd.DataFrame:
    """Return the moments of one education level and survey wave, one row per age group.

    Ages of a row are ``age_min + 1`` to ``age_max`` (the file's groups are left-open,
    ``(50,55]``). Raise ``DataError`` naming the file, the row or column and what to do when
    the file is missing or malformed or ``education``/``year`` is not in it.
    """
    shown = display_path(path)
    frame = _read(path=Path(path), shown=shown)
    numbers = _numbers(frame=frame, shown=shown)
    rows = _select(frame=frame, shown=shown, education=education, year=str(year))
    empty = [i for i in rows if numbers.loc[i].isna().all()]
    if empty:
        logger.warning(
            "%s: no observations (all statistics NA) for Educ=%s, YEAR=%s, Age_grp %s; "
            "these groups are left out.",
            shown,
            education,
            year,
            ", ".join(frame.loc[empty, "Age_grp"]),
        )
        rows = [i for i in rows if i not in empty]
    if not rows:
        msg = f"SCF table {shown} has no observations for Educ={education!r}, YEAR={year!s}."
        raise DataError(msg + " Pick other values (DATA in src/project/config.py).")
    records = [
        _record(text=frame.loc[i], values=numbers.loc[i], line=i + FIRST_DATA_LINE, shown=shown)
        for i in rows
    ]
    table = pd.DataFrame.from_records(records, columns=moment_columns())
    table = table.sort_values("age_min", kind="stable").reset_index(drop=True)
    duplicated = table["age_min"][table["age_min"].duplicated()].tolist()
    if duplicated:
        msg = (
            f"{shown} has several rows for Educ={education!r}, YEAR={year!s} and the age "
            f"groups starting at {duplicated}: keep one row per group (restore the file)."
        )
        raise DataError(msg)
    logger.info(
        "Read %d age groups of the SCF (Educ=%s, YEAR=%s) from %s.",
        len(table),
        education,
        year,
        shown,
    )
    return table


def _read(*, path: Path, shown: str) -> pd.DataFrame:
    if not path.is_file():
        msg = f"SCF table {shown} is missing: restore it from git (see data/README.md)."
        raise DataError(msg)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        msg = f"SCF table {shown} is no readable CSV file ({error}): restore it from git."
        raise DataError(msg) from error
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        msg = (
            f"SCF table {shown} lacks the columns {missing}; it needs {list(REQUIRED_COLUMNS)}. "
            "Restore the file from git (see data/README.md)."
        )
        raise DataError(msg)
    if frame.empty:
        msg = f"SCF table {shown} has no rows: restore it from git."
        raise DataError(msg)
    return frame


def _numbers(*, frame: pd.DataFrame, shown: str) -> pd.DataFrame:
    """Return the numeric columns as floats (NaN where missing); refuse text that is no number."""
    numbers = {}
    for column in NUMERIC_COLUMNS:
        text = frame[column].str.strip()
        values = pd.to_numeric(text.where(~text.isin(MISSING_MARKERS)), errors="coerce")
        bad = values.isna() & ~text.isin(MISSING_MARKERS)
        if bad.any():
            first = int(np.flatnonzero(bad.to_numpy())[0])
            msg = (
                f"SCF table {shown}, column {column!r}, line {first + FIRST_DATA_LINE}: "
                f"{frame[column].iloc[first]!r} is no number ({int(bad.sum())} such cells in "
                "the column). Restore the file from git (see data/README.md)."
            )
            raise DataError(msg)
        numbers[column] = values.astype(float)
    return pd.DataFrame(numbers, index=frame.index)


def _select(*, frame: pd.DataFrame, shown: str, education: str, year: str) -> list[int]:
    """Return the index of the rows of ``education`` and ``year`` by age group."""
    for column, value, argument in (("Educ", education, "education"), ("YEAR", year, "year")):
        known = sorted(set(frame[column].str.strip()))
        if value not in known:
            msg = (
                f"{argument}={value!r} is not in column {column!r} of SCF table {shown}; known "
                f"values are {known}. Pick one of them (e.g. in DATA in src/project/config.py)."
            )
            raise DataError(msg)
    chosen = (
        (frame["Educ"].str.strip() == education)
        & (frame["YEAR"].str.strip() == year)
        & (frame["Age_grp"].str.strip() != ALL)
    )
    if not chosen.any():
        msg = (
            f"SCF table {shown} has no age-group rows for Educ={education!r} and YEAR={year!r} "
            "(only pooled ones): restore the file from git or pick other values."
        )
        raise DataError(msg)
    return frame.index[chosen].tolist()


def _record(*, text: pd.Series, values: pd.Series, line: int, shown: str) -> dict[str, object]:
    """Return one age group's moments; raise naming the line when a value is unusable."""
    where = (
        f"SCF table {shown}, line {line} (Educ={text['Educ']}, YEAR={text['YEAR']}, "
        f"Age_grp={text['Age_grp']})"
    )
    age_min, age_max = _age_bounds(label=text["Age_grp"].strip(), where=where)
    for column in NUMERIC_COLUMNS:
        if not math.isfinite(values[column]):
            msg = f"{where}: {column!r} is {text[column]!r}, not a finite number. {_RESTORE}"
            raise DataError(msg)
    n_obs = values["obs"]
    if n_obs < MIN_OBS or n_obs != round(n_obs):
        msg = f"{where}: 'obs' must be an integer >= {MIN_OBS}, got {text['obs']!r}. {_RESTORE}"
        raise DataError(msg)
    if values["w.obs"] <= 0:
        msg = f"{where}: 'w.obs' must be positive, got {text['w.obs']!r}. {_RESTORE}"
        raise DataError(msg)
    record: dict[str, object] = {
        "age_min": age_min,
        "age_max": age_max,
        "n_obs": int(n_obs),
        "n_households": n_obs / IMPLICATES,
        "weighted_count": float(values["w.obs"]),
    }
    for name, prefix in MOMENT_SOURCES.items():
        sd = float(values[f"{prefix}.sd"])
        if sd <= 0:
            msg = f"{where}: '{prefix}.sd' must be positive, got {text[f'{prefix}.sd']!r}. "
            raise DataError(msg + _RESTORE)
        record[f"mean_{name}"] = float(values[f"{prefix}.mean"])
        record[f"sd_{name}"] = sd
        record[f"variance_of_mean_{name}"] = sd**2 / (n_obs / IMPLICATES)
    return record


def _age_bounds(*, label: str, where: str) -> tuple[int, int]:
    match = AGE_GROUP.fullmatch(label)
    if match is None or int(match[2]) <= int(match[1]):
        msg = (
            f"{where}: age group {label!r} is not of the form '(a,b]' with a < b (ages a+1 to "
            f"b). {_RESTORE}"
        )
        raise DataError(msg)
    return int(match[1]), int(match[2])
