"""Figures of the paper: policy functions, life-cycle profiles, and variants compared.

Every function takes its data and ``paths`` ({"png": Path, "pdf": Path}, either or both), writes
one figure to each path with ``style.save_figure`` (byte-deterministic) and returns the paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from project.analysis import style
from project.analysis.profiles import lifecycle_profiles
from project.grids import DiscreteGrid
from project.regimes.solution import RegimeSolution
from project.solver.solution import Solution
from project.taste_shocks import TASTE_SHOCK_SCALE

if TYPE_CHECKING:
    from project.egm.solution import EGMSolution

N_POLICY_AGES = 4
"""How many ages ``plot_policy_functions`` shows by default (evenly spread over the horizon)."""


def default_policy_ages(*, ages: Sequence[float], n: int = N_POLICY_AGES) -> list[float]:
    """Return up to ``n`` ages evenly spread from the first to the last (both included)."""
    positions = np.unique(np.round(np.linspace(0, len(ages) - 1, min(n, len(ages)))).astype(int))
    return [float(ages[i]) for i in positions]


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
    ages: Sequence[float] | None = None,
    fixed_states: Mapping[str, str] | None = None,
    column_state: str = "pref_type",
    wealth_state: str = "wealth",
    consumption_action: str = "consumption",
    regime: str = "working",
) -> list[Path]:
    """Plot V and optimal consumption against wealth for a few ages, one column per type.

    ``solution`` is a grid (``project.solver.Solution``) or an EGM/DC-EGM solution
    (``project.egm.EGMSolution``), or a solution with regimes, of which ``regime``'s is shown:
    V and the policy are evaluated at the points of the model's wealth grid. ``fixed_states``
    gives the label of every other discrete state (default: a worker with the median income
    node); ``ages`` defaults to four ages spread over the horizon.
    """
    if isinstance(solution, RegimeSolution):
        solution = solution.solution(regime)
    model = solution.model
    fixed = dict(
        default_fixed_states(solution=solution, column_state=column_state)
        if fixed_states is None
        else fixed_states
    )
    wealth = np.asarray(model.states[wealth_state].to_jax(), dtype=float)
    columns = list(model.states[column_state].labels)
    shown_ages = list(ages) if ages is not None else default_policy_ages(ages=model.ages)
    periods = [_period_of(age=age, ages=model.ages) for age in shown_ages]
    states = {
        column_label: _states_along(
            solution=solution,
            selection={**fixed, column_state: column_label},
            continuous=wealth_state,
            values=wealth,
        )
        for column_label in columns
    }

    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=len(columns))
        for j, column_label in enumerate(columns):
            value_axis, consumption_axis = axes[0][j], axes[1][j]
            for k, (age, period) in enumerate(zip(shown_ages, periods, strict=True)):
                line = {"color": style.color(k), "label": f"age {age:g}"}
                value = solution.value(period=period, states=states[column_label])
                consumption = solution.policy(period=period, states=states[column_label])[
                    consumption_action
                ]
                value_axis.plot(wealth, _finite(np.asarray(value, dtype=float)), **line)
                consumption_axis.plot(wealth, _finite(np.asarray(consumption, dtype=float)), **line)
            consumption_axis.plot(
                wealth,
                wealth,
                color="#999999",
                linestyle=":",
                linewidth=0.8,
                label="consumption = wealth",
            )
            value_axis.set_title(style.display_name(column_label))
            value_axis.set(xlabel=style.WEALTH_LABEL, ylabel=style.VALUE_LABEL)
            consumption_axis.set(xlabel=style.WEALTH_LABEL, ylabel=style.CONSUMPTION_LABEL)
        axes[0][0].legend(loc="lower right")
        axes[1][0].legend(handles=axes[1][0].get_lines()[-1:], loc="upper left")
        figure.suptitle(_describe_selection(fixed, solution=solution), fontsize=9)
        return style.save_figure(figure=figure, paths=paths)


def plot_lifecycle_profiles(
    *,
    panel: pd.DataFrame,
    variant: str,
    paths: Mapping[str, Path],
    by: str | None = "pref_type",
) -> list[Path]:
    """Plot mean and median wealth, mean consumption and share retired by age, per ``by`` group.

    ``by=None`` (or a panel without that column) pools all subjects.
    """
    group = by if by is not None and by in panel.columns else None
    profiles = lifecycle_profiles(panel=panel, by=[group] if group else [])
    groups = _groups(profiles, column=group)
    panels = (
        ("mean_wealth", "mean wealth", style.WEALTH_LABEL),
        ("median_wealth", "median wealth", style.WEALTH_LABEL),
        ("mean_consumption", "mean consumption", style.CONSUMPTION_LABEL),
        ("share_retired", "share retired", style.SHARE_RETIRED_LABEL),
    )
    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=2)
        flat = [axis for row in axes for axis in row]
        for axis, (column, title, ylabel) in zip(flat, panels, strict=True):
            for k, (label, rows) in enumerate(groups):
                axis.plot(rows["age"], rows[column], color=style.color(k), label=label)
            _decorate(axis, title=title, ylabel=ylabel, share=column == "share_retired")
        flat[0].legend(loc="best")
        figure.suptitle(f"Simulated life cycle: {style.display_name(variant)}", fontsize=9)
        return style.save_figure(figure=figure, paths=paths)


def plot_variant_comparison(
    *, panels: Mapping[str, pd.DataFrame], paths: Mapping[str, Path]
) -> list[Path]:
    """Plot share retired, mean and median wealth and mean consumption by age, per variant."""
    if not panels:
        msg = "plot_variant_comparison needs at least one panel."
        raise ValueError(msg)
    shown = (
        ("share_retired", "share retired", style.SHARE_RETIRED_LABEL),
        ("mean_consumption", "mean consumption", style.CONSUMPTION_LABEL),
        ("mean_wealth", "mean wealth", style.WEALTH_LABEL),
        ("median_wealth", "median wealth", style.WEALTH_LABEL),
    )
    profiles = {name: lifecycle_profiles(panel=panel) for name, panel in panels.items()}
    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=2)
        flat = [axis for row in axes for axis in row]
        for axis, (column, title, ylabel) in zip(flat, shown, strict=True):
            for k, (name, rows) in enumerate(profiles.items()):
                axis.plot(
                    rows["age"],
                    rows[column],
                    color=style.color(k),
                    linestyle=style.linestyle(k),
                    label=style.display_name(name),
                )
            _decorate(axis, title=title, ylabel=ylabel, share=column == "share_retired")
        flat[0].legend(loc="best")
        figure.suptitle("Model variants compared", fontsize=9)
        return style.save_figure(figure=figure, paths=paths)


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


def _describe_selection(fixed: Mapping[str, str], *, solution: Solution | EGMSolution) -> str:
    """Return the title: the method (and taste-shock scale), then the fixed states."""
    title = f"Policy functions by {style.method_name(solution.method)}"
    if solution.model.taste_shocks:
        title += f" (taste-shock scale {float(solution.params[TASTE_SHOCK_SCALE]):g})"
    parts = [f"{style.display_name(k)}: {style.display_name(v)}" for k, v in fixed.items()]
    return f"{title}\n" + ", ".join(parts) if parts else title


def _finite(values: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(values), values, np.nan)


def _groups(profiles: pd.DataFrame, *, column: str | None) -> list[tuple[str, pd.DataFrame]]:
    if column is None:
        return [("all subjects", profiles)]
    return [
        (style.display_name(str(label)), rows)
        for label, rows in profiles.groupby(column, observed=True, sort=True)
    ]


def _decorate(axis: Axes, *, title: str, ylabel: str, share: bool) -> None:
    axis.set_title(title)
    axis.set(xlabel=style.AGE_LABEL, ylabel=ylabel)
    if share:
        axis.set_ylim(-0.03, 1.03)
