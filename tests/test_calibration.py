"""Calibration of record weights to aggregate targets: exact batched gradients, regularisation,
diagnostics and goals, held-out and per-variant targets, products and downstream weighting."""

import json
import logging
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from project.calibration import (
    CalibrationError,
    CalibrationSettings,
    Objective,
    PanelEstimates,
    TargetProblem,
    WeightSummary,
    attach_weights,
    calibrate_from_panel,
    calibrate_weights,
    dropout_mask,
    kish_effective_sample_size,
    load_calibration,
    parse_targets,
    passes,
    save_calibration,
    targets_for_variant,
    weighted_mean,
)
from project.calibration.products import FILE_NAMES, loss_figure
from project.calibration.regularize import Regularization
from project.calibration.source import EstimateSource
from project.calibration.synthetic import synthetic_targets, target_estimates, truth_weights
from project.errors import CheckpointError, ProjectError
from project.persist.manifest import write_marker
from project.provenance import read_arrow_provenance

ROOT = Path(__file__).resolve().parents[1]
N, K = 50, 6
SEED = 3
RATE = 0.3


def _problem(*, rng, a, held_out=(2,)):
    values = np.ones(N) @ a * rng.uniform(0.8, 1.2, K)
    flags = np.isin(np.arange(K), held_out)
    return TargetProblem.build(
        names=[f"t{j}" for j in range(K)],
        values=values,
        normalization=rng.uniform(0.5, 3.0, K),
        held_out=flags,
        tolerances=rng.uniform(0.005, 0.05, K),
    )


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    a = rng.lognormal(size=(N, K))
    a[:, 4] -= a[:, 4].mean()  # a column with mixed signs
    problem = _problem(rng=rng, a=a)
    weights = rng.uniform(0.5, 2.0, N)
    return a, problem, weights


def _objective(a, problem):
    return Objective.for_problem(
        problem=problem, column_scale=np.abs(a).sum(axis=0) / N, relative_floor=1.0
    )


def _reference(*, theta, a, base, objective, regularization, rate, epoch):
    """Full-batch objective and gradient by autodiff of L(w * mask / (1 - p) @ A) + penalty."""
    mask = jnp.asarray(dropout_mask(seed=SEED, epoch=epoch, start=0, stop=N, rate=rate))
    base = jnp.asarray(base)

    def loss(t):
        ratios = regularization.ratios(t)
        weights = jnp.where(mask, base * ratios / (1 - rate), 0.0)
        fit = objective.loss(jnp.matmul(weights, jnp.asarray(a), precision="highest"))
        divergence = jnp.sum(base * regularization.divergence(ratios)) / jnp.sum(base)
        return fit + regularization.strength * divergence

    return jax.value_and_grad(loss)(theta)


@pytest.mark.parametrize("batch_size", [None, 7, 1, 64])  # 7: a ragged tail; 64 >= N
@pytest.mark.parametrize("rate", [0.0, RATE])
@pytest.mark.parametrize("penalty", ["entropy", "chi2"])
def test_batched_gradient_equals_full_batch(x64, setup, batch_size, rate, penalty):
    a, problem, weights = setup
    objective = _objective(a, problem)
    regularization = Regularization(lower=0.3, upper=4.0, penalty=penalty, strength=2.5)
    theta = jnp.asarray(np.random.default_rng(5).normal(size=N))
    expected_loss, expected_grad = _reference(
        theta=theta, a=a, base=weights, objective=objective, regularization=regularization,
        rate=rate, epoch=4,
    )  # fmt: skip
    batching = passes.Batching.of(n_records=N, batch_size=batch_size)
    parameters = passes.Parameters(
        base=jnp.asarray(batching.pad(weights)),
        base_total=float(weights.sum()),
        regularization=regularization,
    )
    for estimates in (a, lambda start, stop: a[start:stop]):
        source = EstimateSource.of(estimates=estimates, n_records=N, names=problem.names)
        step = passes.gradient(
            theta=jnp.asarray(batching.pad(np.asarray(theta))),
            parameters=parameters,
            source=source,
            batching=batching,
            objective=objective,
            key=passes.epoch_key(seed=SEED, epoch=4),
            rate=rate,
        )
        assert float(step.penalty) > 0
        np.testing.assert_allclose(step.loss, expected_loss, rtol=1e-12)
        np.testing.assert_allclose(step.gradient[:N], expected_grad, rtol=1e-10, atol=1e-15)
        assert not np.asarray(step.gradient[N:]).any()  # padding


def test_held_out_targets_do_not_enter_the_loss(x64, setup):
    a, problem, _ = setup
    objective = _objective(a, problem)
    moved = np.asarray(problem.values).copy()
    _, c = objective.loss_and_gradient(jnp.asarray(moved))
    moved[2] *= 10  # target 2 is held out
    loss, c_moved = objective.loss_and_gradient(jnp.asarray(moved))
    assert float(loss) == 0.0
    assert np.asarray(c_moved)[2] == 0.0
    np.testing.assert_array_equal(c, c_moved)
    moved[2] = np.nan  # not even a broken held-out estimate reaches the loss
    assert float(objective.loss(jnp.asarray(moved))) == 0.0


def test_loss_is_measured_in_tolerances(x64):
    problem = TargetProblem.build(names=["a", "b"], values=[100.0, 50.0], tolerances=[0.01, 0.1])
    objective = Objective.for_problem(problem=problem, column_scale=np.ones(2), relative_floor=1.0)
    # a misses by one tolerance (1), b by half of one (2.5 of 5): mean of 1 and 0.25
    assert float(objective.loss(jnp.asarray([101.0, 52.5]))) == pytest.approx(0.625)
    assert int(objective.assess(jnp.asarray([101.0, 52.5]))[2]) == 2
    assert int(objective.assess(jnp.asarray([101.5, 52.5]))[2]) == 1


@pytest.mark.parametrize("batch_size", [7, 1, 64])
def test_batched_weights_equal_full_batch(x64, setup, batch_size):
    a, problem, weights = setup
    settings = {"epochs": 10, "learning_rate": 0.05, "seed": SEED, "dropout": RATE}
    full = calibrate_weights(
        weights=weights, estimates=a, problem=problem, settings=CalibrationSettings(**settings)
    )
    batched = calibrate_weights(
        weights=weights,
        estimates=lambda start, stop: a[start:stop],
        problem=problem,
        settings=CalibrationSettings(**settings, batch_size=batch_size),
    )
    np.testing.assert_allclose(batched.weights, full.weights, rtol=1e-10)
    np.testing.assert_allclose(batched.history["objective"], full.history["objective"], rtol=1e-10)
    np.testing.assert_allclose(batched.estimates_after, full.estimates_after, rtol=1e-10)


def test_batched_weights_close_in_float32(setup):
    a, problem, weights = setup
    settings = {"epochs": 10, "seed": SEED, "dropout": RATE}
    full = calibrate_weights(
        weights=weights, estimates=a, problem=problem, settings=CalibrationSettings(**settings)
    )
    batched = calibrate_weights(
        weights=weights,
        estimates=a,
        problem=problem,
        settings=CalibrationSettings(**settings, batch_size=7),
    )
    assert full.weights.dtype == np.float64
    np.testing.assert_allclose(batched.weights, full.weights, rtol=1e-5)


@pytest.mark.parametrize("batch_size", [None, 7])
def test_converges_to_exact_solution(x64, batch_size):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.0, 2.0, size=(N, K))
    targets = np.exp(rng.normal(scale=0.3, size=N)) @ a  # reproduced exactly by those weights
    problem = TargetProblem.build(names=[f"t{j}" for j in range(K)], values=targets)
    settings = CalibrationSettings(
        epochs=300, learning_rate=0.05, batch_size=batch_size, penalty_strength=0.0,
        final_learning_rate_share=1.0,
    )  # fmt: skip
    fit = calibrate_weights(weights=np.ones(N), estimates=a, problem=problem, settings=settings)
    assert fit.loss_before > 1
    assert fit.loss_after < 1e-10
    assert fit.penalty_after == 0.0
    np.testing.assert_allclose(fit.estimates_after, targets, rtol=1e-7)
    assert fit.history["share_within_tolerance"].iloc[-1] == 1.0
    assert fit.history["fit_loss"].iloc[-1] < 1e-10 * fit.history["fit_loss"].iloc[0]


def test_target_at_zero_is_scored_against_the_floor(x64):
    rng = np.random.default_rng(2)
    a = rng.uniform(0.0, 2.0, size=(N, K))
    a[:, 5] = np.where(np.arange(N) % 2 == 0, 3.0, -3.0)
    weights = rng.uniform(0.5, 1.5, N)
    targets = 1.05 * (weights @ a)
    targets[5] = 0.0
    problem = TargetProblem.build(names=[f"t{j}" for j in range(K)], values=targets)
    fit = calibrate_weights(
        weights=weights,
        estimates=a,
        problem=problem,
        settings=CalibrationSettings(epochs=300),
    )
    # d = max(|0|, mean |A_i5|) = 3: a miss is measured in one record's contribution.
    assert fit.denominators[5] == pytest.approx(3.0)
    assert abs(fit.estimates_before[5]) > 0.3  # more than 10 % of d off at the start
    assert abs(fit.estimates_after[5]) < 0.03  # within the default tolerance of 1 % of d
    np.testing.assert_allclose(fit.estimates_after[:5], targets[:5], rtol=0.01)
    assert fit.loss_after < 1e-3 * fit.loss_before


def test_same_seed_gives_identical_weights(setup):
    a, problem, weights = setup

    def run(seed):
        settings = CalibrationSettings(epochs=10, seed=seed, dropout=RATE, batch_size=7)
        return calibrate_weights(weights=weights, estimates=a, problem=problem, settings=settings)

    first, again, other = run(11), run(11), run(12)
    np.testing.assert_array_equal(first.weights, again.weights)
    pd.testing.assert_frame_equal(first.history, again.history)
    assert not np.array_equal(first.weights, other.weights)


def test_a_zero_base_weight_stays_zero(setup):
    a, problem, weights = setup
    start = weights.copy()
    start[[0, 9]] = 0.0
    settings = CalibrationSettings(epochs=10, seed=1, dropout=RATE, batch_size=7)
    fit = calibrate_weights(weights=start, estimates=a, problem=problem, settings=settings)
    assert fit.weights[0] == 0.0
    assert fit.weights[9] == 0.0
    assert np.isfinite(fit.weights).all()
    assert (fit.weights[1:9] != start[1:9]).all()


def test_dropout_mask_is_the_same_whatever_the_batches():
    whole = dropout_mask(seed=5, epoch=2, start=0, stop=4_000, rate=RATE)
    parts = [
        dropout_mask(seed=5, epoch=2, start=s, stop=s + 1_000, rate=RATE)
        for s in range(0, 4_000, 1_000)
    ]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    for record in (0, 1, 997, 3_999):
        one = dropout_mask(seed=5, epoch=2, start=record, stop=record + 1, rate=RATE)
        assert one[0] == whole[record]
    assert abs(whole.mean() - (1 - RATE)) < 0.03
    for seed, epoch in ((5, 3), (6, 2)):
        other = dropout_mask(seed=seed, epoch=epoch, start=0, stop=4_000, rate=RATE)
        assert not np.array_equal(whole, other)
    assert dropout_mask(seed=5, epoch=2, start=0, stop=1_000, rate=0.0).all()


# ------------------------------------------------------------------------------------------
# Bad inputs
# ------------------------------------------------------------------------------------------


def test_errors_belong_to_the_hierarchy():
    assert issubclass(CalibrationError, ProjectError)
    assert issubclass(CalibrationError, ValueError)


def test_nan_target_is_named():
    with pytest.raises(CalibrationError, match=r"'b'.*not finite"):
        TargetProblem.build(names=["a", "b"], values=[1.0, np.nan])
    table = pd.DataFrame({"name": ["w"], "kind": ["sum"], "column": ["wealth"], "value": [np.nan]})
    with pytest.raises(CalibrationError, match=r"'w'.*not finite"):
        parse_targets(targets=table)


def test_shape_mismatches(setup):
    a, problem, weights = setup
    with pytest.raises(CalibrationError, match=r"shape \(50, 5\); expected \(50, 6\)"):
        calibrate_weights(weights=weights, estimates=a[:, :5], problem=problem)
    with pytest.raises(CalibrationError, match=r"expected \(49, 6\)"):
        calibrate_weights(weights=weights[:-1], estimates=a, problem=problem)
    with pytest.raises(CalibrationError, match=r"estimate_batches\(0, 50\) returned shape"):
        calibrate_weights(weights=weights, estimates=lambda s, e: a[s:e, :3], problem=problem)
    with pytest.raises(CalibrationError, match="one entry per target"):
        TargetProblem.build(names=["a", "b"], values=[1.0, 2.0], normalization=[1.0])


def test_negative_and_non_finite_weights(setup):
    a, problem, weights = setup
    bad = weights.copy()
    bad[[3, 17]] = -0.5
    with pytest.raises(CalibrationError, match=r"records \[3, 17\] \(2 in all\) are negative"):
        calibrate_weights(weights=bad, estimates=a, problem=problem)
    bad[[3, 17]] = np.nan
    with pytest.raises(CalibrationError, match="not finite"):
        calibrate_weights(weights=bad, estimates=a, problem=problem)


def test_all_zero_column_raises_when_fitted_and_warns_when_held_out(setup, caplog):
    a, problem, weights = setup
    zero = a.copy()
    zero[:, 1] = 0.0
    with pytest.raises(CalibrationError, match=r"Target 't1'.*zero for every record"):
        calibrate_weights(weights=weights, estimates=zero, problem=problem)
    zero[:, 2] = 0.0
    zero[:, 1] = a[:, 1]
    with caplog.at_level(logging.WARNING, logger="project.calibration"):
        calibrate_weights(
            weights=weights,
            estimates=zero,
            problem=problem,
            settings=CalibrationSettings(epochs=2),
        )
    assert "Held-out target 't2'" in caplog.text


def test_non_finite_estimates_and_bad_settings(setup):
    a, problem, weights = setup
    broken = a.copy()
    broken[7, 5] = np.nan
    with pytest.raises(CalibrationError, match=r"Target 't5'.*NaN or inf"):
        calibrate_weights(weights=weights, estimates=broken, problem=problem)
    with pytest.raises(CalibrationError, match=r"Unknown calibration settings \['epoch'\]"):
        CalibrationSettings.from_mapping({"epoch": 3})
    with pytest.raises(CalibrationError, match="dropout"):
        CalibrationSettings(dropout=1.0)
    with pytest.raises(CalibrationError, match="All 2 targets are held out"):
        TargetProblem.build(names=["a", "b"], values=[1.0, 2.0], held_out=[True, True])


# ------------------------------------------------------------------------------------------
# Panel -> contributions, the pipeline entry point and its products
# ------------------------------------------------------------------------------------------


def _panel():
    """Subjects 10, 3, 7 aged 50-53; rows shuffled."""
    rows = []
    wealth = {10: [1.0, 2.0, 3.0, 4.0], 3: [5.0, 6.0, 7.0, 8.0], 7: [0.5, 0.5, 0.5, 0.5]}
    retired = {10: [0, 0, 1, 1], 3: [0, 0, 0, 1], 7: [0, 1, 1, 1]}
    for subject in (10, 3, 7):
        for period in range(4):
            rows.append(
                {
                    "subject_id": subject,
                    "period": period,
                    "age": 50.0 + period,
                    "wealth": wealth[subject][period],
                    "retirement": ["working", "retired"][retired[subject][period]],
                    "income": period % 2,
                }
            )
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=0).reset_index(drop=True)
    frame["retirement"] = pd.Categorical(frame["retirement"], categories=["working", "retired"])
    return frame


def _targets():
    return pd.DataFrame(
        {
            "name": ["wealth_50_51", "retired_52_53", "wealth_all", "income_1"],
            "kind": ["sum", "count", "sum", "count"],
            "column": ["wealth", "retirement", "wealth", "income"],
            "label": [None, "retired", None, "1"],
            "age_min": [50, 52, None, 51],
            "age_max": [52, 54, None, 54],
            "value": [10.0, 5.5, 26.0, 6.0],  # weights 0.5, 1.5, 1 (ids 3, 7, 10)
            "held_out": [False, False, True, False],
        }
    )


def test_panel_contributions_by_hand():
    definitions, problem = parse_targets(targets=_targets())
    estimates = PanelEstimates.from_panel(panel=_panel(), definitions=definitions)
    np.testing.assert_array_equal(estimates.subject_ids, [3, 7, 10])
    expected = np.array(
        [
            [11.0, 1.0, 26.0, 2.0],  # subject 3
            [1.0, 2.0, 2.0, 2.0],  # subject 7
            [3.0, 2.0, 10.0, 2.0],  # subject 10
        ]
    )
    np.testing.assert_array_equal(estimates(0, 3), expected)
    np.testing.assert_array_equal(estimates(1, 3), expected[1:])
    np.testing.assert_array_equal(estimates(2, 2), np.zeros((0, 4)))
    assert problem.held_out.tolist() == [False, False, True, False]


def test_panel_definition_errors():
    definitions, _ = parse_targets(targets=_targets())
    panel = _panel()
    with pytest.raises(CalibrationError, match=r"'retired_52_53': label 'Retired' is not"):
        bad = _targets().assign(label=[None, "Retired", None, "1"])
        PanelEstimates.from_panel(panel=panel, definitions=parse_targets(targets=bad)[0])
    with pytest.raises(CalibrationError, match=r"'wealth_50_51': the panel has no column"):
        PanelEstimates.from_panel(panel=panel.drop(columns="wealth"), definitions=definitions)
    with pytest.raises(CalibrationError, match="cannot be summed"):
        bad = _targets().assign(kind=["sum", "sum", "sum", "count"], label=None)
        bad.loc[3, "label"] = "1"
        PanelEstimates.from_panel(panel=panel, definitions=parse_targets(targets=bad)[0])
    with pytest.raises(CalibrationError, match=r"'x': unknown kind 'mean'"):
        parse_targets(targets=_targets().assign(name=["x", "y", "z", "u"], kind="mean"))


def test_calibrate_from_panel_and_products(tmp_path):
    settings = {"epochs": 40, "learning_rate": 0.05, "seed": 1, "dropout": 0.1}
    outcome = calibrate_from_panel(panel=_panel(), targets=_targets(), settings=settings)
    assert outcome.weights.columns.tolist() == ["subject_id", "weight"]
    assert outcome.weights["subject_id"].tolist() == [3, 7, 10]
    assert outcome.log.columns.tolist() == [
        "epoch", "objective", "fit_loss", "penalty", "share_within_tolerance",
    ]  # fmt: skip
    assert len(outcome.log) == 40
    assert outcome.table.columns.tolist() == [
        "target", "held_out", "target_value", "tolerance", "estimate_before", "estimate_after",
        "relative_miss_before", "relative_miss_after", "within_tolerance_before",
        "within_tolerance_after",
    ]  # fmt: skip
    np.testing.assert_allclose(outcome.table["estimate_before"], [15.0, 5.0, 38.0, 6.0])
    np.testing.assert_allclose(
        outcome.table["relative_miss_before"], [0.5, -0.5 / 5.5, 12 / 26, 0.0]
    )
    assert outcome.loss_after < outcome.loss_before
    batched = calibrate_from_panel(
        panel=_panel(), targets=_targets(), settings={**settings, "batch_size": 2}
    )
    np.testing.assert_allclose(batched.weights["weight"], outcome.weights["weight"], rtol=1e-5)

    written = []
    for folder in ("a", "b"):
        marker = save_calibration(
            calibrate_from_panel(panel=_panel(), targets=_targets(), settings=settings),
            directory=tmp_path / folder / "calibration",
        )
        written.append({p.name: p.read_bytes() for p in sorted(marker.parent.iterdir())})
    assert written[0] == written[1]
    assert set(written[0]) == {*FILE_NAMES.values(), "COMPLETE.json"}
    loaded = load_calibration(tmp_path / "a" / "calibration")
    pd.testing.assert_frame_equal(loaded.weights, outcome.weights)
    pd.testing.assert_frame_equal(loaded.table, outcome.table, check_dtype=False)
    provenance = loaded.summary.pop("provenance")
    assert loaded.summary == json.loads(json.dumps(outcome.summary()))
    assert provenance["seed"] == str(outcome.settings["seed"])
    assert read_arrow_provenance(tmp_path / "a" / "calibration" / FILE_NAMES["weights"]) == (
        provenance
    )
    assert json.dumps(provenance, sort_keys=True).encode() in written[0][FILE_NAMES["figure"]]
    assert loaded.warnings == list(outcome.warnings)
    assert written[0][FILE_NAMES["figure"]].startswith(b"\x89PNG")
    assert b"| wealth_all |" in written[0][FILE_NAMES["table_markdown"]]


def test_the_loss_figure_speaks_plainly_and_names_the_variant():
    outcome = calibrate_from_panel(
        panel=_panel(), targets=_targets(), settings={"learning_rate": RATE, "epochs": 5}
    )
    axes = loss_figure(outcome, variant="low_pension").axes[0]
    assert axes.get_title() == "Low pension: reweighting the simulated subjects to the targets"
    labels = axes.get_legend_handles_labels()[1]
    assert labels[0] == "Distance to targets"
    assert not [label for label in labels if {"loss", "entropy"} & set(label.lower().split())]
    assert axes.get_xlabel() == "Optimisation step"
    assert axes.get_ylabel().startswith("Mean squared miss, in tolerances")
    plain = loss_figure(outcome).axes[0]
    assert plain.get_title() == "Reweighting the simulated subjects to the targets"


def test_a_damaged_calibration_is_refused_naming_the_file(tmp_path):
    outcome = calibrate_from_panel(
        panel=_panel(), targets=_targets(), settings={"learning_rate": RATE, "epochs": 5}
    )
    directory = save_calibration(outcome, directory=tmp_path / "calibration").parent
    weights = directory / FILE_NAMES["weights"]
    weights.write_bytes(weights.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match=r"calibrated_weights\.arrow"):
        load_calibration(directory)


# ------------------------------------------------------------------------------------------
# A regimes panel (dead rows kept), synthetic-truth targets, regularisation and goals
# ------------------------------------------------------------------------------------------


def _regime_panel(*, n=300, periods=6, seed=0):
    """Subjects aged 60-65 who work, retire (absorbing) and die (rows kept, states missing)."""
    rng = np.random.default_rng(seed)
    leisure = rng.uniform(size=n) < 0.5
    wealth = np.clip(rng.lognormal(0.5, 0.6, n), 0.2, 20.0)
    regime = np.zeros(n, dtype=int)  # 0 working, 1 retired, 2 dead
    rows = []
    for period in range(periods):
        for i in range(n):
            alive = regime[i] < 2
            rows.append(
                {
                    "subject_id": 1000 + i,
                    "period": period,
                    "age": 60.0 + period,
                    "regime": ["working", "retired", "dead"][regime[i]],
                    "pref_type": ("leisure_loving" if leisure[i] else "work_loving")
                    if alive
                    else None,
                    "wealth": wealth[i] if alive else np.nan,
                    "consumption": 0.2 * wealth[i] + 0.3 if alive else np.nan,
                }
            )
        retire = rng.uniform(size=n) < 0.15 + 0.1 * leisure + 0.03 * np.log(wealth)
        die = rng.uniform(size=n) < 0.04
        regime = np.where(regime == 2, 2, np.where(die, 2, np.where(retire, 1, regime)))
        wealth = wealth * np.where(regime == 0, 1.03, 0.95) + rng.normal(0, 0.05, n).clip(-0.1)
    frame = pd.DataFrame(rows)
    frame["regime"] = pd.Categorical(frame["regime"], categories=["working", "retired", "dead"])
    frame["pref_type"] = pd.Categorical(frame["pref_type"])
    return frame.astype({"wealth": np.float32, "consumption": np.float32})


def _regime_template():
    def row(name, kind, column, label, lo, hi, held_out=False):
        return {
            "name": name, "kind": kind, "column": column, "label": label, "age_min": lo,
            "age_max": hi, "value": 0.0, "tolerance": 0.02 if held_out else 0.01,
            "held_out": held_out,
        }  # fmt: skip

    return pd.DataFrame(
        [
            row("wealth_60_62", "sum", "wealth", None, 60, 63),
            row("wealth_63_65", "sum", "wealth", None, 63, 66),
            row("working_60_61", "count", "regime", "working", 60, 62),
            row("retirees_62_63", "count", "regime", "retired", 62, 64),
            row("retirees_64_65", "count", "regime", "retired", 64, 66),
            row("consumption_60_62", "sum", "consumption", None, 60, 63, held_out=True),
            row("work_loving_60_61", "count", "pref_type", "work_loving", 60, 62, True),
        ]
    )


@pytest.fixture(scope="module")
def regime():
    panel = _regime_panel()
    return panel, synthetic_targets(panel=panel, template=_regime_template())


FAST = {"epochs": 300}


def test_dead_rows_are_left_out_of_every_target():
    panel = _regime_panel(n=40)
    definitions, _ = parse_targets(targets=_regime_template().assign(value=1.0))
    estimates = PanelEstimates.from_panel(panel=panel, definitions=definitions)
    matrix = estimates(0, estimates.n_records)
    assert np.isfinite(matrix).all()  # dead rows have NaN wealth
    living = panel[panel["regime"] != "dead"]
    assert estimates.n_records == panel["subject_id"].nunique()  # the dead stay subjects
    in_bin = living["age"].between(60, 62.5)
    np.testing.assert_allclose(matrix[:, 0].sum(), living.loc[in_bin, "wealth"].sum(), rtol=1e-6)
    dead_count = {"name": ["d"], "kind": ["count"], "column": ["regime"], "label": ["dead"]}
    dead = parse_targets(targets=pd.DataFrame({**dead_count, "value": [1.0]}))[0]
    assert not PanelEstimates.from_panel(panel=panel, definitions=dead)(0, 40).any()
    everyone = PanelEstimates.from_panel(panel=panel, definitions=dead, excluded_regimes=())
    assert everyone(0, 40).sum() == (panel["regime"] == "dead").sum() > 0


def test_goals_are_met_on_a_synthetic_panel(regime, caplog):
    panel, targets = regime
    with caplog.at_level(logging.WARNING, logger="project.calibration"):
        outcome = calibrate_from_panel(panel=panel, targets=targets)
    table = outcome.table
    fitted = table[~table["held_out"]]
    assert not fitted["within_tolerance_before"].all()  # there is something to do
    assert fitted["within_tolerance_after"].all()
    assert outcome.warnings == ()
    assert outcome.goals_met
    assert "WARNING" not in caplog.text
    summary = outcome.weight_summary
    assert summary.effective_sample_share >= 0.5
    assert summary.max_weight_ratio <= 10
    assert outcome.summary()["goals"]["met"] is True
    # the held-out work-loving count moves toward its (synthetic) truth without being fitted
    held = table.set_index("target").loc["work_loving_60_61"]
    assert abs(held["relative_miss_after"]) < abs(held["relative_miss_before"])


def test_summary_reports_ess_and_max_weight_by_hand(regime):
    summary = WeightSummary.of(np.array([1.0, 2.0, 3.0, 4.0]))
    assert summary.effective_sample_size == pytest.approx(100 / 30)  # (1+2+3+4)^2 / (1+4+9+16)
    assert summary.effective_sample_share == pytest.approx(100 / 30 / 4)
    assert summary.max_weight_ratio == pytest.approx(4 / 2.5)
    assert summary.min_weight_ratio == pytest.approx(1 / 2.5)
    assert kish_effective_sample_size(np.ones(7)) == pytest.approx(7.0)
    assert kish_effective_sample_size(np.zeros(3)) == 0.0
    with pytest.raises(CalibrationError, match="non-negative"):
        kish_effective_sample_size(np.array([1.0, -1.0]))
    panel, targets = regime
    outcome = calibrate_from_panel(panel=panel, targets=targets, settings=FAST)
    w = outcome.weights["weight"].to_numpy()
    reported = outcome.summary()["weights"]
    assert reported["effective_sample_size"] == pytest.approx(w.sum() ** 2 / (w**2).sum())
    assert reported["effective_sample_share"] == pytest.approx(w.sum() ** 2 / (w**2).sum() / 300)
    assert reported["max_weight_ratio"] == pytest.approx(w.max() / w.mean())
    assert outcome.summary()["base_weights"]["effective_sample_share"] == pytest.approx(1.0)


def test_penalty_strength_zero_versus_large(regime):
    panel, targets = regime

    def deviation(strength):
        settings = {**FAST, "penalty_strength": strength}
        outcome = calibrate_from_panel(panel=panel, targets=targets, settings=settings)
        return np.abs(outcome.weights["weight"].to_numpy() - 1.0).max(), outcome

    free, loose = deviation(0.0)
    tight, strong = deviation(1e6)
    assert tight < 0.01  # a large penalty keeps every weight near its base weight
    assert free > 10 * tight
    assert loose.loss_after < strong.loss_after
    assert (
        strong.weight_summary.effective_sample_share > loose.weight_summary.effective_sample_share
    )
    assert strong.warnings  # the targets are then missed, visibly


def test_bounds_are_respected_relative_to_the_base_weights(regime):
    panel, targets = regime
    greedy = targets.copy()
    greedy["held_out"] = greedy["name"] != "wealth_63_65"
    greedy.loc[~greedy["held_out"], "value"] *= 3  # unattainable within the bounds
    base = pd.DataFrame(
        {"subject_id": np.sort(panel["subject_id"].unique()), "weight": np.linspace(0.5, 2, 300)}
    )
    base.loc[7, "weight"] = 0.0
    settings = {**FAST, "lower_bound": 0.5, "upper_bound": 2.0, "penalty_strength": 0.0}
    settings["learning_rate"] = 0.1  # far enough in 300 steps to press on the bound
    outcome = calibrate_from_panel(
        panel=panel, targets=greedy, settings=settings, initial_weights=base
    )
    ratios = np.divide(
        outcome.weights["weight"].to_numpy(),
        base["weight"].to_numpy(),
        out=np.ones(300),
        where=base["weight"].to_numpy() > 0,
    )
    assert outcome.weights["weight"].iloc[7] == 0.0
    assert ratios.min() >= 0.5 and ratios.max() <= 2.0
    assert ratios.max() > 1.9  # pressed toward the upper bound
    assert any("outside their tolerance" in w and "wealth_63_65" in w for w in outcome.warnings)


def test_held_out_targets_do_not_influence_the_fit(regime):
    panel, targets = regime
    moved = targets.copy()
    held = moved["held_out"].astype(bool)
    moved.loc[held, "value"] *= 3.0
    moved.loc[held, "tolerance"] = 0.5
    settings = {**FAST, "dropout": 0.1, "seed": 4}
    first = calibrate_from_panel(panel=panel, targets=targets, settings=settings)
    second = calibrate_from_panel(panel=panel, targets=moved, settings=settings)
    np.testing.assert_array_equal(first.weights["weight"], second.weights["weight"])
    pd.testing.assert_frame_equal(first.log, second.log)
    assert not first.table["relative_miss_after"].equals(second.table["relative_miss_after"])


def test_missed_goals_are_recorded_logged_or_raised(regime, caplog, tmp_path):
    panel, targets = regime
    greedy = targets.copy()
    greedy.loc[greedy["name"] == "retirees_64_65", "value"] *= 4
    settings = {**FAST, "min_ess_share": 0.999, "max_weight_ratio": 1.01}
    with caplog.at_level(logging.WARNING, logger="project.calibration"):
        outcome = calibrate_from_panel(panel=panel, targets=greedy, settings=settings, variant=None)
    assert len(outcome.warnings) == 3
    assert "below the goal min_ess_share=0.999" in outcome.warnings[0]
    assert "above the goal max_weight_ratio=1.01" in outcome.warnings[1]
    assert "'retirees_64_65' misses by" in outcome.warnings[2]
    assert caplog.text.count("WARNING") >= 3
    assert not outcome.goals_met
    save_calibration(outcome, directory=tmp_path / "calibration")
    loaded = load_calibration(tmp_path / "calibration")
    assert loaded.warnings == list(outcome.warnings)
    assert loaded.summary["goals"]["met"] is False
    with pytest.raises(CalibrationError, match=r"missed its goals.*min_ess_share"):
        calibrate_from_panel(
            panel=panel, targets=greedy, settings={**settings, "on_goal_failure": "raise"}
        )


# ------------------------------------------------------------------------------------------
# Targets table: per-variant rows, held out, tolerance, bad values
# ------------------------------------------------------------------------------------------


def _variant_table():
    return pd.DataFrame(
        {
            "name": ["shared", "w", "w", "r"],
            "kind": ["sum", "sum", "sum", "count"],
            "column": ["wealth", "wealth", "wealth", "regime"],
            "label": [None, None, None, "retired"],
            "value": [1.0, 2.0, 3.0, 4.0],
            "variant": ["all", "baseline; baseline_grid", "low_pension", "low_pension"],
        }
    )


def test_targets_are_selected_per_variant(regime):
    table = _variant_table()
    assert targets_for_variant(targets=table, variant="baseline")["value"].tolist() == [1, 2]
    assert targets_for_variant(targets=table, variant="baseline_grid")["value"].tolist() == [1, 2]
    low = targets_for_variant(targets=table, variant="low_pension")
    assert low["value"].tolist() == [1, 3, 4]
    assert "variant" not in low.columns
    with pytest.raises(CalibrationError, match=r"no rows for variant 'high_pension'"):
        targets_for_variant(targets=table, variant="high_pension")
    with pytest.raises(CalibrationError, match=r"pass variant=<name>"):
        parse_targets(targets=table)
    shared_only = table.iloc[:1]
    assert len(targets_for_variant(targets=shared_only, variant="anything")) == 1
    _, problem = parse_targets(targets=table, variant="low_pension")
    assert problem.names == ("shared", "w", "r")
    panel, targets = regime
    doubled = pd.concat(
        [targets.assign(variant="one"), targets.assign(variant="two", value=targets["value"] * 1.1)]
    )
    outcome = calibrate_from_panel(panel=panel, targets=doubled, settings=FAST, variant="two")
    np.testing.assert_allclose(outcome.table["target_value"], targets["value"] * 1.1)
    assert outcome.summary()["variant"] == "two"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"variant": ["all", "", "x", "x"]}, r"'w': variant is empty"),
        ({"variant": ["all", "all;x", "x", "x"]}, r"'w': variant 'all;x' is not 'all'"),
        ({"variant": ["all", "a-b", "x", "x"]}, r"bad: \['a-b'\]"),
        ({"held_out": ["maybe", "no", "no", "no"]}, r"'shared': held_out must be true or false"),
        ({"tolerance": [0.0, 0.01, 0.01, 0.01]}, r"'shared': the tolerance is not"),
        ({"tolerance": [0.01, 1.5, 0.01, 0.01]}, r"'w': the tolerance is not"),
        ({"tolerance": ["1%", 0.01, 0.01, 0.01]}, r"'shared': tolerance '1%' is not a number"),
        ({"tolerances": [0.01] * 4}, r"unknown columns \['tolerances'\]"),
    ],
)
def test_bad_target_tables_are_refused(change, message):
    table = _variant_table().assign(variant=["all", "x", "x", "x"], name=["shared", "w", "v", "r"])
    with pytest.raises(CalibrationError, match=message):
        parse_targets(targets=table.assign(**change), variant="x")


def test_the_old_excluded_column_is_still_read(caplog):
    table = _targets().rename(columns={"held_out": "excluded"})
    with caplog.at_level(logging.WARNING, logger="project.calibration"):
        _, problem = parse_targets(targets=table)
    assert problem.held_out.tolist() == [False, False, True, False]
    assert "now called 'held_out'" in caplog.text
    with pytest.raises(CalibrationError, match=r"both 'excluded'.*keep only 'held_out'"):
        parse_targets(targets=table.assign(held_out=False))


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        ({"lower_bound": 1.0}, "lower_bound"),
        ({"lower_bound": 0.0}, "lower_bound"),
        ({"upper_bound": 1.0}, "upper_bound"),
        ({"upper_bound": float("inf")}, "upper_bound"),
        ({"penalty": "l1"}, "penalty"),
        ({"penalty_strength": -1.0}, "penalty_strength"),
        ({"min_ess_share": 1.5}, "min_ess_share"),
        ({"max_weight_ratio": 0.5}, "max_weight_ratio"),
        ({"on_goal_failure": "ignore"}, "on_goal_failure"),
        ({"final_learning_rate_share": 0.0}, "final_learning_rate_share"),
        ({"epochs": 2.5}, "epochs"),
    ],
)
def test_bad_settings_are_refused(settings, name):
    with pytest.raises(CalibrationError, match=rf"setting {name}=.* must be .*config\.py"):
        CalibrationSettings.from_mapping(settings)


# ------------------------------------------------------------------------------------------
# Weights downstream and the shipped targets
# ------------------------------------------------------------------------------------------


def test_weighted_mean_by_hand():
    panel = pd.DataFrame(
        {
            "subject_id": [1, 1, 2, 2, 3, 3],
            "age": [60, 61, 60, 61, 60, 61],
            "regime": pd.Categorical(["working", "retired", "working", "dead", "retired", "dead"]),
            "wealth": [1.0, 2.0, 3.0, np.nan, 5.0, np.nan],
        }
    )
    weights = pd.DataFrame({"subject_id": [3, 2, 1], "weight": [2.0, 1.0, 0.5]})
    attached = attach_weights(panel=panel, weights=weights)
    assert attached["weight"].tolist() == [0.5, 0.5, 1.0, 1.0, 2.0, 2.0]
    assert "weight" not in panel.columns
    overall = weighted_mean(panel=panel, weights=weights, column="wealth")
    assert overall == pytest.approx((0.5 * 1 + 0.5 * 2 + 1 * 3 + 2 * 5) / (0.5 + 0.5 + 1 + 2))
    by_age = weighted_mean(panel=panel, weights=weights, column="wealth", by="age")
    assert by_age.loc[60] == pytest.approx((0.5 * 1 + 3 + 2 * 5) / 3.5)
    assert by_age.loc[61] == pytest.approx(2.0)  # only subject 1 is alive at 61
    retired = panel.assign(retired=panel["regime"] == "retired")
    share = weighted_mean(panel=retired, weights=weights, column="retired", by="age")
    assert share.loc[60] == pytest.approx(2 / 3.5)
    assert share.loc[61] == pytest.approx(1.0)
    with_dead = weighted_mean(
        panel=retired, weights=weights, column="retired", by="age", living_only=False
    )
    assert with_dead.loc[61] == pytest.approx(0.5 / 3.5)
    with pytest.raises(CalibrationError, match=r"no entry for subjects \[3\]"):
        attach_weights(panel=panel, weights=weights.iloc[1:])
    with pytest.raises(CalibrationError, match="more than once"):
        attach_weights(panel=panel, weights=pd.concat([weights, weights.iloc[:1]]))
    with pytest.raises(CalibrationError, match="not finite, non-negative"):
        attach_weights(panel=panel, weights=weights.assign(weight=[1.0, -1.0, 1.0]))
    with pytest.raises(CalibrationError, match="not numeric or boolean"):
        weighted_mean(panel=panel, weights=weights, column="regime")


def test_synthetic_truth_meets_its_own_targets(regime):
    panel, targets = regime
    truth = truth_weights(panel=panel)
    assert truth["weight"].mean() == pytest.approx(1.0)
    exact = target_estimates(panel=panel, targets=targets, weights=truth)
    np.testing.assert_allclose(exact.to_numpy(), targets["value"].to_numpy(), rtol=5e-4)


@pytest.mark.parametrize("file_name", ["targets.csv", "targets_smoke.csv"])
@pytest.mark.parametrize("variant", ["baseline", "benefit_cut"])
def test_shipped_targets_files_parse_per_variant(file_name, variant):
    table = pd.read_csv(ROOT / "data" / file_name)
    definitions, problem = parse_targets(targets=table, variant=variant)
    assert {d.kind for d in definitions} == {"sum", "count"}
    assert problem.fitted.sum() >= 5
    assert problem.held_out.any()
    assert (problem.tolerances <= 0.02).all()
    retirees = [d for d in definitions if d.name.startswith("retirees")]
    assert retirees and all((d.column, d.label) == ("regime", "retired") for d in retirees)


def test_a_calibration_without_its_summary_is_refused(tmp_path):
    outcome = calibrate_from_panel(panel=_panel(), targets=_targets(), settings={"epochs": 2})
    directory = save_calibration(outcome, directory=tmp_path / "calibration").parent
    (directory / FILE_NAMES["summary"]).unlink()
    write_marker(directory, kind="calibration")  # an intact product of an older version
    with pytest.raises(CheckpointError, match=r"lacks \['calibration_summary\.json'\]"):
        load_calibration(directory)
