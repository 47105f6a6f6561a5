"""Weighted statistics of a simulated panel's living rows: retirement, income, means, medians.

``with_weights`` keeps the living rows of a panel (``SimulationResult.to_dataframe()``) with
the subjects' calibrated weights; ``retirements`` finds each subject's first retired year (the
year it is retired or chooses to retire, ``is_retired``) and the log change of its consumption
from the year before; ``income_of`` gives each row's income (labour income while working, the
pension in retirement) from the variant's parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.profiles import is_retired
from project.calibration.panel import living_rows
from project.calibration.weighting import attach_weights

HALF_TOLERANCE = 1e-12


def with_weights(*, panel: pd.DataFrame, weights: pd.DataFrame | None) -> pd.DataFrame:
    """Return the living rows, sorted by subject and age, with ``retired`` and ``weight``.

    Columns: ``subject_id``, ``age``, ``wealth``, ``consumption``, ``retired`` (0/1),
    ``weight`` (1 without ``weights``), and ``pref_type``, ``income_code`` (-1: missing),
    ``labor_income`` where the panel has them; ``attrs["n_income"]``: the income categories.
    """
    alive = living_rows(panel=panel)
    if "subject_id" not in alive.columns:
        alive = alive.assign(subject_id=np.zeros(len(alive), dtype=np.int64))
    weight = (
        np.ones(len(alive))
        if weights is None
        else attach_weights(panel=alive[["subject_id"]], weights=weights)["weight"].to_numpy(
            dtype=float
        )
    )
    frame = pd.DataFrame(
        {
            "subject_id": alive["subject_id"].to_numpy(),
            "age": alive["age"].to_numpy(dtype=float),
            "wealth": alive["wealth"].to_numpy(dtype=float),
            "consumption": alive["consumption"].to_numpy(dtype=float),
            "retired": is_retired(alive).to_numpy(dtype=float),
            "weight": weight,
        }
    )
    if "pref_type" in alive.columns:
        frame["pref_type"] = alive["pref_type"].to_numpy()
    if "labor_income" in alive.columns:
        frame["labor_income"] = alive["labor_income"].to_numpy(dtype=float)
    n_income = None
    if "income" in alive.columns:
        income = alive["income"]
        if isinstance(income.dtype, pd.CategoricalDtype):
            frame["income_code"] = income.cat.codes.to_numpy(dtype=np.int64)
            n_income = len(income.cat.categories)
        else:
            frame["income_code"] = pd.to_numeric(income).fillna(-1).to_numpy(dtype=np.int64)
    frame = frame.sort_values(["subject_id", "age"], kind="stable").reset_index(drop=True)
    frame.attrs["n_income"] = n_income
    return frame


def retirements(frame: pd.DataFrame) -> pd.DataFrame:
    """Return one row per subject: weight, type, whether and at what age it first retires.

    ``consumption_change`` is log consumption in the first retired year less that in the
    year before (missing when the subject is retired in its first year or the years are not
    consecutive). ``frame`` is ``with_weights``'s.
    """
    subjects = frame.groupby("subject_id", sort=True).agg(
        weight=("weight", "first"),
        **({"pref_type": ("pref_type", "first")} if "pref_type" in frame.columns else {}),
    )
    retired = frame["retired"].to_numpy() > 0
    first = frame.loc[retired].groupby("subject_id", sort=True).head(1)
    position = first.index.to_numpy()
    previous = position - 1
    ids, ages = frame["subject_id"].to_numpy(), frame["age"].to_numpy()
    consumption = frame["consumption"].to_numpy()
    has_previous = previous >= 0
    previous = np.where(has_previous, previous, 0)
    consecutive = (
        has_previous & (ids[previous] == ids[position]) & (ages[previous] == ages[position] - 1)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.log(consumption[position]) - np.log(consumption[previous])
    change = np.where(consecutive & np.isfinite(change), change, np.nan)
    at_first = pd.DataFrame(
        {"retirement_age": ages[position], "consumption_change": change},
        index=pd.Index(ids[position], name="subject_id"),
    )
    subjects = subjects.join(at_first, how="left")
    subjects["retires"] = subjects["retirement_age"].notna()
    return subjects.reset_index()


def income_of(frame: pd.DataFrame, *, specification: Mapping[str, Any] | None) -> pd.Series | None:
    """Return each row's income: labour income while working, the pension once retired.

    Labour income is the panel's ``labor_income`` or ``wage * exp(node)`` of the Rouwenhorst
    nodes of ``income_rho`` and ``income_sigma`` (the model's ``labor_income``). None when
    ``specification`` (a ``model.json`` content) or the panel lack what it needs.
    """
    if specification is None:
        return None
    params, sizes = specification.get("params", {}), specification.get("sizes", {})
    if "pension" not in params:
        return None
    labour = (
        frame["labor_income"].to_numpy(dtype=float)
        if "labor_income" in frame.columns
        else _labour_income(frame, params=params, sizes=sizes)
    )
    if labour is None:
        return None
    retired = frame["retired"].to_numpy() > 0
    income = np.where(retired, float(params["pension"]), labour)
    if not np.isfinite(income).all():
        return None
    return pd.Series(income, index=frame.index)


def weighted_mean(values: Sequence[float] | pd.Series, weights: Sequence[float]) -> float:
    """Return the weighted mean (NaN without weight)."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    total = weights.sum()
    return float(np.dot(values, weights) / total) if total > 0 else float("nan")


def weighted_median(values: Sequence[float] | pd.Series, weights: Sequence[float]) -> float:
    """Return the weighted median; with equal weights it is the ordinary median."""
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    keep = weights > 0
    values, weights = values[keep], weights[keep]
    if not values.size:
        return float("nan")
    order = np.argsort(values, kind="stable")
    values, share = values[order], np.cumsum(weights[order]) / weights.sum()
    index = int(np.searchsorted(share, 0.5 - HALF_TOLERANCE))
    if abs(share[index] - 0.5) <= HALF_TOLERANCE and index + 1 < values.size:
        return float((values[index] + values[index + 1]) / 2)
    return float(values[index])


def _labour_income(
    frame: pd.DataFrame, *, params: Mapping[str, Any], sizes: Mapping[str, Any]
) -> np.ndarray | None:
    from project.models.income import rouwenhorst_nodes  # noqa: PLC0415 (JAX, only here)

    n_nodes = frame.attrs.get("n_income") or sizes.get("n_income")
    needed = ("wage", "income_rho", "income_sigma")
    if "income_code" not in frame.columns or n_nodes is None or not set(needed) <= set(params):
        return None
    nodes = np.asarray(
        rouwenhorst_nodes(
            n_nodes=int(n_nodes),
            rho=float(params["income_rho"]),
            sigma=float(params["income_sigma"]),
        ),
        dtype=float,
    )
    codes = frame["income_code"].to_numpy()
    valid = (codes >= 0) & (codes < nodes.size)
    return np.where(
        valid, float(params["wage"]) * np.exp(nodes[np.clip(codes, 0, nodes.size - 1)]), np.nan
    )
