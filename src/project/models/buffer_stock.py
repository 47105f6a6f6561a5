"""The buffer-stock life-cycle model of Carroll's SolvingMicroDSOPs, normalised by permanent income.

The structural estimation of Carroll's "Solution Methods for Microeconomic Dynamic Stochastic
Optimization Problems" (the notes' section "Structural Estimation"; Table 11 of the version of
2026-03-11). A household lives from age 25 to at most 90. Permanent income P grows by the age
profile G_t and a mean-one permanent shock psi; income is P times a mean-one transitory shock
theta, or zero with probability ``UNEMPLOYMENT_PROBABILITY`` while working; from 65 on income
is deterministic (``RISKY_TRANSITIONS``; the replacement drop is in G). The household cannot
borrow. CRRA utility; the discount factor of age t is the estimated ``beta`` times an age
profile beta_t (Cagetti 2003) times the probability of surviving to t + 1.

With m = M / P (cash on hand over permanent income, the state ``wealth``), c = C / P and
a = m - c, the problem is

    v_t(m) = max_{0 < c <= m} u(c) + beta beta_t L_t E[(G_t psi')^(1 - rho) v_{t+1}(m')],
    m' = R a / (G_t psi') + theta',

so the continuation is weighted by ``continuation_scale`` (``project.model.continuation``).
Every entry t of the age profiles is the transition from period t to t + 1, as in HARK. The
shocks are stated as node indices (equiprobable bins; unemployment is the transitory shock's bin
-1, ``income_shocks``) whose values
by age are the params ``permanent_nodes`` and ``transitory_nodes`` (``node_tables``), so that
their dispersion can vary with age. Solved by EGM.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from project.actions import ContinuousAction
from project.grids import LogSpacedGrid
from project.model import Model
from project.points import precision
from project.savings_grids import exponential_grid
from project.shocks import DiscreteShock, LogNormalShock

FIRST_AGE, LAST_AGE = 25, 90
N_NODES = 7
"""Equiprobable nodes of each of the permanent and the transitory shock (HARK's 7 and 7)."""
UNEMPLOYMENT_PROBABILITY = 0.005
"""The probability of zero income in a working year (none in retirement)."""
UNEMPLOYED = -1.0
"""The transitory shock's bin of unemployment (``income_shocks``)."""
RISKY_TRANSITIONS = 39
"""Transitions 0..38 (to ages 26..64) carry income risk; from 39 on income is deterministic:
the published code's ``T_retire = 39``, from which HARK gives every period the retirees' income
distribution (no shocks, no unemployment) whatever the shock profiles say."""
PROFILES = (
    "income_growth",
    "permanent_shock_sd",
    "transitory_shock_sd",
    "survival",
    "discount_profile",
)
"""The age profiles the model reads, one entry per transition from period t to t + 1."""
CALIBRATED = {"interest_factor": 1.03}


def build_model(*, n_savings: int = 150, savings_max: float = 60.0) -> Model:
    """Return the model on ages 25..90 (66 periods; at 90 the household consumes everything).

    The savings grid is HARK's triple-exponential grid (``exponential_grid``, 3 nests) from 0
    to ``savings_max``: with 150 points c_t(m) is within 3e-4 of HARK's on 2,000 points.
    """
    n_periods = LAST_AGE - FIRST_AGE + 1
    return Model(
        name="buffer_stock",
        states={"wealth": LogSpacedGrid(start=0.05, stop=savings_max, n_points=50, name="wealth")},
        actions={"consumption": ContinuousAction()},
        functions={
            "utility": utility,
            "inverse_utility": inverse_utility,
            "inverse_marginal_utility": inverse_marginal_utility,
            "permanent_shock": permanent_shock,
            "transitory_income": transitory_income,
            "next_wealth": next_wealth,
            "continuation_scale": continuation_scale,
        },
        constraints={"borrowing_constraint": borrowing_constraint},
        shocks=income_shocks(),
        ages=range(FIRST_AGE, LAST_AGE + 1),
        param_shapes={
            "income_growth": (n_periods,),
            "survival": (n_periods,),
            "discount_profile": (n_periods,),
            "unemployment_risk": (n_periods,),
            "permanent_nodes": (n_periods, N_NODES),
            "transitory_nodes": (n_periods, N_NODES),
        },
        post_decision_grid=exponential_grid(stop=savings_max, n_points=n_savings, n_nests=3),
    )


def model_params(
    *, profiles: Mapping[str, Any], crra: float, beta: float
) -> dict[str, np.ndarray | float]:
    """Return the model's params from the age ``profiles`` (``PROFILES``, one entry per period).

    A profile of 65 transitions (ages 25..89) gets a 66th entry for the last period, which has
    no next period and never reads it.
    """
    n_periods = LAST_AGE - FIRST_AGE + 1
    padded = {}
    for name in PROFILES:
        values = np.asarray(profiles[name], dtype=float)
        padded[name] = np.concatenate([values, values[-1:]])[:n_periods]
    working = np.arange(n_periods) < RISKY_TRANSITIONS
    return CALIBRATED | {
        "beta": beta,
        "crra": crra,
        "income_growth": padded["income_growth"],
        "survival": padded["survival"],
        "discount_profile": padded["discount_profile"],
        "unemployment_risk": np.where(working, UNEMPLOYMENT_PROBABILITY, 0.0),
        "permanent_nodes": node_tables(np.where(working, padded["permanent_shock_sd"], 0.0)),
        "transitory_nodes": node_tables(np.where(working, padded["transitory_shock_sd"], 0.0)),
    }


def node_tables(sds: np.ndarray) -> np.ndarray:
    """Return the equiprobable nodes of a mean-one lognormal shock per period (rows: periods).

    Computed in float64 whatever the process's precision (the params are then cast as any); a
    period without risk (sd 0) gets nodes of exactly one.
    """
    rows = []
    with precision(x64=True):
        for sd in np.asarray(sds, dtype=float):
            if sd == 0:
                rows.append(np.ones(N_NODES))
                continue
            shock = LogNormalShock(
                mean_of_log=-(sd**2) / 2,
                sd_of_log=float(sd),
                n_nodes=N_NODES,
                method="equiprobable",
            )
            rows.append(np.asarray(shock.nodes_and_weights({})[0], dtype=float))
    return np.stack(rows)


def utility(consumption: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return CRRA utility."""
    return consumption ** (1 - crra) / (1 - crra)


def inverse_utility(utility_level: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return the consumption whose utility is ``utility_level``."""
    return ((1 - crra) * utility_level) ** (1 / (1 - crra))


def inverse_marginal_utility(marginal_utility: jnp.ndarray, crra: jnp.ndarray) -> jnp.ndarray:
    """Return the consumption whose marginal utility is ``marginal_utility``."""
    return marginal_utility ** (-1 / crra)


def permanent_shock(
    permanent_bin: jnp.ndarray, period: jnp.ndarray, permanent_nodes: jnp.ndarray
) -> jnp.ndarray:
    """Return next period's permanent shock psi' (its node of this period's transition)."""
    return permanent_nodes[period, permanent_bin.astype(jnp.int32)]


def income_shocks() -> dict[str, DiscreteShock]:
    """Return the shocks: the permanent shock's bins; the transitory's, unemployment first.

    Unemployment is the transitory shock's first node (bin -1, probability
    ``UNEMPLOYMENT_PROBABILITY``), the equiprobable bins share the rest, as HARK states the
    distribution: 7 x 8 = 56 combinations. Drawn as a shock of its own it made 7 x 7 x 2 = 98,
    the seven unemployed ones alike, and the expectations over them were most of the solve.
    """
    bins = tuple(float(k) for k in range(N_NODES))
    employed = (1 - UNEMPLOYMENT_PROBABILITY) / N_NODES
    return {
        "permanent_bin": DiscreteShock(nodes=bins),
        "transitory_bin": DiscreteShock(
            nodes=(UNEMPLOYED, *bins), weights=(UNEMPLOYMENT_PROBABILITY, *(employed,) * N_NODES)
        ),
    }


def transitory_income(
    transitory_bin: jnp.ndarray,
    period: jnp.ndarray,
    transitory_nodes: jnp.ndarray,
    unemployment_risk: jnp.ndarray,
) -> jnp.ndarray:
    """Return next period's income over permanent income: 0 if unemployed, else theta' / (1 - p).

    In a period without risk (``unemployment_risk`` 0, whose transitory nodes are all one:
    ``model_params``, ``node_tables``) the unemployed bin pays one as well.
    """
    risk = unemployment_risk[period]
    employed = transitory_nodes[period, jnp.maximum(transitory_bin.astype(jnp.int32), 0)]
    return jnp.where((transitory_bin == UNEMPLOYED) & (risk > 0), 0.0, employed / (1 - risk))


def next_wealth(
    wealth: jnp.ndarray,
    consumption: jnp.ndarray,
    permanent_shock: jnp.ndarray,
    transitory_income: jnp.ndarray,
    period: jnp.ndarray,
    income_growth: jnp.ndarray,
    interest_factor: jnp.ndarray,
) -> jnp.ndarray:
    """Return m' = R (m - c) / (G_t psi') + theta'."""
    growth = income_growth[period] * permanent_shock
    return interest_factor * (wealth - consumption) / growth + transitory_income


def continuation_scale(
    permanent_shock: jnp.ndarray,
    period: jnp.ndarray,
    crra: jnp.ndarray,
    income_growth: jnp.ndarray,
    survival: jnp.ndarray,
    discount_profile: jnp.ndarray,
) -> jnp.ndarray:
    """Return beta_t L_t (G_t psi')^(1 - rho): next period's weight besides ``beta``."""
    growth = income_growth[period] * permanent_shock
    return discount_profile[period] * survival[period] * growth ** (1 - crra)


def borrowing_constraint(consumption: jnp.ndarray, wealth: jnp.ndarray) -> jnp.ndarray:
    """Return whether consumption leaves savings >= 0."""
    return consumption <= wealth
