# ruff: noqa: RUF001 (the paper's Greek letters)
"""The replication of the published buffer-stock estimation: its data, moments and tables.

Oracles: the SCF extract's weighted medians computed by hand on a small example and against
the figures an independent reading of the file gave; the published criterion by hand; the
simulated medians rise with patience and with age over the working life; every figure of the
paper's sentence is a cell of the two tables as printed.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pandas as pd
import pytest

from project.analysis.replication import (
    CORRELATION,
    ROWS,
    replication_fit,
    replication_numbers,
    replication_sentence,
    replication_table,
    write_replication_tables,
)
from project.data.replication import (
    AGE_GROUPS,
    bootstrap_median_variances,
    read_profiles,
    read_wealth_ratios,
    weighted_medians,
)
from project.data.vendored import verified_path
from project.errors import DataError
from project.estimation.products import SavedEstimation
from project.estimation.replication import (
    MSM,
    PUBLISHED,
    PUBLISHED_BOOTSTRAP,
    PUBLISHED_CRITERION,
    ReplicationMoments,
    _published_criterion_searches,
    _published_estimator,
    absolute_deviations,
    other_draws_name,
)
from project.models.buffer_stock import FIRST_AGE


@pytest.fixture(scope="module")
def households():
    return read_wealth_ratios(verified_path("scf_wealth_income_ratios"))


def test_the_extracts_weighted_medians_are_the_published_datas(households):
    assert len(households) == 10_475
    np.testing.assert_allclose(
        weighted_medians(households),
        [0.7775487, 1.278383, 2.00271, 2.65345, 3.513813, 4.17694, 5.301293],
    )


def test_a_weighted_median_is_where_half_the_weight_is_reached():
    frame = pd.DataFrame(
        {
            "wealth_income_ratio": [3.0, 1.0, 2.0, 10.0, 5.0],
            "age_group": [1, 1, 1, 2, 2],
            "weight": [1.0, 1.0, 5.0, 1.0, 3.0],
        }
    )
    np.testing.assert_array_equal(weighted_medians(frame), [2.0, 5.0])


def test_bootstrap_variances_are_reproducible_and_shrink_with_the_sample(households):
    first = bootstrap_median_variances(households, n_draws=60, seed=3)
    np.testing.assert_array_equal(first, bootstrap_median_variances(households, n_draws=60, seed=3))
    assert np.all(first > 0)
    # A group ten times the size has a median about sqrt(10) times as precise.
    big = pd.concat([households] * 10, ignore_index=True)
    ratio = bootstrap_median_variances(big, n_draws=60, seed=3) / first
    assert np.all(ratio < 0.35)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda text: text.replace("weight", "weights", 1), "columns are"),
        (lambda text: text.replace("\n-7.278331,1,", "\n-7.278331,9,", 1), "age_group must take"),
        (lambda text: text.replace(",.7919394", ",-.7919394", 1), "weights must be > 0"),
    ],
)
def test_a_damaged_extract_is_refused(tmp_path, edit, match):
    damaged = tmp_path / "SCFdata.csv"
    shutil.copy(verified_path("scf_wealth_income_ratios"), damaged)
    damaged.write_text(edit(damaged.read_text()))
    with pytest.raises(DataError, match=match):
        read_wealth_ratios(damaged)


def test_the_published_criterion_sums_weighted_distances_to_the_group_medians():
    frame = pd.DataFrame(
        {"wealth_income_ratio": [1.0, 3.0, 4.0], "age_group": [1, 1, 2], "weight": [2.0, 1.0, 3.0]}
    )
    assert absolute_deviations(households=frame, medians=np.array([2.0, 5.0])) == 2 + 1 + 3


def test_the_2019_profiles_are_the_published_lists():
    profiles = read_profiles(verified_path("profiles_hark2019"))
    growth = profiles["income_growth"].to_numpy()
    assert np.all(growth[:25] == 1.025) and np.all(growth[25:39] == 1.01)
    assert growth[39] == 0.7 and np.all(growth[40:] == 1.0)
    assert np.all(profiles["survival"][:40] == 1.0) and profiles["survival"].iloc[-1] == 0.63095734


@pytest.fixture(scope="module")
def moments():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        yield ReplicationMoments(
            profiles=read_profiles(verified_path("profiles_hark2019")),
            n_subjects=400,
            seed=31_382,
            n_savings=80,
        )
    finally:
        jax.config.update("jax_enable_x64", False)


def test_simulated_medians_rise_with_patience_and_with_age(moments, x64):
    impatient = moments({"beta": 0.95, "crra": 4.0})
    patient = moments({"beta": 1.0, "crra": 4.0})
    assert np.all(np.isfinite(impatient)) and impatient.shape == (7,)
    assert np.all(patient > impatient)
    assert np.all(np.diff(patient) > 0)


def test_the_same_params_give_the_same_medians(moments, x64):
    point = {"beta": 0.98, "crra": 3.0}
    np.testing.assert_array_equal(moments(point), moments(point))


def test_the_medians_are_the_published_ratios_of_the_panel_subject_by_subject(moments, x64):
    """Each group's median is that of R a_{x-1} / (G_{x-1} psi_x) over its subject-years.

    The ratio written out from the panel and the params, one subject-year at a time; the
    moments compute it per group from precomputed denominators: the same bits.
    """
    point = {"beta": 0.97, "crra": 3.5}
    params = moments.params(point)
    panel = moments.program(params)
    assets = panel["wealth"] - panel["consumption"]
    growth, nodes = params["income_growth"], params["permanent_nodes"]
    bins = moments.permanent_bins
    expected = []
    for lo, hi in AGE_GROUPS:  # the ratio at age x reads the assets of age x - 1
        ratios = [
            params["interest_factor"] * assets[i, t] / (growth[t] * nodes[t, bins[i, t]])
            for i in range(assets.shape[0])
            for t in range(lo - FIRST_AGE, hi - FIRST_AGE)
        ]
        expected.append(np.median(ratios))
    np.testing.assert_array_equal(moments(point), expected)


def test_searches_on_other_draws_run_side_by_side_as_each_runs_alone(moments, households, x64):
    """The published criterion's searches on other draws, run in threads, are the same as alone."""
    start = {"beta": 0.99, "crra": 4.0}
    bounds = {"beta": (0.5, 1.2), "crra": (1.1, 15.0)}
    options = {"stopping_maxfun": 6}
    settings = {"nelder_mead_options": options, "published_criterion_draws": 3, "n_savings": 80}
    together = _published_criterion_searches(
        simulator=moments, households=households, start=start, bounds=bounds, settings=settings
    )
    assert list(together) == [PUBLISHED_CRITERION, other_draws_name(2), other_draws_name(3)]
    for draw in (2, 3):
        alone = _published_estimator(
            simulator=ReplicationMoments(
                profiles=moments.profiles,
                n_subjects=400,
                seed=moments.seed + 100 * (draw - 1),
                n_savings=80,
            ),
            households=households,
            start=together[PUBLISHED_CRITERION]["params"],
            bounds=bounds,
            options=options,
        )
        assert together[other_draws_name(draw)] == alone
    assert together[other_draws_name(2)]["moments"] != together[other_draws_name(3)]["moments"]


def saved() -> SavedEstimation:
    """Return a replication product with made-up but plausible figures."""
    estimates = pd.DataFrame(
        {
            "param": ["beta", "crra"],
            "estimate": [1.00136, 4.80346],
            "std_error": [0.0253, 2.6625],
            "at_bound": [False, False],
        }
    )
    names = [f"{a + 1}-{a + 5}" for a in range(25, 60, 5)]
    moments = pd.DataFrame(
        {
            "moment": names,
            "data": [0.78, 1.28, 2.0, 2.65, 3.51, 4.18, 5.3],
            "simulated": [1.09, 1.77, 2.28, 2.7, 3.14, 3.77, 4.41],
            "t_stat": [5.1, 7.0, 3.1, 0.4, -3.2, -3.6, -4.3],
            "n_data": [772, 1093, 1483, 1740, 1917, 1836, 1634],
        }
    )
    summary = {
        "j_statistic": 121.25,
        "j_dof": 5,
        "j_p_value": 1.7e-24,
        "warnings": [],
        "param_names": ["beta", "crra"],
        "covariance": [[0.0253**2, -0.98 * 0.0253 * 2.6625], [-0.98 * 0.0253 * 2.6625, 2.6625**2]],
        "settings": {"n_subjects": 10_000, "n_savings": 150, "relative_step": 0.001},
        "searches": {
            PUBLISHED_CRITERION: {
                "objective": 41852.17,
                "params": {"beta": 1.00572, "crra": 4.76568},
                "moments": [1.1, 1.8, 2.4, 2.85, 3.3, 3.95, 4.6],
                "at_published": {"estimate": 41860.4, "bootstrap run": 41871.9},
            },
            other_draws_name(2): {"objective": 41840.0, "params": {"beta": 1.0052, "crra": 4.83}},
            other_draws_name(3): {"objective": 41866.0, "params": {"beta": 1.0061, "crra": 4.71}},
            MSM: {
                "objective": 121.25,
                "std_errors_by_step": {"0.01": {"beta": 0.0221, "crra": 2.3346}},
            },
        },
    }
    return SavedEstimation(estimates=estimates, moments=moments, summary=summary)


def test_the_table_sets_each_estimate_against_the_published_one():
    table = replication_table(saved()).set_index("Estimate")
    assert list(table.index) == [
        ROWS["published"],
        ROWS["bootstrap"],
        ROWS[PUBLISHED_CRITERION],
        f"{ROWS[PUBLISHED_CRITERION]}, draws 2",
        f"{ROWS[PUBLISHED_CRITERION]}, draws 3",
        ROWS[MSM],
        "Same, s.e. from steps of 1 % instead of 0.1 %",
    ]
    assert table.loc["Same, s.e. from steps of 1 % instead of 0.1 %", "γ s.e."] == "2.335"
    assert table.loc[ROWS["published"], "γ"] == f"{PUBLISHED['crra']:.3f}"
    assert table.loc[ROWS["published"], "γ gap"] == "—"
    assert table.loc[ROWS["published"], "Criterion"] == "41,860.4"
    standard_error = PUBLISHED_BOOTSTRAP["crra"]["std_error"]
    assert table.loc[ROWS["bootstrap"], "γ s.e."] == f"{standard_error:.3f}"
    gap = (4.76568 - PUBLISHED["crra"]) / standard_error
    assert table.loc[ROWS[PUBLISHED_CRITERION], "γ gap"] == f"−{abs(gap):.1f}"
    assert table.loc[ROWS[MSM], CORRELATION] == "−0.980"
    assert table.loc[ROWS[MSM], "Criterion"] == "J = 121.2 (5), p < 0.001"


def test_every_figure_of_the_sentence_is_a_cell_of_the_tables():
    sentence = replication_sentence(saved())
    cells = set()
    for frame, decimals in ((replication_table(saved()), None), (replication_fit(saved()), 2)):
        for value in frame.to_numpy().ravel():
            text = f"{value:.{decimals}f}" if decimals and isinstance(value, float) else str(value)
            cells |= set(re.findall(r"\d+\.\d+", text.replace("−", "-")))
    figures = re.findall(r"\d+\.\d+", sentence.replace("−", "-"))
    assert len(figures) >= 20 and set(figures) <= cells, sorted(set(figures) - cells)
    assert "less steeply" in sentence and "levels at ages 56–60" in sentence
    assert "sampling error at ages 31–35 (t = 7.00)" in sentence
    assert "less patience" in sentence and "we have not rerun it" in sentence
    assert "within 2 published standard errors of the published estimate" in sentence
    steps = "With steps of 1 % instead of 0.1 % the standard errors are 2.335 and 0.0221."
    assert steps in sentence
    # The fixture's draws spread gamma by 2.2 and the scale by 0.7 published standard errors.
    assert "moves γ by more than one published standard error and the scale by less" in sentence
    assert "cannot be told apart from the published estimate" in sentence
    assert "only approximately chi-square" in sentence


def test_a_replication_off_by_more_than_two_standard_errors_says_so():
    far = saved()
    far.summary["searches"][PUBLISHED_CRITERION]["params"] = {"beta": 1.0049, "crra": 4.5}
    assert "more than 2 published standard errors" in replication_sentence(far)


def test_the_standard_error_ratios_use_unrounded_values():
    sentence = replication_sentence(saved())
    beta_ratio = 0.0253 / PUBLISHED_BOOTSTRAP["beta"]["std_error"]
    gamma_ratio = 2.6625 / PUBLISHED_BOOTSTRAP["crra"]["std_error"]
    assert f"{gamma_ratio:.0f} and {beta_ratio:.0f} times" in sentence


def test_the_setup_facts_come_from_the_product_and_the_profiles():
    profiles = read_profiles(verified_path("profiles_hark2019"))
    numbers = replication_numbers(saved(), profiles=profiles)
    assert numbers["households"] == "10,475" and numbers["subjects"] == "10,000"
    assert numbers["savings_points"] == "150"
    assert numbers["shock_sd"] == "0.1" and numbers["unemployment"] == "0.5 %"
    assert numbers["risk_free_age"] == "65" and numbers["first_death_age"] == "65"
    assert numbers["ages"] == "26\u201360" and numbers["waves"] == "1992\u20132007"
    later = read_profiles(verified_path("profiles_notes2026"))
    assert replication_numbers(saved(), profiles=later)["first_death_age"] == "25"


def test_both_tables_are_written_in_three_formats(tmp_path):
    paths = {
        stem: {suffix: tmp_path / f"{stem}.{suffix}" for suffix in ("tex", "typ", "md")}
        for stem in ("estimates", "fit")
    }
    written = write_replication_tables(saved=saved(), paths=paths)
    assert len(written) == 6 and all(p.stat().st_size > 0 for p in written)
    assert "tab:replication_fit" in paths["fit"]["typ"].read_text()
