"""Saving and loading solutions: equality, atomicity, and errors on broken products."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import project.persist.solution as solution_module
from project import CheckpointError, solve
from project.models import precautionary
from project.persist import MARKER_NAME, atomic_directory, load_solution, save_solution
from project.persist.atomic import lock_path
from project.persist.manifest import write_marker
from project.provenance import product_provenance


def _published(directory):
    """Return the names beside a product: its link and its one generation, nothing else."""
    lock = lock_path(directory).name  # the publication lock stays (it is never removed)
    names = sorted(p.name for p in directory.parent.iterdir() if p.name != lock)
    assert len(names) == 2 and directory.is_symlink(), names
    assert names[0].startswith(f".{directory.name}.") and "writing" not in names[0], names
    return names


@pytest.fixture(scope="module")
def solved():
    model = precautionary.build_model(n_wealth=15, n_consumption=10, n_periods=3)
    return model, solve(model=model, params=precautionary.DEFAULT_PARAMS)


def test_save_then_load_restores_every_array(solved, tmp_path):
    model, solution = solved
    marker = save_solution(solution=solution, directory=tmp_path / "solution")
    assert marker == tmp_path / "solution" / MARKER_NAME
    assert marker.exists()
    loaded = load_solution(directory=tmp_path / "solution", model=model)
    for original, restored in zip(solution.value_function, loaded.value_function, strict=True):
        np.testing.assert_array_equal(np.asarray(original), np.asarray(restored))
        assert restored.dtype == original.dtype
    for original, restored in zip(solution.policy_indices, loaded.policy_indices, strict=True):
        assert original.keys() == restored.keys()
        for action in original:
            np.testing.assert_array_equal(
                np.asarray(original[action]), np.asarray(restored[action])
            )
    metadata = json.loads((tmp_path / "solution" / "metadata.json").read_text())
    assert metadata["model"]["name"] == "precautionary"
    assert metadata["params"]["beta"] == pytest.approx(0.95)
    assert "jax" in metadata["versions"]
    assert metadata["kernels"] == list(solution.kernels) == ["shift"] * model.n_periods
    assert loaded.kernels == solution.kernels


def test_failure_mid_save_keeps_the_previous_product(solved, tmp_path, monkeypatch):
    model, solution = solved
    directory = tmp_path / "solution"
    save_solution(solution=solution, directory=directory)
    before = sorted(p.relative_to(directory) for p in directory.rglob("*"))

    def broken_write(path, content):
        raise OSError("disk full")

    monkeypatch.setattr(solution_module, "_write_json", broken_write)
    with pytest.raises(OSError, match="disk full"):
        save_solution(solution=solution, directory=directory)
    assert sorted(p.relative_to(directory) for p in directory.rglob("*")) == before
    _published(directory)
    load_solution(directory=directory, model=model)


def test_killed_process_leaves_no_complete_looking_directory(tmp_path):
    """SIGKILL while the body of atomic_directory runs: the target never appears."""
    target = tmp_path / "product"
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from project.persist import atomic_directory
        from project.persist.manifest import write_marker
        marker = lambda staging: write_marker(staging, kind="test")
        with atomic_directory(Path({str(target)!r}), digest_of=marker) as staging:
            (staging / "half.bin").write_bytes(b"0" * 1000)
            print("writing", flush=True)
            time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "writing"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert not target.exists()
    assert not any(p.name == MARKER_NAME for p in tmp_path.rglob("*"))


def test_atomic_directory_replaces_an_existing_product(tmp_path):
    target = tmp_path / "product"

    def marker(staging):
        return write_marker(staging, kind="test")

    with atomic_directory(target, digest_of=marker) as staging:
        (staging / "a.txt").write_text("old")
    with atomic_directory(target, digest_of=marker) as staging:
        (staging / "b.txt").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == ["COMPLETE.json", "b.txt"]
    _published(target)


def test_missing_marker_raises_with_rebuild_hint(solved, tmp_path):
    model, solution = solved
    save_solution(solution=solution, directory=tmp_path / "solution")
    (tmp_path / "solution" / MARKER_NAME).unlink()
    with pytest.raises(CheckpointError, match=r"not a complete solution.*pytask"):
        load_solution(directory=tmp_path / "solution", model=model)


def test_missing_directory_raises(solved, tmp_path):
    model, _ = solved
    with pytest.raises(CheckpointError, match="not a complete solution"):
        load_solution(directory=tmp_path / "nowhere", model=model)


def test_corrupted_arrays_raise(solved, tmp_path):
    model, solution = solved
    save_solution(solution=solution, directory=tmp_path / "solution")
    for path in (tmp_path / "solution" / "arrays").rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"arrays/.*does not match the digest recorded"):
        load_solution(directory=tmp_path / "solution", model=model)


def test_loading_with_another_model_raises(solved, tmp_path):
    _, solution = solved
    save_solution(solution=solution, directory=tmp_path / "solution")
    other = precautionary.build_model(n_wealth=16, n_consumption=10, n_periods=3)
    with pytest.raises(CheckpointError, match="other state grids"):
        load_solution(directory=tmp_path / "solution", model=other)


def test_marker_bytes_change_exactly_when_the_arrays_change(solved, tmp_path):
    model, solution = solved
    save_solution(solution=solution, directory=tmp_path / "one")
    save_solution(solution=solution, directory=tmp_path / "two")
    marker_one = (tmp_path / "one" / MARKER_NAME).read_bytes()
    assert marker_one == (tmp_path / "two" / MARKER_NAME).read_bytes()
    assert (tmp_path / "one" / "metadata.json").read_bytes() == (
        tmp_path / "two" / "metadata.json"
    ).read_bytes()
    other = solve(model=model, params=dict(precautionary.DEFAULT_PARAMS, beta=0.9))
    save_solution(solution=other, directory=tmp_path / "three")
    assert (tmp_path / "three" / MARKER_NAME).read_bytes() != marker_one


def test_provenance_json_records_how_the_solution_was_made(solved, tmp_path):
    """Commit, config digest and versions, with the caller's fingerprint; not in the content."""
    _, solution = solved
    save_solution(solution=solution, directory=tmp_path / "a", provenance={"fingerprint": "f"})
    save_solution(solution=solution, directory=tmp_path / "b", provenance={"commit": "another"})
    recorded = solution_module.read_provenance(tmp_path / "a")
    metadata = json.loads((tmp_path / "a" / "metadata.json").read_text())
    settings = {k: v for k, v in metadata.items() if k != "versions"}
    assert recorded == {**product_provenance(config=settings), "fingerprint": "f"}
    assert solution_module.read_provenance(tmp_path / "b")["commit"] == "another"
    markers = [json.loads((tmp_path / d / MARKER_NAME).read_text()) for d in ("a", "b")]
    assert markers[0]["content_sha256"] == markers[1]["content_sha256"]
    assert markers[0]["sha256"] != markers[1]["sha256"]
