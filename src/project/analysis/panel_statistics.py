"""Statistics of a simulated panel of the pipeline's model: levels, claims, medians.

The panel is the simulation bundle's table (``project.pipeline.save_variant_bundle``) of
``lifecycle_normalised``: wealth and consumption are stated in units of the row's normaliser
(permanent income while working, the pension after the claim) and ``income_unit`` is that
normaliser over permanent income at the first age, so ``wealth * income_unit`` is cash on hand
in units of permanent income at 25: levels, comparable across households, ages and variants
(the variants share the simulated shocks). A worker who decides at age t to claim works that
year, is retired from t + 1 (regime ``retired``) and draws her first pension then: her
claiming age is t + 1 (``CLAIM_LAG``).

``living_levels`` keeps the rows of the living with levels and flags; ``claims`` gives each
household's claiming age and the change of its consumption from its last working year to its
first retired year, in levels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from project.calibration.panel import living_rows
from project.models.lifecycle_normalised import CLAIM_LAG

WORKING, RETIRED, CLAIM = "working", "retired", "claim"
NEEDED = ("subject_id", "age", "regime", "claim", "wealth", "consumption", "income_unit")
HALF_TOLERANCE = 1e-12


def living_levels(panel: pd.DataFrame) -> pd.DataFrame:
    """Return the living rows, sorted by subject and age, with levels and flags.

    Columns: ``subject_id``, ``age``, ``retired`` (in the retired regime), ``deciding`` (a
    worker whose claim was drawn: every worker), ``claims`` (a worker who claims this year),
    ``wealth`` and ``consumption`` in levels (units of permanent income at the first age),
    ``assets_ratio`` (the model's wealth-to-income ratio, the SCF statistic) where the panel
    has ``wealth_to_income``. Raises ``KeyError`` naming the columns the panel lacks.
    """
    missing = [c for c in NEEDED if c not in panel.columns]
    if missing:
        msg = (
            f"The panel lacks the columns {missing}; it has {list(panel.columns)}. It must be "
            "a simulation bundle of lifecycle_normalised (project.pipeline.save_variant_bundle)."
        )
        raise KeyError(msg)
    alive = living_rows(panel=panel)
    regime = alive["regime"].astype(str).to_numpy()
    claim = alive["claim"].astype("string").fillna("").to_numpy(dtype=str)
    unit = alive["income_unit"].to_numpy(dtype=float)
    frame = pd.DataFrame(
        {
            "subject_id": alive["subject_id"].to_numpy(),
            "age": alive["age"].to_numpy(dtype=float),
            "retired": regime == RETIRED,
            "deciding": regime == WORKING,
            "claims": (regime == WORKING) & (claim == CLAIM),
            "wealth": alive["wealth"].to_numpy(dtype=float) * unit,
            "consumption": alive["consumption"].to_numpy(dtype=float) * unit,
        }
    )
    if "wealth_to_income" in alive.columns:
        frame["assets_ratio"] = alive["wealth_to_income"].to_numpy(dtype=float)
    return frame.sort_values(["subject_id", "age"], kind="stable").reset_index(drop=True)


def claims(frame: pd.DataFrame) -> pd.DataFrame:
    """Return one row per household: whether and at what age it claims, its consumption change.

    ``frame`` is ``living_levels``'s. ``claim_age``: its claiming age, the age of its first
    pension (its decision's age plus ``CLAIM_LAG``; missing if it never decides to claim while
    alive); ``consumption_change``: log consumption (levels) in its first retired year less
    that in its last working year, the year of the decision (missing if it dies in between).
    """
    ids = frame["subject_id"].to_numpy()
    subjects = pd.DataFrame(index=pd.Index(np.unique(ids), name="subject_id"))
    claiming = frame.loc[frame["claims"].to_numpy(dtype=bool)]
    first = claiming.groupby("subject_id", sort=True).head(1)
    position = first.index.to_numpy()
    following = np.minimum(position + 1, len(frame) - 1)
    consecutive = (
        (position + 1 < len(frame))
        & (ids[following] == ids[position])
        & (frame["age"].to_numpy()[following] == frame["age"].to_numpy()[position] + 1)
        & frame["retired"].to_numpy(dtype=bool)[following]
    )
    consumption = frame["consumption"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.log(consumption[following]) - np.log(consumption[position])
    at_claim = pd.DataFrame(
        {
            "claim_age": frame["age"].to_numpy()[position] + CLAIM_LAG,
            "consumption_change": np.where(consecutive & np.isfinite(change), change, np.nan),
        },
        index=pd.Index(ids[position], name="subject_id"),
    )
    subjects = subjects.join(at_claim, how="left")
    subjects["claimed"] = subjects["claim_age"].notna()
    return subjects.reset_index()


def share_claiming_at(frame: pd.DataFrame, *, age: float) -> float:
    """Return the share of the workers alive a year before ``age`` who claim at ``age``.

    Those deciding at ``age - CLAIM_LAG``; NaN without any.
    """
    decided = frame["age"] == age - CLAIM_LAG
    deciding = frame.loc[frame["deciding"].to_numpy(dtype=bool) & decided]
    return float(deciding["claims"].mean()) if len(deciding) else float("nan")


def at_ages(frame: pd.DataFrame, column: str, *, ages: Sequence[float]) -> pd.Series:
    """Return ``column`` of the rows whose age is in ``ages``."""
    return frame.loc[np.isin(frame["age"].to_numpy(), np.asarray(ages, dtype=float)), column]


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
