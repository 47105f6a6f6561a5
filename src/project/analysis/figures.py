"""Figures of the paper: policy functions, life-cycle profiles, claiming, variants compared.

Every function takes its data and ``paths`` ({"png": Path, "pdf": Path}, either or both), writes
one figure to each path with ``style.save_figure`` (byte-deterministic; ``provenance``, when
given, goes to the files' metadata) and returns the paths. Panels are those of
``lifecycle_normalised`` (``profiles``); statistics are of the living, levels in units of
permanent income at 25. The policy-function figure lives in ``policy_figures`` and is
re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from project import style
from project.analysis.policy_figures import DEFAULT_POLICY_AGES, plot_policy_functions
from project.analysis.profiles import lifecycle_profiles, retirement_hazard
from project.models.lifecycle_normalised import CLAIMING_FACTORS, EARLIEST_CLAIM

__all__ = [
    "DEFAULT_POLICY_AGES",
    "plot_lifecycle_profiles",
    "plot_policy_functions",
    "plot_retirement_policy",
    "plot_variant_comparison",
]

MIN_CELL = 10
"""Cells of ``plot_retirement_policy`` with fewer deciders are not drawn (too noisy)."""
CLAIM_AGES = (EARLIEST_CLAIM, max(CLAIMING_FACTORS))
"""The ages ``plot_retirement_policy`` shows: from the earliest claim to the last delayed credit."""
WEALTH_GROUP_NAMES = {
    2: ("Lower half", "Upper half"),
    3: ("Lowest third", "Middle third", "Highest third"),
    4: ("Lowest quarter", "Second quarter", "Third quarter", "Highest quarter"),
}
"""Legend entries of the wealth groups of ``plot_retirement_policy``, by number of groups."""

MEAN_LINE = {"color": style.color(0), "linestyle": style.linestyle(0)}
MEDIAN_LINE = {"color": style.color(1), "linestyle": style.linestyle(1)}
LIFECYCLE_PANELS = (
    (
        "Cash on hand",
        (("mean_wealth", "Mean"), ("median_wealth", "Median")),
        style.LEVEL_UNIT_LABEL,
    ),
    ("Consumption", (("mean_consumption", "Mean"),), style.LEVEL_UNIT_LABEL),
    ("Wealth-to-income ratio", (("median_wealth_to_income", "Median"),), style.RATIO_LABEL),
    ("Share retired", (("share_retired", "Mean"),), style.SHARE_OF_LIVING_LABEL),
)
"""The life-cycle figure's panels: title, (profile column, statistic) lines, y label."""
COMPARISON_PANELS = (
    ("share_retired", "Share retired", style.SHARE_OF_LIVING_LABEL),
    ("mean_consumption", "Mean consumption", style.LEVEL_UNIT_LABEL),
    ("mean_wealth", "Mean cash on hand", style.LEVEL_UNIT_LABEL),
)
"""The comparison figure's panels: profile column, title, y label."""


def plot_lifecycle_profiles(
    *,
    panel: pd.DataFrame,
    paths: Mapping[str, Path],
    variant: str | None = None,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot the living's cash on hand, consumption, wealth-to-income ratio and share retired.

    By age, all households: mean and median cash on hand and mean consumption in levels
    (multiples of permanent income at 25), the median ratio m - c (over P working, B retired)
    and the share in regime "retired" (``profiles.lifecycle_profiles``). Solid lines are
    means, dashed ones medians; ``variant`` names the figure's title.
    """
    profiles = lifecycle_profiles(panel=panel)
    with style.styled():
        figure, axes = style.new_figure(nrows=2, ncols=2)
        flat = [axis for row in axes for axis in row]
        for axis, (title, lines, ylabel) in zip(flat, LIFECYCLE_PANELS, strict=True):
            for column, statistic in lines:
                line = MEAN_LINE if statistic == "Mean" else MEDIAN_LINE
                axis.plot(profiles["age"], profiles[column], label=statistic, **line)
            _decorate(axis, title=title, ylabel=ylabel, share=lines[0][0] == "share_retired")
        style.figure_legend(figure=figure, axis=flat[0])
        title = "Simulated life cycle, all households"
        if variant is not None:
            title = f"{style.variant_label(variant)}: {title[0].lower()}{title[1:]}"
        figure.suptitle(title)
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def plot_variant_comparison(
    *,
    panels: Mapping[str, pd.DataFrame],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot share retired, mean consumption and mean cash on hand by age, a line per variant.

    Of the living; consumption and cash on hand in levels (multiples of permanent income at
    25, comparable across variants). Lines keep the order of ``panels``.
    """
    if not panels:
        msg = "plot_variant_comparison needs at least one panel; got none."
        raise ValueError(msg)
    profiles = {name: lifecycle_profiles(panel=panel) for name, panel in panels.items()}
    with style.styled():
        figure, axes = style.new_figure(
            nrows=1, ncols=len(COMPARISON_PANELS), panel_width=2.2, panel_height=2.2
        )
        for axis, (column, title, ylabel) in zip(axes[0], COMPARISON_PANELS, strict=True):
            for k, (name, profile) in enumerate(profiles.items()):
                axis.plot(
                    profile["age"],
                    profile[column],
                    color=style.color(k),
                    linestyle=style.linestyle(k),
                    label=style.variant_label(name),
                )
            _decorate(axis, title=title, ylabel=ylabel, share=column == "share_retired")
        style.figure_legend(figure=figure, axis=axes[0][0])
        figure.suptitle("Model variants compared: means of the living by age")
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def plot_retirement_policy(
    *,
    panel: pd.DataFrame,
    paths: Mapping[str, Path],
    variant: str | None = None,
    n_groups: int = 3,
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot the share of deciding workers who claim the pension by age, per wealth group.

    The deciders are the workers alive at each age from 62 to 70 (``CLAIM_AGES``); at each age
    they are split into ``n_groups`` groups of equal size by cash on hand over permanent income
    (the state they decide on; ``profiles.retirement_hazard``). Cells with fewer than
    ``MIN_CELL`` deciders are left out. A grey line gives the share of all deciders.
    """
    low, high = CLAIM_AGES
    hazard = retirement_hazard(panel=panel, n_groups=n_groups)
    hazard = hazard.loc[(hazard["n"] >= MIN_CELL) & hazard["age"].between(low, high)]
    overall = retirement_hazard(panel=panel, n_groups=1)
    overall = overall.loc[(overall["n"] >= MIN_CELL) & overall["age"].between(low, high)]
    names = WEALTH_GROUP_NAMES.get(
        n_groups, tuple(f"Wealth group {g + 1} of {n_groups}" for g in range(n_groups))
    )
    with style.styled():
        figure, axes = style.new_figure(nrows=1, ncols=1, panel_width=4.2, panel_height=2.6)
        axis = axes[0][0]
        for g in range(n_groups):
            cell = hazard.loc[hazard["wealth_group"] == g]
            axis.plot(
                cell["age"],
                cell["share_claiming"],
                color=style.color(g),
                linestyle=style.linestyle(g),
                marker="o",
                markersize=2.5,
                label=f"{names[g]} of cash on hand",
            )
        axis.plot(
            overall["age"],
            overall["share_claiming"],
            color=style.REFERENCE_COLOR,
            linewidth=0.9,
            marker="s",
            markersize=2.5,
            label="All deciders",
        )
        _decorate(axis, title="", ylabel=style.SHARE_CLAIMING_LABEL, share=True)
        axis.set_xlabel(style.CLAIM_AGE_LABEL)
        axis.set_xlim(low - 0.5, high + 0.5)
        axis.set_xticks(np.arange(low, high + 1))
        style.figure_legend(figure=figure, axis=axis, ncols=2)
        title = "Claiming by age and cash on hand"
        if variant is not None:
            title = f"{style.variant_label(variant)}: {title[0].lower()}{title[1:]}"
        figure.suptitle(title)
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


def _decorate(axis: Axes, *, title: str, ylabel: str, share: bool) -> None:
    axis.set_title(title)
    axis.set(xlabel=style.AGE_LABEL, ylabel=ylabel)
    if share:
        style.share_axis(axis)
    else:
        style.from_zero(axis)
