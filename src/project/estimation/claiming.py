"""A param calibrated to a claiming fact, jointly with an estimation of the others.

The wealth moments of the SCF do not pin down when households retire, yet the retirement age
shapes how much they save before it: in ``project.models.lifecycle_normalised`` the cost of
working (``work_cost``) moves every household's claim from 70 to 62 and, with it, the
preferences that fit the wealth profile (crra 0.8 at a cost of 0.2 or 0.5, 1.2 at 0.6 or 0.65,
on the SCF's moments of ages 26-60). Such a param is calibrated to a published fact about
claiming (``claim_share``: the share of the workers alive at ``age`` who claim there) while
the preferences are estimated, by a fixed point (``calibrate_and_estimate``): estimate at the
param, set the param so that the simulation at the estimates meets the fact, repeat until the
param moves less than a tolerance.

``claim_share`` is a step function of the param (a simulated household claims or not); it
rises with the cost of working, which ``calibrate`` brackets and bisects (``scipy``'s
``brentq`` finds the step that crosses the target to ``tolerance``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from project.dispatch import solve
from project.estimation.choice_count import ChoiceCount
from project.estimation.errors import EstimationError
from project.estimation.inputs import corrected_for_simulation
from project.estimation.result import MSMResult
from project.regimes.spec import RegimeModel
from project.simulation import simulate

logger = logging.getLogger("project.estimation")


def claiming_table(
    *,
    model: RegimeModel,
    params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any],
    seed: int,
    chooser: str = "working",
    action: str = "claim",
    label: str = "claim",
) -> pd.DataFrame:
    """Return, by age, the simulated subjects of the ``chooser`` regime and those who claim.

    Columns ``deciding`` and ``claiming``, indexed by age. A subject claims when her ``action``
    takes ``label`` (for ``lifecycle_normalised``: a worker who claims the pension and retires
    from the next year).
    """
    solution = solve(model=model, params=dict(params), log_level="off")
    panel = simulate(
        params=dict(params),
        initial_conditions=initial_conditions,
        solution=solution,
        seed=seed,
        log_level="off",
    ).to_dataframe()
    deciding = panel.loc[panel["regime"] == chooser]
    claims = (deciding[action] == label).astype(int)
    return (
        pd.DataFrame({"age": deciding["age"].astype(int), "deciding": 1, "claiming": claims})
        .groupby("age")
        .sum()
    )


def claiming_table_of_counts(*, ages: np.ndarray, counts: np.ndarray) -> pd.DataFrame:
    """Return ``claiming_table``'s frame from per-period counts (periods x (deciding, choosing)).

    The ages where nobody of the chooser's regime lives are left out, as the table's are.
    """
    if not np.all(np.isfinite(counts)):
        msg = "The choice table is not finite: the solve failed at these params."
        raise EstimationError(msg)
    numbers = np.asarray(counts).astype(np.int64)
    frame = pd.DataFrame(
        {
            "age": np.asarray(ages).astype(int),
            "deciding": numbers[:, 0],
            "claiming": numbers[:, 1],
        }
    )
    return frame.loc[frame["deciding"] > 0].set_index("age")


def choice_counts_of_table(
    *,
    model: RegimeModel,
    params: Mapping[str, Any],
    initial_conditions: Mapping[str, Any],
    seed: int,
    choice: ChoiceCount,
) -> np.ndarray:
    """Return (deciding, choosing) of ``choice`` from a solve, a simulation and its table."""
    table = claiming_table(
        model=model,
        params=params,
        initial_conditions=initial_conditions,
        seed=seed,
        chooser=choice.regime,
        action=choice.action,
        label=choice.label,
    )
    age = int(choice.age)
    if age not in table.index:
        return np.zeros(2)
    return table.loc[age, ["deciding", "claiming"]].to_numpy(dtype=float)


def claim_share(table: pd.DataFrame, *, age: int) -> float:
    """Return the share of the subjects deciding at ``age`` who claim (``claiming_table``)."""
    if age not in table.index or table.loc[age, "deciding"] == 0:
        msg = (
            f"No simulated subject decides at age {age}: the claiming share there is undefined. "
            "Choose an age the model's workers reach."
        )
        raise EstimationError(msg)
    return float(table.loc[age, "claiming"] / table.loc[age, "deciding"])


def claiming_ages(table: pd.DataFrame) -> dict[int, float]:
    """Return the share of all simulated claims made at each age (``claiming_table``)."""
    claims = table["claiming"]
    return {int(age): float(n / claims.sum()) for age, n in claims.items() if n > 0}


BRACKET = 0.02
"""Half the width of the first bracket ``calibrate`` tries around a guess (widened fourfold
until it holds the target)."""


def calibrate(
    *,
    share_at: Callable[[float], float],
    target: float,
    bounds: tuple[float, float],
    tolerance: float,
    guess: float | None = None,
) -> float:
    """Return the param whose ``share_at`` crosses ``target`` (a share rising with the param).

    With a ``guess``, the search brackets ``guess`` plus and minus ``BRACKET`` within the
    bounds, widened fourfold until the bracket holds the target; then ``brentq`` to
    ``tolerance``. Raises ``EstimationError`` when the target lies outside the shares at the
    bounds.
    """
    low, high = (float(b) for b in bounds)
    half = BRACKET if guess is not None else np.inf
    centre = float(guess) if guess is not None else (low + high) / 2
    while True:
        lo, hi = max(low, centre - half), min(high, centre + half)
        at_lo, at_hi = share_at(lo), share_at(hi)
        if at_lo <= target <= at_hi:
            break
        if lo == low and hi == high:
            msg = (
                f"The claiming share runs from {at_lo:.3f} to {at_hi:.3f} between the param's "
                f"bounds {bounds}; the target {target:.3f} lies outside. Widen the bounds or "
                "check that the share rises with the param."
            )
            raise EstimationError(msg)
        half *= 4
    if at_lo == target:
        return float(lo)
    if at_hi == target:
        return float(hi)
    return float(brentq(lambda x: share_at(x) - target, lo, hi, xtol=tolerance))


@dataclass(frozen=True)
class Round:
    """One round of the fixed point.

    ``param``: the calibrated param the estimates were made at; ``share``: the share there;
    ``calibrated``: the param that meets the target at these estimates (the next round's).
    """

    param: float
    estimates: dict[str, float]
    share: float
    calibrated: float


def calibrate_and_estimate(
    *,
    estimate: Callable[[float], dict[str, float]],
    share_at: Callable[[float, Mapping[str, float]], float],
    target: float,
    start: float,
    bounds: tuple[float, float],
    tolerance: float,
    max_rounds: int = 8,
) -> list[Round]:
    """Return the rounds of the fixed point; the last one's ``calibrated`` is the settled param.

    ``estimate(param)``: the estimates with the calibrated param at ``param``;
    ``share_at(param, estimates)``: the claiming share there. The fixed point has settled when
    the calibrated param moves less than ``tolerance`` from the one the estimates were made
    at. Raises ``EstimationError`` when ``max_rounds`` rounds do not settle.
    """
    rounds: list[Round] = []
    param = float(start)
    for _ in range(max_rounds):
        estimates = estimate(param)
        calibrated = calibrate(
            share_at=lambda x, e=estimates: share_at(x, e),
            target=target,
            bounds=bounds,
            guess=param,
            tolerance=tolerance,
        )
        rounds.append(Round(param, estimates, share_at(param, estimates), calibrated))
        logger.info(
            "Calibration round %d: %.4f -> %.4f at %s", len(rounds), param, calibrated, estimates
        )
        if abs(calibrated - param) < tolerance:
            return rounds
        param = calibrated
    moves = [round(r.param, 4) for r in rounds]
    msg = (
        f"The calibration did not settle in {max_rounds} rounds (the param went {moves}). Raise "
        "max_rounds or the tolerance."
    )
    raise EstimationError(msg)


def calibrated_covariance(
    *,
    result: MSMResult,
    cost_slope: np.ndarray,
    cost_gradient: np.ndarray,
) -> np.ndarray:
    """Return the estimates' covariance when the calibrated param follows them.

    The estimate solves G_theta' W g(theta, k(theta)) = 0 at the fixed point, with k(theta) the
    calibration. Linearised in the data moments, d theta = -(G_theta' W G)^-1 G_theta' W d m
    with the total Jacobian G = G_theta + (dm/dk)(dk/dtheta)'; so Cov = A Omega A' with
    A = (G_theta' W G)^-1 G_theta' W and Omega the moments' covariance with the simulation
    noise. ``cost_slope``: dm/dk (one per moment); ``cost_gradient``: dk/dtheta (one per
    param). The fact the param is calibrated to is taken as exact.
    """
    partial = np.asarray(result.jacobian, dtype=float)
    total = partial + np.outer(np.asarray(cost_slope), np.asarray(cost_gradient))
    weighting = np.asarray(result.weighting, dtype=float)
    omega = corrected_for_simulation(
        covariance=result.data_covariance, n_data=result.n_data, n_simulated=result.n_simulated
    )
    mapping = np.linalg.solve(partial.T @ weighting @ total, partial.T @ weighting)
    covariance = mapping @ omega @ mapping.T
    return (covariance + covariance.T) / 2
