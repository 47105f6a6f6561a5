"""Tables and the fit figure of the structural estimates (``project.estimation`` products).

``estimates_table`` and ``moment_fit_table`` turn the saved estimates of every estimated
variant into the paper's tables, in the paper's notation (``write_estimation_report`` writes
them as LaTeX, Typst and Markdown with the figure; the arrow
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
from project.analysis.notation import parameter_label, variant_name, with_plain_parameters
from project.analysis.table_output import write_table_files
from project.estimation.products import SavedEstimation

Z_95 = 1.959963984540054
_AGES = re.compile(r"_(\d+)_(\d+)$")
ESTIMATES_CAPTION = (
    "Preferences estimated by simulated moments from SCF wealth-to-income ratios: estimates, "
    "standard errors (including the simulation noise) and 95% confidence intervals."
)
MOMENT_FIT_CAPTION = (
    "Mean log wealth-to-income by age group: SCF data with its standard error (s.e.), the "
    "model at the estimates, their difference (model less data), its t-statistic and the SCF "
    "households of the group (N)."
)
P_FLOOR = 0.001
"""p-values below this print as "p < 0.001"."""


def age_label(moment: str) -> str:
    """Return "51-55" for the moment ``log_wealth_income_51_55``."""
    match = _AGES.search(moment)
    return f"{match.group(1)}-{match.group(2)}" if match else moment


def estimates_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and param: estimate, standard error and 95 % interval.

    Variants print by name ("Low pension"), params by description and symbol ("Discount
    factor β", per format). The J-test goes to the caption (``j_test_notes``).
    """
    rows = [
        {
            "Variant": variant_name(variant),
            "Parameter": parameter_label(str(row.param)),
            "Estimate": float(row.estimate),
            "Std. error": float(row.std_error),
            "CI lower": float(row.ci_lower),
            "CI upper": float(row.ci_upper),
        }
        for variant, saved in estimates.items()
        for row in saved.estimates.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(ESTIMATES_COLUMNS))


ESTIMATES_COLUMNS = ("Variant", "Parameter", "Estimate", "Std. error", "CI lower", "CI upper")
MOMENT_FIT_COLUMNS = ("Variant", "Ages", "Data", "s.e.", "Model", "Difference", "t", "N")


def moment_fit_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and age group: data (with its s.e.), model and t-statistic.

    Ages print as "61\u201365"; N counts the SCF households of the group.
    """
    rows = [
        {
            "Variant": variant_name(variant),
            "Ages": age_label(row.moment).replace("-", "\u2013"),
            "Data": float(row.data),
            "s.e.": float(row.data_std_error),
            "Model": float(row.simulated),
            "Difference": float(row.residual),
            "t": float(row.t_stat),
            "N": round(float(row.n_data)),
        }
        for variant, saved in estimates.items()
        for row in saved.moments.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(MOMENT_FIT_COLUMNS))


def j_test_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the J-test of each variant as one sentence ("" when none is over-identified)."""
    notes = []
    for variant, saved in estimates.items():
        summary = saved.summary
        dof = int(summary["j_dof"])
        if dof > 0:
            freedom = "degree" if dof == 1 else "degrees"
            notes.append(
                f"{variant_name(variant)}: J = {summary['j_statistic']:.2f} with {dof} "
                f"{freedom} of freedom, {_p_value(float(summary['j_p_value']))}."
            )
    return (" J-test of the over-identifying restrictions. " + " ".join(notes)) if notes else ""


def estimation_notes(estimates: Mapping[str, SavedEstimation]) -> str:
    """Return the recorded warnings as one sentence per variant ("" when there are none).

    Parameters' code names in the warnings print as their symbols ("beta" as "β").
    """
    notes = [
        f"{variant_name(variant)}: {with_plain_parameters(' '.join(saved.warnings))}"
        for variant, saved in estimates.items()
        if saved.warnings
    ]
    return (" Warnings. " + " ".join(notes)) if notes else ""


def write_estimation_report(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the estimates and moment-fit tables and the fit figure; return the files.

    ``paths`` has ``estimates_<suffix>`` and ``moment_fit_<suffix>`` for "tex", "typ", "md"
    (labels ``tab:estimates``, ``tab:moment_fit``) and ``figure_png``, ``figure_pdf``.
    """
    tables = {
        "estimates": (
            estimates_table(estimates),
            ESTIMATES_CAPTION + j_test_notes(estimates) + estimation_notes(estimates),
            {
                "Estimate": "{:.3f}",
                "Std. error": "{:.3f}",
                "CI lower": "{:.3f}",
                "CI upper": "{:.3f}",
            },
        ),
        "moment_fit": (
            moment_fit_table(estimates),
            MOMENT_FIT_CAPTION,
            {"s.e.": "{:.3f}", "t": "{:.2f}"},
        ),
    }
    written = []
    for stem, (table, caption, formats) in tables.items():
        written += write_table_files(
            table=table,
            paths={s: paths[f"{stem}_{s}"] for s in ("tex", "typ", "md") if f"{stem}_{s}" in paths},
            caption=caption,
            label=f"tab:{stem}",
            formats=formats,
            group_column="Variant",
            font_size="footnotesize",
            provenance=provenance,
        )
    figure = {fmt: paths[f"figure_{fmt}"] for fmt in ("png", "pdf") if f"figure_{fmt}" in paths}
    if figure:
        written += plot_estimation_fit(estimates=estimates, paths=figure, provenance=provenance)
    return written


def _p_value(p: float) -> str:
    return f"p < {P_FLOOR:g}" if p < P_FLOOR else f"p = {p:.3f}"


def plot_estimation_fit(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
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
            panel.plot(x, data, color=style.color(0), marker="o", label="SCF data (95 % band)")
            panel.plot(
                x,
                moments["simulated"].to_numpy(),
                color=style.color(1),
                marker="s",
                linestyle="--",
                label="Model at the estimates",
            )
            panel.set_xticks(x, labels)
            panel.set(
                xlabel=style.AGE_LABEL,
                ylabel="Mean log(wealth / income)",
                title=style.variant_label(variant),
            )
        style.same_limits([row for line in axes for row in line])
        style.figure_legend(figure=figure, axis=axes[0][0])
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)
