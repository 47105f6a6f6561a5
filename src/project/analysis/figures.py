"""Figures of the paper: policy functions, life-cycle profiles, retirement, variants compared.

Every function takes its data and ``paths`` ({"png": Path, "pdf": Path}, either or both), writes
one figure to each path with ``style.save_figure`` (byte-deterministic; ``provenance``, when
given, goes to the files' metadata) and returns the paths. Statistics are of the living. The
policy-function figure lives in ``policy_figures`` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from matplotlib.axes import Axes

from project import style
from project.analysis.policy_figures import (
    default_fixed_states,
    default_policy_ages,
    plot_policy_functions,
)
from project.analysis.profiles import lifecycle_profiles, retirement_hazard

__all__ = [
    "default_fixed_states",
    "default_policy_ages",
    "plot_lifecycle_profiles",
    "plot_policy_functions",
    "plot_retirement_policy",
    "plot_variant_comparison",
]

TYPE_COLUMN = "pref_type"
MIN_CELL = 10
"""Cells of ``plot_retirement_policy`` with fewer subjects at risk are not drawn (too noisy)."""
WEALTH_GROUP_NAMES = {
    2: ("Lower half", "Upper half"),
    3: ("Lowest third", "Middle third", "Highest third"),
    4: ("Lowest quarter", "Second quarter", "Third quarter", "Highest quarter"),
}
"""Legend entries of the wealth groups of ``plot_retirement_policy``, by number of groups."""

LIFECYCLE_PANELS = (
    ("mean_wealth", "Mean wealth", style.WEALTH_LABEL),
    ("median_wealth", "Median wealth", style.WEALTH_LABEL),
    ("mean_consumption", "Mean consumption", style.CONSUMPTION_LABEL),
    ("share_retired", "Share retired", style.SHARE_RETIRED_LABEL),
)
COMPARISON_ROWS = (
    ("share_retired", style.SHARE_RETIRED_LABEL),
    ("mean_consumption", f"Mean {style.CONSUMPTION_LABEL.lower()}"),
    ("mean_wealth", f"Mean {style.WEALTH_LABEL.lower()}"),
)


def plot_lifecycle_profiles(
    *,
    panel: pd.DataFrame,
    paths: Mapping[str, Path],
    variant: str | None = None,
    by: str | None = TYPE_COLUMN,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot mean and median wealth, mean consumption and share retired by age, per ``by`` group.

    ``by=None`` (or a panel without that column) pools all subjects; ``variant`` names the
    figure's title.
    """
    group = by if by is not None and by in panel.columns else None
    profiles = lifecycle_profiles(panel=panel, by=[group] if group else [])
    groups = _groups(profiles, column=group)
    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=2)
        flat = [axis for row in axes for axis in row]
        for axis, (column, title, ylabel) in zip(flat, LIFECYCLE_PANELS, strict=True):
            for k, (label, rows) in enumerate(groups):
                axis.plot(
                    rows["age"],
                    rows[column],
                    color=style.color(k),
                    linestyle=style.linestyle(k),
                    label=label,
                )
            _decorate(axis, title=title, ylabel=ylabel, share=column == "share_retired")
        style.figure_legend(figure=figure, axis=flat[0])
        title = "Simulated life cycle"
        if variant is not None:
            title += f": {style.variant_label(variant)}"
        figure.suptitle(title)
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def plot_variant_comparison(
    *,
    panels: Mapping[str, pd.DataFrame],
    paths: Mapping[str, Path],
    by: str | None = TYPE_COLUMN,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot share retired, mean consumption and mean wealth by age: one column per type.

    Rows are the outcomes, lines the variants (colour and style); ``by=None`` (or panels
    without that column) pools the types in one column. Statistics are of the living.
    """
    if not panels:
        msg = "plot_variant_comparison needs at least one panel."
        raise ValueError(msg)
    group = by if by is not None and all(by in p.columns for p in panels.values()) else None
    profiles = {
        name: lifecycle_profiles(panel=panel, by=[group] if group else [])
        for name, panel in panels.items()
    }
    columns = _column_labels(panels=panels, column=group)
    with style.styled():
        figure, axes = style.new_figure(
            nrows=len(COMPARISON_ROWS), ncols=len(columns), panel_height=1.8
        )
        for j, column_label in enumerate(columns):
            for i, (column, ylabel) in enumerate(COMPARISON_ROWS):
                axis = axes[i][j]
                for k, (name, profile) in enumerate(profiles.items()):
                    rows = profile
                    if group is not None:
                        rows = profile.loc[profile[group].astype(str) == column_label]
                    axis.plot(
                        rows["age"],
                        rows[column],
                        color=style.color(k),
                        linestyle=style.linestyle(k),
                        label=style.variant_label(name),
                    )
                title = _column_title(column_label, column=group) if i == 0 else ""
                _decorate(axis, title=title, ylabel=ylabel, share=column == "share_retired")
                if i < len(COMPARISON_ROWS) - 1:
                    axis.set_xlabel("")
        for row in axes:
            style.same_limits(row)
        style.figure_legend(figure=figure, axis=axes[0][0])
        figure.suptitle("Model variants compared, by preference type" if group else "")
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def plot_retirement_policy(
    *,
    panel: pd.DataFrame,
    paths: Mapping[str, Path],
    variant: str | None = None,
    n_groups: int = 3,
    by: str | None = TYPE_COLUMN,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot the share of workers who retire by age, per wealth group: one panel per type.

    The share is ``profiles.retirement_hazard``: of the living who may still retire, split at
    each age into ``n_groups`` wealth groups of equal size within the type. Cells with fewer
    than ``MIN_CELL`` subjects at risk are left out.
    """
    group = by if by is not None and by in panel.columns else None
    hazard = retirement_hazard(panel=panel, by=[group] if group else [], n_groups=n_groups)
    hazard = hazard.loc[hazard["n"] >= MIN_CELL]
    columns = _column_labels(panels={"": panel}, column=group)
    names = WEALTH_GROUP_NAMES.get(
        n_groups, tuple(f"Wealth group {g + 1} of {n_groups}" for g in range(n_groups))
    )
    with style.styled():
        figure, axes = style.new_figure(nrows=1, ncols=len(columns), panel_height=2.3)
        for j, column_label in enumerate(columns):
            axis = axes[0][j]
            rows = hazard
            if group is not None:
                rows = hazard.loc[hazard[group].astype(str) == column_label]
            for g in range(n_groups):
                cell = rows.loc[rows["wealth_group"] == g]
                axis.plot(
                    cell["age"],
                    cell["share_retiring"],
                    color=style.color(g),
                    linestyle=style.linestyle(g),
                    marker="o",
                    markersize=2.5,
                    label=f"{names[g]} of wealth",
                )
            _decorate(
                axis,
                title=_column_title(column_label, column=group),
                ylabel=style.SHARE_RETIRING_LABEL,
                share=True,
            )
            if j > 0:
                axis.set_ylabel("")
        style.same_limits(axes[0], x=True)
        style.figure_legend(figure=figure, axis=axes[0][0])
        title = "Retirement of workers by age and wealth"
        if variant is not None:
            title += f": {style.variant_label(variant)}"
        figure.suptitle(title)
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def _column_labels(*, panels: Mapping[str, pd.DataFrame], column: str | None) -> list[str]:
    """Return the labels of ``column`` in the panels (categories' order, else sorted)."""
    if column is None:
        return [""]
    labels: list[str] = []
    for panel in panels.values():
        values = panel[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            present = set(values.dropna().astype(str))
            found = [str(c) for c in values.cat.categories if str(c) in present]
        else:
            found = sorted(str(v) for v in values.dropna().unique())
        labels += [label for label in found if label not in labels]
    return labels


def _column_title(label: str, *, column: str | None) -> str:
    if column is None:
        return "All households"
    return style.state_label(column, label)


def _groups(profiles: pd.DataFrame, *, column: str | None) -> list[tuple[str, pd.DataFrame]]:
    if column is None:
        return [("All households", profiles)]
    return [
        (style.state_label(column, str(label)), rows)
        for label, rows in profiles.groupby(column, observed=True, sort=True)
    ]


def _decorate(axis: Axes, *, title: str, ylabel: str, share: bool) -> None:
    axis.set_title(title)
    axis.set(xlabel=style.AGE_LABEL, ylabel=ylabel)
    if share:
        style.share_axis(axis)
    else:
        style.from_zero(axis)
