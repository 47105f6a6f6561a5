"""The life-cycle moments as one compiled program: the estimated params in, the moments out.

For a model with regimes solved by endogenous grids (the pipeline's), the solve (every regime's
(DC-)EGM step, ``regimes/egm.py``), the simulation of every subject over every period (the scan of
``simulation/regime_steps.py``) and the moments (``lifecycle.py``: mean log wealth-to-income of the
living by age group, summed period by period inside the scan: ``drawn.py``) are traced together and
compiled once per model, initial conditions and age groups. The estimated params are a traced
vector: a change of them never recompiles (``traces`` counts the traces). Nothing leaves the device
but the moments and three facts of the solve's report: whether the solution failed
(``egm.program.FAILURE_COLUMNS``: then the moments are NaN, never numbers from a broken solution,
and the estimation reports moments that are not finite, naming the params; near crra = 1 V's
consumption equivalent overflows), whether the upper envelope's window was too narrow, and the
widest run, which widens the window and recompiles once, as ``solve`` does (the program starts with
a window of ``ESTIMATION_WINDOW`` runs, wider than ``solve``'s, to make that rare).

``batch(values)`` evaluates many param vectors in one call (``jax.vmap``): an optimiser's
finite-difference points or a multistart's sample. A single point runs a program of its own,
without ``vmap``: a ``vmap`` of one point made every evaluation 12-25 % slower (its loops carry
batched conditions, its reads become batched gathers) and its trace about a second longer.

The program is deterministic (the same params give the same bytes), so results are kept per
call (``MEMO_SIZE`` calls, by the seed and the exact bytes of the params): an estimation asks
for some points more than once (the start, checked before the search and evaluated by the
optimiser; the estimate, where the search ends, its Jacobian is taken and the criterion slices
cross), and those come back without running the program (``runs`` counts the runs).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit, quick_compile_options
from project.egm.program import FAILURE_COLUMNS, REPORT_COLUMNS
from project.egm.structure import egm_structure
from project.estimation.choice_count import ChoiceCount, choice_counter
from project.estimation.drawn import build_drawn_moments
from project.estimation.errors import EstimationError
from project.estimation.ratios import moment_ratio
from project.estimation.smooth import ExitChoice, build_smooth_totals
from project.model.params import pack_params, params_on_host, unpack_params
from project.points import float_dtype
from project.regimes.egm import endogenous_grid_program, envelope_window, widen_window
from project.regimes.solve import choose_regime_method
from project.regimes.spec import RegimeModel
from project.simulation.initial import validate_regime_initial_conditions
from project.simulation.keys import DrawnAhead, draw_ahead_compiled
from project.simulation.regime_steps import build_regime_panel
from project.simulation.regimes import draw_streams, egm_period_inputs, filled_states

ESTIMATION_WINDOW = 8
"""The upper envelope's window (runs) the program starts with; ``solve`` starts with 1. An
estimation evaluates params far apart (a multistart samples the whole box), where the envelope
meets more runs than near the estimate, and each widening compiles the program again (about
10 s on this 2-core CPU); a window of 8 cost nothing measurable on the pipeline's model (0.402,
0.407 and 0.399 s per warm evaluation at 1, 5 and 8 runs)."""
MEMO_SIZE = 4096
"""Calls whose results a program keeps (a few hundred bytes each; an estimation makes ~150)."""


class MomentProgram:
    """``program(values)``: the moments at the estimated params ``values``, in one program."""

    def __init__(
        self,
        *,
        model: RegimeModel,
        base_params: Mapping[str, Any],
        initial_conditions: Mapping[str, np.ndarray],
        seed: int,
        age_groups: Sequence[tuple[float, float]],
        estimated: Sequence[str],
        smooth: bool = False,
        choice: ChoiceCount | None = None,
    ) -> None:
        self.model = model
        self.smooth = ExitChoice.of(model, params=base_params) if smooth else None
        if smooth and choice is not None:
            msg = "A choice count needs drawn moments (smooth=False): it counts drawn choices."
            raise EstimationError(msg)
        self.choice = choice
        host = params_on_host(model=model, params=base_params)
        self.base_flat = jnp.asarray(pack_params(host))
        self.positions = jnp.asarray(_positions(host, estimated=estimated))
        dtype = float_dtype()
        self.savings = {r: v.post_decision_grid.to_jax() for r, v in model.regimes.items()}
        regime, initial = validate_regime_initial_conditions(
            model=model, initial_conditions=initial_conditions
        )
        self.codes = jnp.asarray(regime)
        self.states = {s: jnp.asarray(filled_states(model, s, v)) for s, v in initial.items()}
        self.ids = jnp.arange(regime.size, dtype=jnp.int32)
        self.seed = int(seed)
        self.periods = jnp.arange(model.n_periods, dtype=jnp.int32)
        self.ages = jnp.asarray(np.asarray(model.ages), dtype=dtype)
        ages = np.asarray(model.ages, dtype=float)
        members = np.stack([(ages > lo) & (ages <= hi) for lo, hi in age_groups], axis=1)
        self.members = members  # static: the group sums' order is planned from it
        self.groups = jnp.asarray(members)
        # The periods the drawn moments read: their simulation stops after the last group's
        # (or the choice count's, if later).
        self.stop = int(np.flatnonzero(members.any(axis=1)).max(initial=-1)) + 1
        if choice is not None:
            self.stop = max(self.stop, choice.period(model) + 1)
        self.traces = 0
        self.runs = 0
        # The drawn moments' numbers, drawn at the first run (and again for another seed).
        self._drawn: tuple[int, DrawnAhead] | None = None
        self._compiled: dict[tuple[int, bool, bool], Any] = {}
        self._memo: OrderedDict[tuple[Any, ...], tuple[np.ndarray, ...]] = OrderedDict()

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """Return the moments at ``values`` (the estimated params, in their order)."""
        return self.batch(np.asarray(values, dtype=float)[None])[0]

    def batch(self, values: np.ndarray) -> np.ndarray:
        """Return the moments of every row of ``values`` (points by estimated params)."""
        return self._run(values, derivative=False)[0]

    def jacobian(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the moments at ``values`` and their exact Jacobian (moments by params).

        Forward-mode derivatives (``jax.jacfwd``) of the one program; meaningful for smooth
        moments (``smooth=True``), where the moments are differentiable in the params.
        """
        moments, jacobian, *_ = self._run(np.asarray(values, dtype=float)[None], derivative=True)
        return moments[0], jacobian[0]

    def choices(self, values: np.ndarray) -> np.ndarray:
        """Return the choice count's two numbers at ``values``: subjects deciding, choosing.

        NaN where the solve failed; raises ``EstimationError`` without a ``choice``.
        """
        if self.choice is None:
            msg = "This moment program counts no choice: build it with choice=ChoiceCount(...)."
            raise EstimationError(msg)
        return self._run(np.atleast_2d(np.asarray(values, dtype=float)), derivative=False)[-1][0]

    def choice_table(self, values: np.ndarray) -> np.ndarray:
        """Return the choice count's (deciding, choosing) in every period at ``values``.

        From a program of its own that simulates every period (the moments' stops early):
        what ``claiming.claiming_table`` counts on the simulated table. NaN where the solve
        failed; raises ``EstimationError`` without a ``choice``.
        """
        if self.choice is None:
            msg = "This moment program counts no choice: build it with choice=ChoiceCount(...)."
            raise EstimationError(msg)
        points = np.asarray(values, dtype=float)[None]
        return self._run(points, derivative=False, table=True)[0][0]

    def living(self, values: np.ndarray) -> np.ndarray:
        """Return the simulated subjects alive in each age group at ``values``.

        Drawn moments: the distinct subjects with a living year in the group, counted as the
        program simulates (what ``subjects_per_group`` counts on the simulated table). Smooth
        moments: their expected number (alive at the group's first age; death is absorbing),
        from the Jacobian's program, the one an estimation on smooth moments compiles.
        """
        points = np.asarray(values, dtype=float)[None]
        return self._run(points, derivative=self.smooth is not None)[-2][0]

    def _run(
        self, values: np.ndarray, *, derivative: bool, table: bool = False
    ) -> tuple[np.ndarray, ...]:
        """Return the program's results at ``values`` (rows), from the memo where it has them.

        ``table``: the choice table's program (``choice_table``), not the moments'.
        """
        points = np.atleast_2d(np.asarray(values, dtype=self.base_flat.dtype))
        key = (derivative, table, self.seed, points.shape, points.tobytes())
        if key not in self._memo:
            self._memo[key] = self._execute(points, derivative=derivative, table=table)
            if len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        self._memo.move_to_end(key)
        return tuple(x.copy() for x in self._memo[key])

    def _execute(
        self, points: np.ndarray, *, derivative: bool, table: bool = False
    ) -> tuple[np.ndarray, ...]:
        self.runs += 1
        while True:
            window = max(envelope_window(self.model), ESTIMATION_WINDOW)
            program = self._program(window, derivative, batched=points.shape[0] > 1, table=table)
            *out, invalid, narrow, runs = program(jnp.asarray(points), *self._inputs(table))
            if not bool(narrow):
                return _without_invalid(out, invalid=np.asarray(invalid))
            widen_window(self.model, window=window, runs=int(runs))

    def _inputs(self, table: bool = False) -> tuple[Any, ...]:
        """Return the program's inputs after the params.

        The drawn moments' numbers are drawn ahead, once; the choice table, run once per
        estimation over more periods, draws its own from the seed.
        """
        ahead = self.smooth is None and not table
        if ahead and (self._drawn is None or self._drawn[0] != self.seed):  # the seed may change
            numbers = draw_ahead_compiled(
                seed=self.seed,
                subject_ids=self.ids,
                periods=self.periods[: self.stop],
                streams=draw_streams(self.model),
            )
            self._drawn = (self.seed, numbers)
        return (
            self.base_flat,
            self.positions,
            self.savings,
            self.codes,
            self.states,
            self.ids,
            self.periods,
            self.ages,
            self.groups,
            self._drawn[1] if ahead else self.seed,
        )

    def _program(self, window: int, derivative: bool, *, batched: bool, table: bool = False) -> Any:
        """Return the compiled program: points (rows) in, one result row per point out.

        One point (an optimiser's evaluation) runs without ``vmap`` (module docstring).
        """
        key = (window, derivative, batched, table)
        if key not in self._compiled:
            one = self._one_point(window, table=table)
            if derivative:
                one = _with_jacobian(one)
            if batched:
                mapped = jax.vmap(one, in_axes=(0, *(None,) * 10))
            else:

                def mapped(points, *inputs):  # noqa: ANN001, ANN002, ANN202
                    return jax.tree.map(lambda x: x[None], one(points[0], *inputs))

            def program(points, *inputs):  # noqa: ANN001, ANN002, ANN202
                *out, invalid, narrow, runs = mapped(points, *inputs)
                return *out, invalid, narrow.any(), runs.max()

            compiled = jit(program, compiler_options=quick_compile_options())
            self._compiled[key] = compiled
        return self._compiled[key]

    def _one_point(self, window: int, *, table: bool) -> Any:
        model = self.model
        solve = endogenous_grid_program(model, window=window)
        moments = self._choice_table() if table else self._moments()
        narrow_column = REPORT_COLUMNS.index("non_monotone")
        runs_column = REPORT_COLUMNS.index("runs")
        invalid_columns = jnp.asarray([REPORT_COLUMNS.index(c) for c in FAILURE_COLUMNS])

        def one(values, base, positions, savings, codes, states, ids, periods, ages, groups, seed):  # noqa: ANN001, ANN202
            self.traces += 1
            flat = base.at[positions].set(values)
            params = unpack_params(model=model, flat=flat)
            arrays, reports = solve(flat, savings)
            inputs = {
                r: egm_period_inputs(arrays=arrays[r], limit=savings[r][0], n_periods=len(periods))
                for r in model.regimes
            }
            panel = (codes, states, ids, inputs, params, periods, ages, seed)
            table = jnp.concatenate([r for r in reports.values()])
            narrow, runs = table[:, narrow_column].any(), table[:, runs_column].max()
            invalid = table[:, invalid_columns].any()
            return *moments(panel, groups), invalid, narrow, runs

        return one

    def _choice_table(self) -> Any:
        """Return ``table(panel, groups)``: the choice count of every period of a whole panel."""
        count = choice_counter(self.model, self.choice, every_period=True)
        panel_of = build_regime_panel(self.model, methods=_methods(self.model))

        def table(panel, groups):  # noqa: ANN001, ANN202
            del groups
            codes, _, actions, _ = panel_of(*panel)
            return (count(codes, actions, jnp.int32),)

        return table

    def _moments(self) -> Any:
        """Return ``moments(panel, groups)``: drawn (summed as the scan simulates) or smooth.

        ``panel`` is the scan's inputs (initial regimes and states, subjects, the solve's
        arrays, params, periods, ages, seed).

        It gives the moments, the living subjects of each group (``living``) and the choice
        count (deciding, choosing; zeros without a ``choice``).
        """
        model = self.model
        ratio_of = moment_ratio(model)
        living_codes = jnp.asarray([model.code(r) for r in model.regimes])
        if self.smooth is not None:
            totals = build_smooth_totals(model, methods=_methods(model), exit_choice=self.smooth)

            def smooth(panel, groups):  # noqa: ANN001, ANN202
                params = panel[4]

                def record(codes, states, actions, weights, period, age):  # noqa: ANN001, ANN202
                    ratio = ratio_of(codes, states, actions, params, period, age)
                    counted = jnp.isin(codes, living_codes) & (ratio > 0)
                    alive = jnp.where(counted, weights, 0.0)
                    value = jnp.where(alive > 0, jnp.log(jnp.where(alive > 0, ratio, 1.0)), 0.0)
                    member = groups[period].astype(alive.dtype)
                    before = jnp.where(period > 0, groups[jnp.maximum(period - 1, 0)], False)
                    first = (groups[period] & ~before).astype(alive.dtype)
                    alive_now = jnp.sum(alive)
                    return member * jnp.sum(alive * value), member * alive_now, first * alive_now

                numerator, denominator, counts = totals(*panel, record)
                return numerator / denominator, counts, jnp.zeros(2, numerator.dtype)

            return smooth
        return build_drawn_moments(
            model,
            methods=_methods(model),
            members=self.members,
            stop=self.stop,
            subjects=int(self.ids.shape[0]),
            choice=self.choice,
        )


def _with_jacobian(one: Any) -> Any:
    """Return ``one`` giving the moments' Jacobian in the params (forward mode) too."""

    def with_jacobian(values, *inputs):  # noqa: ANN001, ANN002, ANN202
        def moments(v):  # noqa: ANN001, ANN202
            out = one(v, *inputs)
            return out[0], out[1:]

        basis = jnp.eye(values.shape[0], dtype=values.dtype)
        pushed = jax.vmap(
            lambda t: jax.jvp(moments, (values,), (t,), has_aux=True), out_axes=(None, 1, None)
        )
        value, tangents, (living, counts, invalid, narrow, runs) = pushed(basis)
        return value, tangents, living, counts, invalid, narrow, runs

    return with_jacobian


def _without_invalid(out: Sequence[Any], *, invalid: np.ndarray) -> tuple[np.ndarray, ...]:
    """Return the program's results as floats, NaN in the rows (points) whose solve failed."""
    results = tuple(np.array(x, dtype=float) for x in out)
    for result in results:
        result[invalid] = np.nan
    return results


def _methods(model: RegimeModel) -> dict[str, str]:
    return {r: egm_structure(v).method for r, v in model.regimes.items()}


def _positions(host: Mapping[str, np.ndarray], *, estimated: Sequence[str]) -> list[int]:
    """Return where each estimated (scalar) param sits in the packed params vector."""
    offsets, offset = {}, 0
    for name in sorted(host):
        offsets[name] = offset
        offset += int(np.size(host[name]))
    unknown = [name for name in estimated if name not in offsets or np.ndim(host[name]) != 0]
    if unknown:
        msg = f"Estimated params {unknown} are not scalar params of the model {sorted(host)}."
        raise EstimationError(msg)
    return [offsets[name] for name in estimated]


def compiles_moments(model: Any) -> bool:
    """Return whether the moments of ``model`` run as one program (regimes solved by EGM)."""
    if not isinstance(model, RegimeModel):
        return False
    return choose_regime_method(model, method=None) in ("egm", "dcegm")
