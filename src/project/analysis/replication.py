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
from project.estimation.replication import MSM, PUBLISHED, PUBLISHED_CRITERION, SOURCE
from project.models import buffer_stock

ESTIMATE = "Estimate"
ROWS = {
    "published": "Published (HARK's example, 2019)",
    PUBLISHED_CRITERION: "Ours, the published criterion",
    MSM: "Ours, efficient MSM on the medians",
}
GAMMA = symbol("crra")
PARAMS = {"beta": ("β scale", 4), "crra": (GAMMA, 3)}
"""Each estimated param's column label and printed decimals."""
GAP_DECIMALS = 1
CORRELATION, CORRELATION_DECIMALS = "Corr.", 3
NONE = "\u2014"
TABLE_CAPTION = (
    "Replication of the buffer-stock estimation of Carroll's SolvingMicroDSOPs on its own data "
    "(SCF households aged 26-60, waves 1992-2007) and calibration, as HARK distributed it in "
    "2019. β scale multiplies the age profile of discount factors; "
    f"{GAMMA} is relative risk aversion (\u03c1 in the notes). Standard errors in the s.e. "
    "columns: the published ones from 50 bootstrap re-estimations; ours by efficient MSM, "
    "including the simulation noise (the published criterion has none of its own). Gap: our "
    "estimate less the published one, in published standard errors. Corr.: the correlation of "
    "our two estimates. Criterion: the published sum of weighted absolute deviations, or J "
    "with its degrees of freedom and p-value."
)
FIT_CAPTION = (
    "The replication's fit: the weighted median ratio of net worth to permanent income of the "
    "SCF households by age, and the simulated median at our two estimates."
)


def replication_table(saved: SavedEstimation) -> pd.DataFrame:
    """Return the three estimates with standard errors, gaps and criteria (module docstring)."""
    published = saved.summary["searches"][PUBLISHED_CRITERION]
    msm = saved.estimates.set_index("param")
    rows = [_row(ROWS["published"], {p: v["estimate"] for p, v in PUBLISHED.items()})]
    rows[0] |= {_se(p): number(v["std_error"], decimals=PARAMS[p][1]) for p, v in PUBLISHED.items()}
    rows[0]["Criterion"] = NONE
    rows.append(_row(ROWS[PUBLISHED_CRITERION], published["params"]))
    rows[1] |= {_se(p): NONE for p in PARAMS}
    rows[1]["Criterion"] = f"{published['objective']:,.0f}"
    rows.append(_row(ROWS[MSM], msm["estimate"].to_dict()))
    rows[2] |= {_se(p): number(msm.loc[p, "std_error"], decimals=PARAMS[p][1]) for p in PARAMS}
    summary = saved.summary
    rows[2]["Criterion"] = (
        f"J = {summary['j_statistic']:.1f} ({summary['j_dof']}), "
        f"p {p_relation(p_value(float(summary['j_p_value'])))}"
    )
    rows[0][CORRELATION] = rows[1][CORRELATION] = NONE
    rows[2][CORRELATION] = number(_correlation(saved), decimals=CORRELATION_DECIMALS)
    columns = [ESTIMATE]
    for param in PARAMS:
        columns += [PARAMS[param][0], _se(param), _gap_column(param)]
    return pd.DataFrame(rows)[[*columns, CORRELATION, "Criterion"]]


def _se(param: str) -> str:
    return f"{PARAMS[param][0]} s.e."


def _gap_column(param: str) -> str:
    return f"{PARAMS[param][0]} gap"


def _row(label: str, values: Mapping[str, float]) -> dict[str, object]:
    row: dict[str, object] = {ESTIMATE: label}
    for param, (column, decimals) in PARAMS.items():
        value = float(values[param])
        row[column] = number(value, decimals=decimals)
        gap = (value - PUBLISHED[param]["estimate"]) / PUBLISHED[param]["std_error"]
        row[_gap_column(param)] = NONE if label == ROWS["published"] else _signed(gap)
    return row


def _signed(value: float) -> str:
    text = number(value, decimals=GAP_DECIMALS)
    return text if text.startswith(MINUS) or float(value) == 0 else f"+{text}"


def replication_fit(saved: SavedEstimation) -> pd.DataFrame:
    """Return the SCF median and the simulated medians at both estimates, by age group."""
    moments = saved.moments
    published = saved.summary["searches"][PUBLISHED_CRITERION]
    return pd.DataFrame(
        {
            "Ages": [str(m).replace("-", "\u2013") for m in moments["moment"]],
            "SCF median": moments["data"].to_numpy(dtype=float),
            ROWS[PUBLISHED_CRITERION]: np.asarray(published["moments"], dtype=float),
            ROWS[MSM]: moments["simulated"].to_numpy(dtype=float),
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
    ours, msm = table.loc[ROWS[PUBLISHED_CRITERION]], table.loc[ROWS[MSM]]
    published = table.loc[ROWS["published"]]
    fit = replication_fit(saved)
    b, g = PARAMS["beta"][0], PARAMS["crra"][0]
    correlation = float(msm[CORRELATION].replace(MINUS, "-"))
    worst = int(np.argmax(np.abs(fit[ROWS[MSM]] - fit["SCF median"])))
    return (
        f"On the published set-up's own data and calibration, the published criterion gives "
        f"{GAMMA} = {ours[g]} and a discount-factor scale of {ours[b]}, against the published "
        f"{published[g]} ({published[_se('crra')]}) and {published[b]} "
        f"({published[_se('beta')]}): {_apart(ours[_gap_column('crra')])} and "
        f"{_apart(ours[_gap_column('beta')])} published standard errors apart. "
        f"Efficient MSM on the seven medians gives {GAMMA} = {msm[g]} ({msm[_se('crra')]}) and a "
        f"scale of {msm[b]} ({msm[_se('beta')]}), standard errors {_times(msm, published)} "
        f"the published bootstrap ones: the two estimates are correlated at "
        f"{msm[CORRELATION]}, so more risk aversion with "
        f"{'less' if correlation < 0 else 'more'} patience fits the "
        f"medians almost as well (a long valley of the criterion); the published bootstrap "
        f"re-estimates by Nelder\u2013Mead started at the estimate, on the same simulated shocks, "
        f"which need not travel along it. The model does not fit the medians within their "
        f"sampling error ({msm['Criterion']}): its median wealth rises {_steepness(fit)} with "
        f"age than the data's, and misses most at ages {fit['Ages'].iloc[worst]} "
        f"({number(fit[ROWS[MSM]].iloc[worst], decimals=2)} simulated against "
        f"{number(fit['SCF median'].iloc[worst], decimals=2)} in the SCF)."
    )


def _steepness(fit: pd.DataFrame) -> str:
    """Return whether the simulated medians rise "less steeply" or "more steeply" than the SCF's."""
    simulated, data = fit[ROWS[MSM]].to_numpy(), fit["SCF median"].to_numpy()
    return "less steeply" if simulated[-1] - simulated[0] < data[-1] - data[0] else "more steeply"


def _times(ours: pd.Series, published: pd.Series) -> str:
    """Return "k and l times": each printed standard error over the published one."""
    ratios = [float(ours[_se(param)]) / float(published[_se(param)]) for param in ("crra", "beta")]
    return f"{joined([f'{ratio:.0f}' for ratio in ratios])} times"


def _apart(gap: str) -> str:
    return gap.lstrip("+").replace(MINUS, "")


def _correlation(saved: SavedEstimation) -> float:
    covariance = saved.covariance
    return float(covariance[0, 1] / np.sqrt(covariance[0, 0] * covariance[1, 1]))


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
    written += write_table_files(
        table=replication_fit(saved),
        paths=paths["fit"],
        formats={column: "{:.2f}" for column in replication_fit(saved).columns[1:]},
        caption=FIT_CAPTION,
        label="tab:replication_fit",
        font_size="footnotesize",
        provenance=provenance,
    )
    return written
