"""The peer benchmarks' check of the peer's own speed against a reference run (issue 29)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def benchmarks(monkeypatch):
    """Import the benchmark scripts' modules (they import ``_measure`` from their folder)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    names = ("_measure", "compare_dcegm", "compare_hark", "compare_pylcm")
    yield {name: importlib.import_module(name) for name in names}
    for name in names:  # the scripts are no package: leave no module of theirs behind
        sys.modules.pop(name, None)


def test_a_peer_off_its_reference_by_more_than_twice_is_flagged(benchmarks, tmp_path):
    measure = benchmarks["_measure"]
    references = tmp_path / "references.json"
    source = "a run on 2026-11-26"
    references.write_text(json.dumps({"peer": {"source": source, "seconds": {"a": 0.010}}}))

    def warnings(seconds: float) -> list[str]:
        return measure.peer_speed_warnings("peer", {"a": seconds}, references=references)

    assert warnings(0.019) == []
    assert warnings(0.0051) == []
    slow = warnings(0.021)
    assert len(slow) == 1
    assert "peer took 21 ms at a, 2.10 times its reference 10 ms" in slow[0]
    assert source in slow[0]
    assert "0.49 times its reference" in warnings(0.0049)[0]  # suspiciously fast, too
    unknown = measure.peer_speed_warnings("peer", {"b": 1.0}, references=references)
    assert unknown == []


def test_every_compared_size_has_a_reference(benchmarks):
    references = json.loads((BENCHMARKS / "peer_references.json").read_text())
    dcegm = {f"T={t}, {n} points" for t, n in benchmarks["compare_dcegm"].SIZES}
    pylcm = {
        benchmarks["compare_pylcm"].label(*size[:3]) for size in benchmarks["compare_pylcm"].SIZES
    }
    hark = {str(n) for n in benchmarks["compare_hark"].HARK_SIZES}
    for peer, labels in (("dcegm", dcegm), ("pylcm", pylcm), ("hark", hark)):
        assert set(references[peer]["seconds"]) == labels, peer
        assert references[peer]["source"]
