"""Saving and loading simulation results: equality, deterministic bytes, atomicity, errors."""

import dataclasses
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import textwrap

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pyarrow.feather
import pytest

import project.persist.bundle as bundle_module
from project import CheckpointError, ModelSpecificationError, solve
from project.models import lifecycle
from project.persist import load_bundle, save_bundle
from project.persist.manifest import write_marker
from project.provenance import product_provenance, read_arrow_provenance
from project.simulation import draw_initial_conditions, simulate

MARKER = bundle_module.MARKER_NAME
TABLE = bundle_module.TABLE_NAME


@pytest.fixture(scope="module")
def case():
    """A small lifecycle model, its solution and initial conditions for 40 subjects.

    One model keeps the file fast: compiling solve and simulate dominates its run time.
    """
    model = lifecycle.build_model(n_wealth=10, n_consumption=10, n_periods=3, start_age=60)
    params = lifecycle.DEFAULT_PARAMS
    distribution = {
        "pref_type": {"probabilities": [0.5, 0.5]},
        "lagged_retirement": {"label": "working"},
        "income": {"probabilities": [0.2] * 5},
        "wealth": {"uniform": [1, 10]},
    }
    initial = draw_initial_conditions(model=model, n_subjects=40, seed=1, distribution=distribution)
    return params, initial, solve(model=model, params=params)


@pytest.fixture(scope="module")
def result(case):
    """A small lifecycle panel: four categoricals (states and actions) and continuous wealth."""
    params, initial, solution = case
    return simulate(params=params, initial_conditions=initial, solution=solution, seed=7)


@pytest.fixture(scope="module")
def late_result(case):
    """The same subjects, simulated from period 1 (of 0..2) on."""
    params, initial, solution = case
    return simulate(
        params=params, initial_conditions=initial, solution=solution, seed=7, start_period=1
    )


@pytest.fixture(scope="module")
def saved(result, tmp_path_factory):
    """A complete bundle of ``result``; tests that break bundles work on copies."""
    directory = tmp_path_factory.mktemp("saved") / "bundle"
    save_bundle(result=result, directory=directory)
    return directory


@pytest.fixture
def bundle_copy(saved, tmp_path):
    return shutil.copytree(saved, tmp_path / "bundle")


def test_save_then_load_restores_every_array(result, saved):
    loaded = load_bundle(directory=saved)
    assert loaded.columns.keys() == result.columns.keys()
    for name, original in result.columns.items():
        np.testing.assert_array_equal(loaded.columns[name], original)
        assert loaded.columns[name].dtype == original.dtype
    assert len(loaded.value_function) == len(result.value_function)
    for original, restored in zip(result.value_function, loaded.value_function, strict=True):
        np.testing.assert_array_equal(np.asarray(restored), np.asarray(original))
        assert restored.dtype == original.dtype
    assert loaded.params.keys() == result.params.keys()
    for name, original in result.params.items():
        np.testing.assert_array_equal(loaded.params[name], original)
        assert loaded.params[name].dtype == original.dtype
    assert loaded.description == result.description
    assert loaded.ages == result.ages
    assert (loaded.seed, loaded.subject_batch_size) == (result.seed, result.subject_batch_size)
    assert loaded.start_period == result.start_period == 0
    assert loaded.model is None
    pd.testing.assert_frame_equal(loaded.to_dataframe(), result.to_dataframe())


def test_categoricals_keep_labels_and_order(result, saved):
    expected = result.to_dataframe()
    categorical = ["pref_type", "lagged_retirement", "income", "retirement"]
    assert [c for c in expected if expected[c].dtype == "category"] == categorical
    for frame in (
        load_bundle(directory=saved).to_dataframe(),
        pd.read_feather(saved / TABLE),
    ):
        for column in categorical:
            assert list(frame[column].cat.categories) == list(expected[column].cat.categories)


def test_jax_scalars_are_saved_like_numpy(result, saved, tmp_path):
    as_jax = dataclasses.replace(
        result,
        params={k: jnp.asarray(v) for k, v in result.params.items()},
        columns={k: jnp.asarray(v) for k, v in result.columns.items()},
        seed=jnp.asarray(result.seed),
    )
    save_bundle(result=as_jax, directory=tmp_path / "bundle")
    for name in (TABLE, MARKER, "metadata.json"):
        assert (tmp_path / "bundle" / name).read_bytes() == (saved / name).read_bytes(), name


def test_arrow_file_holds_the_base_table(result, saved):
    pd.testing.assert_frame_equal(pd.read_feather(saved / TABLE), result.to_dataframe())


def test_metadata_is_sorted_indented_json(result, saved):
    text = (saved / "metadata.json").read_text()
    metadata = json.loads(text)
    assert text == json.dumps(metadata, indent=2, sort_keys=True) + "\n"
    assert metadata["model"]["name"] == "lifecycle"
    assert metadata["state_names"] == ["pref_type", "lagged_retirement", "income", "wealth"]
    assert metadata["n_subjects"] == result.n_subjects == 40
    assert metadata["seed"] == 7
    assert metadata["ages"] == [60.0, 61.0, 62.0]
    assert metadata["start_period"] == 0
    assert metadata["params"]["beta"] == pytest.approx(0.96)
    assert metadata["params"]["disutility_of_work"] == pytest.approx([0.15, 0.6])
    assert metadata["additional_targets"] == []
    assert "orbax-checkpoint" in metadata["versions"]


def test_saving_twice_gives_identical_bytes(result, saved, tmp_path):
    save_bundle(result=result, directory=tmp_path / "again")
    for name in (TABLE, MARKER, "metadata.json"):
        assert (tmp_path / "again" / name).read_bytes() == (saved / name).read_bytes(), name
    marker = json.loads((saved / MARKER).read_text())
    assert set(marker) == {"content_sha256", "files", "kind", "manifest_version", "sha256"}
    assert {TABLE, "metadata.json"} <= set(marker["files"])


def test_metadata_and_table_record_the_same_provenance(result, saved, tmp_path):
    metadata = json.loads((saved / "metadata.json").read_text())
    recorded = metadata["provenance"]
    assert read_arrow_provenance(saved / TABLE) == recorded
    settings = {k: v for k, v in metadata.items() if k not in {"versions", "provenance"}}
    assert recorded == product_provenance(config=settings, seed=7)
    given = {"commit": "given", "seed": "7"}
    save_bundle(result=result, directory=tmp_path / "given", provenance=given)
    assert read_arrow_provenance(tmp_path / "given" / TABLE) == given
    assert load_bundle(directory=tmp_path / "given").seed == 7


def test_marker_changes_when_the_content_changes(result, saved, tmp_path):
    columns = dict(result.columns, value=result.columns["value"] + 1)
    save_bundle(result=dataclasses.replace(result, columns=columns), directory=tmp_path / "changed")
    old = json.loads((saved / MARKER).read_text())
    new = json.loads((tmp_path / "changed" / MARKER).read_text())
    assert old["sha256"] != new["sha256"]
    assert old["files"][TABLE] != new["files"][TABLE]
    arrays = [n for n in old["files"] if n.startswith("arrays/columns.value/0")]
    assert arrays and all(old["files"][n] != new["files"][n] for n in arrays)


def test_loading_never_unpickles(saved, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("pickle used while loading")

    for module, name in [(pickle, "load"), (pickle, "loads"), (np, "load")]:
        monkeypatch.setattr(module, name, refuse)
    load_bundle(directory=saved)


def test_failure_mid_save_keeps_the_previous_bundle(result, bundle_copy, monkeypatch):
    before = {p: p.read_bytes() for p in bundle_copy.rglob("*") if p.is_file()}

    def broken_write(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pyarrow.feather, "write_feather", broken_write)
    changed = dataclasses.replace(result, seed=99)
    with pytest.raises(OSError, match="disk full"):
        save_bundle(result=changed, directory=bundle_copy)
    assert {p: p.read_bytes() for p in bundle_copy.rglob("*") if p.is_file()} == before
    beside = [p.name for p in bundle_copy.parent.iterdir() if p.name != ".bundle.lock"]
    assert beside == ["bundle"], "staging left over"
    assert not bundle_copy.is_symlink()
    assert load_bundle(directory=bundle_copy).seed == 7


def test_killed_save_leaves_no_new_bundle_and_keeps_the_old_one(bundle_copy):
    """SIGKILL while two saves stall after writing their arrays (one new, one overwriting)."""
    fresh, existing = bundle_copy.parent / "fresh", bundle_copy
    marker_before = (existing / MARKER).read_bytes()
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        import pyarrow.feather
        from project.persist import load_bundle, save_bundle

        result = load_bundle(directory=Path({str(existing)!r}))
        pending = [Path({str(existing)!r})]

        def stalled_write(frame, path, **kwargs):
            print("arrays written", flush=True)
            if pending:  # start the second save while the first one stalls
                save_bundle(result=result, directory=pending.pop())
            time.sleep(600)

        pyarrow.feather.write_feather = stalled_write
        save_bundle(result=result, directory=Path({str(fresh)!r}))
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "arrays written"
        assert process.stdout.readline().strip() == "arrays written"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    assert not fresh.exists()
    assert (existing / MARKER).read_bytes() == marker_before
    load_bundle(directory=existing)
    staging = [p for p in bundle_copy.parent.iterdir() if ".writing-" in p.name]
    assert len(staging) == 2, "both saves should have been inside their staging directories"
    assert not any((p / MARKER).exists() for p in staging)


def test_missing_bundle_raises_with_rebuild_hint(tmp_path):
    with pytest.raises(CheckpointError, match=r"does not exist.*pytask.*save_bundle"):
        load_bundle(directory=tmp_path / "nowhere")


def test_missing_marker_raises(bundle_copy):
    (bundle_copy / MARKER).unlink()
    with pytest.raises(CheckpointError, match=rf"has no {MARKER}.*interrupted.*pytask"):
        load_bundle(directory=bundle_copy)


def test_missing_metadata_raises(bundle_copy):
    (bundle_copy / "metadata.json").unlink()
    with pytest.raises(CheckpointError, match=r"metadata\.json is missing.*damaged.*pytask"):
        load_bundle(directory=bundle_copy)


def test_missing_arrays_raise(bundle_copy):
    shutil.rmtree(bundle_copy / "arrays")
    with pytest.raises(CheckpointError, match=r"arrays/.* is missing.*pytask"):
        load_bundle(directory=bundle_copy)


def test_garbage_arrays_raise(bundle_copy):
    for path in (bundle_copy / "arrays").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"arrays/.*does not match the digest.*pytask"):
        load_bundle(directory=bundle_copy)


@pytest.mark.parametrize(
    ("name", "match"),
    [("metadata.json", "does not match the digest"), (MARKER, "not valid JSON")],
)
def test_invalid_json_raises(bundle_copy, name, match):
    (bundle_copy / name).write_text('{"model": ')
    with pytest.raises(CheckpointError, match=rf"{name}.*{match}.*pytask"):
        load_bundle(directory=bundle_copy)


def test_arrays_that_do_not_match_the_marker_raise(bundle_copy):
    marker = json.loads((bundle_copy / MARKER).read_text())
    next(iter(marker["files"].values()))["sha256"] = "0" * 64
    (bundle_copy / MARKER).write_text(json.dumps(marker))
    with pytest.raises(CheckpointError, match=r"does not match its digest.*damaged"):
        load_bundle(directory=bundle_copy)


def test_loading_with_another_model_raises(saved):
    other = lifecycle.build_model(n_wealth=11, n_consumption=10, n_periods=3, start_age=60)
    with pytest.raises(CheckpointError, match="other states"):
        load_bundle(directory=saved, model=other)
    splayed = lifecycle.build_model(
        n_wealth=10, n_consumption=10, n_periods=3, start_age=60, wealth_batch_size=5
    )
    assert load_bundle(directory=saved, model=splayed).model is splayed


def test_additional_targets_opt_in_and_need_the_model(result, tmp_path):
    targets = ["labor_income", "utility"]
    save_bundle(result=result, directory=tmp_path / "bundle", additional_targets=targets)
    table = pd.read_feather(tmp_path / "bundle" / TABLE)
    assert list(table.columns[-2:]) == targets
    metadata = json.loads((tmp_path / "bundle" / "metadata.json").read_text())
    assert metadata["additional_targets"] == targets

    without_model = load_bundle(directory=tmp_path / "bundle")
    pd.testing.assert_frame_equal(without_model.to_dataframe(), result.to_dataframe())
    with pytest.raises(ModelSpecificationError, match="model="):
        without_model.to_dataframe(additional_targets=targets)
    with pytest.raises(ModelSpecificationError, match="model="):
        save_bundle(result=without_model, directory=tmp_path / "again", additional_targets=targets)
    assert not (tmp_path / "again").exists()

    with_model = load_bundle(directory=tmp_path / "bundle", model=result.model)
    pd.testing.assert_frame_equal(with_model.to_dataframe(additional_targets=targets), table)


# ---------------------------------------------------------------------------------------------
# A simulation started in a later period
# ---------------------------------------------------------------------------------------------


def test_a_simulation_from_a_later_period_round_trips(late_result, tmp_path):
    save_bundle(result=late_result, directory=tmp_path / "late", additional_targets=["utility"])
    metadata = json.loads((tmp_path / "late" / "metadata.json").read_text())
    assert metadata["start_period"] == 1
    assert metadata["ages"] == [60.0, 61.0, 62.0]
    loaded = load_bundle(directory=tmp_path / "late")
    assert loaded.start_period == 1
    assert loaded.ages == late_result.ages
    for name, original in late_result.columns.items():
        assert original.shape == (40, 2)
        assert loaded.columns[name].tobytes() == original.tobytes(), name
    frame = loaded.to_dataframe()
    pd.testing.assert_frame_equal(frame, late_result.to_dataframe(), check_exact=True)
    assert frame["period"].tolist()[:2] == [1, 2]
    assert frame["age"].tolist()[:2] == [61.0, 62.0]
    table = pd.read_feather(tmp_path / "late" / TABLE)
    with_model = load_bundle(directory=tmp_path / "late", model=late_result.model)
    pd.testing.assert_frame_equal(with_model.to_dataframe(additional_targets=["utility"]), table)


def _rewrite_metadata(bundle, metadata):
    """Replace the metadata and sign it in the marker (a consistent, if unusual, bundle)."""
    (bundle / "metadata.json").write_text(json.dumps(metadata))
    write_marker(bundle, kind=bundle_module.KIND)


def test_bundle_without_start_period_loads_as_started_in_period_zero(result, bundle_copy):
    metadata = json.loads((bundle_copy / "metadata.json").read_text())
    del metadata["start_period"]
    _rewrite_metadata(bundle_copy, metadata)
    loaded = load_bundle(directory=bundle_copy)
    assert loaded.start_period == 0
    pd.testing.assert_frame_equal(loaded.to_dataframe(), result.to_dataframe())


@pytest.mark.parametrize(
    ("start_period", "match"),
    [
        (1, r"simulated arrays .* expected \(40, 2\) each"),
        (3, r"start_period 3 is not one of the periods 0\.\.2"),
        ("0", r"start_period '0' is not one of the periods"),
    ],
)
def test_a_wrong_start_period_in_the_metadata_raises(bundle_copy, start_period, match):
    metadata = json.loads((bundle_copy / "metadata.json").read_text())
    metadata["start_period"] = start_period
    _rewrite_metadata(bundle_copy, metadata)
    with pytest.raises(CheckpointError, match=match):
        load_bundle(directory=bundle_copy)
