"""The policy-function figure: V and consumption against wealth, by age and preference type.

The wealth axis covers where the simulated households live (up to an upper percentile of the
living's wealth at the ages shown) and the last period, where a household consumes its wealth,
is not among the default ages: the figure shows the choices that matter, not the grid's corners.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from project import style
from project.analysis.profiles import REGIME_COLUMN, living, wealth_upper_bound
from project.grids import DiscreteGrid
from project.regimes.solution import RegimeSolution
from project.solver.solution import Solution
from project.taste_shocks import TASTE_SHOCK_SCALE

if TYPE_CHECKING:
    from project.egm.solution import EGMSolution

N_POLICY_AGES = 4
"""How many ages ``plot_policy_functions`` shows by default (evenly spread over the horizon)."""
WEALTH_QUANTILE = 0.99
"""The wealth axis ends at this quantile of the living's wealth at the ages shown."""
N_WEALTH_POINTS = 200
"""Wealth levels at which V and consumption are evaluated (off-grid, interpolated)."""


def default_policy_ages(*, ages: Sequence[float], n: int = N_POLICY_AGES) -> list[float]:
    """Return up to ``n`` ages evenly spread from the first to the last (both included)."""
    positions = np.unique(np.round(np.linspace(0, len(ages) - 1, min(n, len(ages)))).astype(int))
    return [float(ages[i]) for i in positions]


def policy_ages(
    *,
    ages: Sequence[float],
    panel: pd.DataFrame | None = None,
    regime: str | None = None,
    n: int = N_POLICY_AGES,
) -> list[float]:
    """Return ``n`` ages to show: the model's ``ages`` but the last, where the panel has the living.

    With a panel with regimes, only ages at which someone alive is in ``regime``.
    """
    candidates = [float(a) for a in ages[:-1]] or [float(ages[-1])]
    if panel is not None:
        rows = living(panel)
        if regime is not None and REGIME_COLUMN in rows.columns:
            rows = rows.loc[rows[REGIME_COLUMN].astype(str) == regime]
        observed = set(rows["age"].astype(float).unique().tolist())
        candidates = [a for a in candidates if a in observed] or candidates
    return default_policy_ages(ages=candidates, n=n)


def default_fixed_states(*, solution: Solution | EGMSolution, column_state: str) -> dict[str, str]:
    """Return a worker with the median income: "working" and the middle income node."""
    fixed = {}
    for name, grid in solution.model.states.items():
        if not isinstance(grid, DiscreteGrid) or name == column_state:
            continue
        labels = list(grid.labels)
        fixed[name] = "working" if "working" in labels else labels[len(labels) // 2]
    return fixed


def plot_policy_functions(
    *,
    solution: Solution | EGMSolution | RegimeSolution,
    paths: Mapping[str, Path],
    panel: pd.DataFrame | None = None,
    ages: Sequence[float] | None = None,
    fixed_states: Mapping[str, str] | None = None,
    column_state: str = "pref_type",
    wealth_state: str = "wealth",
    consumption_action: str = "consumption",
    regime: str = "working",
    variant: str | None = None,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot V and optimal consumption against wealth for a few ages, one column per type.

    ``solution`` is a grid (``project.solver.Solution``) or an EGM/DC-EGM solution
    (``project.egm.EGMSolution``), or a solution with regimes, of which ``regime``'s is shown.
    ``fixed_states`` gives the label of every other discrete state (default: a worker with the
    median income node). ``ages`` defaults to four ages spread over the horizon without the
    last period (and, with ``panel``, where its living are in ``regime``). With ``panel`` (the
    simulated panel) the wealth axis ends at its living's 99th wealth percentile at those ages;
    without, it spans the wealth grid. ``provenance`` goes to the files' metadata.
    """
    regimes = isinstance(solution, RegimeSolution)
    if regimes:
        solution = solution.solution(regime)
    model = solution.model
    fixed = dict(
        default_fixed_states(solution=solution, column_state=column_state)
        if fixed_states is None
        else fixed_states
    )
    shown_regime = regime if regimes else None
    shown_ages = (
        [float(a) for a in ages]
        if ages is not None
        else policy_ages(ages=model.ages, panel=panel, regime=shown_regime)
    )
    periods = [_period_of(age=age, ages=model.ages) for age in shown_ages]
    wealth = _wealth_levels(
        grid=np.asarray(model.states[wealth_state].to_jax(), dtype=float),
        panel=panel,
        ages=shown_ages,
        regime=shown_regime,
    )
    columns = list(model.states[column_state].labels)

    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=len(columns))
        for j, column_label in enumerate(columns):
            states = _states_along(
                solution=solution,
                selection={**fixed, column_state: column_label},
                continuous=wealth_state,
                values=wealth,
            )
            value_axis, consumption_axis = axes[0][j], axes[1][j]
            top = 0.0
            for k, (age, period) in enumerate(zip(shown_ages, periods, strict=True)):
                line = {"color": style.color(k), "linestyle": style.linestyle(k)}
                value = _finite(np.asarray(solution.value(period=period, states=states)))
                policy = solution.policy(period=period, states=states)[consumption_action]
                consumption = _finite(np.asarray(policy, dtype=float))
                value_axis.plot(wealth, value, **line)
                consumption_axis.plot(wealth, consumption, label=f"Age {age:g}", **line)
                top = max(top, float(np.nanmax(consumption, initial=0.0)))
            consumption_axis.plot(
                wealth,
                wealth,
                color=style.REFERENCE_COLOR,
                linestyle=":",
                linewidth=0.8,
                label="Consumption = wealth",
            )
            value_axis.set_title(style.state_label(column_state, column_label, labels=columns))
            value_axis.set(xlabel=style.WEALTH_LABEL, ylabel=style.VALUE_LABEL)
            consumption_axis.set(xlabel=style.WEALTH_LABEL, ylabel=style.CONSUMPTION_LABEL)
            for axis in (value_axis, consumption_axis):
                axis.set_xlim(wealth[0], wealth[-1])
            style.from_zero(consumption_axis, top=1.08 * top if top > 0 else None)
        style.figure_legend(figure=figure, axis=axes[1][0])
        figure.suptitle(_describe(fixed, solution=solution, regime=shown_regime, variant=variant))
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def _wealth_levels(
    *, grid: np.ndarray, panel: pd.DataFrame | None, ages: Sequence[float], regime: str | None
) -> np.ndarray:
    """Return the wealth levels shown: the grid's range, cut at the living's upper percentile."""
    low, high = float(grid.min()), float(grid.max())
    if panel is not None:
        bound = wealth_upper_bound(panel=panel, ages=ages, regime=regime, quantile=WEALTH_QUANTILE)
        if np.isfinite(bound) and bound > low:
            high = min(high, bound)
    return np.linspace(low, high, N_WEALTH_POINTS)


def _period_of(*, age: float, ages: Sequence[float]) -> int:
    matches = [t for t, a in enumerate(ages) if np.isclose(a, age)]
    if not matches:
        msg = f"Age {age:g} is not an age of the model ({ages[0]:g} to {ages[-1]:g})."
        raise ValueError(msg)
    return matches[0]


def _states_along(
    *,
    solution: Solution | EGMSolution,
    selection: Mapping[str, str],
    continuous: str,
    values: np.ndarray,
) -> dict[str, np.ndarray]:
    """Return states at the selected discrete labels with ``continuous`` running over ``values``."""
    states: dict[str, np.ndarray] = {}
    for name, grid in solution.model.states.items():
        if name == continuous:
            states[name] = values
            continue
        if not isinstance(grid, DiscreteGrid):
            msg = f"Only {continuous!r} may be continuous here; {name!r} is continuous too."
            raise ValueError(msg)
        if name not in selection:
            msg = f"Give the label of state {name!r} in fixed_states (one of {grid.labels})."
            raise ValueError(msg)
        labels = list(grid.labels)
        if selection[name] not in labels:
            msg = f"{selection[name]!r} is not a label of state {name!r}: {labels}."
            raise ValueError(msg)
        states[name] = np.full(values.shape, grid.codes[labels.index(selection[name])])
    return states


def _describe(
    fixed: Mapping[str, str],
    *,
    solution: Solution | EGMSolution,
    regime: str | None,
    variant: str | None,
) -> str:
    """Return the title: variant, method (and taste-shock scale), then the household in words."""
    method = style.method_name(solution.method)
    named = variant is not None and method in style.variant_label(variant)
    title = "Policy functions" if named else f"Policy functions by {method}"
    if solution.model.taste_shocks:
        title += f" (taste-shock scale {float(solution.params[TASTE_SHOCK_SCALE]):g})"
    if variant is not None:
        title = f"{style.variant_label(variant)}: {title[0].lower()}{title[1:]}"
    parts = [] if regime is None else [style.state_label("regime", regime)]
    for name, label in fixed.items():
        grid = solution.model.states[name]
        parts.append(style.state_label(name, label, labels=list(grid.labels)))
    return f"{title}\n" + "; ".join(parts) if parts else title


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)
