"""Calibration of record weights to aggregate targets: exact batched gradients, fit, inputs."""

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
    calibrate_from_panel,
    calibrate_weights,
    dropout_mask,
    load_calibration,
    parse_targets,
    passes,
    save_calibration,
)
from project.calibration.products import FILE_NAMES
from project.calibration.source import EstimateSource
from project.errors import CheckpointError, ProjectError

ROOT = Path(__file__).resolve().parents[1]
N, K = 50, 6
SEED = 3
RATE = 0.3


def _problem(*, rng, a, excluded=(2,)):
    values = np.ones(N) @ a * rng.uniform(0.8, 1.2, K)
    flags = np.isin(np.arange(K), excluded)
    return TargetProblem.build(
        names=[f"t{j}" for j in range(K)],
        values=values,
        normalization=rng.uniform(0.5, 3.0, K),
        excluded=flags,
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


def _reference(*, theta, a, objective, rate, epoch):
    """Full-batch loss and gradient by autodiff of L(exp(theta) * mask / (1 - p) @ A)."""
    mask = jnp.asarray(dropout_mask(seed=SEED, epoch=epoch, start=0, stop=N, rate=rate))

    def loss(t):
        weights = jnp.where(mask, jnp.exp(t) / (1 - rate), 0.0)
        return objective.loss(jnp.matmul(weights, jnp.asarray(a), precision="highest"))

    return jax.value_and_grad(loss)(theta)


@pytest.mark.parametrize("batch_size", [None, 7, 1, 64])  # 7: a ragged tail; 64 >= N
@pytest.mark.parametrize("rate", [0.0, RATE])
def test_batched_gradient_equals_full_batch(x64, setup, batch_size, rate):
    a, problem, weights = setup
    objective = _objective(a, problem)
    theta = jnp.log(jnp.asarray(weights))
    expected_loss, expected_grad = _reference(
        theta=theta, a=a, objective=objective, rate=rate, epoch=4
    )
    batching = passes.Batching.of(n_records=N, batch_size=batch_size)
    for estimates in (a, lambda start, stop: a[start:stop]):
        source = EstimateSource.of(estimates=estimates, n_records=N, names=problem.names)
        loss, _, grad, _ = passes.gradient(
            theta=jnp.asarray(batching.pad(np.log(weights))),
            source=source,
            batching=batching,
            objective=objective,
            key=passes.epoch_key(seed=SEED, epoch=4),
            rate=rate,
        )
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-12)
        np.testing.assert_allclose(grad[:N], expected_grad, rtol=1e-11, atol=1e-15)
        assert not np.asarray(grad[N:]).any()  # padding


def test_excluded_targets_do_not_enter_the_loss(x64, setup):
    a, problem, _ = setup
    objective = _objective(a, problem)
    moved = np.asarray(problem.values).copy()
    _, c = objective.loss_and_gradient(jnp.asarray(moved))
    moved[2] *= 10  # target 2 is excluded
    loss, c_moved = objective.loss_and_gradient(jnp.asarray(moved))
    assert float(loss) == 0.0
    assert np.asarray(c_moved)[2] == 0.0
    np.testing.assert_array_equal(c, c_moved)


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
    np.testing.assert_allclose(batched.history["loss"], full.history["loss"], rtol=1e-10)
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
    fit = calibrate_weights(
        weights=np.ones(N),
        estimates=a,
        problem=problem,
        settings=CalibrationSettings(epochs=300, learning_rate=0.05, batch_size=batch_size),
    )
    assert fit.loss_before > 1e-4
    assert fit.loss_after < 1e-14
    np.testing.assert_allclose(fit.estimates_after, targets, rtol=1e-7)
    assert fit.history["share_within_10pct"].iloc[-1] == 1.0
    assert fit.history["loss"].iloc[-1] < 1e-10 * fit.history["loss"].iloc[0]


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
        settings=CalibrationSettings(epochs=300, learning_rate=0.02),
    )
    # d = max(|0|, mean |A_i5|) = 3: a miss is measured in one record's contribution.
    assert fit.denominators[5] == pytest.approx(3.0)
    assert abs(fit.estimates_before[5]) > 0.3  # more than 10 % of d off at the start
    assert abs(fit.estimates_after[5]) < 0.03
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


def test_a_zero_weight_stays_zero(setup):
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


def test_all_zero_column_raises_when_fitted_and_warns_when_excluded(setup, caplog):
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
    assert "Excluded target 't2'" in caplog.text


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
    with pytest.raises(CalibrationError, match="All 2 targets are excluded"):
        TargetProblem.build(names=["a", "b"], values=[1.0, 2.0], excluded=[True, True])


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
            "excluded": [False, False, True, False],
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
    assert problem.excluded.tolist() == [False, False, True, False]


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
    assert outcome.log.columns.tolist() == ["epoch", "loss", "share_within_10pct"]
    assert len(outcome.log) == 40
    assert outcome.table.columns.tolist() == [
        "target",
        "target_value",
        "estimate_before",
        "estimate_after",
        "excluded",
    ]
    np.testing.assert_allclose(outcome.table["estimate_before"], [15.0, 5.0, 38.0, 6.0])
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
    assert written[0][FILE_NAMES["figure"]].startswith(b"\x89PNG")
    assert b"| wealth_all |" in written[0][FILE_NAMES["table_markdown"]]


def test_a_damaged_calibration_is_refused_naming_the_file(tmp_path):
    outcome = calibrate_from_panel(
        panel=_panel(), targets=_targets(), settings={"learning_rate": RATE, "epochs": 5}
    )
    directory = save_calibration(outcome, directory=tmp_path / "calibration").parent
    weights = directory / FILE_NAMES["weights"]
    weights.write_bytes(weights.read_bytes()[:-8])
    with pytest.raises(CheckpointError, match=r"calibrated_weights\.arrow"):
        load_calibration(directory)


def test_shipped_targets_file_parses():
    definitions, problem = parse_targets(targets=pd.read_csv(ROOT / "data" / "targets.csv"))
    assert {d.kind for d in definitions} == {"sum", "count"}
    assert problem.fitted.sum() >= 6
    assert problem.excluded.any()
