"""What products record about how they were made: Arrow schemas, JSON, and model.json's rewrite."""

import json

import pandas as pd
import pyarrow.feather
import pytest

from project.data import prepare_data
from project.provenance import (
    PROVENANCE_KEY,
    config_digest,
    product_provenance,
    read_arrow_provenance,
    with_provenance,
    without_provenance,
    write_arrow,
)
from project.up_to_date import write_json_if_changed

KEYS = {"commit", "dirty", "build_date", "config_digest", "seed", "python", "versions"}


@pytest.fixture
def frame():
    """A frame with an ordered categorical, an unordered one and floats."""
    return pd.DataFrame(
        {
            "status": pd.Categorical(["retired", "working", "retired"], ["working", "retired"]),
            "level": pd.Categorical(["low", "high", "low"], ["low", "high"], ordered=True),
            "wealth": [1.0, 2.5, 3.0],
        }
    )


def test_the_provenance_is_strings_without_a_clock():
    provenance = product_provenance(config={"a": 1}, seed=7)
    assert set(provenance) == KEYS
    assert all(isinstance(v, str) for v in provenance.values())
    assert provenance["seed"] == "7"
    assert provenance["config_digest"] == config_digest({"a": 1})
    assert json.loads(provenance["versions"])["pyarrow"] == pyarrow.__version__
    assert product_provenance(config={"a": 1}, seed=7) == provenance
    assert product_provenance()["config_digest"] == product_provenance()["seed"] == "none"


def test_source_date_epoch_sets_the_build_date(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")
    assert product_provenance()["build_date"] == "1970-01-02T00:00:00Z"


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_arrow_files_keep_pandas_metadata_and_hold_the_provenance(frame, tmp_path, compression):
    provenance = product_provenance(config={"table": "test"})
    path = tmp_path / "table.arrow"
    write_arrow(frame=frame, path=path, provenance=provenance, compression=compression)
    read = pd.read_feather(path)
    pd.testing.assert_frame_equal(read, frame)
    assert read["status"].dtype == frame["status"].dtype  # categories and their order
    assert read["level"].cat.ordered
    assert read_arrow_provenance(path) == provenance
    metadata = pyarrow.feather.read_table(path).schema.metadata
    assert {b"pandas", PROVENANCE_KEY.encode()} <= set(metadata)
    again = tmp_path / "again.arrow"
    write_arrow(frame=frame, path=again, provenance=provenance, compression=compression)
    assert again.read_bytes() == path.read_bytes()


def test_a_plain_feather_file_has_no_provenance(frame, tmp_path):
    frame.to_feather(tmp_path / "plain.arrow")
    assert read_arrow_provenance(tmp_path / "plain.arrow") == {}


def test_recorded_entries_win_over_the_provenance():
    content = {"x": 1, PROVENANCE_KEY: {"fingerprint": "f", "commit": "mine"}}
    merged = with_provenance(content, {"commit": "c", "dirty": "false"})
    assert merged[PROVENANCE_KEY] == {"fingerprint": "f", "commit": "mine", "dirty": "false"}
    assert without_provenance(merged) == {"x": 1}
    assert with_provenance({"x": 1}, {"commit": "c"}) == {"x": 1, PROVENANCE_KEY: {"commit": "c"}}


def test_model_json_is_rewritten_only_when_its_content_changes(tmp_path):
    path = tmp_path / "model.json"
    content = {"name": "v", "params": {"beta": 0.96}, "sizes": (1, 2)}
    assert write_json_if_changed(content=content, path=path)
    written = json.loads(path.read_text())
    assert written[PROVENANCE_KEY] == product_provenance(config=json.loads(json.dumps(content)))
    assert without_provenance(written) == {"name": "v", "params": {"beta": 0.96}, "sizes": [1, 2]}
    before = path.read_bytes()
    other_commit = {**written[PROVENANCE_KEY], "commit": "another"}
    assert not write_json_if_changed(content=content, path=path, provenance=other_commit)
    assert not write_json_if_changed(content=written, path=path)  # read back and written again
    assert path.read_bytes() == before
    changed = {**content, "params": {"beta": 0.95}}
    assert write_json_if_changed(content=changed, path=path, provenance=other_commit)
    assert json.loads(path.read_text())[PROVENANCE_KEY]["commit"] == "another"


@pytest.mark.parametrize("old", ['{"name": "v"}\n', "{", "[]"])
def test_model_json_without_provenance_is_rewritten_once(tmp_path, old):
    path = tmp_path / "model.json"
    path.write_text(old)
    assert write_json_if_changed(content={"name": "v"}, path=path)
    assert PROVENANCE_KEY in json.loads(path.read_text())
    assert not write_json_if_changed(content={"name": "v"}, path=path)


def test_the_data_tables_record_the_data_settings(tmp_path):
    settings = {"education": "All", "year": "All", "female_share": 0.5, "survival_ages": [50, 60]}
    products = {
        "moments": tmp_path / "scf_moments.arrow",
        "moments_markdown": tmp_path / "scf_moments.md",
        "survival": tmp_path / "survival.arrow",
    }
    prepare_data(settings=settings, products=products)
    for key in ("moments", "survival"):
        recorded = read_arrow_provenance(products[key])
        assert recorded == product_provenance(config=settings)
        assert recorded["config_digest"] == config_digest(settings)
    other = {**settings, "female_share": 0.6}
    prepare_data(settings=other, products=products)
    assert read_arrow_provenance(products["survival"])["config_digest"] == config_digest(other)
