"""The policy-function figure: V and consumption against cash on hand, by regime and age.

For ``lifecycle_normalised`` (a ``RegimeSolution``): a column per living regime, workers in
units of permanent income P (m = M / P, c = C / P, V / P^(1 - gamma)) and retirees in units of
their pension B. The wealth axis covers where the simulated households of the regime live
(from the 1st to the 99th percentile of their cash on hand at the ages shown). A worker from 62
may claim: consumption is that of the chosen option, and it jumps where the choice switches,
so the line is drawn in pieces, one per stretch of the same choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from project import style
from project.analysis.profiles import REGIME_COLUMN, living, wealth_quantiles
from project.regimes.solution import RegimeSolution
from project.taste_shocks import TASTE_SHOCK_SCALE

DEFAULT_POLICY_AGES: dict[str, tuple[float, ...]] = {
    "working": (30.0, 45.0, 62.0, 65.0),
    "retired": (66.0, 75.0, 85.0),
}
"""The ages shown by default, per regime (a column each, in this order): workers young, middle
aged and at two claiming ages (the earliest, 62, and 65), retirees early, at 75 and at 85."""
SWITCH_MARKER = {"marker": "o", "markersize": 3.0, "markerfacecolor": "white", "linestyle": "none"}
"""How the first point after a switch of the claim choice is marked."""
WEALTH_QUANTILES = (0.01, 0.99)
"""The wealth axis spans these quantiles of the regime's living at the ages shown."""
N_WEALTH_POINTS = 400
"""Cash-on-hand levels at which V and consumption are evaluated (off-grid, interpolated)."""
LEGEND_HEIGHT = 0.7
"""Inches below the panels for each column's legend (its ages and reference marks)."""
REFERENCE_LABELS = ("c = m", "Claim choice switches")
"""Legend entries shared by the columns, shown once below the figure (the ages per column)."""
WEALTH_STATE = "wealth"
CONSUMPTION_ACTION = "consumption"


def plot_policy_functions(
    *,
    solution: RegimeSolution,
    paths: Mapping[str, Path],
    panel: pd.DataFrame | None = None,
    ages: Mapping[str, Sequence[float]] | None = None,
    variant: str | None = None,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot V (top row) and consumption (bottom row) against cash on hand, a column per regime.

    Each column has its legend of ages below it; the line c = m and the marks of a switch of
    the claim choice are explained once, below the figure.

    ``ages`` maps each regime shown to its ages (default ``DEFAULT_POLICY_AGES``); with
    ``panel`` (the simulated panel) ages at which nobody alive is in the regime are left out
    and the wealth axis spans ``WEALTH_QUANTILES`` of the regime's cash on hand at the ages
    shown; without, the wealth grid. Where the regime has a discrete choice (the claim), the
    consumption of the chosen option is drawn without joining it across a switch.
    """
    if not solution.regimes:
        msg = (
            f"plot_policy_functions needs the RegimeSolution of lifecycle_normalised, got "
            f"{type(solution).__name__}; load it with project.pipeline.load_variant_solution."
        )
        raise TypeError(msg)
    ages = dict(DEFAULT_POLICY_AGES if ages is None else ages)
    with style.styled():
        figure = Figure(
            figsize=(len(ages) * style.PANEL_WIDTH, 2 * style.PANEL_HEIGHT + LEGEND_HEIGHT),
            dpi=style.DPI,
            layout="constrained",
        )
        columns = figure.subfigures(nrows=1, ncols=len(ages), squeeze=False)[0]
        references: dict[str, Artist] = {}
        for column, (regime, wanted) in zip(columns, ages.items(), strict=True):
            shown = shown_ages(solution=solution, regime=regime, ages=wanted, panel=panel)
            wealth = wealth_levels(solution=solution, regime=regime, ages=shown, panel=panel)
            value_axis, consumption_axis = column.subplots(nrows=2, ncols=1)
            _plot_regime(
                axes=(value_axis, consumption_axis),
                solution=solution,
                regime=regime,
                ages=shown,
                wealth=wealth,
            )
            handles, labels = consumption_axis.get_legend_handles_labels()
            entries = dict(zip(labels, handles, strict=True))
            own = {k: v for k, v in entries.items() if k not in REFERENCE_LABELS}
            references |= {k: v for k, v in entries.items() if k in REFERENCE_LABELS}
            column.legend(own.values(), own.keys(), loc="outside lower center", ncols=2)
        if references:
            figure.legend(
                references.values(),
                references.keys(),
                loc="outside lower center",
                ncols=len(references),
            )
        figure.suptitle(_title(solution=solution, variant=variant))
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def shown_ages(
    *,
    solution: RegimeSolution,
    regime: str,
    ages: Sequence[float],
    panel: pd.DataFrame | None = None,
) -> list[float]:
    """Return ``ages`` (each an age of the model) at which the panel has living in ``regime``.

    Without a panel, or if the panel has none of them, all of ``ages``.
    """
    model_ages = [float(a) for a in solution.model.ages]
    for age in ages:
        _period_of(age=float(age), ages=model_ages)
    wanted = [float(a) for a in ages]
    if panel is None:
        return wanted
    rows = living(panel)
    rows = rows.loc[rows[REGIME_COLUMN].astype(str) == regime]
    observed = set(rows["age"].astype(float).unique().tolist())
    return [a for a in wanted if a in observed] or wanted


def wealth_levels(
    *,
    solution: RegimeSolution,
    regime: str,
    ages: Sequence[float],
    panel: pd.DataFrame | None = None,
) -> np.ndarray:
    """Return the cash-on-hand levels shown: the regime's grid, cut to where its living are."""
    grid = np.asarray(solution.solution(regime).model.states[WEALTH_STATE].to_jax(), dtype=float)
    low, high = float(grid.min()), float(grid.max())
    if panel is not None:
        bottom, top = wealth_quantiles(
            panel=panel, ages=ages, regime=regime, quantiles=WEALTH_QUANTILES
        )
        if np.isfinite(bottom) and np.isfinite(top) and max(low, bottom) < min(high, top):
            low, high = max(low, bottom), min(high, top)
    return np.linspace(low, high, N_WEALTH_POINTS)


def broken_at_switches(
    *, wealth: np.ndarray, values: np.ndarray, choice: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Return ``wealth`` and ``values`` with NaN put between points whose ``choice`` differs.

    ``choice`` holds a code per point, or a row of codes (one per discrete action); a line
    drawn through the result is not joined across a switch of the choice.
    """
    if choice is None:
        return wealth, values
    codes = np.asarray(choice).reshape(len(wealth), -1)
    switches = np.flatnonzero((codes[1:] != codes[:-1]).any(axis=1)) + 1
    return np.insert(wealth, switches, np.nan), np.insert(values, switches, np.nan)


def _plot_regime(
    *,
    axes: tuple[Axes, Axes],
    solution: RegimeSolution,
    regime: str,
    ages: Sequence[float],
    wealth: np.ndarray,
) -> None:
    """Draw one regime's V and consumption at ``ages`` on ``axes`` (value, consumption)."""
    value_axis, consumption_axis = axes
    model_ages = [float(a) for a in solution.model.ages]
    states = {WEALTH_STATE: wealth}
    top, switched = 0.0, False
    for k, age in enumerate(ages):
        period = _period_of(age=age, ages=model_ages)
        line = {"color": style.color(k), "linestyle": style.linestyle(k)}
        value = _finite(solution.value(period=period, regime=regime, states=states))
        policy = solution.policy(period=period, regime=regime, states=states)
        consumption = _finite(policy[CONSUMPTION_ACTION])
        choices = [np.asarray(v) for name, v in policy.items() if name != CONSUMPTION_ACTION]
        choice = np.stack(choices, axis=-1) if choices else None
        value_axis.plot(wealth, value, **line)
        x, y = broken_at_switches(wealth=wealth, values=consumption, choice=choice)
        consumption_axis.plot(x, y, label=f"Age {age:g}", **line)
        starts = np.flatnonzero(np.isnan(x[:-1])) + 1
        consumption_axis.plot(x[starts], y[starts], color=line["color"], **SWITCH_MARKER)
        switched = switched or bool(starts.size)
        top = max(top, float(np.nanmax(consumption, initial=0.0)))
    consumption_axis.plot(
        wealth,
        wealth,
        color=style.REFERENCE_COLOR,
        linestyle=":",
        linewidth=0.8,
        label=REFERENCE_LABELS[0],
    )
    value_axis.set_title(style.regime_unit_title(regime))
    wealth_label = style.normalised_label("Cash on hand", symbol="m", regime=regime)
    value_axis.set(xlabel=wealth_label, ylabel=style.value_label(regime=regime))
    consumption_axis.set(
        xlabel=wealth_label,
        ylabel=style.normalised_label("Consumption", symbol="c", regime=regime),
    )
    for axis in axes:
        axis.set_xlim(wealth[0], wealth[-1])
    if switched:
        consumption_axis.plot(
            [], [], color=style.REFERENCE_COLOR, label=REFERENCE_LABELS[1], **SWITCH_MARKER
        )
    style.from_zero(consumption_axis, top=1.08 * top if top > 0 else None)


def _period_of(*, age: float, ages: Sequence[float]) -> int:
    matches = [t for t, a in enumerate(ages) if np.isclose(a, age)]
    if not matches:
        msg = (
            f"plot_policy_functions: age {age:g} is not an age of the model ({ages[0]:g} to "
            f"{ages[-1]:g}); pass ages from that range."
        )
        raise ValueError(msg)
    return matches[0]


def _title(*, solution: RegimeSolution, variant: str | None) -> str:
    """Return the title: variant, method and taste-shock scale where the model has them."""
    title = f"Policy functions by {style.method_name(solution.method)}"
    if solution.model.taste_shocks:
        title += f" (taste-shock scale {float(solution.params[TASTE_SHOCK_SCALE]):g})"
    if variant is not None:
        title = f"{style.variant_label(variant)}: {title[0].lower()}{title[1:]}"
    return title


def _finite(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)
