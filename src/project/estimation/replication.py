"""The replication: the published buffer-stock estimation of SolvingMicroDSOPs, estimated again.

Contract: ``estimate_replication(profiles=..., households=..., settings=...)`` estimates
relative risk aversion (``crra``) and the scale of the discount factors (``beta``, which
multiplies the age profile) of ``project.models.buffer_stock`` on the published estimation's
own data and calibration (``data/replication/``: ``SCFdata.csv`` and
``profiles_hark2019.csv``, the estimation as HARK distributed it in 2019) and returns an
``EstimationOutcome`` (saved like the status quo's, ``save_estimation``) whose ``searches``
hold both estimators:

- ``PUBLISHED_CRITERION``: the published estimator: the sum over the SCF households of their
  weight times the distance of their ratio from the simulated median of their age group,
  minimised by Nelder-Mead from (beta, crra) = (0.99, 4.0); it has no standard errors of its
  own (the published ones come from 50 bootstrap re-estimations, which a build cannot afford);
- ``MSM``: efficient MSM on the seven weighted medians of the data, weighted by the inverse of
  their sampling variances (``bootstrap_median_variances``) corrected for the simulation
  noise, with standard errors and the J-test; this is the outcome's ``result``.

As published: the model, the profiles, the 10,000 simulated households, their initial assets
(0.17, 0.5 or 0.83 times permanent income, equally likely) and cash on hand at 25 (HARK's
newborns: a permanent shock, no transitory one), the seed 31382 of the initial assets, the age
groups 26-30 ... 56-60 and the simulated wealth, bank balances R a_{x-1} / (G psi_x) (its
``bNrm``; ``ReplicationMoments`` says how). Ours: the random draws (numpy's, not HARK's; the
published criterion is estimated again on ``published_criterion_draws`` - 1 other sets of draws
to show the simulation noise); the optimiser's bounds (optimagic's bounded Nelder-Mead, where
the published code returns a penalty outside its bounds); the solution on 150 savings points
where the published one used 8 with cubic interpolation. The simulated households live on (the
published simulation replaces those who die; nobody dies before 65 in this calibration).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.data.replication import (
    AGE_GROUPS,
    bootstrap_median_variances,
    read_profiles,
    read_wealth_ratios,
    weighted_medians,
)
from project.estimation.errors import EstimationError
from project.estimation.inference import step_standard_errors
from project.estimation.msm import estimate_msm
from project.estimation.products import save_estimation
from project.estimation.profiles import criterion_profiles
from project.estimation.result import MSMResult
from project.estimation.variant import EstimationOutcome, search_record, visible_warnings
from project.models import buffer_stock
from project.points import precision
from project.simulation.program import PanelProgram

logger = logging.getLogger("project.estimation")

NAME = "replication"
PUBLISHED_CRITERION, MSM = "published criterion", "efficient MSM"
PUBLISHED = {"beta": 1.004880962644363, "crra": 4.8605098948425285}
"""The published estimate of this set-up: ``Tables/estimate_results.csv`` of econ-ark/HARK at
66d1ecd9 (``examples/SolvingMicroDSOPs``)."""
PUBLISHED_BOOTSTRAP = {
    "beta": {"estimate": 1.004447817349153, "std_error": 0.0012462479794297528},
    "crra": {"estimate": 4.911266725500253, "std_error": 0.0542902139818909},
}
"""The published run with standard errors (50 bootstrap re-estimations): ``Tables/
bootstrap_results.csv`` of econ-ark/SolvingMicroDSOPs at d2d6802 (2020-08-15, the same code). Its
estimate is not ``PUBLISHED``: the two files come from different runs."""
SOURCE = {
    "example_year": 2019,
    "waves": (1992, 2007),
    "published_grid_points": 8,
    "notes_2026": {"crra": 3.69, "beta": 0.88},
}
"""Facts of the published set-up the paper states: the year HARK distributed the example, the
SCF waves of its data (its Stata programs), its savings grid's points (``aXtraCount``, with
cubic interpolation) and the estimates the notes of 2026-03-11 report from a later calibration
and data (Table 11)."""
ESTIMATED = ("beta", "crra")
"""In the published order (its Nelder-Mead simplex is built in this order)."""
INITIAL_ASSETS = (0.17, 0.5, 0.83)


class ReplicationMoments:
    """The simulated moments: the median wealth-to-permanent-income ratio per age group.

    The ratio at age x is the published ``bNrm``, R a_{x-1} / (G_{x-1} psi_x). The panel does
    not record psi_x, which is independent of a_{x-1}: dividing by a draw of its own (fixed
    across evaluations) gives a ratio with the same distribution, and so the same medians up to
    simulation noise.
    """

    def __init__(
        self, *, profiles: pd.DataFrame, n_subjects: int, seed: int, n_savings: int
    ) -> None:
        self.model = buffer_stock.build_model(n_savings=n_savings)
        self.profiles = profiles
        # Everything but crra and beta comes from the profiles: computed once, not per call.
        self.calibrated = buffer_stock.model_params(profiles=profiles, crra=np.nan, beta=np.nan)
        self.seed = int(seed)
        self.initial = {"wealth": self.initial_wealth(n_subjects=n_subjects)}
        first = buffer_stock.FIRST_AGE
        # The ratio at age x reads the assets of age x - 1: each group, a slice of periods.
        self.rows = [slice(lo - first, hi - first) for lo, hi in AGE_GROUPS]
        self.moment_names = [f"{lo + 1}-{hi}" for lo, hi in AGE_GROUPS]
        n_periods = buffer_stock.LAST_AGE - first + 1
        draws = np.random.default_rng(self.seed + 2)
        self.permanent_bins = draws.integers(0, buffer_stock.N_NODES, size=(n_subjects, n_periods))
        self.denominators = self._denominators()
        # Solve and simulate in one program, up to the last period a moment reads.
        self.program = PanelProgram(
            model=self.model,
            initial_conditions=self.initial,
            seed=self.seed + 1,
            stop_period=max(rows.stop for rows in self.rows),
            record=("wealth", "consumption"),
        )

    def _denominators(self) -> list[np.ndarray]:
        """Return G_{x-1} psi_x of each group's periods by subjects (params that are not estimated).

        Computed once: the growth factors and the permanent shocks' nodes come from the
        profiles, and the shocks' bins are drawn once.
        """
        growth, nodes = self.calibrated["income_growth"], self.calibrated["permanent_nodes"]
        denominators = []
        for rows in self.rows:
            periods = np.arange(rows.start, rows.stop)
            psi = nodes[periods[:, None], self.permanent_bins[:, rows].T]
            denominators.append(growth[periods][:, None] * psi)
        return denominators

    def params(self, values: Mapping[str, float]) -> dict[str, Any]:
        """Return the model's params at ``values`` of crra and beta."""
        return self.calibrated | {"crra": float(values["crra"]), "beta": float(values["beta"])}

    def initial_wealth(self, *, n_subjects: int) -> np.ndarray:
        """Return cash on hand at 25 as the published simulation gives it to a newborn.

        R a0 / (G_0 psi) + 1: assets a0 drawn from ``INITIAL_ASSETS``, a permanent shock from
        the first year's distribution and the growth factor of the first year, a transitory
        shock of one (HARK's ``getShocks`` for newborns).
        """
        rng = np.random.default_rng(self.seed)
        base = self.calibrated
        assets = rng.choice(np.asarray(INITIAL_ASSETS), size=n_subjects)
        psi = rng.choice(base["permanent_nodes"][0], size=n_subjects)
        growth = base["income_growth"][0] * psi
        return base["interest_factor"] * assets / growth + 1.0

    def __call__(self, values: Mapping[str, float]) -> np.ndarray:
        """Return the medians at ``values``: solve by EGM, simulate, take the groups' medians.

        The solve and the simulation up to age 59 run as one compiled program
        (``PanelProgram``, the same panel as ``solve`` then ``simulate``); the medians are
        NaN where the solve failed (the estimation then names the params).
        """
        params = self.params(values)
        panel = self.program(params)
        if panel is None:
            return np.full(len(self.rows), np.nan)
        # Periods by subjects, as the program lays them out: a group's periods are a slice.
        wealth, consumption = panel["wealth"].T, panel["consumption"].T
        interest = params["interest_factor"]
        return np.asarray(
            [
                np.median(interest * (wealth[rows] - consumption[rows]) / denominator)
                for rows, denominator in zip(self.rows, self.denominators, strict=True)
            ]
        )


def absolute_deviations(*, households: pd.DataFrame, medians: np.ndarray) -> float:
    """Return the published criterion: sum of weight x |ratio - its group's simulated median|."""
    groups = households["age_group"].to_numpy().astype(int) - 1
    gaps = np.abs(households["wealth_income_ratio"].to_numpy() - np.asarray(medians)[groups])
    # Exactly rounded: a BLAS dot product's last bit depends on its thread count, which differs
    # between a serial build and a cluster worker (the products must be byte-identical).
    return math.fsum(gaps * households["weight"].to_numpy())


def estimate_replication(
    *, profiles: pd.DataFrame, households: pd.DataFrame, settings: Mapping[str, Any]
) -> EstimationOutcome:
    """Estimate crra and beta by both estimators (module docstring); float64 throughout."""
    with precision(x64=True):
        started = time.perf_counter()
        settings = dict(settings)
        simulator = ReplicationMoments(
            profiles=profiles,
            n_subjects=int(settings["n_subjects"]),
            seed=int(settings["seed"]),
            n_savings=int(settings["n_savings"]),
        )
        start = {name: float(settings["start"][name]) for name in ESTIMATED}
        bounds = {name: tuple(settings["bounds"][name]) for name in ESTIMATED}
        criterion = _published_criterion_searches(
            simulator=simulator,
            households=households,
            start=start,
            bounds=bounds,
            settings=settings,
        )
        result, msm_record = _efficient_msm(
            simulator=simulator,
            households=households,
            start=start,
            bounds=bounds,
            settings=settings,
        )
        outcome = EstimationOutcome(
            variant=NAME,
            result=result,
            settings=settings,
            seconds=time.perf_counter() - started,
            warnings=visible_warnings(result),
            searches={**criterion, MSM: msm_record},
            profiles=(
                criterion_profiles(simulate_moments=simulator, result=result)
                if settings.get("profiles", True)
                else {}
            ),
        )
        logger.info(
            "Estimated the replication in %.0f s: %s (published criterion: %s).",
            outcome.seconds,
            _shown(result.params),
            _shown(criterion[PUBLISHED_CRITERION]["params"]),
        )
        return outcome


def _efficient_msm(
    *,
    simulator: ReplicationMoments,
    households: pd.DataFrame,
    start: Mapping[str, float],
    bounds: Mapping[str, tuple[float, float]],
    settings: Mapping[str, Any],
) -> tuple[MSMResult, dict[str, Any]]:
    """Return MSM on the weighted medians and its search record (standard errors by step)."""
    variances = bootstrap_median_variances(
        households, n_draws=int(settings["bootstrap_draws"]), seed=int(settings["seed"])
    )
    result = estimate_msm(
        simulate_moments=simulator,
        data_moments=weighted_medians(households),
        data_variances=variances,
        n_data=households.groupby("age_group").size().to_numpy(),
        n_simulated=float(settings["n_subjects"]),
        start_params=start,
        bounds=bounds,
        moment_names=simulator.moment_names,
        algorithm=settings["algorithm"],
        algo_options=settings["algo_options"],
        relative_step=float(settings["relative_step"]),
        on_failure="warn",
        weighting="efficient",
    )
    record = search_record(result, kept=True) | {
        "std_errors_by_step": {
            str(step): step_standard_errors(simulate_moments=simulator, result=result, step=step)
            for step in settings["alternative_steps"]
        }
    }
    return result, record


def other_draws_name(draw: int) -> str:
    """Return the name of the published criterion's search on the simulation draws ``draw``."""
    return f"{PUBLISHED_CRITERION}, draws {draw}"


def _published_criterion_searches(
    *,
    simulator: ReplicationMoments,
    households: pd.DataFrame,
    start: Mapping[str, float],
    bounds: Mapping[str, tuple[float, float]],
    settings: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """Return the published estimator's searches: on the published draws, then on others.

    The first search starts at the published start; each search on other simulation draws
    (seeds ``seed + 100 k``) starts at the first one's estimate, so that their spread measures
    the simulation noise; those run side by side. The first also records the criterion at both
    published estimates.
    """
    options = settings["nelder_mead_options"]
    first = _published_estimator(
        simulator=simulator, households=households, start=start, bounds=bounds, options=options
    )
    first["at_published"] = {
        name: absolute_deviations(households=households, medians=simulator(point))
        for name, point in (
            ("estimate", PUBLISHED),
            ("bootstrap run", {p: v["estimate"] for p, v in PUBLISHED_BOOTSTRAP.items()}),
        )
    }

    def on_other_draws(draw: int) -> dict[str, Any]:
        other = ReplicationMoments(
            profiles=simulator.profiles,
            n_subjects=len(simulator.initial["wealth"]),
            seed=simulator.seed + 100 * (draw - 1),
            n_savings=int(settings["n_savings"]),
        )
        return _published_estimator(
            simulator=other,
            households=households,
            start=first["params"],
            bounds=bounds,
            options=options,
        )

    # The searches on other draws are independent: they run side by side, each in a thread
    # of its own (JAX runs their programs outside the GIL, and one program of this size keeps
    # less than two cores busy); each search is the same, in the same order, as alone.
    draws = range(2, int(settings["published_criterion_draws"]) + 1)
    with ThreadPoolExecutor(max_workers=max(1, min(len(draws), os.cpu_count() or 1))) as pool:
        others = list(pool.map(on_other_draws, draws))
    return {
        PUBLISHED_CRITERION: first,
        **{other_draws_name(d): found for d, found in zip(draws, others, strict=True)},
    }


def _published_estimator(
    *,
    simulator: ReplicationMoments,
    households: pd.DataFrame,
    start: Mapping[str, float],
    bounds: Mapping[str, tuple[float, float]],
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the published estimator's minimum: Nelder-Mead on the absolute deviations."""
    import optimagic as om  # noqa: PLC0415 (0.7 s to import: where it runs)

    evaluations = []

    def criterion(values: np.ndarray) -> float:
        point = dict(zip(ESTIMATED, map(float, values), strict=True))
        medians = simulator(point)
        if not np.all(np.isfinite(medians)):
            msg = (
                f"The replication's simulated medians are not finite at {point}: the solution "
                "failed there. Narrow REPLICATION.bounds in src/project/config.py."
            )
            raise EstimationError(msg)
        evaluations.append(1)
        return absolute_deviations(households=households, medians=medians)

    found = om.minimize(
        fun=criterion,
        params=np.asarray([start[name] for name in ESTIMATED]),
        algorithm="scipy_neldermead",
        bounds=om.Bounds(
            lower=np.asarray([bounds[n][0] for n in ESTIMATED]),
            upper=np.asarray([bounds[n][1] for n in ESTIMATED]),
        ),
        algo_options=dict(options),
    )
    params = {name: float(v) for name, v in zip(ESTIMATED, found.params, strict=True)}
    return {
        "objective": float(found.fun),
        "params": params,
        "kept": False,
        "converged": bool(found.success),
        "evaluations": len(evaluations),
        "moments": simulator(params).tolist(),
        "local_searches": [],
    }


def _shown(params: Mapping[str, float]) -> str:
    return ", ".join(f"{name} = {float(value):.4g}" for name, value in params.items())


def estimate_replication_into(
    *, settings: Mapping[str, Any], profiles_file: Path, households_file: Path, directory: Path
) -> Path:
    """Estimate the replication from the vendored files and publish it to ``directory``."""
    outcome = estimate_replication(
        profiles=read_profiles(profiles_file),
        households=read_wealth_ratios(households_file),
        settings=settings,
    )
    return save_estimation(outcome, directory=directory)
