# ruff: noqa: RUF001 (the paper's Greek letters)
"""The robustness checks of the estimates: their inputs, their table and the paper's sentence.

Oracles: a check changes exactly its params, profiles or sizes and nothing estimated or
calibrated; its search starts at the status quo's estimates, moved inside a bound by the trust
radius, and its calibration at the status quo's value; the second earnings process changes
the income params only; every figure of the sentence is a cell of the table as printed; an
estimate outside the baseline's interval is named, one inside is not.
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
from project.analysis.table_cells import format_cells
from project.config import ESTIMATION, ROBUSTNESS, VARIANTS, EstimationSettings
from project.errors import ConfigurationError
from project.estimation.products import SavedEstimation
from project.estimation.robustness import robustness_settings, robustness_specification
from project.models import lifecycle_normalised_params
from project.pipeline import variant_specification

PROTECTED = ["crra", "beta", "work_cost"]


@pytest.fixture(scope="module")
def specification():
    """The status quo's specification before estimation (the checks' base)."""
    return variant_specification(VARIANTS["baseline"])


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
            "lower_bound": [0.3, 0.8],
            "upper_bound": [8.0, 1.05],
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


def test_a_check_changes_its_params_and_name_and_nothing_else(specification):
    check = {"name": "bequest", "params": {"bequest_weight": 0.0}}
    out = robustness_specification(check=check, specification=specification, protected=PROTECTED)
    assert out["params"] == specification["params"] | {"bequest_weight": 0.0}
    assert out["name"] == "robustness_bequest" and out["sizes"] == specification["sizes"]
    assert specification["params"]["bequest_weight"] == 1.0  # the status quo's is untouched


def test_another_earnings_process_changes_the_income_params_only(specification):
    check = {"name": "income", "profiles": "hark2019"}
    out = robustness_specification(check=check, specification=specification, protected=PROTECTED)
    changed = {k for k, v in out["params"].items() if v != specification["params"][k]}
    assert {"income_growth", "permanent_nodes", "transitory_nodes"} <= changed
    assert changed <= set(lifecycle_normalised_params.INCOME_PARAMS)
    hark = lifecycle_normalised_params.default_params(calibration="hark2019")
    assert out["params"]["income_growth"] == hark["income_growth"]


def test_a_check_that_changes_the_sizes_sets_the_params_the_new_model_needs(specification):
    check = {
        "name": "shocks",
        "sizes": {"taste_shocks": True},
        "params": {"taste_shock_scale": 0.01},
    }
    out = robustness_specification(check=check, specification=specification, protected=PROTECTED)
    assert out["sizes"]["taste_shocks"] is True and out["params"]["taste_shock_scale"] == 0.01
    without = {"name": "shocks", "sizes": {"taste_shocks": True}}
    with pytest.raises(ConfigurationError, match=r"needs the params \['taste_shock_scale'\]"):
        robustness_specification(check=without, specification=specification, protected=[])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"work_cost": 0.5}, r"sets the params \['work_cost'\], which the estimation"),
        ({"beta": 0.9}, r"sets the params \['beta'\]"),
        ({"pensoin": 0.5}, r"unknown params \['pensoin'\]"),
        ({"income_growth": 1.0}, r"param 'income_growth' has shape \(75,\)"),
    ],
)
def test_a_check_that_sets_a_preference_or_a_bad_param_is_refused(specification, params, match):
    check = {"name": "bad", "params": params}
    with pytest.raises(ConfigurationError, match=match):
        robustness_specification(check=check, specification=specification, protected=PROTECTED)


def test_a_check_calibrates_the_cost_again_from_the_status_quo_s_value():
    settings = robustness_settings(
        check={"name": "c"},
        settings=asdict(ESTIMATION),
        estimates={"crra": 1.2, "beta": 0.95},
        calibrated={"work_cost": 0.62},
    )
    assert settings["calibration"]["start"] == 0.62
    assert settings["calibration"]["share"] == ESTIMATION.calibration.share
    assert ESTIMATION.calibration.start != 0.62  # the status quo's settings are untouched


def test_a_check_searches_once_from_the_estimates_with_its_age_groups():
    check = {"name": "ages", "age_groups": ((50, 55), (55, 60))}
    settings = robustness_settings(
        check=check, settings=asdict(ESTIMATION), estimates={"crra": 2.5, "beta": 0.97}
    )
    assert settings["start"] == {"crra": 2.5, "beta": 0.97}
    assert settings["calibration"] == asdict(ESTIMATION)["calibration"]  # no value: as given
    assert settings["n_starts"] == 1 and settings["profiles"] is False
    assert settings["age_groups"] == [[50, 55], [55, 60]]
    assert ESTIMATION.n_starts > 1  # the status quo's settings are untouched


def test_a_start_at_a_bound_moves_inside_by_the_trust_radius():
    settings = asdict(EstimationSettings())
    radius = settings["algo_options"]["trustregion_initial_radius"]
    lower, upper = settings["bounds"]["beta"]
    out = robustness_settings(
        check={"name": "c"}, settings=settings, estimates={"crra": 1.0, "beta": upper}
    )
    assert out["start"]["beta"] == pytest.approx(upper - radius)
    assert out["start"]["crra"] == pytest.approx(settings["bounds"]["crra"][0] + radius)
    assert lower < out["start"]["beta"] < upper


def test_no_check_changes_an_estimated_or_calibrated_preference():
    for check in ROBUSTNESS:
        assert not set(check.params) & {*ESTIMATION.estimated, "work_cost"}, check.name


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
    assert "| Income persistence 0.95 | 0.910 | 0.025 | 0.9712 | 0.00500 | 3.21 | 3 | 0.361 |" in (
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
        "the benefit cut's λ lies between −4.88 % (ages 51-70 only) and −4.58 % (income "
        "persistence 0.95), against −4.65 % in the baseline, whose 95 % interval over the "
        "estimates' uncertainty is [−4.89 %, −4.41 %]."
    ) in sentence


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


def test_a_standard_error_whose_interval_reaches_a_bound_is_marked():
    """No interval may cross a bound unremarked: 0.31 - 1.96 x 0.025 lies below 0.3."""
    near = saved(0.31, 0.9745)
    table = robustness_table(baseline=BASELINE, checks={"income": near}, specs=SPECS)
    rows = table.set_index("Specification")
    assert rows.loc["Income persistence 0.95", "\u03b3 s.e."] == "0.025\u2020"
    assert rows.loc["Baseline (as estimated)", "\u03b3 s.e."] == "0.025"  # 0.84 is far inside
    assert rows.loc["Income persistence 0.95", "\u03b2 s.e."] == "0.00500"
