"""The walk of ``params`` through ``solve`` and ``simulate`` (``benchmarks/params_walk.py``).

A warm solve and a warm simulation of the pipeline's model (two regimes, DC-EGM; a coarse
savings grid here) enter each module at most twice with ``params`` or a value computed from it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def walk_module(monkeypatch):
    """Import ``benchmarks/params_walk.py`` (it imports ``_measure`` from its folder)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    names = ("_measure", "params_walk")
    yield importlib.import_module("params_walk")
    for name in names:  # the scripts are no package: leave no module of theirs behind
        sys.modules.pop(name, None)


def test_the_walk_counts_each_entry_of_a_module_with_params(walk_module, x64):
    from project.model.params import params_on_host
    from project.models import MODEL_BUILDERS, default_params_of

    model = MODEL_BUILDERS["lifecycle_normalised"](n_savings=20)
    params = default_params_of(name="lifecycle_normalised", model=model)

    def three_reads() -> None:
        for _ in range(3):
            params_on_host(model=model, params=params)

    counts = walk_module.Walk(params=params).run(three_reads)
    assert counts["params"]["model/params.py"] == 3
    other = {"unrelated": 1.0}
    assert walk_module.Walk(params=other).run(three_reads)["params"]["model/params.py"] == 0


@pytest.mark.slow
def test_warm_solve_and_simulate_enter_each_module_at_most_twice_with_params(walk_module, x64):
    sizes = {"n_savings": 30, "taste_shocks": False}
    found = walk_module.walks(sizes=sizes, n_subjects=50, first=False)
    assert set(found) == {"solve, warm", "simulate, warm"}
    for call, visits in found.items():
        assert visits["params"], call  # the walk saw the params at all
        assert max(visits["params"].values()) <= 2, (call, visits["params"].most_common(3))
        assert visits["every call"]["model/params.py"] >= 1, call
