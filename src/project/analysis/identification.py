# ruff: noqa: RUF001, RUF002 (the Greek letters, primes and minus signs of the formulas)
"""Identification evidence of the estimation: the moments' slopes and sensitivities, and slices.

``identification_table`` lists, per moment and estimated param, the slope of the simulated
moment in the param (the Jacobian G at the estimate) and the sensitivity of the estimate to the
data moment ((G′WG)⁻¹G′W, Andrews, Gentzkow and Shapiro 2017), both read from the
estimation's ``summary.json``. ``plot_criterion_profiles`` draws the criterion g′Wg along each
param through the estimate, the others held at theirs (``summary["profiles"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from project import style
from project.analysis.notation import (
    age_label,
    number,
    parameter_label,
    plain_parameter,
    variant_name,
)
from project.analysis.table_cells import Symbol, latex_escape, typst_escape
from project.estimation.products import SavedEstimation

IDENTIFICATION_COLUMNS = ("Variant", "Ages", "Parameter", "Slope", "Sensitivity")
IDENTIFICATION_CAPTION = (
    "Identification at the estimate: the slope of each simulated moment in each estimated "
    "parameter (∂m/∂θ, the Jacobian G) and the sensitivity of each estimate to each data "
    "moment ((G′WG)⁻¹G′W: the estimate's change when that data moment rises by one unit, the "
    "others fixed)."
)
IDENTIFICATION_CAPTION_LATEX = (
    "Identification at the estimate: the slope of each simulated moment in each estimated "
    r"parameter ($\partial m/\partial\theta$, the Jacobian $G$) and the sensitivity of each "
    r"estimate to each data moment ($(G'WG)^{-1}G'W$: the estimate's change when that data "
    "moment rises by one unit, the others fixed)."
)


def identification_caption(estimates: Mapping[str, SavedEstimation]) -> Symbol:
    """Return the table's caption with each variant's condition number, in every format."""
    notes = {
        variant_name(v): f"{float(saved.summary['condition_number']):.3g}"
        for v, saved in estimates.items()
    }
    text = IDENTIFICATION_CAPTION + "".join(
        f" {name}: condition number of the normalised G′WG {value}."
        for name, value in notes.items()
    )
    latex = IDENTIFICATION_CAPTION_LATEX + "".join(
        f" {latex_escape(name)}: condition number of the normalised $G'WG$ {value}."
        for name, value in notes.items()
    )
    return Symbol(text=text, latex=latex, typst=typst_escape(text))


def identification_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant, moment and param: the moment's slope and the sensitivity."""
    rows = []
    for variant, saved in estimates.items():
        params = list(saved.estimates["param"])
        jacobian = np.asarray(saved.summary["jacobian"], dtype=float)  # moments x params
        sensitivity = np.asarray(saved.summary["sensitivity"], dtype=float)  # params x moments
        for k, moment in enumerate(saved.moments["moment"]):
            for p, name in enumerate(params):
                rows.append(
                    {
                        "Variant": variant_name(variant),
                        "Ages": age_label(moment).replace("-", "\u2013"),
                        "Parameter": parameter_label(name),
                        "Slope": float(jacobian[k, p]),
                        "Sensitivity": float(sensitivity[p, k]),
                    }
                )
    return pd.DataFrame(rows, columns=list(IDENTIFICATION_COLUMNS))


def plot_criterion_profiles(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Plot the criterion along each estimated param through the estimate (rows: variants)."""
    names = list(next(iter(estimates.values())).estimates["param"])
    with style.styled():
        figure, axes = style.new_figure(nrows=len(estimates), ncols=len(names))
        for row, (variant, saved) in zip(axes, estimates.items(), strict=True):
            found = saved.params
            for panel, name in zip(row, names, strict=True):
                profile = saved.summary["profiles"][name]
                panel.plot(
                    profile["values"],
                    np.array(profile["criterion"], dtype=float),  # None (no solution): a gap
                    color=style.color(0),
                    marker="o",
                    label="Criterion g\u2032Wg, the other parameters at their estimates",
                )
                panel.axvline(found[name], color=style.color(1), linestyle="--", label="Estimate")
                _mark_missing(panel, profile)
                panel.set_yscale("log")  # the criterion spans orders of magnitude
                panel.xaxis.set_major_locator(MaxNLocator(nbins=4))  # readable ticks
                panel.set(
                    xlabel=plain_parameter(name),
                    ylabel="Criterion (log scale)",
                    title=f"{style.variant_label(variant)}: {plain_parameter(name)}",
                )
        legend_panel = _legend_panel(axes)
        missing = MISSING_LABEL in legend_panel.get_legend_handles_labels()[1]
        style.figure_legend(figure=figure, axis=legend_panel, ncols=1 if missing else None)
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)


MISSING_LABEL = "No finite solution (left out)"


def _mark_missing(panel: Any, profile: Mapping[str, list]) -> None:
    """Mark the slice's points without a criterion (the solve failed) by a cross on the axis."""
    missing = [v for v, c in zip(profile["values"], profile["criterion"], strict=True) if c is None]
    if missing:
        panel.plot(
            missing,
            [0.04] * len(missing),
            transform=panel.get_xaxis_transform(),  # x in data, y in the panel's height
            marker="x",
            markersize=9,
            linestyle="none",
            clip_on=False,
            color=style.color(2),
            label=MISSING_LABEL,
        )


def _legend_panel(axes: Any) -> Any:
    """Return the panel whose legend names every kind of line (a missing point's too)."""
    panels = [panel for row in axes for panel in row]
    for panel in panels:
        if MISSING_LABEL in panel.get_legend_handles_labels()[1]:
            return panel
    return panels[0]


def identification_sentence(saved: SavedEstimation) -> str:
    """Return how the estimates rest on the moments, as the identification table prints it.

    For each param: the age groups whose data moment raises its estimate and those whose
    lowers it (the sensitivity's sign, with the largest of each), and the group where the
    moments respond most to the param (the slope's largest magnitude).
    """
    params = list(saved.estimates["param"])
    jacobian = np.asarray(saved.summary["jacobian"], dtype=float)
    sensitivity = np.asarray(saved.summary["sensitivity"], dtype=float)
    ages = [age_label(m).replace("-", "\u2013") for m in saved.moments["moment"]]
    clauses = []
    for p, name in enumerate(params):
        row = sensitivity[p]
        up, down = int(np.argmax(row)), int(np.argmin(row))
        steepest = int(np.argmax(np.abs(jacobian[:, p])))
        clauses.append(
            f"the estimate of {plain_parameter(name)} rises most with the data moment of ages "
            f"{ages[up]} ({number(row[up], decimals=3)} a unit) and falls most with that of ages "
            f"{ages[down]} ({number(row[down], decimals=3)}), while the simulated moments "
            "respond to it most at ages "
            f"{ages[steepest]}"
        )
    text = "; ".join(clauses)
    return f"At the estimate, {text}."
