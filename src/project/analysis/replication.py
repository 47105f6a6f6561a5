"""The replication's tables and paragraph: the published estimates beside ours.

``replication_table`` has one row per estimate of the published buffer-stock estimation
(``project.estimation.replication``): the published one, ours by the published criterion and
ours by efficient MSM on the medians; each with the discount factors' scale and relative risk
aversion, their standard errors and their distance from the published estimate in published
standard errors. ``replication_fit`` sets the SCF medians beside the simulated ones at both of
our estimates. ``replication_sentence`` says what they show, every figure as the tables print
it; ``write_replication_tables`` writes both tables as LaTeX, Typst and Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.analysis.notation import (
    MINUS,
    joined,
    number,
    p_relation,
    p_value,
    percent,
    symbol,
)
from project.analysis.table_output import write_table_files
from project.data.replication import AGE_GROUPS
from project.estimation.products import SavedEstimation
from project.estimation.replication import (
    MSM,
    PUBLISHED,
    PUBLISHED_BOOTSTRAP,
    PUBLISHED_CRITERION,
    SOURCE,
    other_draws_name,
)
from project.models import buffer_stock

GAMMA = symbol("crra")
ESTIMATE = "Estimate"
ROWS = {
    "published": "Published estimate (HARK's example, 2019)",
    "bootstrap": "Published run with bootstrap s.e. (2020)",
    PUBLISHED_CRITERION: "Ours, the published criterion",
    MSM: "Ours, efficient MSM on the medians",
}
PARAMS = {"beta": ("β scale", 4), "crra": (GAMMA, 3)}
"""Each estimated param's column label and printed decimals."""
GAP_DECIMALS = 1
CORRELATION, CORRELATION_DECIMALS = "Corr.", 3
CRITERION = "Criterion"
T_COLUMN = "t (MSM)"
WITHIN = 2.0
"""The replication is within this many published standard errors of the published estimate or
says so."""
NONE = "\u2014"
TABLE_CAPTION = (
    "Replication of the buffer-stock estimation of Carroll's SolvingMicroDSOPs on its own data "
    "(SCF households aged 26-60, waves 1992-2007) and calibration, as HARK distributed it in "
    "2019. β scale multiplies the age profile of discount factors; "
    f"{GAMMA} is relative risk aversion (\u03c1 in the notes). The published estimate and the "
    "published standard errors (50 bootstrap re-estimations) come from two runs of the same "
    "code. Our published-criterion estimates have no standard errors (the published ones come "
    "from a bootstrap we do not repeat); the rows on other draws re-estimate them on other "
    "simulated households. Gap: the estimate less the published estimate, in published "
    "standard errors. Corr.: the correlation of the row's two estimates. Criterion: the "
    "published sum of weighted absolute deviations on the row's simulated draws (at the "
    "published rows: on our first draws, at their estimates), or J with its degrees of freedom "
    "and p-value."
)
FIT_CAPTION = (
    "The replication's fit: the weighted median ratio of net worth to permanent income of the "
    "SCF households by age, the simulated median at our two estimates, and the t-statistic of "
    "the MSM residual (the miss over its standard error, with the simulation noise)."
)


def _criterion_rows(saved: SavedEstimation) -> list[tuple[str, dict[str, Any]]]:
    """Return (row label, search) of the published criterion: the first draws, then others."""
    searches = saved.summary["searches"]
    rows = [(ROWS[PUBLISHED_CRITERION], searches[PUBLISHED_CRITERION])]
    draw = 2
    while other_draws_name(draw) in searches:
        rows.append(
            (f"{ROWS[PUBLISHED_CRITERION]}, draws {draw}", searches[other_draws_name(draw)])
        )
        draw += 1
    return rows


def replication_table(saved: SavedEstimation) -> pd.DataFrame:
    """Return the published and our estimates with standard errors, gaps and criteria."""
    first = saved.summary["searches"][PUBLISHED_CRITERION]
    at_published = first["at_published"]
    bootstrap = {p: v["estimate"] for p, v in PUBLISHED_BOOTSTRAP.items()}
    rows = [
        _row(ROWS["published"], PUBLISHED, gap=False)
        | {CRITERION: _criterion(at_published["estimate"])},
        _row(ROWS["bootstrap"], bootstrap)
        | {
            _se(p): number(v["std_error"], decimals=PARAMS[p][1])
            for p, v in PUBLISHED_BOOTSTRAP.items()
        }
        | {CRITERION: _criterion(at_published["bootstrap run"])},
    ]
    for label, search in _criterion_rows(saved):
        rows.append(_row(label, search["params"]) | {CRITERION: _criterion(search["objective"])})
    msm = saved.estimates.set_index("param")
    summary = saved.summary
    rows.append(
        _row(ROWS[MSM], msm["estimate"].to_dict())
        | {_se(p): number(msm.loc[p, "std_error"], decimals=PARAMS[p][1]) for p in PARAMS}
        | {
            CORRELATION: number(saved.correlation, decimals=CORRELATION_DECIMALS),
            CRITERION: f"J = {summary['j_statistic']:.1f} ({summary['j_dof']}), "
            f"p {p_relation(p_value(float(summary['j_p_value'])))}",
        }
    )
    for label, errors in _step_rows(saved):
        rows.append(
            _row(label, msm["estimate"].to_dict())
            | {_se(p): number(errors[p], decimals=PARAMS[p][1]) for p in PARAMS}
        )
    columns = [ESTIMATE]
    for param in PARAMS:
        columns += [PARAMS[param][0], _se(param), _gap_column(param)]
    return pd.DataFrame(rows).reindex(columns=[*columns, CORRELATION, CRITERION]).fillna(NONE)


def _step_rows(saved: SavedEstimation) -> list[tuple[str, dict[str, float]]]:
    """Return (row label, standard errors) of MSM with each other finite-difference step."""
    main = percent(float(saved.summary["settings"]["relative_step"]), decimals=1)
    by_step = saved.summary["searches"][MSM].get("std_errors_by_step", {})
    return [
        (f"Same, s.e. from steps of {percent(float(step), decimals=0)} instead of {main}", errors)
        for step, errors in by_step.items()
    ]


def _criterion(value: float) -> str:
    return f"{float(value):,.1f}"


def _se(param: str) -> str:
    return f"{PARAMS[param][0]} s.e."


def _gap_column(param: str) -> str:
    return f"{PARAMS[param][0]} gap"


def _gap(value: float, param: str) -> float:
    return (float(value) - PUBLISHED[param]) / PUBLISHED_BOOTSTRAP[param]["std_error"]


def _row(label: str, values: Mapping[str, float], *, gap: bool = True) -> dict[str, object]:
    row: dict[str, object] = {ESTIMATE: label}
    for param, (column, decimals) in PARAMS.items():
        row[column] = number(float(values[param]), decimals=decimals)
        if gap:
            row[_gap_column(param)] = _signed(_gap(values[param], param))
    return row


def _signed(value: float) -> str:
    text = number(value, decimals=GAP_DECIMALS)
    return text if text.startswith(MINUS) or float(text.replace(MINUS, "-")) == 0 else f"+{text}"


def replication_fit(saved: SavedEstimation) -> pd.DataFrame:
    """Return the SCF median, the simulated medians at both estimates and MSM's t-statistics."""
    moments = saved.moments
    published = saved.summary["searches"][PUBLISHED_CRITERION]
    return pd.DataFrame(
        {
            "Ages": [str(m).replace("-", "\u2013") for m in moments["moment"]],
            "SCF median": moments["data"].to_numpy(dtype=float),
            ROWS[PUBLISHED_CRITERION]: np.asarray(published["moments"], dtype=float),
            ROWS[MSM]: moments["simulated"].to_numpy(dtype=float),
            T_COLUMN: moments["t_stat"].to_numpy(dtype=float),
        }
    )


def replication_numbers(saved: SavedEstimation, *, profiles: pd.DataFrame) -> dict[str, str]:
    """Return the set-up's facts the paper prints, from the product, the profiles and SOURCE."""
    settings = saved.summary["settings"]
    households = int(sum(saved.moments["n_data"]))
    risky = profiles[["permanent_shock_sd", "transitory_shock_sd"]].to_numpy()
    sds = sorted({float(x) for x in risky.ravel() if x > 0})
    ages = profiles["age"].to_numpy()
    mortal = profiles["survival"].to_numpy() < 1
    return {
        "households": f"{households:,}",
        "subjects": f"{int(settings['n_subjects']):,}",
        "savings_points": str(int(settings["n_savings"])),
        "example_year": str(SOURCE["example_year"]),
        "waves": "\u2013".join(map(str, SOURCE["waves"])),
        "ages": f"{AGE_GROUPS[0][0] + 1}\u2013{AGE_GROUPS[-1][1]}",
        "shock_sd": joined([f"{x:g}" for x in sds]),
        "unemployment": percent(buffer_stock.UNEMPLOYMENT_PROBABILITY),
        "risk_free_age": str(int(ages[np.flatnonzero(risky.sum(axis=1) == 0)[0]]) + 1),
        "interest_factor": f"{buffer_stock.CALIBRATED['interest_factor']:g}",
        "first_death_age": str(int(ages[np.flatnonzero(mortal)[0]])),
        "published_grid_points": str(SOURCE["published_grid_points"]),
        "notes_crra": f"{SOURCE['notes_2026']['crra']:g}",
        "notes_beta": f"{SOURCE['notes_2026']['beta']:g}",
    }


def replication_sentence(saved: SavedEstimation) -> str:
    """Return the replication paragraph; every figure is one the two tables print."""
    table = replication_table(saved).set_index(ESTIMATE)
    published, run = table.loc[ROWS["published"]], table.loc[ROWS["bootstrap"]]
    ours, msm = table.loc[ROWS[PUBLISHED_CRITERION]], table.loc[ROWS[MSM]]
    others = [table.loc[label] for label, _ in _criterion_rows(saved)[1:]]
    b, g = PARAMS["beta"][0], PARAMS["crra"][0]
    return " ".join(
        [
            f"On the published set-up's own data and calibration, the published criterion gives "
            f"{GAMMA} = {ours[g]} and a discount-factor scale of {ours[b]}, against the published "
            f"estimate's {published[g]} and {published[b]}: {_apart(ours[_gap_column('crra')])} "
            f"and {_apart(ours[_gap_column('beta')])} published standard errors apart "
            f"({run[_se('crra')]} and {run[_se('beta')]}, from the published run that estimated "
            f"{run[g]} and {run[b]}, itself {_apart(run[_gap_column('crra')])} and "
            f"{_apart(run[_gap_column('beta')])} of them from the published estimate).",
            _noise_sentence(ours, others),
            _verdict(table, labels=[ROWS[PUBLISHED_CRITERION]]),
            _msm_sentence(saved, msm),
            _fit_sentence(replication_fit(saved), msm),
        ]
    )


def _noise_sentence(ours: pd.Series, others: list[pd.Series]) -> str:
    """Return how far the estimates move on other simulated draws, per param, in the gaps."""
    if not others:
        return ""
    rows = [ours, *others]
    ranges, sizes = [], []
    for param, what in (("crra", f"the {GAMMA} gap ranges"), ("beta", "the scale's")):
        gaps = [float(row[_gap_column(param)].replace(MINUS, "-")) for row in rows]
        low, high = min(gaps), max(gaps)
        shown = [rows[gaps.index(v)][_gap_column(param)] for v in (low, high)]
        ranges.append(f"{what} from {shown[0]} to {shown[1]}")
        sizes.append("more than" if high - low > 1 else "less than")
    noisy = "more than" in sizes
    return (
        f"Estimated again on {len(others)} other sets of simulated households, the same "
        f"criterion gives {GAMMA} = {joined([str(r[GAMMA]) for r in others])} and scales of "
        f"{joined([str(r[PARAMS['beta'][0]]) for r in others])}: across the {len(rows)} sets "
        f"of draws {ranges[0]} and {ranges[1]}, so simulation noise alone moves {GAMMA} by "
        f"{sizes[0]} one published standard error and the scale by {sizes[1]} one."
        + (
            " The published standard errors hold the simulated draws fixed and so leave this "
            "noise out: against it, the check below has little power, and the replication "
            "cannot be told apart from the published estimate."
            if noisy
            else ""
        )
    )


def _verdict(table: pd.DataFrame, *, labels: Sequence[str]) -> str:
    """Return whether the rows ``labels`` lie within ``WITHIN`` published standard errors."""
    gaps = [
        abs(float(table.loc[label, _gap_column(p)].replace(MINUS, "-")))
        for label in labels
        for p in PARAMS
    ]
    within = number(WITHIN, decimals=0)
    if max(gaps) <= WITHIN:
        return (
            f"By the published criterion the replication lies within {within} published standard "
            "errors of the published estimate in both parameters."
        )
    return (
        f"By the published criterion the replication lies more than {within} published standard "
        "errors from the published estimate in at least one parameter."
    )


def _msm_sentence(saved: SavedEstimation, msm: pd.Series) -> str:
    """Return the MSM estimates, how their standard errors compare, and how to read them."""
    b, g = PARAMS["beta"][0], PARAMS["crra"][0]
    correlation = float(msm[CORRELATION].replace(MINUS, "-"))
    estimates = saved.estimates.set_index("param")["std_error"]
    ratios = [float(estimates[p]) / PUBLISHED_BOOTSTRAP[p]["std_error"] for p in ("crra", "beta")]
    return (
        f"Efficient MSM on the seven medians (weighted by the inverse of each median's variance "
        f"with the simulation noise, efficient up to the correlation of the simulated medians, "
        f"which share households) gives {GAMMA} = {msm[g]} ({msm[_se('crra')]}) and a scale of "
        f"{msm[b]} ({msm[_se('beta')]}), {_apart(msm[_gap_column('crra')])} and "
        f"{_apart(msm[_gap_column('beta')])} published standard errors from the published "
        f"estimate, with standard errors {joined([f'{r:.0f}' for r in ratios])} times the "
        f"published bootstrap ones. The two estimates are correlated at {msm[CORRELATION]}: more "
        f"risk aversion with {'less' if correlation < 0 else 'more'} patience fits the medians "
        f"almost as well, a long valley of the criterion.{_step_clause(saved)} These standard "
        f"errors rest on "
        f"finite-difference derivatives of simulated medians and a linear approximation over a "
        f"wide range, so we read them as a sign of weak identification, not as exact intervals; "
        f"we conjecture that the published bootstrap, which starts each Nelder\u2013Mead search at "
        f"the estimate on the same simulated draws, does not travel along the valley, but we have "
        f"not rerun it."
    )


def _step_clause(saved: SavedEstimation) -> str:
    """Return how the MSM standard errors change with the finite-difference step."""
    clauses = [
        f"{label.removeprefix('Same, s.e. from ')} the standard errors are "
        f"{number(errors['crra'], decimals=PARAMS['crra'][1])} and "
        f"{number(errors['beta'], decimals=PARAMS['beta'][1])}"
        for label, errors in _step_rows(saved)
    ]
    return (
        f" With steps of {'; with steps of '.join(c.removeprefix('steps of ') for c in clauses)}."
        if clauses
        else ""
    )


def _fit_sentence(fit: pd.DataFrame, msm: pd.Series) -> str:
    """Return how the model misses the medians: its slope, in levels and in sampling error."""
    simulated, data = fit[ROWS[MSM]].to_numpy(), fit["SCF median"].to_numpy()
    steepness = "less" if simulated[-1] - simulated[0] < data[-1] - data[0] else "more"
    level = int(np.argmax(np.abs(simulated - data)))
    relative = int(np.argmax(np.abs(fit[T_COLUMN].to_numpy())))
    return (
        f"The model does not fit the medians within their sampling error ({msm[CRITERION]}; "
        f"with the diagonal weighting J is only approximately chi-square): its "
        f"median wealth rises {steepness} steeply with age than the data's; it misses most in "
        f"levels at ages {fit['Ages'].iloc[level]} ({number(simulated[level], decimals=2)} "
        f"simulated against {number(data[level], decimals=2)} in the SCF) and relative to "
        f"sampling error at ages {fit['Ages'].iloc[relative]} "
        f"(t = {number(fit[T_COLUMN].iloc[relative], decimals=2)})."
    )


def _apart(gap: str) -> str:
    return gap.lstrip("+").replace(MINUS, "")


def write_replication_tables(
    *,
    saved: SavedEstimation,
    paths: Mapping[str, Mapping[str, Path]],
    provenance: Mapping[str, str] | None = None,
) -> Sequence[Path]:
    """Write the estimates (``paths["estimates"]``) and the fit (``paths["fit"]``) tables."""
    written = list(
        write_table_files(
            table=replication_table(saved),
            paths=paths["estimates"],
            formats={},
            caption=TABLE_CAPTION,
            label="tab:replication",
            font_size="footnotesize",
            provenance=provenance,
        )
    )
    fit = replication_fit(saved)
    written += write_table_files(
        table=fit,
        paths=paths["fit"],
        formats={column: "{:.2f}" for column in fit.columns[1:]},
        caption=FIT_CAPTION,
        label="tab:replication_fit",
        font_size="footnotesize",
        provenance=provenance,
    )
    return written
