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

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from project import style
from project.analysis.estimation_text import estimation_notes, j_test_notes
from project.analysis.identification import (
    identification_caption,
    identification_table,
    plot_criterion_profiles,
)
from project.analysis.model_numbers import calibration_notes
from project.analysis.notation import (
    PARAMETERS,
    Notation,
    age_label,
    parameter_label,
    printed_decimals,
    variant_name,
)
from project.analysis.table_cells import Symbol, typst_escape
from project.analysis.table_output import write_table_files
from project.estimation.inference import CRITICAL
from project.estimation.products import SavedEstimation

Z_95 = CRITICAL
MAX_FLAT_TICKS = 5
"""Age groups a fit panel labels horizontally; more are tilted so that their labels do not meet."""
ESTIMATES_CAPTION = (
    "Preferences estimated by simulated moments from SCF wealth-to-income ratios: estimates, "
    "standard errors (including the simulation noise) and 95% confidence intervals."
)
MOMENT_FIT_CAPTION = (
    "Mean log wealth-to-income by age group: SCF data with its standard error (Data s.e.), the "
    "model at the estimates, their difference (model less data) with its standard error "
    "(Diff. s.e.: the data's and the simulation's noise), the t-statistic (the difference over "
    "its standard error) and the SCF households of the group (N)."
)


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
MOMENT_FIT_COLUMNS = (
    "Variant",
    "Ages",
    "Data",
    "Data s.e.",
    "Model",
    "Difference",
    "Diff. s.e.",
    "t",
    "N",
)


def moment_fit_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per variant and age group: data, model, difference, their s.e. and t.

    t is the difference over its s.e. (``Diff. s.e.``, data and simulation noise), the columns
    the table prints.

    Ages print as "61\u201365"; N counts the SCF households of the group.
    """
    rows = [
        {
            "Variant": variant_name(variant),
            "Ages": age_label(row.moment).replace("-", "\u2013"),
            "Data": float(row.data),
            "Data s.e.": float(row.data_std_error),
            "Model": float(row.simulated),
            "Difference": float(row.residual),
            "Diff. s.e.": float(row.std_error),
            "t": float(row.t_stat),
            "N": round(float(row.n_data)),
        }
        for variant, saved in estimates.items()
        for row in saved.moments.itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(MOMENT_FIT_COLUMNS))


_SEARCHES = (
    "Every local search of the estimation: where it started, where it ended and its criterion "
    "({criterion}, the weighted sum of squared moment differences). The multistart (TikTak) "
    "evaluates the start and points sampled within the bounds and runs its local searches from "
    "the best of them, each later one pulled towards the best end point found so far; the "
    "estimate is the end point with the lowest criterion (Kept). A search that did not "
    "converge stopped at its iteration limit."
)
SEARCHES_CAPTION = Symbol(
    text=_SEARCHES.format(criterion="g\u2032Wg"),
    latex=_SEARCHES.format(criterion="$g'Wg$"),
    typst=typst_escape(_SEARCHES.format(criterion="g\u2032Wg")),
)
SEARCHES_COLUMNS = ("Variant", "Search", "Start", "End", "Criterion", "Converged", "Kept")


def searches_table(estimates: Mapping[str, SavedEstimation]) -> pd.DataFrame:
    """Return one row per local search: its start, end point, criterion and whether kept.

    The kept one is the best local search of the search whose result is the estimate.

    Reads ``summary["searches"]``; a search recorded without its local searches (an older
    product) gives one row from its end point.
    """
    rows = []
    for variant, saved in estimates.items():
        searches = saved.summary.get("searches", {})
        for name, search in searches.items():
            local = search.get("local_searches") or [
                {"start": {}, "end": search["params"], "objective": search["objective"]}
            ]
            best = min(range(len(local)), key=lambda i: float(local[i]["objective"]))
            for position, found in enumerate(local, start=1):
                label = _search_label(name, position, n_local=len(local), n_searches=len(searches))
                rows.append(
                    {
                        "Variant": variant_name(variant),
                        "Search": label,
                        "Start": point_cell(found["start"]),
                        "End": point_cell(found["end"]),
                        "Criterion": float(found["objective"]),
                        "Converged": {True: "yes", False: "no"}.get(found.get("converged"), ""),
                        "Kept": "yes" if search["kept"] and position - 1 == best else "",
                    }
                )
    return pd.DataFrame(rows, columns=list(SEARCHES_COLUMNS))


def _search_label(name: str, number: int, *, n_local: int, n_searches: int) -> str:
    """Return a local search's row label: its search's name only where there are several."""
    if n_local == 1:
        return name
    return f"local search {number}" if n_searches == 1 else f"{name}, local search {number}"


def point_cell(point: Mapping[str, float]) -> Symbol | str:
    """Return a param point as "symbol = value, ..." in each format's markup."""
    if not point:
        return ""
    order = list(PARAMETERS)  # the paper's order (crra before beta), not the JSON's
    parts = []
    for name, value in sorted(point.items(), key=lambda item: _rank(item[0], order)):
        notation = PARAMETERS.get(name) or Notation(name, name, name, name)
        parts.append((notation, f"{float(value):.{printed_decimals(name)}f}"))
    return Symbol(
        text=", ".join(f"{n.text} = {v}" for n, v in parts),
        latex=", ".join(f"${n.latex}$ = {v}" for n, v in parts),
        typst=", ".join(f"${n.typst}$ = {v}" for n, v in parts),
    )


def _rank(name: str, order: list[str]) -> tuple[int, str]:
    return (order.index(name) if name in order else len(order), name)


def write_estimation_report(
    *,
    estimates: Mapping[str, SavedEstimation],
    paths: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write the estimates and moment-fit tables and the fit figure; return the files.

    ``paths`` has ``estimates_<suffix>``, ``moment_fit_<suffix>`` and
    ``estimation_searches_<suffix>`` and ``identification_<suffix>`` for "tex", "typ", "md"
    (labels ``tab:<stem>``), ``figure_png``, ``figure_pdf`` (the fit) and ``profiles_png``,
    ``profiles_pdf`` (the criterion along each param).
    """
    tables = _report_tables(estimates)
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
    profiles = {f: paths[f"profiles_{f}"] for f in ("png", "pdf") if f"profiles_{f}" in paths}
    if profiles:
        written += plot_criterion_profiles(
            estimates=estimates, paths=profiles, provenance=provenance
        )
    return written


def _report_tables(
    estimates: Mapping[str, SavedEstimation],
) -> dict[str, tuple[pd.DataFrame, str, dict[str, str]]]:
    """Return each report table by file stem: the table, its caption and its formats."""
    return {
        "estimates": (
            estimates_table(estimates),
            ESTIMATES_CAPTION
            + j_test_notes(estimates)
            + calibration_notes(estimates)
            + estimation_notes(estimates),
            {
                "Estimate": "{:.4f}",
                "Std. error": "{:.5f}",
                "CI lower": "{:.4f}",
                "CI upper": "{:.4f}",
            },
        ),
        "moment_fit": (
            moment_fit_table(estimates),
            MOMENT_FIT_CAPTION,
            {"Data s.e.": "{:.3f}", "Diff. s.e.": "{:.3f}", "t": "{:.2f}"},
        ),
        "estimation_searches": (
            searches_table(estimates),
            SEARCHES_CAPTION,
            {"Criterion": "{:.3f}"},
        ),
        "identification": (
            identification_table(estimates),
            identification_caption(estimates),
            {"Slope": "{:.3f}", "Sensitivity": "{:.3f}"},
        ),
    }


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
            labels = [age_label(m).replace("-", "\u2013") for m in moments["moment"]]
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
            panel.set_xticks(x, labels, rotation=45 if len(labels) > MAX_FLAT_TICKS else 0)
            panel.set(
                xlabel=style.AGE_LABEL,
                ylabel="Mean log wealth-to-income",
                title=style.variant_label(variant),
            )
        style.same_limits([row for line in axes for row in line])
        style.figure_legend(figure=figure, axis=axes[0][0])
        return style.save_figure(figure=figure, paths=paths, provenance=provenance)
