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
from scipy.stats import chi2

from project.analysis.robustness import (
    AT_BOUND,
    LAMBDA,
    Welfare,
    c_test,
    robustness_estimates_sentence,
    robustness_table,
    table_formats,
    write_robustness_table,
)
from project.analysis.robustness_welfare import check_params
from project.analysis.table_output import format_cells
from project.config import ESTIMATION, ROBUSTNESS, EstimationSettings
from project.estimation.products import SavedEstimation
from project.estimation.robustness import robustness_settings, robustness_specification
from project.models.lifecycle import DEFAULT_PARAMS

SPECIFICATION = {"name": "baseline", "model": "m", "params": {"crra": 2.0, "beta": 0.96, "r": 0.03}}


MOMENTS = tuple(f"log_wealth_income_{a}_{a + 4}" for a in (51, 56, 61, 66, 71))


def saved(
    crra: float,
    beta: float,
    *,
    at_bound: bool = False,
    j: float = 4.5,
    p: float = 0.2,
    moments: tuple[str, ...] = MOMENTS,
) -> SavedEstimation:
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
    summary = {"j_statistic": j, "j_dof": len(moments) - 2, "j_p_value": p, "warnings": []}
    return SavedEstimation(
        estimates=estimates, moments=pd.DataFrame({"moment": list(moments)}), summary=summary
    )


SPECS = {
    "income": {"description": "Income persistence 0.95", "params": {"income_rho": 0.95}},
    "shocks": {"description": "Taste-shock scale 0.05", "params": {"taste_shock_scale": 0.05}},
    "ages": {"description": "Ages 51-70 only", "params": {}, "age_groups": [[50, 55]]},
}
BASELINE = saved(0.84, 0.9745, j=5.26, p=0.154)
CHECKS = {
    "income": saved(0.91, 0.9712, j=3.21, p=0.361),
    "shocks": saved(0.8, 0.9, j=5.66, p=0.129),
    "ages": saved(0.73, 0.9751, j=0.02, p=0.99, moments=MOMENTS[:4]),
}


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
    table = robustness_table(baseline=baseline, checks=checks, specs=SPECS)
    return format_cells(table=table, formats=table_formats(["crra", "beta"]))


def test_every_figure_of_the_sentence_is_a_cell_of_the_table():
    sentence = robustness_estimates_sentence(baseline=BASELINE, checks=CHECKS, specs=SPECS)
    cells = {str(c).lstrip("< ") for c in _printed_cells(BASELINE, CHECKS).to_numpy().ravel()}
    figures = [f for f in re.findall(r"\d+\.\d+", sentence) if f not in {"0.95", "0.05"}]
    assert len(figures) >= 10 and set(figures) <= cells, (figures, cells)
    assert "γ lies between 0.730 (ages 51-70 only) and 0.910 (income persistence 0.95)" in sentence
    assert "against 0.840 in the baseline" in sentence
    assert "it does not test it" in sentence


def test_checks_that_tie_at_an_extreme_are_all_named():
    checks = {
        "income": saved(0.91, 0.97514),
        "shocks": saved(0.8, 0.9),
        "ages": saved(0.7, 0.97507),
    }
    sentence = robustness_estimates_sentence(baseline=BASELINE, checks=checks, specs=SPECS)
    assert "and 0.9751 (income persistence 0.95; ages 51-70 only)" in sentence


def test_a_check_that_leaves_moments_out_gets_hansens_c_test():
    test = c_test(baseline=BASELINE, check=CHECKS["ages"], spec=SPECS["ages"])
    p = chi2.sf(5.24, 1)
    assert test == (pytest.approx(5.24), 1, pytest.approx(p))
    sentence = robustness_estimates_sentence(baseline=BASELINE, checks=CHECKS, specs=SPECS)
    assert (
        "Leaving out the moment of ages 71\u201375 lowers J from 5.26 to 0.02 (p = 0.990); the "
        f"difference, C = 5.24 with 1 degree of freedom (p = {p:.3f}), rejects at the 5 % level "
        "that the moment of ages 71\u201375 agrees with the others."
    ) in sentence
    assert "which makes it over-reject" in sentence
    table = robustness_table(baseline=BASELINE, checks=CHECKS, specs=SPECS).set_index(
        "Specification"
    )
    assert table.loc["Ages 51-70 only", "p (C)"] == f"{p:.3f}"
    assert table.loc["Income persistence 0.95", "p (C)"] == ""  # its model differs: no C test


def test_no_c_test_where_the_check_also_changes_params():
    spec = {"description": "d", "params": {"r": 0.02}, "age_groups": [[50, 55]]}
    assert c_test(baseline=BASELINE, check=CHECKS["ages"], spec=spec) is None
    assert c_test(baseline=BASELINE, check=CHECKS["income"], spec=SPECS["ages"]) is None


def test_the_j_sentence_compares_p_values_not_statistics():
    sentence = robustness_estimates_sentence(baseline=BASELINE, checks=CHECKS, specs=SPECS)
    assert (
        "The J-test's p-value lies between 0.129 (taste-shock scale 0.05) and 0.990 (ages 51-70 "
        "only), against 0.154 in the baseline; it rejects the model at the 5 % level under none "
        "of the checks."
    ) in sentence


def test_a_baseline_at_a_bound_prints_no_standard_error():
    checks = {"income": saved(0.5, 0.97, p=0.01)}
    sentence = robustness_estimates_sentence(
        baseline=saved(0.3, 0.97, at_bound=True), checks=checks, specs=SPECS
    )
    assert "γ is 0.500 under the check (income persistence 0.95)" in sentence
    assert "rejects the model at the 5 % level under every check" in sentence
    table = robustness_table(baseline=saved(0.3, 0.97, at_bound=True), checks={}, specs=SPECS)
    assert table.loc[0, "γ s.e."] == AT_BOUND


def test_the_table_is_written_in_three_formats(tmp_path):
    paths = {s: tmp_path / f"robustness.{s}" for s in ("tex", "typ", "md")}
    write_robustness_table(
        baseline=BASELINE,
        checks={"income": CHECKS["income"]},
        specs=SPECS,
        paths=paths,
    )
    markdown = paths["md"].read_text()
    assert "| Income persistence 0.95 | 0.910 | 0.025 | 0.9712 | 0.0050 | 3.21 | 3 | 0.361 |" in (
        markdown
    )
    assert "<tab:robustness>" in paths["typ"].read_text()
    assert r"\label{tab:robustness}" in paths["tex"].read_text()


def test_lambda_under_each_check_is_a_column_and_a_sentence():
    welfare = Welfare(
        baseline=-0.0465,
        checks={"income": -0.0458, "shocks": -0.0468, "ages": -0.0488},
        interval="[−4.89 %, −4.41 %]",
    )
    table = robustness_table(baseline=BASELINE, checks=CHECKS, specs=SPECS, welfare=welfare)
    assert list(table[LAMBDA]) == pytest.approx([-4.65, -4.58, -4.68, -4.88])
    sentence = robustness_estimates_sentence(
        baseline=BASELINE, checks=CHECKS, specs=SPECS, welfare=welfare
    )
    assert (
        "the pension cut's λ lies between −4.88 % (ages 51-70 only) and −4.58 % (income "
        "persistence 0.95), against −4.65 % in the baseline, whose 95 % interval over the "
        "estimates' uncertainty is [−4.89 %, −4.41 %]."
    ) in sentence


def test_a_checks_welfare_solves_at_its_estimates_and_assumptions():
    params = {"crra": 2.0, "beta": 0.96, "pension": 0.3, "income_rho": 0.9}
    out = check_params(params=params, check=SPECS["income"], estimates={"crra": 0.9, "beta": 0.97})
    assert out == {"crra": 0.9, "beta": 0.97, "pension": 0.3, "income_rho": 0.95}
    assert params["income_rho"] == 0.9  # the variant's params are untouched
    ages = check_params(params=params, check=SPECS["ages"], estimates={"crra": 0.7})
    assert ages == params | {"crra": 0.7}


def test_without_an_interval_the_lambda_sentence_gives_none():
    welfare = Welfare(baseline=-0.02, checks={"income": -0.03})
    sentence = robustness_estimates_sentence(
        baseline=BASELINE, checks={"income": CHECKS["income"]}, specs=SPECS, welfare=welfare
    )
    assert sentence.endswith("against −2.00 % in the baseline.")


def test_checks_outside_the_baselines_interval_are_counted():
    """The interval is lambda +- 1.96 s.e.: with s.e. 0.1 %, -4.88 % lies outside -4.85..-4.45."""
    welfare = Welfare(
        baseline=-0.0465,
        checks={"income": -0.0458, "shocks": -0.0468, "ages": -0.0488},
        interval="[−4.85 %, −4.45 %]",
        bounds=(-0.0465 - 1.96 * 0.001, -0.0465 + 1.96 * 0.001),
    )
    sentence = robustness_estimates_sentence(
        baseline=BASELINE, checks=CHECKS, specs=SPECS, welfare=welfare
    )
    assert sentence.endswith("is [−4.85 %, −4.45 %] (1 of the 3 outside it).")
    inside = Welfare(**(vars(welfare) | {"bounds": (-0.0465 - 1.96 * 0.01, -0.0465 + 1.96 * 0.01)}))
    sentence = robustness_estimates_sentence(
        baseline=BASELINE, checks=CHECKS, specs=SPECS, welfare=inside
    )
    assert sentence.endswith("is [−4.85 %, −4.45 %].")
