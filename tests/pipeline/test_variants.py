"""The pipeline's variants: DC-EGM with taste shocks by default, the grid solve as a cross-check.

The baseline and baseline_grid (the same model without its savings grid, so solved by grid
search) are solved, saved, loaded and simulated through ``project.pipeline``. The grid solver
picks consumption on a grid with step ``dc`` (0.2 at the default sizes), so the two agree within
a step or two of it, not to rounding.
"""

import dataclasses
import json

import jax
import numpy as np
import pytest

from project import pipeline
from project.analysis.profiles import is_retired
from project.calibration.panel import living_rows
from project.config import DEFAULT_VARIANT, GRID_SIZES, PROFILE, VARIANTS, SimulationSettings
from project.dispatch import choose_method
from project.errors import ConfigurationError, ParamsError
from project.models import DEFAULT_TASTE_SHOCK_SCALES
from project.persist import save_bundle
from project.pipeline import (
    build_variant_model,
    load_variant_solution,
    simulate_variant,
    solution_method,
    solve_and_save,
    solve_variant,
    variant_precision,
    variant_specification,
)
from project.taste_shocks import TASTE_SHOCK_SCALE

GRID_VARIANT = "baseline_grid"
N_SUBJECTS = 4_000
MIN_WEALTH = 1.0
"""Below it, the grid solver's first consumption points (0.05, 0.25, ...) are too coarse."""


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_solve_with_taste_shocks_by_dcegm_unless_they_are_the_grid_check(name):
    variant = VARIANTS[name]
    specification = variant_specification(variant)
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    assert specification["sizes"]["taste_shocks"] is True
    grid = name == GRID_VARIANT
    assert ("n_savings" not in specification["sizes"]) is grid
    for regime in model.regimes.values():  # working and retired; each solves by one method
        expected_method = "grid" if grid else ("dcegm" if regime.discrete_actions else "egm")
        assert choose_method(regime, method=None) == expected_method
    expected = variant.params.get(TASTE_SHOCK_SCALE, DEFAULT_TASTE_SHOCK_SCALES[variant.model])
    assert specification["params"][TASTE_SHOCK_SCALE] == expected


def test_the_grid_check_is_the_baseline_without_its_savings_grid():
    baseline, grid = (
        variant_specification(VARIANTS[DEFAULT_VARIANT]),
        variant_specification(VARIANTS[GRID_VARIANT]),
    )
    assert grid["sizes"] == GRID_SIZES
    assert grid["sizes"] == {k: v for k, v in baseline["sizes"].items() if k != "n_savings"}
    assert grid["params"] == baseline["params"]
    assert VARIANTS[GRID_VARIANT].simulation == VARIANTS[DEFAULT_VARIANT].simulation


def test_a_variant_may_override_the_taste_shock_scale():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], params={TASTE_SHOCK_SCALE: 0.05})
    assert variant_specification(variant)["params"][TASTE_SHOCK_SCALE] == 0.05


def test_a_taste_shock_scale_without_taste_shocks_names_the_switch():
    sizes = {k: v for k, v in VARIANTS[DEFAULT_VARIANT].sizes.items() if k != "taste_shocks"}
    variant = dataclasses.replace(
        VARIANTS[DEFAULT_VARIANT], sizes=sizes, params={TASTE_SHOCK_SCALE: 0.05}
    )
    with pytest.raises(ParamsError, match="taste_shocks=True"):
        variant_specification(variant)


def test_an_unknown_param_is_refused_naming_the_known_ones():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], params={"pensoin": 0.3})
    with pytest.raises(ParamsError, match=r"unknown params \['pensoin'\].*'pension'"):
        variant_specification(variant)


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """Solve and simulate the baseline and its grid twin through the pipeline's functions."""
    if PROFILE != "default":
        pytest.skip("the cross-check needs the default profile's grids")
    settings = dataclasses.asdict(SimulationSettings(n_subjects=N_SUBJECTS))
    out = {}
    for variant in (VARIANTS[DEFAULT_VARIANT], VARIANTS[GRID_VARIANT]):
        root = tmp_path_factory.mktemp(variant.name)
        specification = variant_specification(variant)
        solve_variant(specification=specification, directory=root / "solution", sources=[])
        result = simulate_variant(
            specification=specification, settings=settings, solution_directory=root / "solution"
        )
        save_bundle(result=result, directory=root / "simulation")
        out[variant.name] = {
            "root": root,
            "solution": _load(specification, directory=root / "solution"),
            "panel": result.to_dataframe(),
        }
    return out[DEFAULT_VARIANT], out[GRID_VARIANT]


def _load(specification, *, directory):
    with variant_precision(specification):
        return load_variant_solution(specification=specification, directory=directory)


def test_a_solution_read_in_another_precision_is_refused_naming_the_context(tmp_path):
    specification = variant_specification(VARIANTS[DEFAULT_VARIANT])
    other = specification | {"x64": not jax.config.jax_enable_x64}
    with pytest.raises(ConfigurationError, match="variant_precision"):
        load_variant_solution(specification=other, directory=tmp_path)


def test_the_pipeline_computes_in_the_variant_precision_and_restores_the_process(
    monkeypatch, tmp_path
):
    specification = variant_specification(VARIANTS[DEFAULT_VARIANT])
    specification |= {"x64": not jax.config.jax_enable_x64}
    before = bool(jax.config.jax_enable_x64)
    seen = []

    def record(**_):
        seen.append(bool(jax.config.jax_enable_x64))

    for name in ("build_variant_model", "solve", "save_solution", "load_solution", "simulate"):
        monkeypatch.setattr(pipeline, name, record)
    monkeypatch.setattr(pipeline, "draw_initial_conditions", record)
    solve_and_save(specification=specification, directory=tmp_path, fingerprint="f")
    assert bool(jax.config.jax_enable_x64) == before
    simulate_variant(specification=specification, settings={}, solution_directory=tmp_path)
    assert bool(jax.config.jax_enable_x64) == before
    assert seen == [not before] * 7  # solve: model, solve, save; simulate: model, load, draw, run


def test_the_solution_and_the_bundle_record_the_method(solved):
    for entry, method in zip(solved, ("dcegm", "grid"), strict=True):
        assert entry["solution"].method == method
        assert solution_method(directory=entry["root"] / "solution") == method
        bundle = json.loads((entry["root"] / "simulation" / "metadata.json").read_text())
        assert bundle["method"] == method


def consumption_step(model):
    points = np.asarray(model.actions["consumption"].to_jax(), dtype=float)
    return float(points[1] - points[0])


@pytest.mark.parametrize("period", [0, 10, 18, 19, 25, 29])
def test_dcegm_and_grid_search_agree_on_the_baseline_within_the_consumption_step(solved, period):
    """Consumption within one grid step; V within two steps' worth of utility, 2·u'(c)·dc.

    The retirement choice may differ only at single wealth points next to a threshold.
    """
    (dcegm, grid) = (entry["solution"] for entry in solved)
    model = dcegm.model
    wealth = np.asarray(model.states["wealth"].to_jax(), dtype=float)  # shared by the regimes
    wealth = wealth[wealth >= MIN_WEALTH]
    step = consumption_step(grid.model)
    crra = float(dcegm.params["crra"])
    for pref_type in (0, 1):
        for regime in ("working", "retired"):
            states = {
                "pref_type": np.full(wealth.shape, pref_type),
                "income": np.full(wealth.shape, 2),
                "wealth": wealth,
            }
            if regime == "retired":
                del states["income"]
            ours, theirs = (
                dcegm.policy(period=period, regime=regime, states=states),
                grid.policy(period=period, regime=regime, states=states),
            )
            assert np.abs(ours["consumption"] - theirs["consumption"]).max() <= step
            gap = np.abs(
                dcegm.value(period=period, regime=regime, states=states)
                - grid.value(period=period, regime=regime, states=states)
            )
            assert (gap <= 2 * step * ours["consumption"] ** -crra).all()
            if regime == "working":
                assert (ours["retirement"] != theirs["retirement"]).sum() <= 1


def profiles(panel):
    """Return mean wealth, consumption and share retired of the living by age."""
    alive = living_rows(panel=panel)
    return (
        alive.assign(retired=is_retired(alive))
        .groupby("age")[["wealth", "consumption", "retired"]]
        .mean()
    )


def test_dcegm_and_grid_search_simulate_the_same_life_cycle(solved):
    """Same subjects, same draws: retirement shares within 3 points, means within grid steps."""
    (dcegm, grid) = (profiles(entry["panel"]) for entry in solved)
    step = consumption_step(solved[1]["solution"].model)
    assert (dcegm["retired"] - grid["retired"]).abs().max() <= 0.03
    assert (dcegm["consumption"] - grid["consumption"]).abs().max() <= step
    assert (dcegm["wealth"] - grid["wealth"]).abs().max() <= 2 * step


def test_dcegm_consumption_profiles_are_smooth_and_grid_ones_are_not(solved):
    """The second difference of mean consumption by age: DC-EGM's is far below grid search's."""
    (dcegm, grid) = (profiles(entry["panel"])["consumption"].to_numpy() for entry in solved)
    working_life = slice(1, 20)  # ages 51-69: after the first period, before the last ones
    curvature = {
        name: np.abs(np.diff(values[working_life], n=2)).max()
        for name, values in (("dcegm", dcegm), ("grid", grid))
    }
    assert curvature["dcegm"] < curvature["grid"] / 3, curvature


@pytest.mark.parametrize(
    "name", ["../escape", "/abs/path", "", "baseline variant", "1st", "a/b", ".hidden", None]
)
def test_unsafe_variant_names_are_refused(name):
    from project.config import Variant
    from project.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"not a safe identifier.*bld/<name>"):
        Variant(name=name)


def test_unknown_models_and_sizes_name_the_known_ones():
    from project.errors import ConfigurationError
    from project.pipeline import build_variant_model

    with pytest.raises(ConfigurationError, match=r"Unknown model 'lifecycel'.*'lifecycle'"):
        build_variant_model(model="lifecycel", sizes={})
    with pytest.raises(ConfigurationError, match=r"Unknown sizes \['n_walth'\].*'n_wealth'"):
        build_variant_model(model="lifecycle", sizes={"n_walth": 10})


def test_an_unknown_profile_is_refused_with_our_error():
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import project.config"],
        env=os.environ | {"PROJECT_PROFILE": "bogus"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "ConfigurationError: PROJECT_PROFILE must be 'default' or 'smoke', got 'bogus'" in (
        result.stderr
    )


def test_the_slurm_backend_fails_at_once_without_sbatch():
    """In a subprocess: importing tasks.py configures logging and registers backends."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = (
        "import shutil, sys; sys.path.insert(0, '.'); shutil.which = lambda name: None\n"
        "import tasks\n"
        "tasks.slurm_executor(2)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        env=os.environ | {"PROJECT_PROFILE": "smoke"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "ConfigurationError: --parallel-backend custom starts SLURM jobs" in result.stderr
    assert "`sbatch` is not on PATH" in result.stderr


def test_the_estimates_replace_the_calibrated_preferences_and_are_listed():
    estimates = {"crra": 3.25, "beta": 0.9625}
    for name in sorted(VARIANTS):
        calibrated = variant_specification(VARIANTS[name])
        specification = variant_specification(VARIANTS[name], estimates=estimates)
        assert calibrated["estimated"] == []
        assert specification["estimated"] == ["beta", "crra"]
        assert {k: specification["params"][k] for k in estimates} == estimates
        others = {k: v for k, v in specification["params"].items() if k not in estimates}
        assert others == {k: v for k, v in calibrated["params"].items() if k not in estimates}


def test_a_counterfactual_that_changes_an_estimated_preference_is_refused():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], name="impatient", params={"beta": 0.9})
    with pytest.raises(ConfigurationError, match=r"'impatient' sets \['beta'\].*never preferences"):
        variant_specification(variant, estimates={"beta": 0.97})
    assert variant_specification(variant)["params"]["beta"] == 0.9  # no estimates: allowed


def test_an_estimate_of_a_param_the_model_lacks_is_refused():
    with pytest.raises(ConfigurationError, match=r"name \['risk'\].*ESTIMATION.estimated"):
        variant_specification(VARIANTS[DEFAULT_VARIANT], estimates={"risk": 2.0})
