"""A model without regimes solved by (DC-)EGM and simulated, as one compiled program.

``PanelProgram(params)`` returns what ``solve`` then ``simulate`` would record of the chosen
states and actions over periods ``0 .. stop_period - 1``, bit for bit, but the solve (the scan
of ``egm/program.py``) and the simulation (a scan of the simulation's own EGM step,
``simulation/steps.py``) are traced together and compiled once per model, dtype and envelope
window: no per-period Python, no copy to the host but the recorded columns and the solve's
report. An estimation that evaluates its moments hundreds of times (the replication's) pays the
solve and the simulation of only the periods its moments read.

A failed solve (the report's ``FAILURE_COLUMNS``, or a non-monotone endogenous grid of plain
EGM) gives ``None`` instead of a panel: its numbers are never read. Where DC-EGM's upper
envelope met more runs than its window, the program is compiled again with a window that
covers them, as ``solve`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit, quick_compile_options
from project.egm.envelope import WINDOW
from project.egm.program import FAILURE_COLUMNS, REPORT_COLUMNS, program_function
from project.egm.solution import period_slice
from project.egm.solve import check_borrowing_limit
from project.egm.structure import egm_structure
from project.errors import InitialConditionsError
from project.model.params import pack_params, params_on_host, unpack_params
from project.model.spec import Model
from project.points import float_dtype
from project.simulation.initial import check_seed, validate_initial_conditions
from project.simulation.keys import draw_ahead_compiled
from project.simulation.steps import egm_step_function, step_streams


class PanelProgram:
    """``program(params)``: the ``record``ed columns (subjects x periods), or None if unsolved."""

    def __init__(
        self,
        *,
        model: Model,
        initial_conditions: Mapping[str, Any],
        seed: int,
        stop_period: int,
        record: Sequence[str],
    ) -> None:
        check_seed(seed)
        unknown = sorted(set(record) - set(model.states) - set(model.actions))
        if unknown or not record:
            msg = (
                f"PanelProgram of {model.name!r}: record must name states or actions of the "
                f"model, {sorted({*model.states, *model.actions})}; got {list(record)}."
            )
            raise InitialConditionsError(msg)
        if type(stop_period) is not int or not 1 <= stop_period <= model.n_periods:
            msg = (
                f"PanelProgram of {model.name!r}: stop_period must be a whole number of periods "
                f"in 1..{model.n_periods}, got {stop_period!r}."
            )
            raise InitialConditionsError(msg)
        self.model = model
        self.structure = egm_structure(model)
        self.initial = validate_initial_conditions(
            model=model, initial_conditions=initial_conditions, method=self.structure.method
        )
        self.seed = int(seed)
        self.stop_period = stop_period
        self.record = tuple(record)
        self.window = WINDOW
        self._programs: dict[tuple[int, str], Callable[..., Any]] = {}
        self._inputs: dict[str, tuple[Any, ...]] = {}

    def __call__(self, params: Mapping[str, Any]) -> dict[str, np.ndarray] | None:
        """Return the recorded columns at ``params`` (subjects x periods), None if unsolved."""
        host = params_on_host(model=self.model, params=params)
        inputs = (pack_params(host), *self._device_inputs(host))
        columns, report = self._program(self.window)(*inputs)
        table = np.asarray(report)
        runs = int(table[:, REPORT_COLUMNS.index("runs")].max())
        monotone = not table[:, REPORT_COLUMNS.index("non_monotone")].any()
        if self.structure.discrete_actions and not monotone:
            self.window = max(runs, 2 * self.window)
            columns, report = self._program(self.window)(*inputs)
            table = np.asarray(report)
            monotone = True
        failed = [REPORT_COLUMNS.index(name) for name in FAILURE_COLUMNS]
        if table[:, failed].any() or not monotone:
            return None
        return {name: np.asarray(values).T for name, values in columns.items()}

    def _device_inputs(self, host: Mapping[str, np.ndarray]) -> tuple[Any, ...]:
        """Return the savings grid, the initial states, the subject ids and their numbers.

        Made once per dtype and seed (the first time also checks the constraints' borrowing
        limit against the grid's start, as ``solve`` does): an estimation calls the program
        hundreds of times with the same subjects, so their uniform numbers of every simulated
        period are drawn ahead once (``keys.draw_ahead``), not hashed in every call.
        """
        dtype = float_dtype()
        key = f"{dtype} {self.seed}"
        if key not in self._inputs:
            savings = self.model.post_decision_grid.to_jax()
            check_borrowing_limit(self.model, params=host, savings=np.asarray(savings))
            states = {
                name: jnp.asarray(
                    values.astype(np.int32 if self.model.states[name].is_discrete else dtype)
                )
                for name, values in self.initial.items()
            }
            n_subjects = len(next(iter(self.initial.values())))
            ids = jnp.arange(n_subjects, dtype=jnp.int32)
            numbers = draw_ahead_compiled(
                seed=self.seed,
                subject_ids=ids,
                periods=jnp.arange(self.stop_period, dtype=jnp.int32),
                streams=step_streams(self.model),
            )
            self._inputs[key] = (savings, states, ids, numbers)
        return self._inputs[key]

    def _program(self, window: int) -> Callable[..., Any]:
        key = (window, float_dtype())
        if key not in self._programs:
            self._programs[key] = jit(
                self._traced(window), compiler_options=quick_compile_options()
            )
        return self._programs[key]

    def _traced(self, window: int) -> Callable[..., Any]:
        """Return the traceable ``(flat, savings, states, ids, drawn) -> (columns, report)``.

        ``drawn``: the subjects' numbers of each simulated period (``keys.DrawnAhead``).
        """
        model, structure, record = self.model, self.structure, self.record
        solve = program_function(model, window=window)
        regular = egm_step_function(model, terminal=False)
        terminal = egm_step_function(model, terminal=True)
        ages = np.asarray(model.ages)
        last = model.n_periods - 1
        stop = self.stop_period

        def program(flat, savings, states, ids, drawn):  # noqa: ANN001, ANN202
            arrays, report = solve(flat, savings)
            params = unpack_params(model=model, flat=flat)
            dtype = savings.dtype

            def period(step, states, t, numbers):  # noqa: ANN001, ANN202
                expected = (period_slice(arrays, period=t, structure=structure), savings[0])
                age = jnp.asarray(ages, dtype=dtype)[t]
                actions, _, following = step(states, ids, expected, params, None, t, age, numbers)
                chosen = states | actions
                return following, {name: chosen[name] for name in record}

            regular_periods = min(stop, last)
            steps = jnp.arange(regular_periods, dtype=jnp.int32)
            each = jax.tree.map(lambda x: x[:regular_periods], drawn)
            states, columns = jax.lax.scan(
                lambda carry, x: period(regular, carry, *x), states, (steps, each)
            )
            if stop > last:  # the last period's step consumes what is left
                numbers = jax.tree.map(lambda x: x[last], drawn)
                _, final = period(terminal, states, jnp.asarray(last, dtype=jnp.int32), numbers)
                columns = jax.tree.map(
                    lambda earlier, end: jnp.concatenate([earlier, end[None]]), columns, final
                )
            return columns, report

        return program
