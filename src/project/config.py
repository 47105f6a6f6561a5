"""Paths, model variants and solve settings of the pipeline (the only place to edit them).

A variant is a shipped model with grid sizes and parameter overrides. Its full specification is
written to ``bld/<variant>/model.json``, which the solve task depends on: changing a variant
here reruns exactly that variant's chain.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from project.checkout import checkout_root
from project.errors import ConfigurationError

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


@dataclass(frozen=True)
class SimulationSettings:
    """How many subjects to simulate, from which initial distribution, with which seed."""

    n_subjects: int = 20_000
    seed: int = 20_261_122
    subject_batch_size: int = 10_000
    initial_distribution: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "pref_type": {"probabilities": [0.5, 0.5]},
            "regime": {"label": "working"},
            "income": {"label": "node_2"},
            "wealth": {"lognormal": [0.5, 0.6], "clip": [0.2, 20.0]},
        }
    )


@dataclass(frozen=True)
class Variant:
    """One model to solve: a shipped model, its grid sizes and its parameter overrides.

    ``sizes`` are the keyword arguments of the model's ``build_model``: for the life-cycle model
    ``n_savings`` (a savings grid, so that it solves by DC-EGM; without it, by grid search),
    ``taste_shocks`` (EV1 shocks on the retirement choice, whose ``taste_shock_scale`` defaults
    to ``project.models.DEFAULT_TASTE_SHOCK_SCALES``; ``params`` may override it) and, for
    ``lifecycle_regimes``, ``survival`` ("life_table": the SSA table's probabilities of the
    model's ages). Preferences are estimated once, on the status quo (``STATUS_QUO``), and
    every variant is solved at those estimates: ``params`` may change policy, never an
    estimated preference (``ESTIMATION.estimated``).

    ``processes`` > 1 solves the variant in that many processes (JAX multi-process), each
    holding its share of the blocks of the model's ``distributed`` states: the solve task
    launches them with ``srun`` inside a SLURM allocation, else as local processes
    (``project.launch``; ``$PROJECT_LAUNCHER`` chooses). It needs a model without regimes whose
    distributed states are solved by grid search (``pipeline.check_processes``).
    """

    name: str
    model: str = "lifecycle_regimes"
    sizes: dict[str, int | bool | str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    log_level: str = "progress"
    x64: bool = False
    simulation: SimulationSettings = field(default_factory=SimulationSettings)
    processes: int = 1

    def __post_init__(self) -> None:
        """Refuse names that are no safe identifiers (they become paths under ``bld/``)."""
        if not isinstance(self.name, str) or not SAFE_NAME.fullmatch(self.name):
            msg = (
                f"Variant name {self.name!r} is not a safe identifier: use letters, digits and "
                "underscores, starting with a letter (it names the folder bld/<name>)."
            )
            raise ConfigurationError(msg)
        if not isinstance(self.model, str) or not SAFE_NAME.fullmatch(self.model):
            msg = f"Variant {self.name!r}: model must name a shipped model, got {self.model!r}."
            raise ConfigurationError(msg)
        for part in ("sizes", "params"):
            value = getattr(self, part)
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                msg = f"Variant {self.name!r}: {part} must be a dict with str keys, got {value!r}."
                raise ConfigurationError(msg)
        if type(self.processes) is not int or self.processes < 1:
            msg = (
                f"Variant {self.name!r}: processes must be a whole number >= 1 (1 solves in the "
                f"task's own process), got {self.processes!r}."
            )
            raise ConfigurationError(msg)


SAFE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


SIZES: dict[str, int | bool | str] = (
    {"n_wealth": 100, "n_consumption": 100, "n_periods": 30, "n_savings": 200}
    if PROFILE == "default"
    else {"n_wealth": 12, "n_consumption": 12, "n_periods": 8, "start_age": 63, "n_savings": 30}
) | {"taste_shocks": True, "survival": "life_table"}
"""The life-cycle variants' sizes: solved by DC-EGM with EV1 taste shocks on retirement, and
survival probabilities from the SSA life table (households die; death is a regime)."""
GRID_SIZES = {name: size for name, size in SIZES.items() if name != "n_savings"}
"""``SIZES`` without the savings grid: the same model solved by grid search."""
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


@dataclass(frozen=True)
class DataSettings:
    """Which rows of the real data the pipeline prepares (``task_prepare_data``).

    ``education`` and ``year`` pick the SCF rows (``All`` pools education levels or waves; see
    data/README.md); ``female_share`` mixes male and female death probabilities of the life
    table; ``survival_ages`` are the first and last age of the survival table.
    """

    education: str = "All"
    year: str = "All"
    female_share: float = 0.5
    survival_ages: tuple[int, int] = (50, 100)


DATA = DataSettings()
"""The data preparation's choices: all education levels, all SCF waves pooled, half women."""


@dataclass(frozen=True)
class EstimationSettings:
    """How ``task_estimate`` estimates a variant's preferences from the SCF (MSM).

    Moments: mean log wealth-to-income of the SCF age groups ``(age_min, age_max]`` (ages
    age_min+1..age_max) in ``age_groups``; the model's last group (76-79) is left out because
    the model ends at 79, where everybody consumes what is left. ``n_subjects`` simulated
    subjects from the variant's initial distribution with ``seed`` (60,000: about 12 per SCF
    household of the largest age group, so that the simulation adds less than 10 % to each
    moment's sampling variance, n_data / n_simulated); the optimiser
    (``algorithm``, ``algo_options``) searches from ``start`` or, with ``n_starts`` > 1, as the
    local search of optimagic's TikTak multistart whose sample begins with ``start`` (at most
    ``n_starts`` local searches; ``project.estimation.variant``); derivatives are
    central differences with steps ``relative_step`` times the param (the simulated moments jump
    when a subject's discrete choice flips: steps must be well above those jumps; with 60,000
    subjects 0.1 % is, and the standard errors from steps of 0.3 % and 0.03 % are within 5 % of
    its; a step of 1 % was 16 standard errors of beta, where the moments curve), and again with
    each of ``alternative_steps`` for the summary (``std_errors_by_step``); ``x64``: in
    float64 (the smoke profile estimates in float32, reusing the programs its solve compiled).
    ``crra`` may fall below 1 (utility stays CRRA; exactly 1, log utility, is not a point the
    search can reach in practice, and a non-finite moment there would stop it with an
    ``EstimationError``).
    ``compiled``: evaluate the moments as one compiled program (``estimation/program.py``); it
    costs one compile of about 10 s cold and saves about half of every evaluation, so a search of
    a few evaluations (the smoke profile's) is quicker without it. ``smooth``: estimate on the
    smooth moments (expectations over the retirement choice, ``estimation/smooth.py``) with
    their exact Jacobian, for the optimiser and the standard errors; give a derivative-based
    ``algorithm`` with it (``scipy_ls_trf``). The default build keeps drawn moments and
    ``pounders``: on this 2-core CPU a smooth evaluation with its Jacobian costs about 15 times a
    drawn one, more than the fewer evaluations save (``benchmarks/estimation_speed.py --search``).
    ``algo_options``' ``stopping_maxiter``: each local search stops after 60 iterations (the
    first local search, from the start, converges in about 45; a search that reaches the bound
    crra = 8, where the objective has a second, higher minimum, can wander along it without
    converging, and then ends there as not converged: the searches table says so).
    ``weighting``: ``"efficient"`` weighs each moment by the inverse of its sampling variance
    including the simulation noise (the SCF age groups are disjoint samples, so the data
    moments are independent and this diagonal W is the efficient one, under which J is
    chi-square, up to the correlation of neighbouring ages' simulated moments, which share
    simulated households and which it leaves out); ``"data"`` by the data variance alone.
    """

    estimated: tuple[str, ...] = ("crra", "beta")
    start: dict[str, float] = field(default_factory=lambda: {"crra": 3.0, "beta": 0.95})
    bounds: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"crra": (0.3, 8.0), "beta": (0.8, 1.05)}
    )
    age_groups: tuple[tuple[int, int], ...] = ((50, 55), (55, 60), (60, 65), (65, 70), (70, 75))
    n_subjects: int = 60_000
    seed: int = 20_261_124
    algorithm: str = "pounders"
    algo_options: dict[str, Any] = field(
        default_factory=lambda: {"trustregion_initial_radius": 0.05, "stopping_maxiter": 60}
    )
    n_starts: int = 2
    relative_step: float = 1e-3
    alternative_steps: tuple[float, ...] = (1e-2,)
    x64: bool = True
    compiled: bool = True
    smooth: bool = False
    weighting: str = "efficient"


ESTIMATION = (
    EstimationSettings()
    if PROFILE == "default"
    else EstimationSettings(
        estimated=("beta",),
        start={"beta": 0.95},
        bounds={"beta": (0.8, 1.05)},
        age_groups=((60, 65), (65, 70)),
        n_subjects=400,
        n_starts=1,
        algo_options={"trustregion_initial_radius": 0.05, "stopping_maxiter": 4},
        relative_step=1e-2,
        alternative_steps=(),
        x64=False,
        compiled=False,
    )
)
"""The estimation's choices (``project.estimation.variant``). The smoke model covers ages 63-70
only, where risk aversion barely moves wealth: the smoke build estimates the discount factor."""


EXTENDED = "from_25"
"""The name (``bld/from_25/``, the tables' row label) of the model from age 25's estimation."""


@dataclass(frozen=True)
class ExtendedSettings:
    """How ``task_estimate_extended`` estimates the model from age 25 (``lifecycle_normalised``).

    crra and beta are estimated from the SCF's mean log wealth-to-permanent-income of the
    working life (``estimation``: the fields of the status quo's estimation), with the claim
    deterministic (no taste shocks) and ``n_savings`` savings points; ``work_cost`` is
    calibrated so that the share claiming at 62 meets ``lifecycle_normalised.CLAIMING_FACT``
    (``project.estimation.extended``: rounds of one local search from the last estimate and a
    calibration of the cost from ``calibration_start`` within ``calibration_bounds`` to
    ``calibration_tolerance``, then the multistart at the settled cost). The simulated
    25-year-olds' cash on hand is lognormal around 1.35 (``initial_distribution``): a year's
    permanent income plus the SCF's geometric mean net worth of ages 21-25, e^-1.00 = 0.37 of
    it. It simulates 5,000 households, not the status quo's 60,000: its calibration solves and
    simulates the model many times besides the search, so the simulation noise it adds to a
    moment is about as large as the data's (the paper says so); with so few households its
    derivatives keep steps of 1 %.
    """

    n_savings: int = 150
    estimation: EstimationSettings = field(
        default_factory=lambda: EstimationSettings(
            start={"crra": 2.0, "beta": 0.95},
            bounds={"crra": (1.02, 10.0), "beta": (0.8, 1.05)},
            age_groups=((25, 30), (30, 35), (35, 40), (40, 45), (45, 50), (50, 55), (55, 60)),
            n_subjects=5_000,
            relative_step=1e-2,
            alternative_steps=(),
        )
    )
    initial_distribution: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "regime": {"label": "working"},
            "wealth": {"lognormal": [0.3, 0.4], "clip": [0.5, 10.0]},
        }
    )
    calibration_start: float = 0.6
    calibration_bounds: tuple[float, float] = (0.3, 0.8)
    calibration_tolerance: float = 1e-3
    max_rounds: int = 8


EXTENDED_MODEL = (
    ExtendedSettings()
    if PROFILE == "default"
    else ExtendedSettings(
        n_savings=30,
        estimation=EstimationSettings(
            start={"crra": 2.0, "beta": 0.95},
            bounds={"crra": (1.02, 10.0), "beta": (0.8, 1.05)},
            age_groups=((40, 45), (50, 55), (55, 60)),
            n_subjects=300,
            relative_step=1e-2,
            alternative_steps=(),
            n_starts=1,
            algo_options={"trustregion_initial_radius": 0.05, "stopping_maxiter": 3},
            compiled=False,
        ),
        calibration_tolerance=0.02,
        max_rounds=3,
    )
)
"""The model from age 25's estimation; the smoke profile's is tiny (no estimate to read)."""


@dataclass(frozen=True)
class RobustnessCheck:
    """A re-estimation of the status quo's preferences with one assumption changed.

    ``params``: calibrated params of the status quo set to other values (never an estimated
    one, and each keeps its shape); ``age_groups``: other SCF age groups for the moments
    (``None`` keeps ``ESTIMATION.age_groups``). Each check is estimated like the status quo
    but by one local search from the status quo's estimates (``project.estimation.robustness``),
    and reported beside them (``project.analysis.robustness``); nothing else uses its estimates.
    ``description`` says what changed, as the paper's table prints it.
    """

    name: str
    description: str
    params: dict[str, Any] = field(default_factory=dict)
    age_groups: tuple[tuple[int, int], ...] | None = None

    def __post_init__(self) -> None:
        """Refuse an unsafe name, an empty description and malformed params or age groups."""
        where = f"Robustness check {self.name!r}"
        if not isinstance(self.name, str) or not SAFE_NAME.fullmatch(self.name):
            msg = (
                f"{where}: the name is not a safe identifier: use letters, digits and "
                "underscores, starting with a letter (it names the folder bld/robustness/<name>)."
            )
            raise ConfigurationError(msg)
        if not isinstance(self.description, str) or not self.description.strip():
            msg = f"{where}: give a description of what it changes (the table prints it)."
            raise ConfigurationError(msg)
        if not isinstance(self.params, dict) or not all(isinstance(k, str) for k in self.params):
            msg = f"{where}: params must be a dict with str keys, got {self.params!r}."
            raise ConfigurationError(msg)
        if not self.params and self.age_groups is None:
            msg = f"{where} changes nothing: give params or age_groups."
            raise ConfigurationError(msg)
        groups = self.age_groups or ()
        if not all(
            isinstance(g, tuple | list)
            and len(g) == 2
            and all(type(a) is int for a in g)
            and g[0] < g[1]
            for g in groups
        ):
            msg = (
                f"{where}: age_groups must be pairs of whole ages (age_min, age_max) with "
                f"age_min < age_max, got {self.age_groups!r}."
            )
            raise ConfigurationError(msg)


def same_stationary_sd(*, rho: float, base_rho: float, base_sigma: float) -> float:
    """Return the innovation s.d. that gives an AR(1) with ``rho`` the base's stationary s.d."""
    return base_sigma * math.sqrt((1 - rho**2) / (1 - base_rho**2))


PERSISTENT_INCOME_RHO = 0.95
"""The robustness check's income persistence; the baseline's is 0.9 with innovation s.d. 0.1
(``project.models.lifecycle.DEFAULT_PARAMS``), whose stationary s.d. the check keeps."""

ROBUSTNESS: tuple[RobustnessCheck, ...] = (
    (
        RobustnessCheck(
            name="persistent_income",
            description=(
                f"Income persistence {PERSISTENT_INCOME_RHO}, the same stationary variance"
            ),
            params={
                "income_rho": PERSISTENT_INCOME_RHO,
                "income_sigma": same_stationary_sd(
                    rho=PERSISTENT_INCOME_RHO, base_rho=0.9, base_sigma=0.1
                ),
            },
        ),
        RobustnessCheck(
            name="taste_shocks",
            description="Taste-shock scale 0.05",
            params={"taste_shock_scale": 0.05},
        ),
        RobustnessCheck(
            name="ages_to_70",
            description="Moments of ages 51\u201370 only",
            age_groups=((50, 55), (55, 60), (60, 65), (65, 70)),
        ),
    )
    if PROFILE == "default"
    else (
        RobustnessCheck(
            name="taste_shocks",
            description="Taste-shock scale 0.05",
            params={"taste_shock_scale": 0.05},
        ),
    )
)
"""The robustness checks of the estimates: a second earnings process (more persistent, with the
same stationary variance), a larger taste-shock scale and another age range (the oldest
group, where the model's missing bequest motive matters most, left out). The smoke profile
runs the taste-shock check alone."""


@dataclass(frozen=True)
class ReplicationSettings:
    """How ``task_estimate_replication`` replicates the published buffer-stock estimation.

    ``project.estimation.replication`` says what is as published and what is ours: the model
    (``project.models.buffer_stock``) on the ``calibration``'s profiles
    (``data/replication/profiles_<calibration>.csv``) and the published SCF extract
    (``data/replication/SCFdata.csv``); ``n_subjects`` simulated households whose initial assets
    are drawn with ``seed`` (the published 31,382; the simulation's shocks use ``seed + 1``);
    the published estimator (Nelder-Mead with ``nelder_mead_options`` from ``start``, the
    published start, and again on ``published_criterion_draws`` - 1 other sets of simulated
    draws from its estimate, to measure the simulation noise) and efficient MSM on the medians
    (``algorithm``, ``algo_options``, finite differences of ``relative_step`` times the param,
    and the standard errors again with each of ``alternative_steps``; the medians' variances
    from ``bootstrap_draws`` resamples of the households). ``bounds``
    keep crra away from 1 (log utility, where the model's closed forms divide by zero).
    """

    calibration: str = "hark2019"
    n_subjects: int = 10_000
    seed: int = 31_382
    n_savings: int = 150
    start: dict[str, float] = field(default_factory=lambda: {"beta": 0.99, "crra": 4.0})
    bounds: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"beta": (0.5, 1.2), "crra": (1.1, 15.0)}
    )
    nelder_mead_options: dict[str, Any] = field(
        default_factory=lambda: {"convergence_xtol_abs": 1e-4, "convergence_ftol_abs": 1e-4}
    )
    algorithm: str = "pounders"
    algo_options: dict[str, Any] = field(
        default_factory=lambda: {"trustregion_initial_radius": 0.05, "stopping_maxiter": 60}
    )
    relative_step: float = 1e-3
    alternative_steps: tuple[float, ...] = (1e-2,)
    bootstrap_draws: int = 500
    published_criterion_draws: int = 3
    profiles: bool = False


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
GRID_CHECK = "baseline_grid"
"""The variant that solves the baseline by grid search (the validation compares it)."""

VARIANTS: dict[str, Variant] = {
    variant.name: variant
    for variant in (
        Variant(name="baseline", sizes=SIZES, simulation=SIMULATION),
        # A counterfactual policy: the SCF households lived under the actual pension, so their
        # preferences are estimated once, on the status quo, and kept here.
        Variant(name="low_pension", sizes=SIZES, simulation=SIMULATION, params={"pension": 0.3}),
        # The baseline solved by grid search: a cross-check of DC-EGM, not an economic variant
        # (left out of the smoke profile, which must build in seconds).
        Variant(name="baseline_grid", sizes=GRID_SIZES, simulation=SIMULATION),
    )
    if PROFILE == "default" or variant.name != GRID_CHECK
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
