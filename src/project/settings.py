"""The settings' types, each checked where it is made.

What a variant, a simulation, the data, the estimation, a robustness check and the replication
are made of. The pipeline's choices (the values) live in ``project.config``, the only place to
edit them; it re-exports these types, so ``from project.config import Variant`` keeps working.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from project.errors import ConfigurationError

SAFE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
"""A name that may become a folder under ``bld/``: letters, digits and underscores."""


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
