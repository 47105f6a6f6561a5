"""A life-cycle model that can meet the SCF: from 25 to 100, normalised by permanent income.

Three regimes, solved by DC-EGM (``continuation_scale`` carries the normalisation):

- *working* (state: cash on hand over permanent income, m = M / P; actions: claim the pension
  or not, consumption). Permanent income grows by the age profile G_t and a mean-one
  permanent shock psi'; income is P theta' with a mean-one transitory shock, or zero with
  probability ``UNEMPLOYMENT_PROBABILITY`` (``buffer_stock``'s process, its shocks stated as
  equiprobable bins whose values by age are params). Working costs the share ``work_cost`` of
  consumption (utility ((1 - work_cost) c)^(1 - rho) / (1 - rho), so the model stays
  homothetic). The claim is decided in the last working year and the pension starts the
  next (``CLAIM_LAG``): a worker who decides at age t works that year and claims at t + 1,
  the age of her first benefit, which sets her claiming factor. The first claim is at
  ``EARLIEST_CLAIM`` (decided a year before), and none is forced: the household claims when
  working no longer pays.
- *retired* (state: cash on hand over the pension, m = M / B). Deciding at age t to claim at
  t + 1 fixes the pension B = ``replacement`` x ``claiming_factor[t]`` x ``benefit_scale`` x P_t
  for life, ``claiming_factor[t]`` the US factor of the claiming age t + 1 (reduced before the
  full retirement age, raised by delayed credits up to 70; ``CLAIMING_FACTORS``;
  ``benefit_scale`` 1 pays the schedule, a counterfactual pays less). From the claim on,
  m' = R (m - c) + 1.
- *dead*: a warm-glow bequest ``bequest_weight * (m + bequest_shift)^(1 - rho) / (1 - rho)`` of
  the cash on hand the household would have had (the year's income included), in the units of
  the regime it leaves (the shift scales with them).

Taste shocks (EV1, on the claim) are additive in normalised utility: their scale must stay
well below |V| at the top of the wealth grid, where CRRA values with rho > 1 approach zero (at
rho = 3 and a scale of 0.001, a savings grid to 100 gave V >= 0 there, which ``solve``
reports); hence the grid to 40 times permanent income. The shocks also cap the CRRA a search may
visit (at crra = 5 and beta = 0.9, V at 13 times permanent income is already above 0 at 98):
``taste_shocks=False`` makes the claim deterministic (DC-EGM's upper envelope), which solves at
every crra tried from 1.1 to 8. Near crra = 1 (log utility, where V(M, P) is additive in log P,
not a power of P) V's consumption equivalent overflows: keep a search away from it.

The SCF's moment: ``wealth_to_income``, the assets kept at the period's end (m - c) in units of
permanent income (``project.estimation.lifecycle``). ``lifecycle_normalised_params.default_params``
gives the params of the vendored profiles and life table.

Survival: the parameter array ``survival_probabilities`` (one per period, from the vendored
life table in the pipeline). With m in units of P (working) or B (retired), V(M, P) =
P^(1 - rho) v(M / P): a worker's continuation is weighted by (G_t psi')^(1 - rho) if she keeps
working and by (replacement x claiming_factor[t])^(1 - rho) if she claims. The last period
(age 99) consumes what is left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from project.actions import ContinuousAction
from project.errors import ParamsError
from project.grids import DiscreteGrid, LogSpacedGrid
from project.model import Model
from project.models.buffer_stock import (
    N_NODES,
    UNEMPLOYMENT_PROBABILITY,
    borrowing_constraint,
    income_shocks,
    inverse_marginal_utility,
    inverse_utility,
    node_tables,
    permanent_shock,
    transitory_income,
    utility,
)
from project.models.lifecycle_regimes import bequest_value, survival_from_table
from project.regimes import RegimeModel, TerminalRegime
from project.savings_grids import exponential_grid

FIRST_AGE, LAST_AGE = 25, 99
EARLIEST_CLAIM = 62
CLAIM_LAG = 1
"""Years between the decision to claim and the first benefit: a worker deciding at age t (her
last working year) claims at t + 1. ``EARLIEST_CLAIM`` and ``CLAIMING_FACTORS`` are by the age
of the first benefit, the claiming age."""
CLAIMING_FACTORS = {62: 0.70, 63: 0.75, 64: 0.80, 65: 0.8667, 66: 0.9333, 67: 1.0, 68: 1.08}
CLAIMING_FACTORS |= {69: 1.16, 70: 1.24}
"""The share of the full pension paid to a claimant by claiming age (US Social Security for a
full retirement age of 67: 5/9 % a month for the first 36 months early, 5/12 % a month beyond;
8 % a year of delayed credits up to 70, none after)."""
DEFAULT_PARAMS = {
    "beta": 0.96,
    "crra": 3.0,
    "interest_factor": 1.03,
    "replacement": 0.6821,
    "benefit_scale": 1.0,
    "work_cost": 0.2,
    "bequest_weight": 1.0,
    "bequest_shift": 1.0,
    "taste_shock_scale": 1e-3,
}
"""Calibrated defaults; ``replacement`` is the Cocco, Gomes and Maenhout (2005) high-school
replacement rate HARK lists; ``benefit_scale`` is the share of the scheduled pension paid (1:
the law's schedule; a policy counterfactual lowers it); crra and beta are estimated and
work_cost calibrated by the pipeline; the bequest params are set for illustration."""


SOURCES = {
    "interest_factor": "Carroll (SolvingMicroDSOPs)",
    "replacement": "Cocco, Gomes and Maenhout (2005), high school",
    "benefit_scale": "Policy; the cut: 2024 Trustees Report",
    "claiming_factor": "US rule, full retirement age 67",
    "income_growth": "Cocco, Gomes and Maenhout (2005), high school",
    "permanent_nodes": "Sabelhaus and Song (2010)",
    "transitory_nodes": "Sabelhaus and Song (2010)",
    "unemployment_risk": "Carroll (1992)",
    "survival_probabilities": "SSA period life table",
    "bequest_weight": "Illustrative",
    "bequest_shift": "Illustrative",
    "taste_shock_scale": "None (the claim is deterministic)",
}
"""Where each calibrated param of ``lifecycle_normalised_params.default_params`` comes from (the
paper's parameter table); crra and beta are estimated and work_cost calibrated by the pipeline."""

CLAIMING_FACT = {"age": 62, "share": 0.36}
"""The share of a cohort reaching 62 that claims the pension at 62: 36 % for men in the latest
cohort of Munnell and Chen (2015, "Trends in Social Security Claiming", CRR Issue in Brief
15-8, from unpublished SSA data on everyone eligible), down from 56 % in the mid-1990s. The
SCF's wealth moments do not pin down when households retire; ``work_cost`` is calibrated to
this fact (``project.estimation.claiming``)."""


@dataclass(frozen=True)
class ClaimStatus:
    """Whether a worker claims the pension this period (retired from the next)."""

    working: int = 0
    claim: int = 1


REFINED_EVERY, REFINED_SMALLEST = 12, 1e-7
"""One savings point in ``REFINED_EVERY`` subdivides the first interval of HARK's grid
geometrically from ``REFINED_SMALLEST``: with a chance of a year without income the marginal
value of saving is steepest just above the borrowing limit, where the plain grid's first step
(0.006 of permanent income at 150 points) left Euler errors of up to 80 % (log10 -0.1) at the
poorest simulated states; with 12 of 150 points there, at most 6 % (log10 -1.3)."""


def n_periods() -> int:
    """Return the number of periods (ages 25..99)."""
    return LAST_AGE - FIRST_AGE + 1


def build_model(
    *, n_savings: int = 150, savings_max: float = 40.0, taste_shocks: bool = True
) -> RegimeModel:
    """Return the model (working, retired, dead) on ages 25..99 (EV1 shocks on the claim)."""
    wealth = LogSpacedGrid(start=0.05, stop=savings_max, n_points=50, name="wealth")
    savings = exponential_grid(
        stop=savings_max,
        n_points=n_savings,
        n_nests=3,
        n_refined=n_savings // REFINED_EVERY,
        smallest=REFINED_SMALLEST,
    )
    working = _working(wealth=wealth, savings=savings, taste_shocks=taste_shocks)
    retired = _retired(wealth=wealth, savings=savings)
    return RegimeModel(
        name="lifecycle_normalised",
        regimes={
            "working": working,
            "retired": retired,
            "dead": TerminalRegime(value=bequest_value),
        },
        transitions={"working": working_transition, "retired": retired_transition},
    )


def _working(*, wealth: LogSpacedGrid, savings: Any, taste_shocks: bool) -> Model:
    """Return the working regime: it claims (or not) and consumes."""
    periods = n_periods()
    survival = {"survival_probabilities": (periods,)}
    return Model(
        name="working",
        states={"wealth": wealth},
        actions={"claim": DiscreteGrid(ClaimStatus), "consumption": ContinuousAction()},
        functions={
            "utility": working_utility,
            "inverse_utility": working_inverse_utility,
            "inverse_marginal_utility": working_inverse_marginal_utility,
            "permanent_shock": permanent_shock,
            "transitory_income": transitory_income,
            "pension_units": pension_units,
            "next_wealth": working_next_wealth,
            "continuation_scale": working_continuation_scale,
            "survival": survival_from_table,
            "wealth_to_income": wealth_to_income,
        },
        constraints={"borrowing_constraint": borrowing_constraint, "claim_age": claim_age},
        shocks=income_shocks(),
        ages=range(FIRST_AGE, LAST_AGE + 1),
        param_shapes={
            **survival,
            "income_growth": (periods,),
            "unemployment_risk": (periods,),
            "claiming_factor": (periods,),
            "permanent_nodes": (periods, N_NODES),
            "transitory_nodes": (periods, N_NODES),
        },
        post_decision_grid=savings,
        taste_shocks=taste_shocks,
    )


def _retired(*, wealth: LogSpacedGrid, savings: Any) -> Model:
    """Return the retired regime: it consumes its wealth and its pension."""
    survival = {"survival_probabilities": (n_periods(),)}
    return Model(
        name="retired",
        states={"wealth": wealth},
        actions={"consumption": ContinuousAction()},
        functions={
            "utility": utility,
            "inverse_utility": inverse_utility,
            "inverse_marginal_utility": inverse_marginal_utility,
            "next_wealth": retired_next_wealth,
            "survival": survival_from_table,
            "wealth_to_income": wealth_to_income,
        },
        constraints={"borrowing_constraint": borrowing_constraint},
        ages=range(FIRST_AGE, LAST_AGE + 1),
        param_shapes=survival,
        post_decision_grid=savings,
    )


def model_params(
    *,
    income_growth: np.ndarray,
    permanent_shock_sd: np.ndarray,
    transitory_shock_sd: np.ndarray,
    survival: np.ndarray,
    values: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Return the params from age profiles (one entry per period, ages 25..99) and ``values``.

    ``values`` override ``DEFAULT_PARAMS``. Income risk and unemployment apply while the profile
    gives a shock; ``claiming_factor[t]`` is ``CLAIMING_FACTORS`` of the claiming age t + 1 of
    a worker deciding at t (1 before the first decision: no claim).
    """
    ages = np.arange(FIRST_AGE, LAST_AGE + 1)
    arrays = {
        "income_growth": income_growth,
        "permanent_shock_sd": permanent_shock_sd,
        "transitory_shock_sd": transitory_shock_sd,
        "survival": survival,
    }
    for name, array in arrays.items():
        if np.shape(array) != ages.shape:
            msg = (
                f"lifecycle_normalised: {name} must have one entry per age {FIRST_AGE}.."
                f"{LAST_AGE} ({ages.size}), got shape {np.shape(array)}."
            )
            raise ParamsError(msg)
    risky = (np.asarray(permanent_shock_sd) + np.asarray(transitory_shock_sd)) > 0
    claiming = [claiming_factor_at(int(a) + CLAIM_LAG) for a in ages]
    return (
        DEFAULT_PARAMS
        | dict(values or {})
        | {
            "income_growth": np.asarray(income_growth, dtype=float),
            "survival_probabilities": np.asarray(survival, dtype=float),
            "unemployment_risk": np.where(risky, UNEMPLOYMENT_PROBABILITY, 0.0),
            "claiming_factor": np.asarray(claiming, dtype=float),
            "permanent_nodes": node_tables(permanent_shock_sd),
            "transitory_nodes": node_tables(transitory_shock_sd),
        }
    )


def working_utility(
    consumption: jnp.ndarray, crra: jnp.ndarray, work_cost: jnp.ndarray
) -> jnp.ndarray:
    """Return CRRA utility of consumption net of the cost of working."""
    return ((1 - work_cost) * consumption) ** (1 - crra) / (1 - crra)


def working_inverse_utility(
    utility_level: jnp.ndarray, crra: jnp.ndarray, work_cost: jnp.ndarray
) -> jnp.ndarray:
    """Return the consumption whose ``working_utility`` is ``utility_level``."""
    return ((1 - crra) * utility_level) ** (1 / (1 - crra)) / (1 - work_cost)


def working_inverse_marginal_utility(
    marginal_utility: jnp.ndarray, crra: jnp.ndarray, work_cost: jnp.ndarray
) -> jnp.ndarray:
    """Return the consumption whose marginal ``working_utility`` is ``marginal_utility``."""
    return (marginal_utility / (1 - work_cost) ** (1 - crra)) ** (-1 / crra)


def claim_age(claim: jnp.ndarray, age: jnp.ndarray) -> jnp.ndarray:
    """Return whether the choice is allowed: a claim at ``EARLIEST_CLAIM`` or later."""
    return (claim == ClaimStatus.working) | (age + CLAIM_LAG >= EARLIEST_CLAIM)


def claiming_factor_at(claiming_age: int) -> float:
    """Return the factor of a first benefit at ``claiming_age`` (1 before the earliest claim)."""
    latest = max(CLAIMING_FACTORS)
    if claiming_age < EARLIEST_CLAIM:
        return 1.0
    return CLAIMING_FACTORS[min(claiming_age, latest)]


def pension_units(
    claim: jnp.ndarray,
    period: jnp.ndarray,
    permanent_shock: jnp.ndarray,
    income_growth: jnp.ndarray,
    replacement: jnp.ndarray,
    benefit_scale: jnp.ndarray,
    claiming_factor: jnp.ndarray,
) -> jnp.ndarray:
    """Return next period's normaliser over this period's permanent income.

    G_t psi' for a worker who keeps working, the pension over P_t for one who claims: the
    replacement rate times the claiming age's factor times the share of the schedule paid.
    """
    growth = income_growth[period] * permanent_shock
    pension = replacement * claiming_factor[period] * benefit_scale
    return jnp.where(claim == ClaimStatus.claim, pension, growth)


def working_next_wealth(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    claim: jnp.ndarray,
    pension_units: jnp.ndarray,
    transitory_income: jnp.ndarray,
    interest_factor: jnp.ndarray,
) -> jnp.ndarray:
    """Return next m: R a / (G psi') + theta' working on, R a / (B / P) + 1 after a claim."""
    income = jnp.where(claim == ClaimStatus.claim, 1.0, transitory_income)
    return interest_factor / pension_units * (wealth - consumption) + income


def working_continuation_scale(pension_units: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return the normaliser's growth to the power 1 - rho."""
    return pension_units ** (1 - crra)


def wealth_to_income(wealth: jnp.ndarray, consumption: jnp.ndarray) -> jnp.ndarray:
    """Return net worth over permanent income: the assets kept at the period's end, m - c.

    In the units of the regime (P working, the pension retired), the SCF's net worth over its
    permanent income: the estimation's moment (``project.estimation.lifecycle``).
    """
    return wealth - consumption


def retired_next_wealth(
    wealth: jnp.ndarray, consumption: jnp.ndarray, interest_factor: jnp.ndarray
) -> jnp.ndarray:
    """Return R a + 1: savings with interest plus a year's pension (the unit)."""
    return interest_factor * (wealth - consumption) + 1.0


def working_transition(claim: jnp.ndarray, survival: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return next period's regime of a worker who survives with probability ``survival``."""
    return {"working": survival * (1 - claim), "retired": survival * claim, "dead": 1 - survival}


def retired_transition(survival: jnp.ndarray) -> dict[str, jnp.ndarray]:
    """Return next period's regime of a retiree."""
    return {"retired": survival, "dead": 1 - survival}


MOVED_TO_PARAMS = (
    "INCOME_PARAMS",
    "default_params",
    "income_profiles",
    "working_transitions",
    "working_years",
)
"""Names that moved to ``lifecycle_normalised_params`` on 2026-11-29: still read here, warning."""


def __getattr__(name: str) -> Any:
    """Return a name that moved to ``lifecycle_normalised_params``, warning (until 0.3.0)."""
    if name not in MOVED_TO_PARAMS:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    from project.deprecation import warn_deprecated  # noqa: PLC0415
    from project.models import lifecycle_normalised_params  # noqa: PLC0415 (it imports this)

    warn_deprecated(
        old=f"project.models.lifecycle_normalised.{name}",
        new=f"project.models.lifecycle_normalised_params.{name}",
        advice="Import it from there.",
    )
    return getattr(lifecycle_normalised_params, name)
