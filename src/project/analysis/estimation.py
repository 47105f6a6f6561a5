"""Tables and the fit figure of the structural estimates (``project.estimation`` products).

``estimates_table`` and ``moment_fit_table`` turn the saved estimates of every estimated
variant into the paper's tables (``write_table`` writes them as LaTeX and Markdown; the arrow
files in ``bld/<variant>/estimation/`` are the machine-readable copies); ``estimation_notes``
lists the warnings recorded with the estimates and ``j_test_notes`` the J-tests, which the
estimates table's caption carries; and
``plot_estimation_fit`` draws model against data by age group with the data's 95 % bands.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from project.analysis import style
from project.estimation.products import SavedEstimation

PARAM_NAMES = {
    "crra": "relative risk aversion",
    "beta": "discount factor",
    "disutility_of_work": "disutility of work",
}
Z_95 = 1.959963984540054
_AGES = re.compile(r"_(\d+)_(\d+)$")


def age_label(moment: str) -> str:
    """Return "51-55" for the moment ``log_wealth_income_51_55``."""
    match = _AGES.search(moment)
    return f"{match.group(1)}-{match.group(2)}" if match else moment


def estimates_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and param: estimate, standard error and 95 % interval.

    The J-test goes to the caption (``j_test_notes``), not into the columns of the estimates.
    """
    rows = []
    for variant, saved in estimates.items():
        for row in saved.estimates.itertuples(index=False):
            rows.append(
                {
                    "Variant": style.display_name(variant),
                    "Parameter": PARAM_NAMES.get(row.param, row.param),
                    "Estimate": float(row.estimate),
                    "Std. error": float(row.std_error),
                    "95% CI low": float(row.ci_lower),
                    "95% CI high": float(row.ci_upper),
                }
            )
    return pd.DataFrame(rows)


def moment_fit_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and age group: data (with its s.e.), model and t-statistic."""
    rows = [
        {
            "Variant": style.display_name(variant),
            "Ages": age_label(row.moment),
            "Data": float(row.data),
            "Data s.e.": float(row.data_std_error),
            "Model": float(row.simulated),
            "Difference": float(row.residual),
            "t": float(row.t_stat),
            "SCF households": round(float(row.n_data)),
        }
        for variant, saved in estimates.items()
        for row in saved.moments.itertuples(index=False)
    ]
    return pd.DataFrame(rows)


def j_test_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the J-test of each variant as one sentence ("" when none is over-identified)."""
    notes = []
    for variant, saved in estimates.items():
        summary = saved.summary
        if summary["j_dof"] > 0:
            notes.append(
                f"{style.display_name(variant)}: J = {summary['j_statistic']:.2f} with "
                f"{summary['j_dof']} degrees of freedom, p = {summary['j_p_value']:.3g}."
            )
    return (" J-test of the over-identifying restrictions. " + " ".join(notes)) if notes else ""


def estimation_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the recorded warnings as one sentence per variant ("" when there are none)."""
    notes = [
        f"{style.display_name(variant)}: {' '.join(saved.warnings)}"
        for variant, saved in estimates.items()
        if saved.warnings
    ]
    return (" Warnings. " + " ".join(notes)) if notes else ""


def plot_estimation_fit(
    *, estimates: Mapping[str, SavedEstimation], paths: Mapping[str, Path]
) -> list[Path]:
    """Plot the model's mean log wealth-to-income against the SCF's (95 % bands), per variant."""
    with style.styled():
        figure, axes = style.new_figure(nrows=1, ncols=len(estimates))
        for panel, (variant, saved) in zip(axes[0], estimates.items(), strict=True):
            moments = saved.moments
            labels = [age_label(m) for m in moments["moment"]]
            x = np.arange(len(labels))
            band = Z_95 * moments["data_std_error"].to_numpy()
            data = moments["data"].to_numpy()
            panel.fill_between(
                x, data - band, data + band, color=style.color(0), alpha=0.25, linewidth=0
            )
            panel.plot(x, data, color=style.color(0), marker="o", label="SCF (95% band)")
            panel.plot(
                x,
                moments["simulated"].to_numpy(),
                color=style.color(1),
                marker="s",
                linestyle="--",
                label="model at the estimates",
            )
            panel.set_xticks(x, labels)
            panel.set(
                xlabel=style.AGE_LABEL,
                ylabel="mean log(wealth / income)",
                title=style.display_name(variant),
            )
        axes[0][0].legend(loc="upper left")
        return style.save_figure(figure=figure, paths=paths)
