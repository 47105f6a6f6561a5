"""Estimating a pipeline variant: moments of the living, the SCF rows, warnings, products.

Oracles: without death the regimes model's moments are the single-regime model's (the same
random streams); with life-table survival the moments are a hand computation over the living
rows of the simulated table; an estimate from data the model itself generated recovers the
discount factor. The cheap parts (warnings, products, the fingerprint, the tables) use a
closed-form moment function instead of a model.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import numpy as np
import optimagic as om
import pandas as pd
import pytest
from latex_documents import compile_tables, latex_ready
from small_regimes import DISTRIBUTION, GROUPS, SIZES, STATES

from project import solve
from project.errors import CheckpointError
from project.estimation import EstimationError, estimate_msm
from project.estimation.lifecycle import LifecycleMoments, age_group_means, subjects_per_group
from project.estimation.products import load_estimation, save_estimation
from project.estimation.variant import (
    EstimationOutcome,
    _multistart,
    data_moments,
    estimate_variant,
    visible_warnings,
)
from project.models import lifecycle, lifecycle_regimes
from project.persist.atomic import MARKER_NAME
from project.persist.manifest import product_files
from project.provenance import read_arrow_provenance
from project.simulation import draw_initial_conditions, simulate

N_SUBJECTS = 600
TRUE_BETA = 0.96
SCF_COLUMNS = [
    "age_min",
    "age_max",
    "mean_log_wealth_to_income",
    "variance_of_mean_log_wealth_to_income",
    "n_households",
]


@pytest.fixture(scope="module", autouse=True)
def float64():
    """Float64 for the whole module (finite differences), float32 again afterwards."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def base_params(model) -> dict:
    return lifecycle_regimes.params_for(model) | {
        "taste_shock_scale": lifecycle.DEFAULT_TASTE_SHOCK_SCALE
    }


# ---------------------------------------------------------------------------------------------
# Moments of the regimes model


@pytest.mark.slow
def test_without_death_the_regime_moments_are_the_single_regime_moments(monkeypatch):
    """survival=False: same moments, frames and counts as lifecycle.build_model, exactly.

    The initial conditions correspond (regime "working" vs lagged_retirement "working", drawn
    from the same seed) and the simulation draws income and the retirement choice from the same
    key streams (tests/test_regimes.py), so equality holds to rounding, not just in expectation.
    The single model is solved without kinks on its savings grid, as regimes are (not yet carried).
    """
    monkeypatch.setattr("project.egm.program.KINK_SLOTS", 0)
    regimes = lifecycle_regimes.build_model(**SIZES, survival=False)
    single = lifecycle.build_model(**SIZES)
    params = base_params(regimes)
    assert params == dict(lifecycle.DEFAULT_PARAMS) | {
        "taste_shock_scale": lifecycle.DEFAULT_TASTE_SHOCK_SCALE
    }
    simulators = [
        LifecycleMoments(
            model=model,
            base_params=params,
            initial_conditions=draw_initial_conditions(
                model=model, n_subjects=200, seed=5, distribution=STATES | {key: label}
            ),
            seed=6,
            age_groups=GROUPS,
            estimated=("beta",),
        )
        for model, key, label in (
            (regimes, "regime", {"label": "working"}),
            (single, "lagged_retirement", {"label": "working"}),
        )
    ]
    assert simulators[0].moment_names == simulators[1].moment_names
    ours, theirs = (simulator.frame({"beta": TRUE_BETA}) for simulator in simulators)
    assert len(ours) == len(theirs) == 200 * SIZES["n_periods"]  # nobody dies
    np.testing.assert_array_equal(ours[["subject_id", "age"]], theirs[["subject_id", "age"]])
    np.testing.assert_allclose(
        ours["log_wealth_income"], theirs["log_wealth_income"], rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(subjects_per_group(frame=ours, age_groups=GROUPS), [200] * 3)
    low, other_low = (simulator({"beta": 0.93}) for simulator in simulators)
    np.testing.assert_allclose(low, other_low, rtol=0, atol=1e-12)
    high = age_group_means(frame=ours, age_groups=GROUPS)
    assert np.all(high > low)  # the moments move with beta: the comparison is not vacuous


@pytest.fixture(scope="module")
def life_table():
    """The life-table model, its params, and 600 simulated subjects (the "data" of the tests)."""
    model = lifecycle_regimes.build_model(**SIZES, survival="life_table")
    params = base_params(model)
    initial = draw_initial_conditions(
        model=model, n_subjects=N_SUBJECTS, seed=100, distribution=DISTRIBUTION
    )
    simulator = LifecycleMoments(
        model=model,
        base_params=params,
        initial_conditions=initial,
        seed=101,
        age_groups=GROUPS,
        estimated=("beta",),
    )
    return model, params, simulator, simulator.frame({"beta": TRUE_BETA})


@pytest.fixture(scope="module")
def full_table(life_table) -> pd.DataFrame:
    """The simulated table of the fixture's subjects with the dead's rows (labels)."""
    model, params, simulator, _ = life_table
    params = params | {"beta": TRUE_BETA}
    result = simulate(
        params=params,
        initial_conditions=simulator.initial_conditions,
        solution=solve(model=model, params=params, log_level="off"),
        seed=simulator.seed,
        log_level="off",
    )
    return result.to_dataframe(additional_targets=["labor_income"])


@pytest.mark.slow
def test_the_moments_are_means_over_the_living_rows_by_hand(life_table, full_table):
    """Hand computation: log(wealth / income) over rows not in regime "dead", by age group.

    Income is labour income for a worker who keeps working, the pension for everybody else.
    """
    _, params, _, frame = life_table
    table = full_table
    dead = (table["regime"] == "dead").to_numpy()
    ages = table["age"].to_numpy()
    assert dead[ages > 65].sum() > 0  # people die in the later groups: the test can fail
    assert not dead[ages == 63].any()
    alive = table.loc[~dead]
    keeps_working = (alive["regime"] == "working") & (alive["retirement"] == "working")
    income = np.where(keeps_working, alive["labor_income"], params["pension"])
    values = np.log(alive["wealth"].to_numpy(float) / income)
    expected = [values[(alive["age"] > lo) & (alive["age"] <= hi)].mean() for lo, hi in GROUPS]
    np.testing.assert_allclose(
        age_group_means(frame=frame, age_groups=GROUPS), expected, rtol=1e-12
    )
    assert len(frame) == len(alive) < len(table)
    np.testing.assert_array_equal(frame["subject_id"], alive["subject_id"])


@pytest.mark.slow
def test_subjects_per_group_counts_only_the_living(life_table, full_table):
    """Distinct living subjects per group: all at first, fewer later as subjects die."""
    _, _, _, frame = life_table
    alive = full_table.loc[full_table["regime"] != "dead"]
    expected = [
        alive.loc[(alive["age"] > lo) & (alive["age"] <= hi), "subject_id"].nunique()
        for lo, hi in GROUPS
    ]
    counts = subjects_per_group(frame=frame, age_groups=GROUPS)
    np.testing.assert_array_equal(counts, expected)
    assert counts[0] == N_SUBJECTS
    assert N_SUBJECTS > counts[1] > counts[2] > 0.9 * N_SUBJECTS


def test_subjects_per_group_counts_distinct_subjects():
    """A subject with several years in a group counts once; groups are (age_min, age_max]."""
    frame = pd.DataFrame(
        {"subject_id": [0, 0, 0, 1, 1, 2], "age": [61.0, 62.0, 63.0, 62.0, 63.0, 65.0]}
    )
    counts = subjects_per_group(frame=frame, age_groups=[(60, 62), (62, 64), (64, 70)])
    np.testing.assert_array_equal(counts, [2, 2, 1])


# ---------------------------------------------------------------------------------------------
# The SCF rows


def scf_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age_min": [50, 55, 60, 65],
            "age_max": [55, 60, 65, 70],
            "mean_log_wealth_to_income": [0.1, 0.2, 0.3, 0.4],
            "variance_of_mean_log_wealth_to_income": [0.01, 0.02, 0.03, 0.04],
            "n_households": [100, 200, 300, 400],
        }
    )


def test_data_moments_picks_the_rows_in_the_given_order():
    rows = data_moments(moments=scf_table(), age_groups=[(65, 70), (55, 60)])
    assert rows["age_min"].tolist() == [65, 55]
    assert rows["mean_log_wealth_to_income"].tolist() == [0.4, 0.2]
    assert rows["n_households"].tolist() == [400, 200]
    assert rows.index.tolist() == [0, 1]


@pytest.mark.parametrize(
    ("table", "groups", "match"),
    [
        (scf_table(), [(55, 60), (45, 50)], r"no single row for the age group \(45, 50\)"),
        (scf_table(), [(55, 65)], r"no single row for the age group \(55, 65\)"),
        (pd.concat([scf_table()] * 2), [(55, 60)], r"no single row.*\(55, 60\)"),
        (scf_table().drop(columns="age_max"), [(55, 60)], r"lacks the columns \['age_max'\]"),
        (
            scf_table().drop(columns="mean_log_wealth_to_income"),
            [(55, 60)],
            r"lacks the columns \['mean_log_wealth_to_income'\]",
        ),
    ],
)
def test_data_moments_names_the_missing_group_or_columns(table, groups, match):
    with pytest.raises(EstimationError, match=match):
        data_moments(moments=table, age_groups=groups)


@pytest.mark.parametrize("column", ["variance_of_mean_log_wealth_to_income", "n_households"])
def test_data_moments_names_the_other_columns_estimate_variant_reads(column):
    """The variance and household count are checked before any solve, naming the column."""
    with pytest.raises(EstimationError, match=column):
        data_moments(moments=scf_table().drop(columns=column), age_groups=[(55, 60)])


LINE_START = {"crra": 0.0, "beta": 0.0}
LINE_BOUNDS = {"crra": (-5.0, 5.0), "beta": (-5.0, 5.0)}


def test_multistart_options():
    """One start: none; more: TikTak whose sample is the start and Halton points in the bounds."""
    start = {"crra": 0.5, "beta": -1.0}
    assert _multistart(1, seed=3, start=start, bounds=LINE_BOUNDS) is False
    options = _multistart(3, seed=3, start=start, bounds=LINE_BOUNDS)
    assert isinstance(options, om.MultistartOptions)
    assert options.stopping_maxopt == 3
    sample = np.asarray(options.sample)
    assert sample.shape == (15, 2)
    np.testing.assert_array_equal(sample[0], [0.5, -1.0])
    assert ((sample >= -5.0) & (sample <= 5.0)).all()
    assert len(np.unique(sample, axis=0)) == 15
    again = np.asarray(_multistart(3, seed=3, start=start, bounds=LINE_BOUNDS).sample)
    np.testing.assert_array_equal(sample, again)
    other_seed = _multistart(3, seed=4, start=start, bounds=LINE_BOUNDS)
    assert not np.array_equal(sample, np.asarray(other_seed.sample))
    # the sample follows the order of the start's params (the optimiser's vector)
    swapped = _multistart(3, seed=3, start={"beta": -1.0, "crra": 0.5}, bounds=LINE_BOUNDS)
    np.testing.assert_array_equal(np.asarray(swapped.sample)[0], [-1.0, 0.5])
    with pytest.raises(EstimationError, match="n_starts must be at least 1"):
        _multistart(0, seed=3, start=start, bounds=LINE_BOUNDS)


@pytest.mark.parametrize(
    "bounds",
    [{"crra": (-5.0, np.inf), "beta": (-5.0, 5.0)}, {"crra": (-5.0, 5.0)}],
    ids=["infinite", "missing"],
)
def test_a_multistart_refuses_params_without_finite_bounds(bounds):
    with pytest.raises(EstimationError, match="finite bounds"):
        _multistart(2, seed=3, start=LINE_START, bounds=bounds)


def test_the_multistart_searches_from_its_sample_and_finds_the_single_search_estimate(clean):
    """optimagic's TikTak takes the sample (the start first): it ends at the single search's
    estimate, and each local search's criterion is g'Wg at its end point."""
    options = _multistart(2, seed=3, start=LINE_START, bounds=LINE_BOUNDS)
    result = line_result(multistart=options)
    sample = np.asarray(options.sample)
    first = result.local_searches[0]["start"]
    assert any(np.allclose([first["crra"], first["beta"]], row) for row in sample)
    np.testing.assert_allclose(result.estimates, clean.estimates, rtol=1e-6)
    assert result.objective <= clean.objective * (1 + 1e-9)
    for search in result.local_searches:  # g'Wg at each end point, not the optimiser's last value
        end = search["end"]
        gap = end["crra"] + end["beta"] * T - result.data_moments
        assert search["objective"] == pytest.approx(gap @ result.weighting @ gap, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# Warnings (real estimates of a closed-form moment function)

T = np.linspace(0.0, 1.0, 4)
MOMENT_NAMES = [f"log_wealth_income_{lo + 1}_{lo + 5}" for lo in (50, 55, 60, 65)]


def line_result(**overrides):
    """MSM of the line crra + beta * t on 4 points (params named as the estimated ones)."""
    noise = np.array([0.02, -0.015, 0.01, -0.02])
    arguments = {
        "simulate_moments": lambda p: p["crra"] + p["beta"] * T,
        "data_moments": 1.0 + 0.5 * T + noise,
        "data_variances": np.full(4, 0.02**2),
        "n_data": [100, 200, 300, 400],
        "n_simulated": 1000,
        "start_params": {"crra": 0.0, "beta": 0.0},
        "bounds": {"crra": (-5.0, 5.0), "beta": (-5.0, 5.0)},
        "moment_names": MOMENT_NAMES,
    }
    return estimate_msm(**(arguments | overrides))


@pytest.fixture(scope="module")
def clean():
    result = line_result()
    assert result.converged
    assert not result.at_bound.any()
    assert result.j_p_value > 0.05
    return result


def test_a_clean_result_has_no_warnings(clean):
    assert visible_warnings(clean) == []


def test_warning_for_non_convergence(clean):
    """An optimiser stopped after one iteration; and the clean result with its flag flipped."""
    stopped = line_result(algo_options={"stopping_maxiter": 1}, on_failure="warn")
    assert not stopped.converged
    warnings = visible_warnings(stopped)
    assert "did not report convergence" in warnings[0]
    assert stopped.message in warnings[0]
    flipped = dataclasses.replace(clean, converged=False, message="maximum iterations reached")
    (warning,) = visible_warnings(flipped)
    assert "did not report convergence: maximum iterations reached" in warning


def test_warning_for_an_estimate_at_a_bound():
    result = line_result(bounds={"crra": (-5.0, 0.8), "beta": (-5.0, 5.0)})
    assert result.at_bound.tolist() == [True, False]
    at_bound = [w for w in visible_warnings(result) if "at a bound" in w]
    assert len(at_bound) == 1
    assert at_bound[0].startswith("crra is at a bound")
    assert "beta" not in at_bound[0]


def test_warning_for_a_j_test_rejection():
    """Data on a parabola, a straight-line model, small variances: J rejects."""
    result = line_result(data_moments=1.0 + 2.0 * T**2, data_variances=np.full(4, 0.01**2))
    assert result.j_p_value < 0.05
    (warning,) = visible_warnings(result)
    assert "J-test rejects" in warning
    assert f"{result.j_dof} degrees of freedom" in warning


def test_j_warning_threshold_and_exact_identification(clean):
    """Only p < 5 % with positive degrees of freedom warns (NaN p of dof 0 does not)."""
    assert visible_warnings(dataclasses.replace(clean, j_p_value=0.049))
    assert not visible_warnings(dataclasses.replace(clean, j_p_value=0.051))
    assert not visible_warnings(dataclasses.replace(clean, j_dof=0, j_p_value=float("nan")))


def test_all_warnings_together(clean):
    result = dataclasses.replace(
        clean, converged=False, at_bound=np.array([True, True]), j_p_value=0.001
    )
    assert len(visible_warnings(result)) == 4


# ---------------------------------------------------------------------------------------------
# End to end: data generated by the model at a known beta


def self_consistent_data(frame: pd.DataFrame) -> pd.DataFrame:
    """An SCF-like table from a simulated frame: a disjoint third of the subjects per group.

    Disjoint subjects make the groups' sampling errors independent, as in the SCF's cross
    section (with the same subjects in every group the errors would be correlated, which the
    diagonal variances ignore).
    """
    rows = []
    for k, (lo, hi) in enumerate(GROUPS):
        rows_k = frame[(frame["age"] > lo) & (frame["age"] <= hi) & (frame["subject_id"] % 3 == k)]
        per_subject = rows_k.groupby("subject_id")["log_wealth_income"].mean()
        rows.append(
            {
                "age_min": lo,
                "age_max": hi,
                "mean_log_wealth_to_income": rows_k["log_wealth_income"].mean(),
                "variance_of_mean_log_wealth_to_income": per_subject.var(ddof=1) / len(per_subject),
                "n_households": len(per_subject),
            }
        )
    # A row the estimation does not use comes first: the rows are found by their ages.
    rows.insert(0, dict.fromkeys(SCF_COLUMNS, 1.0) | {"age_min": 40, "age_max": 45})
    return pd.DataFrame(rows, columns=SCF_COLUMNS)


SEARCHES = {
    "drawn": {"algorithm": "pounders"},
    "smooth": {"algorithm": "scipy_ls_trf", "smooth": True},
}


@pytest.mark.slow
@pytest.mark.parametrize("search", SEARCHES)
def test_estimate_variant_recovers_beta_from_data_of_the_model(life_table, search):
    """Data: 600 subjects at beta 0.96 (seeds 100, 101); simulation: 600 with seed 107.

    The data seeds 100-400 all gave |estimate - 0.96| < 2.4 standard errors when this test was
    written; 3 standard errors leaves room for other platforms' rounding. Smooth moments with
    their exact Jacobian (a gradient search) recover it too, in fewer simulations.
    """
    model, params, _, frame = life_table
    settings = {
        "estimated": ("beta",),
        "start": {"beta": 0.93},
        "bounds": {"beta": (0.85, 1.02)},
        "age_groups": [list(group) for group in GROUPS],  # as read from JSON
        "n_subjects": N_SUBJECTS,
        "seed": 107,
        "algorithm": "pounders",
        # Loose gradient tolerances: they stop within 1e-6 of the optimum (the standard error
        # is near 0.009) in half the evaluations of the defaults.
        "algo_options": {
            "trustregion_initial_radius": 0.05,
            "convergence_gtol_rel": 1e-2,
            "convergence_gtol_abs": 1e-2,
        },
        "n_starts": 1,
        "relative_step": 1e-2,
    } | SEARCHES[search]
    if search == "smooth":
        settings["algo_options"] = {}
    outcome = estimate_variant(
        model=model,
        specification={"name": "tiny", "params": params},
        moments=self_consistent_data(frame),
        initial_distribution=DISTRIBUTION,
        settings=settings,
    )
    result = outcome.result
    assert outcome.variant == "tiny"
    assert result.param_names == ("beta",)
    assert result.converged
    (standard_error,) = result.standard_errors
    assert 0 < standard_error < 0.03
    assert abs(result.params["beta"] - TRUE_BETA) < 3 * standard_error
    assert not any("bound" in warning for warning in outcome.warnings)
    assert outcome.warnings == visible_warnings(result)
    assert result.moment_names == (
        "log_wealth_income_63_65",
        "log_wealth_income_66_67",
        "log_wealth_income_68_70",
    )
    # The data moments are the table's rows of the groups, in order, the unused row left out.
    np.testing.assert_array_equal(
        result.data_moments, self_consistent_data(frame)["mean_log_wealth_to_income"][1:]
    )
    # The simulated counts are the living subjects of the estimation's own panel (smooth
    # moments: expected counts, sums of choice probabilities, so equal up to rounding).
    assert result.n_simulated[0] == pytest.approx(N_SUBJECTS, rel=1e-12)
    assert N_SUBJECTS > result.n_simulated[1] > result.n_simulated[2]
    assert outcome.settings == settings
    assert outcome.seconds > 0
    assert list(outcome.searches) == ["from the start"]
    assert outcome.searches["from the start"]["kept"]
    if search == "smooth":  # a gradient search: a handful of simulations, no differences
        assert result.n_simulations < 12


def test_with_multistart_one_tiktak_search_runs_its_sample_beginning_at_the_start(
    monkeypatch, life_table
):
    """n_starts > 1: no separate search from the start; one TikTak multistart whose sample
    begins with the start (its first local search repeated the first search's, until
    2026-11-27), and its result is the estimate."""
    model, params, _, frame = life_table
    found = dataclasses.replace(line_result(), objective=9.0, estimates=np.array([1.0, 2.0]))
    calls = []

    def fake_estimate_msm(**arguments):
        calls.append(arguments["multistart"])
        return found

    monkeypatch.setattr("project.estimation.variant.estimate_msm", fake_estimate_msm)
    # the fake is of another model (crra and beta): no criterion slices through it
    monkeypatch.setattr("project.estimation.variant.criterion_profiles", lambda **_: {})
    outcome = estimate_variant(
        model=model,
        specification={"name": "tiny", "params": params},
        moments=self_consistent_data(frame),
        initial_distribution=DISTRIBUTION,
        settings={
            "estimated": ("beta",),
            "start": {"beta": 0.93},
            "bounds": {"beta": (0.85, 1.02)},
            "age_groups": [list(group) for group in GROUPS],
            "n_subjects": 50,
            "seed": 107,
            "algorithm": "pounders",
            "algo_options": {},
            "n_starts": 3,
            "relative_step": 1e-2,
        },
    )
    (options,) = calls
    assert isinstance(options, om.MultistartOptions)
    assert options.stopping_maxopt == 3
    np.testing.assert_array_equal(options.sample[0], [0.93])
    assert len(options.sample) == 15
    assert outcome.result is found
    assert list(outcome.searches) == ["multistart"]
    assert outcome.searches["multistart"]["kept"]
    assert outcome.searches["multistart"]["objective"] == 9.0


# ---------------------------------------------------------------------------------------------
# The product: save, load, damage


def outcome_of(result, *, variant="baseline", seconds=1.5) -> EstimationOutcome:
    return EstimationOutcome(
        variant=variant,
        result=result,
        settings={"estimated": ("crra", "beta"), "age_groups": [(50, 55)], "seed": np.int64(3)},
        seconds=seconds,
        warnings=visible_warnings(result),
    )


@pytest.fixture(scope="module")
def at_bound():
    return line_result(bounds={"crra": (-5.0, 0.8), "beta": (-5.0, 5.0)})


def product_bytes(directory) -> dict[str, bytes]:
    return {
        name: (directory / name).read_bytes() for name in [*product_files(directory), MARKER_NAME]
    }


def test_save_and_load_roundtrip(tmp_path, at_bound):
    outcome = outcome_of(at_bound)
    assert outcome.warnings  # a warning to keep
    marker = save_estimation(outcome, directory=tmp_path / "est", provenance={"fingerprint": "f"})
    assert marker == (tmp_path / "est" / MARKER_NAME).absolute()
    saved = load_estimation(tmp_path / "est")
    pd.testing.assert_frame_equal(saved.estimates, at_bound.to_frame())
    pd.testing.assert_frame_equal(saved.moments, at_bound.to_frame(table="moments"))
    assert saved.warnings == outcome.warnings
    assert saved.summary["variant"] == "baseline"
    assert saved.params == at_bound.params
    np.testing.assert_array_equal(saved.covariance, at_bound.covariance)
    assert saved.summary["provenance"]["fingerprint"] == "f"
    assert saved.summary["provenance"]["seed"] == "3"
    for name in ("estimates", "moments"):
        recorded = read_arrow_provenance(tmp_path / "est" / f"{name}.arrow")
        assert recorded == saved.summary["provenance"]
    assert saved.summary["params_at_bound"] == ["crra"]
    assert saved.summary["settings"] == {
        "estimated": ["crra", "beta"],
        "age_groups": [[50, 55]],
        "seed": 3,
    }
    assert "seconds" not in json.dumps(saved.summary)


def test_equal_outcomes_give_byte_identical_products(tmp_path, at_bound):
    """Saved twice (even with other seconds), into two folders and into the same one."""
    save_estimation(outcome_of(at_bound), directory=tmp_path / "a")
    save_estimation(outcome_of(at_bound, seconds=99.0), directory=tmp_path / "b")
    first = product_bytes(tmp_path / "a")
    assert set(first) == {"estimates.arrow", "moments.arrow", "summary.json", MARKER_NAME}
    assert first == product_bytes(tmp_path / "b")
    generation = (tmp_path / "a").resolve()
    save_estimation(outcome_of(at_bound), directory=tmp_path / "a")
    assert (tmp_path / "a").resolve() == generation
    assert product_bytes(tmp_path / "a") == first
    other = outcome_of(at_bound, variant="low_pension")
    save_estimation(other, directory=tmp_path / "c")
    assert product_bytes(tmp_path / "c")["summary.json"] != first["summary.json"]


@pytest.mark.parametrize("name", ["estimates.arrow", "moments.arrow", "summary.json"])
def test_a_damaged_product_raises_checkpoint_error(tmp_path, at_bound, name):
    save_estimation(outcome_of(at_bound), directory=tmp_path / "est")
    path = tmp_path / "est" / name
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0xFF  # same size, one byte altered
    path.chmod(0o644)
    path.write_bytes(bytes(content))
    with pytest.raises(CheckpointError, match=name):
        load_estimation(tmp_path / "est")


def test_a_missing_product_file_raises_checkpoint_error(tmp_path, at_bound):
    save_estimation(outcome_of(at_bound), directory=tmp_path / "est")
    (tmp_path / "est" / "moments.arrow").unlink()
    with pytest.raises(CheckpointError, match=r"moments\.arrow is missing"):
        load_estimation(tmp_path / "est")


# ---------------------------------------------------------------------------------------------
# The pipeline's fingerprinted step


def test_estimate_variant_into_estimates_only_when_inputs_or_product_change(
    tmp_path, monkeypatch, at_bound
):
    """A fake estimate_variant counts the calls; the fingerprint decides whether it runs."""
    from project import pipeline

    calls = []

    def fake_estimate_variant(*, model, specification, moments, initial_distribution, settings):
        calls.append({"model": model, "moments": moments, "settings": settings})
        return outcome_of(at_bound, variant=specification["name"])

    monkeypatch.setattr(pipeline, "estimate_variant", fake_estimate_variant)
    moments_file = tmp_path / "scf_moments.arrow"
    scf_table().to_feather(moments_file)
    source = tmp_path / "source.py"
    source.write_text("# engine\n")
    sizes = SIZES | {"survival": "life_table"}
    arguments = {
        "specification": {
            "name": "tiny",
            "model": "lifecycle_regimes",
            "sizes": sizes,
            "params": {"beta": 0.96},
        },
        "moments_file": moments_file,
        "initial_distribution": DISTRIBUTION,
        "settings": {"seed": 1, "age_groups": [[55, 60]]},
        "directory": tmp_path / "estimation",
        "sources": [source],
    }

    assert pipeline.estimate_variant_into(**arguments) is True
    assert len(calls) == 1
    assert calls[0]["model"].name == "lifecycle_regimes"
    assert calls[0]["model"].n_periods == SIZES["n_periods"]
    pd.testing.assert_frame_equal(calls[0]["moments"], scf_table())
    saved = load_estimation(tmp_path / "estimation")
    assert saved.summary["variant"] == "tiny"
    fingerprint = saved.summary["provenance"]["fingerprint"]
    assert len(fingerprint) == 64

    assert pipeline.estimate_variant_into(**arguments) is False  # up to date
    assert len(calls) == 1

    path = tmp_path / "estimation" / "summary.json"
    path.chmod(0o644)
    path.write_text(path.read_text().replace('"tiny"', '"tinY"'))
    assert pipeline.estimate_variant_into(**arguments) is True  # damaged: estimated again
    assert len(calls) == 2
    assert load_estimation(tmp_path / "estimation").summary["variant"] == "tiny"
    assert pipeline.estimate_variant_into(**arguments) is False
    assert len(calls) == 2

    changes = [
        {"settings": {"seed": 2, "age_groups": [[55, 60]]}},
        {"initial_distribution": DISTRIBUTION | {"income": {"label": "node_1"}}},
        {"specification": arguments["specification"] | {"params": {"beta": 0.95}}},
    ]
    for change in changes:
        assert pipeline.estimate_variant_into(**(arguments | change)) is True
    assert len(calls) == 2 + len(changes)
    assert pipeline.estimate_variant_into(**arguments) is True  # the product is of the last
    scf_table().assign(n_households=[1, 2, 3, 4]).to_feather(moments_file)
    assert pipeline.estimate_variant_into(**arguments) is True  # the moment table's bytes
    source.write_text("# engine, edited\n")
    assert pipeline.estimate_variant_into(**arguments) is True  # the sources
    assert pipeline.estimate_variant_into(**arguments) is False
    assert len(calls) == 2 + len(changes) + 3


# ---------------------------------------------------------------------------------------------
# Tables and the figure


@pytest.fixture
def saved_estimates(tmp_path, clean, at_bound):
    """Two variants' products read back: one clean, one with an estimate at a bound."""
    for variant, result in (("baseline", clean), ("low_pension", at_bound)):
        save_estimation(outcome_of(result, variant=variant), directory=tmp_path / variant)
    return {variant: load_estimation(tmp_path / variant) for variant in ("baseline", "low_pension")}


def test_estimates_table_has_a_row_per_param_and_variant(saved_estimates):
    from project.analysis.estimation import estimates_table

    table = estimates_table(saved_estimates)
    assert list(table.columns) == [
        "Variant",
        "Parameter",
        "Estimate",
        "Std. error",
        "CI lower",
        "CI upper",
    ]
    assert len(table) == 2 * 2
    assert table["Variant"].tolist() == ["Baseline"] * 2 + ["Low pension"] * 2
    labels = table["Parameter"].tolist()[:2]
    assert [str(label) for label in labels] == ["Relative risk aversion γ", "Discount factor β"]  # noqa: RUF001
    assert [label.typst for label in labels] == [
        "Relative risk aversion $gamma$",
        "Discount factor $beta$",
    ]
    for block, saved in zip((0, 2), saved_estimates.values(), strict=True):
        np.testing.assert_array_equal(
            table["Estimate"].iloc[block : block + 2], saved.estimates["estimate"]
        )
        np.testing.assert_array_equal(
            table["Std. error"].iloc[block : block + 2], saved.estimates["std_error"]
        )


def test_the_j_tests_go_to_the_caption(saved_estimates):
    """One sentence per over-identified variant with J, its degrees of freedom and p."""
    from project.analysis.estimation_text import j_test_notes

    notes = j_test_notes(saved_estimates)
    for variant, saved in saved_estimates.items():
        summary = saved.summary
        name = {"baseline": "Baseline", "low_pension": "Low pension"}[variant]
        expected = f"{name}: J = {summary['j_statistic']:.2f} with {summary['j_dof']} degree"
        assert expected in notes


def test_an_exactly_identified_estimate_has_no_j_test_note(tmp_path):
    from project.analysis.estimation_text import j_test_notes

    result = estimate_msm(
        simulate_moments=lambda p: np.array([p["beta"] + p["crra"], p["beta"] - p["crra"]]),
        data_moments=[1.0, 0.5],
        data_variances=[0.01, 0.01],
        n_data=100,
        n_simulated=1000,
        start_params={"beta": 0.0, "crra": 0.0},
        moment_names=MOMENT_NAMES[:2],
    )
    save_estimation(outcome_of(result), directory=tmp_path / "est")
    assert j_test_notes({"baseline": load_estimation(tmp_path / "est")}) == ""


def test_moment_fit_table_has_a_row_per_moment_and_variant(saved_estimates):
    from project.analysis.estimation import moment_fit_table

    table = moment_fit_table(saved_estimates)
    assert len(table) == 2 * len(MOMENT_NAMES)
    assert table["Ages"].tolist() == ["51–55", "56–60", "61–65", "66–70"] * 2  # noqa: RUF001
    np.testing.assert_allclose(table["Difference"], table["Model"] - table["Data"])
    assert table["N"].tolist() == [100, 200, 300, 400] * 2
    moments = saved_estimates["low_pension"].moments
    np.testing.assert_array_equal(table["Data s.e."].iloc[4:], moments["data_std_error"])
    np.testing.assert_array_equal(table["t"].iloc[4:], moments["t_stat"])
    # t is the printed difference over the printed standard error
    np.testing.assert_allclose(table["t"], table["Difference"] / table["Diff. s.e."], rtol=1e-12)
    assert (table["Diff. s.e."] > table["Data s.e."]).all()  # simulation noise added


def test_age_label():
    from project.analysis.estimation import age_label

    assert age_label("log_wealth_income_51_55") == "51-55"
    assert age_label("something_else") == "something_else"


def test_estimation_notes_repeat_the_warnings(saved_estimates):
    from project.analysis.estimation_text import estimation_notes
    from project.analysis.notation import with_plain_parameters

    notes = estimation_notes(saved_estimates)
    warnings = saved_estimates["low_pension"].warnings
    assert warnings
    for warning in warnings:
        if warning.startswith("The J-test rejects"):  # the J-test note states it
            assert with_plain_parameters(warning) not in notes
        else:
            assert with_plain_parameters(warning) in notes
    assert any("crra" in warning for warning in warnings)  # crra is at its bound
    assert "crra" not in notes  # printed as its symbol
    assert "γ" in notes  # noqa: RUF001
    assert "Low pension:" in notes
    assert "Baseline" not in notes  # no warnings, no note
    assert estimation_notes({"baseline": saved_estimates["baseline"]}) == ""


def test_plot_estimation_fit_writes_png_and_pdf(tmp_path, saved_estimates):
    from project.analysis.estimation import plot_estimation_fit

    contents = []
    for run in ("a", "b"):
        paths = {fmt: tmp_path / run / f"fit.{fmt}" for fmt in ("png", "pdf")}
        assert plot_estimation_fit(estimates=saved_estimates, paths=paths) == [
            paths["png"],
            paths["pdf"],
        ]
        contents.append((paths["png"].read_bytes(), paths["pdf"].read_bytes()))
    png, pdf = contents[0]
    assert png.startswith(b"\x89PNG")
    assert pdf.startswith(b"%PDF")
    assert contents[0] == contents[1]  # deterministic


def test_a_start_that_does_not_match_the_estimated_params_is_refused_before_any_solve():
    """The start must name exactly the estimated params; checked before the model is used."""
    settings = {"estimated": ("beta",), "start": {"crra": 2.0}}
    with pytest.raises(EstimationError, match=r"start \['crra'\] must give exactly"):
        estimate_variant(
            model=None,
            specification={"name": "tiny", "params": {}},
            moments=pd.DataFrame(),
            initial_distribution={},
            settings=settings,
        )


def test_an_estimate_saved_without_its_covariance_is_refused(tmp_path, at_bound):
    save_estimation(outcome_of(at_bound), directory=tmp_path / "est")
    saved = load_estimation(tmp_path / "est")
    older = dataclasses.replace(
        saved, summary={k: v for k, v in saved.summary.items() if k != "covariance"}
    )
    with pytest.raises(CheckpointError, match="no covariance of"):
        older.covariance  # noqa: B018


def with_searches(result) -> EstimationOutcome:
    """Return ``result``'s outcome with a search from the start and a two-search multistart."""
    return dataclasses.replace(
        outcome_of(result),
        searches={
            "from the start": {
                "objective": result.objective,
                "params": result.params,
                "kept": True,
                "local_searches": [
                    {"start": {"crra": 3.0}, "end": result.params, "objective": result.objective}
                ],
            },
            "multistart": {
                "objective": 166.0,
                "params": {"crra": 8.0, "beta": 0.91},
                "kept": False,
                "local_searches": [
                    {
                        "start": {"crra": 7.0, "beta": 0.9},
                        "end": {"crra": 8.0, "beta": 0.91},
                        "objective": 166.0,
                    },
                    {
                        "start": {"crra": 1.0, "beta": 0.99},
                        "end": {"crra": 8.0, "beta": 0.92},
                        "objective": 170.5,
                    },
                ],
            },
        },
    )


def test_the_searches_table_lists_every_local_search_and_marks_the_kept_one(tmp_path, at_bound):
    from project.analysis.estimation import searches_table

    outcome = with_searches(at_bound)
    save_estimation(outcome, directory=tmp_path / "est")
    table = searches_table({"baseline": load_estimation(tmp_path / "est")})
    assert table["Search"].tolist() == [
        "from the start",
        "multistart, local search 1",
        "multistart, local search 2",
    ]
    assert table["Criterion"].tolist() == [at_bound.objective, 166.0, 170.5]
    assert table["Kept"].tolist() == ["yes", "", ""]
    assert table["Converged"].tolist() == ["", "", ""]  # recorded without the flag
    assert str(table["End"].iloc[2]) == "\u03b3 = 8.000, \u03b2 = 0.9200"
    assert "$gamma$ = 8.000" in table["End"].iloc[2].typst


def test_the_searches_table_names_a_lone_multistart_s_searches_by_number(tmp_path, at_bound):
    """The build's estimation is one multistart: its rows need no search name."""
    from project.analysis.estimation import searches_table

    outcome = with_searches(at_bound)
    lone = dataclasses.replace(
        outcome, searches={"multistart": outcome.searches["multistart"] | {"kept": True}}
    )
    save_estimation(lone, directory=tmp_path / "est")
    table = searches_table({"baseline": load_estimation(tmp_path / "est")})
    assert table["Search"].tolist() == ["local search 1", "local search 2"]
    assert table["Kept"].tolist() == ["yes", ""]


def test_the_estimation_report_s_latex_tables_hold_no_bare_unicode_math(tmp_path, clean, at_bound):
    """The .tex files carry math as LaTeX ($\\gamma$, $g'Wg$, $\\partial m$), not as Unicode
    symbols that pdflatex cannot typeset; with pdflatex and siunitx they compile."""
    from project.analysis.estimation import write_estimation_report

    for variant, result in (("baseline", clean), ("low_pension", at_bound)):
        save_estimation(
            dataclasses.replace(with_searches(result), variant=variant),
            directory=tmp_path / variant,
        )
    estimates = {v: load_estimation(tmp_path / v) for v in ("baseline", "low_pension")}
    stems = ("estimates", "moment_fit", "estimation_searches", "identification")
    paths = {f"{stem}_{s}": tmp_path / f"{stem}.{s}" for stem in stems for s in ("tex", "md")}
    write_estimation_report(estimates=estimates, paths=paths)
    allowed = set("\u2013\u2014")  # en and em dash: pdflatex's utf8 input maps them
    for stem in stems:
        text = (tmp_path / f"{stem}.tex").read_text()
        bare = sorted({c for c in text if ord(c) > 127} - allowed)
        assert bare == [], (stem, bare)
    if not latex_ready():
        return  # the character check above is the test without LaTeX
    code, log = compile_tables(tmp_path, stems=list(stems))
    assert code == 0, log[-3000:]
