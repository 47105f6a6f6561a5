"""The pipeline's variants: the status quo and the benefit cut, at the same preferences.

Both solve ``lifecycle_normalised`` by DC-EGM (the claim without taste shocks) in float64, and
are saved, loaded and simulated through ``project.pipeline``. Oracles: the cut differs from the
status quo in the share of the schedule it pays alone; the two panels share every simulated
shock (deaths, and permanent income until a household claims in either variant); the bundle's
derived columns are the model's own statistic and the normaliser the simulation drew.
"""

import dataclasses
import json

import jax
import numpy as np
import pytest

from project import pipeline
from project.config import DEFAULT_VARIANT, PROFILE, VARIANTS, SimulationSettings
from project.dispatch import choose_method
from project.errors import ConfigurationError, ParamsError
from project.persist.bundle import load_table
from project.pipeline import (
    build_variant_model,
    load_variant_solution,
    save_variant_bundle,
    simulate_variant,
    solution_method,
    solve_and_save,
    solve_variant,
    variant_precision,
    variant_specification,
)
from project.taste_shocks import TASTE_SHOCK_SCALE

CUT = "benefit_cut"
N_SUBJECTS = 2_000


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variants_solve_the_normalised_model_by_dcegm_in_float64(name):
    specification = variant_specification(VARIANTS[name])
    model = build_variant_model(model=specification["model"], sizes=specification["sizes"])
    assert specification["model"] == "lifecycle_normalised" and specification["x64"] is True
    assert specification["sizes"]["taste_shocks"] is False
    assert TASTE_SHOCK_SCALE not in specification["params"]
    for regime, view in model.regimes.items():
        assert choose_method(view, method=None) == ("dcegm" if regime == "working" else "egm")


def test_the_cut_pays_a_share_of_the_schedule_and_changes_nothing_else():
    baseline, cut = (variant_specification(VARIANTS[v]) for v in (DEFAULT_VARIANT, CUT))
    changed = {k for k in baseline["params"] if baseline["params"][k] != cut["params"][k]}
    assert changed == {"benefit_scale"}
    assert baseline["params"]["benefit_scale"] == 1.0 and cut["params"]["benefit_scale"] == 0.79
    assert baseline["sizes"] == cut["sizes"]
    assert VARIANTS[CUT].simulation == VARIANTS[DEFAULT_VARIANT].simulation


def test_a_taste_shock_scale_without_taste_shocks_names_the_switch():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], params={TASTE_SHOCK_SCALE: 0.05})
    with pytest.raises(ParamsError, match="taste_shocks=True"):
        variant_specification(variant)


def test_a_variant_with_taste_shocks_gets_the_model_s_default_scale():
    sizes = VARIANTS[DEFAULT_VARIANT].sizes | {"taste_shocks": True}
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], sizes=sizes)
    assert variant_specification(variant)["params"][TASTE_SHOCK_SCALE] == 1e-3


def test_an_unknown_param_is_refused_naming_the_known_ones():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], params={"replacment": 0.3})
    with pytest.raises(ParamsError, match=r"unknown params \['replacment'\].*'replacement'"):
        variant_specification(variant)


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """Solve and simulate both variants through the pipeline's functions."""
    if PROFILE != "default":
        pytest.skip("the variants' comparison needs the default profile's grids")
    settings = dataclasses.asdict(SimulationSettings(n_subjects=N_SUBJECTS))
    estimates, calibrated = {"crra": 1.2, "beta": 0.95}, {"work_cost": 0.6}
    out = {}
    for name in (DEFAULT_VARIANT, CUT):
        root = tmp_path_factory.mktemp(name)
        specification = variant_specification(
            VARIANTS[name], estimates=estimates, calibrated=calibrated
        )
        solve_variant(specification=specification, directory=root / "solution", sources=[])
        result = simulate_variant(
            specification=specification, settings=settings, solution_directory=root / "solution"
        )
        save_variant_bundle(
            result=result, specification=specification, directory=root / "simulation"
        )
        out[name] = {
            "root": root,
            "specification": specification,
            "panel": load_table(root / "simulation"),
        }
    return out


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
    for entry in solved.values():
        assert solution_method(directory=entry["root"] / "solution") == "dcegm"
        bundle = json.loads((entry["root"] / "simulation" / "metadata.json").read_text())
        assert bundle["method"] == "dcegm"
        assert bundle["derived_columns"] == ["income_unit"]
        assert bundle["additional_targets"] == ["wealth_to_income"]


def test_the_bundle_holds_the_model_s_statistic_and_its_units(solved):
    panel = solved[DEFAULT_VARIANT]["panel"]
    living = panel["regime"].astype(str) != "dead"
    assets = (panel["wealth"] - panel["consumption"])[living]
    np.testing.assert_allclose(panel.loc[living, "wealth_to_income"], assets, rtol=1e-12)
    assert panel.loc[living, "income_unit"].gt(0).all()
    assert panel.loc[~living, "income_unit"].isna().all()
    assert (panel.loc[panel["period"] == 0, "income_unit"] == 1.0).all()


def test_the_variants_share_every_simulated_shock(solved):
    """Deaths depend on survival alone; permanent income on the shocks until the first claim."""
    base, cut = (solved[v]["panel"] for v in (DEFAULT_VARIANT, CUT))
    dead = [p["regime"].astype(str).eq("dead").to_numpy() for p in (base, cut)]
    np.testing.assert_array_equal(*dead)
    working = (base["regime"].astype(str) == "working") & (cut["regime"].astype(str) == "working")
    np.testing.assert_allclose(  # to rounding: each variant's program is compiled alone
        base.loc[working, "income_unit"].to_numpy(),
        cut.loc[working, "income_unit"].to_numpy(),
        rtol=1e-14,
    )


def test_the_cut_delays_claims_and_raises_saving_before_them(solved):
    base, cut = (solved[v]["panel"] for v in (DEFAULT_VARIANT, CUT))

    def claiming_age(panel):
        return panel.loc[panel["claim"].astype(str) == "claim", "age"].mean()

    def wealth_at(panel, age):
        rows = panel.loc[panel["age"] == age]
        return (rows["wealth"] * rows["income_unit"]).mean()

    assert claiming_age(cut) > claiming_age(base)
    assert wealth_at(cut, 61) > wealth_at(base, 61)


@pytest.mark.parametrize(
    "name", ["../escape", "/abs/path", "", "baseline variant", "1st", "a/b", ".hidden", None]
)
def test_unsafe_variant_names_are_refused(name):
    from project.config import Variant
    from project.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"not a safe identifier.*bld/<name>"):
        Variant(name=name)


def test_unknown_models_and_sizes_name_the_known_ones():
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


def test_the_estimates_and_the_calibrated_cost_replace_the_defaults_and_are_listed():
    estimates, calibrated = {"crra": 3.25, "beta": 0.9625}, {"work_cost": 0.55}
    for name in sorted(VARIANTS):
        before = variant_specification(VARIANTS[name])
        specification = variant_specification(
            VARIANTS[name], estimates=estimates, calibrated=calibrated
        )
        assert before["estimated"] == [] and before["calibrated"] == []
        assert specification["estimated"] == ["beta", "crra"]
        assert specification["calibrated"] == ["work_cost"]
        fixed = estimates | calibrated
        assert {k: specification["params"][k] for k in fixed} == fixed
        others = {k: v for k, v in specification["params"].items() if k not in fixed}
        assert others == {k: v for k, v in before["params"].items() if k not in fixed}


def test_a_counterfactual_that_changes_a_preference_is_refused():
    variant = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], name="impatient", params={"beta": 0.9})
    with pytest.raises(ConfigurationError, match=r"'impatient' sets \['beta'\].*never preferences"):
        variant_specification(variant, estimates={"beta": 0.97})
    assert variant_specification(variant)["params"]["beta"] == 0.9  # no estimates: allowed
    lazy = dataclasses.replace(VARIANTS[DEFAULT_VARIANT], name="lazy", params={"work_cost": 0.2})
    with pytest.raises(ConfigurationError, match=r"'lazy' sets \['work_cost'\]"):
        variant_specification(lazy, calibrated={"work_cost": 0.6})


def test_an_estimate_of_a_param_the_model_lacks_is_refused():
    with pytest.raises(ConfigurationError, match=r"name \['risk'\].*ESTIMATION.estimated"):
        variant_specification(VARIANTS[DEFAULT_VARIANT], estimates={"risk": 2.0})
