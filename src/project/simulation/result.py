"""The simulated panel: arrays per variable (subjects x periods) and the results table.

A simulation started in period ``start_period = k`` holds periods k..n_periods-1: column j of
every array is period k + j, and the table's period and age columns show the true periods.

``to_dataframe`` builds one row per subject and period on the host; additional targets (any
function of the model) are evaluated in chunks of rows, never all periods on the device at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from project._xla import jit
from project.deprecation import warn_deprecated
from project.egm.solution import EGMSolution
from project.errors import ModelSpecificationError
from project.model.names import CLOSED_FORM_INVERSES
from project.model.spec import Model
from project.points import float_dtype as working_float_dtype
from project.regimes.solution import RegimeSolution
from project.regimes.spec import RegimeModel
from project.solver.solution import Solution
from project.solver.sweep import compose

TARGET_CHUNK_ROWS = 262_144


@dataclass
class SimulationResult:
    """A simulated panel with what is needed to describe, save and reload it."""

    description: dict[str, Any]
    ages: tuple[float, ...]
    seed: int
    subject_batch_size: int
    columns: dict[str, np.ndarray]
    value_function: tuple[Any, ...] | dict[str, tuple[Any, ...]]
    params: dict[str, np.ndarray]
    model: Model | RegimeModel | None = field(default=None, repr=False)
    start_period: int = 0
    method: str = "grid"

    @classmethod
    def from_simulation(
        cls,
        *,
        model: Model | RegimeModel,
        params: dict[str, Any],
        solution: Solution | EGMSolution | RegimeSolution,
        columns: dict[str, np.ndarray],
        seed: int,
        subject_batch_size: int,
        start_period: int = 0,
    ) -> SimulationResult:
        """Assemble a result right after simulating."""
        return cls(
            description=model.describe(),
            ages=tuple(model.ages),
            seed=seed,
            subject_batch_size=subject_batch_size,
            columns=columns,
            value_function=solution.value_function,
            params={k: np.asarray(v) for k, v in params.items()},
            model=model,
            start_period=int(start_period),
            method=solution.method,
        )

    def save(self, *, directory: Path, additional_targets: list[str] | str | None = None) -> Path:
        """Save as a bundle (deprecated, removed in 0.3.0: use ``project.persist.save_bundle``)."""
        from project.persist.bundle import save_bundle  # noqa: PLC0415 (persist imports us)

        warn_deprecated(
            old="SimulationResult.save(directory=...)",
            new="project.persist.save_bundle(result=..., directory=...)",
            advice="Saving moved to project.persist (persistence imports the simulation).",
        )
        return save_bundle(result=self, directory=directory, additional_targets=additional_targets)

    @classmethod
    def load(cls, *, directory: Path, model: Model | None = None) -> SimulationResult:
        """Load a bundle (deprecated, removed in 0.3.0: use ``project.persist.load_bundle``)."""
        from project.persist.bundle import load_bundle  # noqa: PLC0415 (persist imports us)

        warn_deprecated(
            old="SimulationResult.load(directory=...)",
            new="project.persist.load_bundle(directory=..., model=...)",
            advice="Loading moved to project.persist (persistence imports the simulation).",
        )
        return load_bundle(directory=directory, model=model)

    @property
    def state_names(self) -> list[str]:
        """Return the state names in V's axis order."""
        return list(self.description["states"])

    @property
    def action_names(self) -> list[str]:
        """Return the action names."""
        return list(self.description["actions"])

    @property
    def regime_names(self) -> list[str] | None:
        """Return the regimes (labels of the ``regime`` column); None without regimes."""
        names = self.description.get("regime_names")
        return None if names is None else list(names)

    @property
    def n_subjects(self) -> int:
        """Return the number of simulated subjects."""
        return self.columns["value"].shape[0]

    @property
    def periods(self) -> range:
        """Return the simulated periods, one per column of the arrays."""
        return range(self.start_period, self.start_period + self.columns["value"].shape[1])

    def _labels(self, name: str) -> list[str] | None:
        grid = {**self.description["states"], **self.description["actions"]}[name]
        return grid.get("labels")

    def to_dataframe(
        self, additional_targets: list[str] | str | None = None, *, use_labels: bool = True
    ) -> pd.DataFrame:
        """Return one row per subject and period: ids, age, value, states, actions, targets.

        ``additional_targets``: None, a list of model function names, or "all". Discrete states
        and actions are categoricals with their labels (``use_labels=False``: int codes). With
        regimes a ``regime`` column follows ``age``; a state or action the row's regime lacks is
        missing (NA; code -1 with ``use_labels=False``).
        """
        n_subjects, n_periods = self.columns["value"].shape
        frame = {
            "subject_id": np.repeat(np.arange(n_subjects, dtype=np.int64), n_periods),
            "period": np.tile(np.asarray(self.periods, dtype=np.int64), n_subjects),
        }
        frame["age"] = np.asarray(self.ages, dtype=float)[frame["period"]]
        if self.regime_names is not None:
            codes = self.columns["regime"].ravel()
            frame["regime"] = (
                pd.Categorical.from_codes(codes, categories=self.regime_names)
                if use_labels
                else codes
            )
        frame["value"] = self.columns["value"].ravel()
        for name in [*self.state_names, *self.action_names]:
            values = self.columns[name].ravel()
            labels = self._labels(name)
            if labels is not None and use_labels:
                frame[name] = pd.Categorical.from_codes(values, categories=labels)
            else:
                frame[name] = values
        for target, values in self._targets(additional_targets).items():
            frame[target] = values
        return pd.DataFrame(frame)

    def _targets(self, additional_targets: list[str] | str | None) -> dict[str, np.ndarray]:
        if not additional_targets:
            return {}
        if self.model is None:
            msg = (
                "Additional targets need the model's functions: load the result with "
                "project.persist.load_bundle(directory=..., model=...)."
            )
            raise ModelSpecificationError(msg)
        model = self.model
        if isinstance(model, RegimeModel):
            return self._regime_targets(model, additional_targets)
        available = available_targets(model)
        targets = available if additional_targets == "all" else list(additional_targets)
        unknown = sorted(set(targets) - set(available))
        if unknown:
            msg = (
                f"Unknown or unavailable targets {unknown}; available are {available} "
                "(functions that do not depend on next-period outcomes)."
            )
            raise ModelSpecificationError(msg)
        shapes = target_shapes(model=model, params=self.params, targets=targets)
        non_scalar = sorted(t for t, shape in shapes.items() if shape != ())
        if additional_targets == "all":
            targets = [t for t in targets if t not in non_scalar]
        elif non_scalar:
            msg = f"Targets {non_scalar} are not one number per subject and period."
            raise ModelSpecificationError(msg)
        return evaluate_targets(
            model=model,
            params=self.params,
            targets=targets,
            columns=self.columns,
            ages=self.ages,
            start_period=self.start_period,
        )

    def _regime_targets(
        self, model: RegimeModel, additional_targets: list[str] | str
    ) -> dict[str, np.ndarray]:
        """Return targets evaluated on the rows of each regime that has them (NaN elsewhere)."""
        available = {r: available_targets(v) for r, v in model.regimes.items()}
        every = sorted(set().union(*available.values()))
        targets = every if additional_targets == "all" else list(additional_targets)
        unknown = sorted(set(targets) - set(every))
        if unknown:
            msg = (
                f"Unknown or unavailable targets {unknown}; available are {every} (functions of "
                "any regime that do not depend on next-period outcomes)."
            )
            raise ModelSpecificationError(msg)
        codes = self.columns["regime"].ravel()
        dtype = np.dtype(working_float_dtype())
        out = {t: np.full(codes.size, np.nan, dtype) for t in targets}
        for regime, view in model.regimes.items():
            mine = [t for t in targets if t in available[regime]]
            shapes = target_shapes(model=view, params=self.params, targets=mine)
            mine = [t for t in mine if shapes[t] == ()]
            if not mine:
                continue
            values = evaluate_targets(
                model=view,
                params=self.params,
                targets=mine,
                columns=self.columns,
                ages=self.ages,
                start_period=self.start_period,
            )
            here = codes == model.code(regime)
            for target, column in values.items():
                out[target][here] = column[here]
        return out


def available_targets(model: Model) -> list[str]:
    """Return the functions that do not depend on next-period outcomes.

    A closed-form inverse for EGM (``CLOSED_FORM_INVERSES``) is a function of EGM's own
    quantities (marginal utility, a utility level), not of a simulated row: never a target.
    """
    outcomes = {f"next_{s}" for s in model.stochastic_transitions}
    return [
        f
        for f in model.functions
        if f not in CLOSED_FORM_INVERSES and not model.ancestors(f) & outcomes
    ]


def _row_function(model: Model, targets: list[str]) -> Any:
    combined = compose(model, targets)

    def one(row: dict[str, jnp.ndarray], params: dict[str, jnp.ndarray]) -> dict:
        return combined({**params, **row})

    return one


def _example_row(model: Model) -> dict[str, jax.ShapeDtypeStruct]:
    float_dtype = working_float_dtype()
    row = {
        n: jax.ShapeDtypeStruct((), jnp.int32 if g.is_discrete else float_dtype)
        for n, g in (model.states | model.actions).items()
    }
    return row | {
        "period": jax.ShapeDtypeStruct((), jnp.int32),
        "age": jax.ShapeDtypeStruct((), float_dtype),
    }


def target_shapes(*, model: Model, params: dict[str, Any], targets: list[str]) -> dict:
    """Return the output shape of each target for one (subject, period) row."""
    device_params = {k: jnp.asarray(v) for k, v in params.items()}
    shapes = jax.eval_shape(_row_function(model, targets), _example_row(model), device_params)
    return {t: shapes[t].shape for t in targets}


def evaluate_targets(
    *,
    model: Model,
    params: dict[str, Any],
    targets: list[str],
    columns: dict[str, np.ndarray],
    ages: tuple[float, ...],
    start_period: int = 0,
) -> dict[str, np.ndarray]:
    """Evaluate model functions on every (subject, period) row, in chunks of rows.

    Column j of ``columns`` is period ``start_period + j``; ``ages`` holds every period's age.
    """
    float_dtype = working_float_dtype()
    device_params = {k: jnp.asarray(v, dtype=float_dtype) for k, v in params.items()}
    evaluate = jit(jax.vmap(_row_function(model, targets), in_axes=(0, None)))

    names = [*model.state_names, *model.action_names]
    n_rows = columns["value"].size
    n_subjects, n_periods = columns["value"].shape
    periods = np.tile(start_period + np.arange(n_periods), n_subjects)
    out = {t: np.empty(n_rows, dtype=np.dtype(float_dtype)) for t in targets}
    for start in range(0, n_rows, TARGET_CHUNK_ROWS):
        stop = min(start + TARGET_CHUNK_ROWS, n_rows)
        rows = {n: jnp.asarray(columns[n].ravel()[start:stop]) for n in names}
        rows["period"] = jnp.asarray(periods[start:stop], dtype=jnp.int32)
        rows["age"] = jnp.asarray(np.asarray(ages)[periods[start:stop]], dtype=float_dtype)
        for target, values in jax.device_get(evaluate(rows, device_params)).items():
            out[target][start:stop] = np.broadcast_to(
                np.asarray(values, dtype=out[target].dtype), (stop - start,)
            )
    return out
