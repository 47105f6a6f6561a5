# ruff: noqa: RUF001 (the paper's Greek letters)
"""The robustness checks of the estimates: their inputs, their table and the paper's sentence.

Oracles: a check changes exactly its params and nothing estimated; its search starts at the
status quo's estimates, moved inside a bound by the trust radius; the second earnings process
keeps the baseline's stationary variance of log income; every figure of the sentence is a cell
of the table as printed; an estimate outside the baseline's interval is named, one inside is not.
"""

from __future__ import annotations

import re
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest

from project.analysis.robustness import (
    AT_BOUND,
    robustness_estimates_sentence,
    robustness_table,
    table_formats,
    write_robustness_table,
)
from project.analysis.table_output import format_cells
from project.config import ESTIMATION, ROBUSTNESS, EstimationSettings
from project.estimation.products import SavedEstimation
from project.estimation.robustness import robustness_settings, robustness_specification
from project.models.lifecycle import DEFAULT_PARAMS

SPECIFICATION = {"name": "baseline", "model": "m", "params": {"crra": 2.0, "beta": 0.96, "r": 0.03}}


def saved(crra: float, beta: float, *, at_bound: bool = False, p: float = 0.2) -> SavedEstimation:
    """Return an estimate of (crra, beta) with intervals of +-0.05 and +-0.01."""
    estimates = pd.DataFrame(
        {
            "param": ["crra", "beta"],
            "estimate": [crra, beta],
            "std_error": [np.nan if at_bound else 0.025, 0.005],
            "ci_lower": [np.nan if at_bound else crra - 0.05, beta - 0.01],
            "ci_upper": [np.nan if at_bound else crra + 0.05, beta + 0.01],
            "at_bound": [at_bound, False],
        }
    )
    summary = {"j_statistic": 4.5, "j_dof": 3, "j_p_value": p, "warnings": []}
    return SavedEstimation(estimates=estimates, moments=pd.DataFrame(), summary=summary)


DESCRIPTIONS = {"income": "Income persistence 0.95", "shocks": "Taste-shock scale 0.05"}


def test_a_check_changes_its_params_and_name_and_nothing_else():
    check = {"name": "income", "params": {"r": 0.02}}
    out = robustness_specification(check=check, specification=SPECIFICATION, estimated=["crra"])
    assert out["params"] == {"crra": 2.0, "beta": 0.96, "r": 0.02}
    assert out["name"] == "robustness_income" and out["model"] == "m"
    assert SPECIFICATION["params"]["r"] == 0.03  # the status quo's specification is untouched


def test_a_check_searches_once_from_the_estimates_with_its_age_groups():
    check = {"name": "ages", "age_groups": ((50, 55), (55, 60))}
    settings = robustness_settings(
        check=check, settings=asdict(ESTIMATION), estimates={"crra": 2.5, "beta": 0.97}
    )
    assert settings["start"] == {"crra": 2.5, "beta": 0.97}
    assert settings["n_starts"] == 1 and settings["profiles"] is False
    assert settings["age_groups"] == [[50, 55], [55, 60]]
    assert ESTIMATION.n_starts > 1  # the status quo's settings are untouched


def test_a_start_at_a_bound_moves_inside_by_the_trust_radius():
    settings = asdict(EstimationSettings())
    radius = settings["algo_options"]["trustregion_initial_radius"]
    lower, upper = settings["bounds"]["beta"]
    out = robustness_settings(
        check={"name": "c"}, settings=settings, estimates={"crra": 0.3, "beta": upper}
    )
    assert out["start"]["beta"] == pytest.approx(upper - radius)
    assert out["start"]["crra"] == pytest.approx(settings["bounds"]["crra"][0] + radius)
    assert lower < out["start"]["beta"] < upper


def test_the_second_earnings_process_keeps_the_stationary_variance():
    (check,) = [c for c in ROBUSTNESS if "income_rho" in c.params] or [None]
    if check is None:
        pytest.skip("this profile runs no earnings-process check")
    rho, sigma = check.params["income_rho"], check.params["income_sigma"]
    base = DEFAULT_PARAMS["income_sigma"] ** 2 / (1 - DEFAULT_PARAMS["income_rho"] ** 2)
    assert rho != DEFAULT_PARAMS["income_rho"]
    assert sigma**2 / (1 - rho**2) == pytest.approx(base, rel=1e-12)


def test_no_check_changes_an_estimated_preference():
    for check in ROBUSTNESS:
        assert not set(check.params) & set(ESTIMATION.estimated), check.name


def _printed_cells(baseline, checks):
    table = robustness_table(baseline=baseline, checks=checks, descriptions=DESCRIPTIONS)
    return format_cells(table=table, formats=table_formats(["crra", "beta"]))


def test_every_figure_of_the_sentence_is_a_cell_of_the_table():
    baseline, checks = (
        saved(0.84, 0.9745),
        {"income": saved(0.91, 0.9712), "shocks": saved(0.8, 0.9)},
    )
    sentence = robustness_estimates_sentence(
        baseline=baseline, checks=checks, descriptions=DESCRIPTIONS
    )
    cells = {str(c) for c in _printed_cells(baseline, checks).to_numpy().ravel()}
    figures = [f for f in re.findall(r"\d+\.\d+", sentence) if f not in {"0.95", "0.05"}]
    assert figures and set(figures) <= cells, (figures, cells)
    assert "0.800 (taste-shock scale 0.05) and 0.910 (income persistence 0.95)" in sentence
    assert "against 0.840 in the baseline" in sentence


def test_an_estimate_outside_the_baselines_interval_is_named():
    baseline = saved(0.84, 0.9745)
    checks = {"income": saved(0.86, 0.9750), "shocks": saved(0.95, 0.9750)}
    sentence = robustness_estimates_sentence(
        baseline=baseline, checks=checks, descriptions=DESCRIPTIONS
    )
    assert (
        "The estimate of γ lies outside the baseline's 95 % confidence interval under 1 of the 2 "
        "checks (taste-shock scale 0.05)."
    ) in sentence
    assert "Every check's estimate lies within the baseline's 95 % confidence interval of β." in (
        sentence
    )


def test_a_baseline_at_a_bound_has_no_interval_to_compare_with():
    sentence = robustness_estimates_sentence(
        baseline=saved(0.3, 0.97, at_bound=True),
        checks={"income": saved(0.5, 0.97, p=0.01)},
        descriptions=DESCRIPTIONS,
    )
    assert "estimate of γ lies at a bound of its search interval" in sentence
    assert "outside" not in sentence
    assert "rejects the model at the 5 % level under every check" in sentence
    table = robustness_table(
        baseline=saved(0.3, 0.97, at_bound=True), checks={}, descriptions=DESCRIPTIONS
    )
    assert table.loc[0, "γ s.e."] == AT_BOUND


def test_the_table_is_written_in_three_formats(tmp_path):
    paths = {s: tmp_path / f"robustness.{s}" for s in ("tex", "typ", "md")}
    write_robustness_table(
        baseline=saved(0.84, 0.9745),
        checks={"income": saved(0.91, 0.9712)},
        descriptions=DESCRIPTIONS,
        paths=paths,
    )
    markdown = paths["md"].read_text()
    assert "| Income persistence 0.95 | 0.910 | 0.025 | 0.9712 | 0.0050 | 4.50 | 3 | 0.200 |" in (
        markdown
    )
    assert "<tab:robustness>" in paths["typ"].read_text()
    assert r"\label{tab:robustness}" in paths["tex"].read_text()
