"""Paths, model variants and solve settings of the pipeline (the only place to edit them).

The settings' types (``Variant``, ``EstimationSettings``, ...) are ``project.settings``'; this
module holds the values the pipeline runs with.

A variant is a shipped model with grid sizes and parameter overrides. Its full specification is
written to ``bld/<variant>/model.json``, which the solve task depends on: changing a variant
here reruns exactly that variant's chain.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from project.checkout import checkout_root
from project.errors import ConfigurationError
from project.settings import (
    SAFE_NAME,
    CalibrationTarget,
    DataSettings,
    EstimationSettings,
    ReplicationSettings,
    RobustnessCheck,
    SimulationSettings,
    Variant,
)

__all__ = [  # the settings' types, re-exported beside the values made of them
    "SAFE_NAME",
    "CalibrationTarget",
    "DataSettings",
    "EstimationSettings",
    "ReplicationSettings",
    "RobustnessCheck",
    "SimulationSettings",
    "Variant",
]

PROFILE = os.environ.get("PROJECT_PROFILE", "default")
"""``default``: the paper's sizes; ``smoke``: tiny grids and panels that build in seconds."""

if PROFILE not in {"default", "smoke"}:
    msg = (
        f"PROJECT_PROFILE must be 'default' or 'smoke', got {PROFILE!r}. Unset it for the "
        "paper's sizes or set PROJECT_PROFILE=smoke for a tiny build."
    )
    raise ConfigurationError(msg)

SRC = Path(__file__).parent.resolve()
ROOT = checkout_root()
BLD = ROOT / "bld" if PROFILE == "default" else ROOT / "bld" / PROFILE
"""The build root: ``bld/`` for the paper, ``bld/smoke/`` for the smoke profile, which keeps its
own pytask state there too (``project.task_hooks``), so the two never overwrite each other."""
PAPER = ROOT / "paper"
COMPILATION_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "project" / "jax"
)
"""JAX's persistent compilation cache for the build (set by tasks.py unless
``JAX_COMPILATION_CACHE_DIR`` is set): compiled programs are reused across processes and builds,
as uv reuses its downloads. Outside ``bld/``, so a clean build still profits; safe to delete."""


SIZES: dict[str, int | bool | str] = {
    "n_savings": 150 if PROFILE == "default" else 30,
    "taste_shocks": False,
}
"""The pipeline model's sizes: 150 savings points (HARK's nested exponential grid to 40 times
permanent income), solved by DC-EGM with the claim free of taste shocks."""
SIMULATION = (
    SimulationSettings()
    if PROFILE == "default"
    else SimulationSettings(n_subjects=400, subject_batch_size=400)
)

CALIBRATION: dict[str, Any] = {
    "targets": ROOT / "data" / ("targets.csv" if PROFILE == "default" else "targets_smoke.csv"),
    "settings": {
        "epochs": 1000 if PROFILE == "default" else 300,
        "learning_rate": 0.01,
        "seed": 0,
        "dropout": 0.0,
        "batch_size": None,
        "penalty": "entropy",
        "penalty_strength": 0.05,
        "lower_bound": 0.2,
        "upper_bound": 5.0,
        "min_ess_share": 0.5,
        "max_weight_ratio": 10.0,
        "on_goal_failure": "warn",
    },
}
"""The targets file (see data/README.md; each variant is fitted to its own rows, column
``variant``) and the reweighting settings (``project.calibration.CalibrationSettings``: an
entropy penalty toward equal weights, weights within 0.2-5 times the base, and the goals ESS >=
50 % and maximum weight <= 10 times the mean, whose misses are recorded as warnings)."""


DATA = DataSettings(education="HS")
"""The data preparation's choices: households whose head finished high school (the SCF table's
``HS`` rows), as the model's income profile and replacement rate are those of high-school
households (Cocco, Gomes and Maenhout 2005); all SCF waves pooled; half women."""


ESTIMATION = (
    EstimationSettings()
    if PROFILE == "default"
    else EstimationSettings(
        age_groups=((30, 35), (40, 45), (50, 55), (55, 60)),
        n_subjects=400,
        n_starts=1,
        algo_options={"trustregion_initial_radius": 0.05, "stopping_maxiter": 3},
        relative_step=1e-2,
        alternative_steps=(),
        calibration=CalibrationTarget(tolerance=0.02, max_rounds=3),
    )
)
"""The estimation's choices (``project.estimation.variant``, ``project.estimation.calibrated``).
The smoke profile estimates both from four age groups of 400 households, with a few steps of
each search: a check that the chain runs, not an estimate."""


ROBUSTNESS: tuple[RobustnessCheck, ...] = (
    (
        RobustnessCheck(
            name="hark2019_income",
            description="Income profile and shocks of the 2019 HARK example",
            profiles="hark2019",
        ),
        RobustnessCheck(
            name="no_bequest",
            description="No bequest motive",
            params={"bequest_weight": 0.0},
        ),
        RobustnessCheck(
            name="taste_shocks",
            description="Taste shocks on the claim, scale 0.1",
            sizes={"taste_shocks": True},
            params={"taste_shock_scale": 0.1},
        ),
        RobustnessCheck(
            name="ages_36_60",
            description="Moments of ages 36\u201360 only",
            age_groups=((35, 40), (40, 45), (45, 50), (50, 55), (55, 60)),
        ),
    )
    if PROFILE == "default"
    else (
        RobustnessCheck(
            name="no_bequest",
            description="No bequest motive",
            params={"bequest_weight": 0.0},
        ),
    )
)
"""The robustness checks of the estimates: a second earnings process (the income profile and
shock profiles of the 2019 HARK example instead of Cocco-Gomes-Maenhout with Sabelhaus-Song),
no bequest motive, taste shocks on the claim and another age range (the youngest groups,
whose wealth the initial conditions shape most, left out). The smoke profile runs the bequest
check alone."""


REPLICATION = (
    ReplicationSettings()
    if PROFILE == "default"
    else ReplicationSettings(
        n_subjects=500,
        n_savings=60,
        nelder_mead_options={"stopping_maxfun": 8},
        algo_options={"trustregion_initial_radius": 0.05, "stopping_maxiter": 3},
        bootstrap_draws=50,
        published_criterion_draws=2,
    )
)
"""The replication's choices; the smoke profile simulates 500 households and stops each search
after a few steps (its estimates are no replication, only a check that the chain runs)."""

VALIDATION_FACTORS: tuple[int, ...] = (2, 4) if PROFILE == "default" else (2,)
"""The grid-convergence check solves the baseline with its savings grid this many times finer
(``project.analysis.validation``)."""

DEFAULT_VARIANT = "baseline"
STATUS_QUO = DEFAULT_VARIANT
"""The variant whose preferences the pipeline estimates from the SCF (the policy the surveyed
households lived under); every variant, this one included, is then solved at the estimates."""
PAYABLE_SHARE = 0.79
"""The share of scheduled Social Security benefits payable once the OASI trust fund is depleted
(in 2033), as the 2024 Trustees Report projects under current law: the counterfactual pays it
(``benefit_scale`` of ``lifecycle_normalised``)."""

VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in (
        Variant(name="baseline", sizes=SIZES, simulation=SIMULATION, x64=True),
        # A counterfactual policy: the SCF households lived under the actual pension, so their
        # preferences are estimated once, on the status quo, and kept here.
        Variant(
            name="benefit_cut",
            sizes=SIZES,
            simulation=SIMULATION,
            x64=True,
            params={"benefit_scale": PAYABLE_SHARE},
        ),
    )
}

SLURM_CLUSTER: dict[str, Any] = {
    "cores": 4,
    "processes": 1,
    "memory": "16GiB",
    "walltime": "04:00:00",
    "job_extra_directives": [],
    "log_directory": str(BLD / "logs" / "slurm"),  # the jobs' output, not the working directory
}
"""Keyword arguments of ``dask_jobqueue.SLURMCluster`` for ``pytask --parallel-backend custom``."""
