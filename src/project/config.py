"""Paths, model variants and solve settings of the pipeline (the only place to edit them).

A variant is a shipped model with grid sizes and parameter overrides. Its full specification is
written to ``bld/<variant>/model.json``, which the solve task depends on: changing a variant
here reruns exactly that variant's chain.
"""

from __future__ import annotations

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

TRACING_GC_THRESHOLDS = (10_000, 10, 10)
"""Thresholds of Python's cyclic garbage collector (CPython 3.11; its default is (700, 10, 10))
for processes that trace many small JAX programs and hold little data: the test workers
(tests/conftest.py) and the smoke profile's build (``BUILD_GC_THRESHOLDS``). Tracing allocates
many container objects, so with the default a full collection, which walks every live object,
ran about 45 times in a test worker (31 of its 158 CPU-s) and 14 times in a smoke build (3.4 of
its 27 CPU-s; measured with ``gc.callbacks``). With these, collections run about 10 times less
often: a test worker's took 5 s, a smoke build's 0.8 s (it used 24 instead of 27 CPU-s).
Objects without cycles are freed at once as before; cycles are still collected, later."""

BUILD_GC_THRESHOLDS = TRACING_GC_THRESHOLDS if PROFILE == "smoke" else None
"""The garbage collector's thresholds of every build process (set by tasks.py; None: Python's
default). The default build keeps Python's: it holds large cyclic garbage (panels, estimation
results), and with ``TRACING_GC_THRESHOLDS`` its peak memory rose from 1.9 to 2.4 GB (and
with (700, 10, 100) to 2.3 GB) for no measurable gain in time (131-140 s either way)."""


@dataclass(frozen=True)
class SimulationSettings:
    """How many subjects to simulate, from which initial distribution, with which seed.

    The default distribution is the pipeline model's (``lifecycle_normalised``): every
    household starts at 25 working, with log-normal cash on hand whose median is 1.35 times
    permanent income (a year's income plus the SCF's geometric mean net worth of ages 21-25,
    e^-1.00 = 0.37 of it), log standard deviation 0.4, cut at 0.5 and 10.
    """

    n_subjects: int = 20_000
    seed: int = 20_261_122
    subject_batch_size: int = 10_000
    initial_distribution: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {
            "regime": {"label": "working"},
            "wealth": {"lognormal": [0.3, 0.4], "clip": [0.5, 10.0]},
        }
    )


@dataclass(frozen=True)
class Variant:
    """One model to solve: a shipped model, its grid sizes and its parameter overrides.

    ``sizes`` are the keyword arguments of the model's ``build_model``: for the pipeline's
    ``lifecycle_normalised`` ``n_savings`` (its savings grid; it solves by DC-EGM) and
    ``taste_shocks`` (EV1 shocks on the claim, whose ``taste_shock_scale`` defaults to
    ``project.models.DEFAULT_TASTE_SHOCK_SCALES``; ``params`` may override it); for the
    other life-cycle models also grid sizes, ages and ``survival``. Preferences are estimated
    once, on the status quo (``STATUS_QUO``), with the cost of working calibrated jointly, and
    every variant is solved at those values: ``params`` may change policy, never a preference
    (``ESTIMATION.estimated`` or the calibrated param).

    ``processes`` > 1 solves the variant in that many processes (JAX multi-process), each
    holding its share of the blocks of the model's ``distributed`` states: the solve task
    launches them with ``srun`` inside a SLURM allocation, else as local processes
    (``project.launch``; ``$PROJECT_LAUNCHER`` chooses). It needs a model without regimes whose
    distributed states are solved by grid search (``pipeline.check_processes``).
    """

    name: str
    model: str = "lifecycle_normalised"
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


DATA = DataSettings(education="HS")
"""The data preparation's choices: households whose head finished high school (the SCF table's
``HS`` rows), as the model's income profile and replacement rate are those of high-school
households (Cocco, Gomes and Maenhout 2005); all SCF waves pooled; half women."""


@dataclass(frozen=True)
class CalibrationTarget:
    """A param calibrated jointly with the estimate so that a simulated choice share meets a fact.

    ``param`` (a scalar param of the model, a preference: every variant keeps its calibrated
    value) is set so that, of the simulated subjects of ``regime`` alive at ``age - lag``, the
    share ``share`` chooses ``label`` of ``action`` (``lag``: the years between the choice and
    the age the fact is about); ``start`` is its first value, ``bounds`` bracket it,
    ``tolerance`` is how close the fixed point of estimation and calibration must settle, in at
    most ``max_rounds`` rounds (``project.estimation.calibrated``). The default: the cost of
    working of ``lifecycle_normalised``, so that 36 % of the workers alive at 61 decide to
    claim at 62 (``lifecycle_normalised.CLAIMING_FACT``: Munnell and Chen 2015, men, latest
    cohort; ``lifecycle_normalised.CLAIM_LAG``: the pension starts the year after the choice).
    """

    param: str = "work_cost"
    regime: str = "working"
    action: str = "claim"
    label: str = "claim"
    age: int = 62
    lag: int = 1
    share: float = 0.36
    start: float = 0.6
    bounds: tuple[float, float] = (0.3, 0.8)
    tolerance: float = 1e-3
    max_rounds: int = 8


@dataclass(frozen=True)
class EstimationSettings:
    """How ``task_estimate`` estimates the status quo's preferences from the SCF (MSM).

    Moments: the SCF's mean log(net worth / permanent income) of the age groups
    ``(age_min, age_max]`` (ages age_min+1..age_max) in ``age_groups``, the working life
    before the earliest claim; the model's moment is the mean log of its own
    ``wealth_to_income`` (the assets kept at the year's end over permanent income) over the
    living simulated subject-years where it is positive. ``n_subjects`` simulated subjects
    from the status quo's initial distribution with ``seed`` (60,000: the simulation adds less
    than 10 % to each moment's sampling variance, n_data / n_simulated); ``calibration``: a
    param calibrated jointly to a fact (``CalibrationTarget``), by rounds of one local search
    and a calibration, then the full estimation at the settled value. The optimiser
    (``algorithm``, ``algo_options``) searches from ``start`` or, with ``n_starts`` > 1, as the
    local search of optimagic's TikTak multistart whose sample begins with ``start`` (at most
    ``n_starts`` local searches; ``project.estimation.variant``); derivatives are central
    differences with steps ``relative_step`` times the param, and again with each of
    ``alternative_steps`` for the summary (``std_errors_by_step``); ``x64``: in float64.
    ``bounds`` keep crra above 1.02: close to log utility (crra = 1) the solver's value
    function, stored as its consumption equivalent, overflows.
    ``compiled``: evaluate the moments as one compiled program (``estimation/program.py``); it
    costs one compile of about 5 s and saves most of every evaluation. ``smooth``: estimate on
    the smooth moments (expectations over a taste-shocked discrete choice,
    ``estimation/smooth.py``) with their exact Jacobian; the pipeline's model has no taste
    shocks, so it keeps drawn moments and ``pounders``. ``algo_options``'
    ``stopping_maxiter``: each local search stops after 60 iterations.
    ``weighting``: ``"efficient"`` weighs each moment by the inverse of its sampling variance
    including the simulation noise (the SCF age groups are disjoint samples, so the data
    moments are independent and this diagonal W is the efficient one, under which J is
    chi-square, up to the correlation of the age groups' simulated moments, which share
    simulated households and which it leaves out); ``"data"`` by the data variance alone.
    """

    estimated: tuple[str, ...] = ("crra", "beta")
    start: dict[str, float] = field(default_factory=lambda: {"crra": 2.0, "beta": 0.95})
    bounds: dict[str, tuple[float, float]] = field(
        default_factory=lambda: {"crra": (1.02, 10.0), "beta": (0.8, 1.05)}
    )
    age_groups: tuple[tuple[int, int], ...] = (
        (25, 30),
        (30, 35),
        (35, 40),
        (40, 45),
        (45, 50),
        (50, 55),
        (55, 60),
    )
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
    calibration: CalibrationTarget | None = field(default_factory=CalibrationTarget)


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


@dataclass(frozen=True)
class RobustnessCheck:
    """A re-estimation of the status quo's preferences with one assumption changed.

    ``params``: calibrated params of the status quo set to other values (never an estimated
    or jointly calibrated one, and each keeps its shape); ``profiles``: the income profiles of
    another calibration (``data/replication/profiles_<profiles>.csv``, in place of the status
    quo's); ``sizes``: model sizes changed (e.g. ``{"taste_shocks": True}``); ``age_groups``:
    other SCF age groups for the moments (``None`` keeps ``ESTIMATION.age_groups``). Each
    check is estimated like the status quo, the cost of working calibrated again, but each
    round by one local search from the status quo's estimates
    (``project.estimation.robustness``), and reported beside them
    (``project.analysis.robustness``); nothing else uses its estimates. ``description`` says
    what changed, as the paper's table prints it.
    """

    name: str
    description: str
    params: dict[str, Any] = field(default_factory=dict)
    age_groups: tuple[tuple[int, int], ...] | None = None
    profiles: str | None = None
    sizes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Refuse an unsafe name, an empty description and malformed changes."""
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
        for part in ("params", "sizes"):
            value = getattr(self, part)
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                msg = f"{where}: {part} must be a dict with str keys, got {value!r}."
                raise ConfigurationError(msg)
        if self.profiles is not None and not (
            isinstance(self.profiles, str) and SAFE_NAME.fullmatch(self.profiles)
        ):
            msg = f"{where}: profiles must name a vendored calibration, got {self.profiles!r}."
            raise ConfigurationError(msg)
        if not (self.params or self.sizes or self.profiles) and self.age_groups is None:
            msg = f"{where} changes nothing: give params, sizes, profiles or age_groups."
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
