"""What the moments divide: wealth over income, and income (labour income or the pension).

Each is a traceable function of one period's subjects, evaluated regime by regime.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from project.estimation.errors import EstimationError
from project.regimes.spec import RegimeModel
from project.simulation.result import available_targets
from project.solver.sweep import compose

INCOME_TARGETS = ("labor_income", "working")
RATIO_TARGET = "wealth_to_income"
"""The model function that gives a living subject's wealth over income, where a model has it."""


def defines_ratio(model: Any) -> bool:
    """Return whether the model's living regimes define ``wealth_to_income`` themselves.

    Raises ``EstimationError`` when some living regimes define it and others do not.
    """
    regimes = model.regimes if isinstance(model, RegimeModel) else {model.name: model}
    defined = {r for r, view in regimes.items() if RATIO_TARGET in view.functions}
    if defined and defined != set(regimes):
        msg = (
            f"Model {model.name!r}: the regimes {sorted(defined)} define {RATIO_TARGET!r} but "
            f"{sorted(set(regimes) - defined)} do not: define it in every living regime (the "
            "moments take it as the wealth-to-income ratio) or in none."
        )
        raise EstimationError(msg)
    return bool(defined)


def moment_ratio(model: RegimeModel) -> Any:
    """Return ``ratio(codes, states, actions, params, period, age)``: wealth over income.

    For one period's subjects (1-D arrays). A model whose living regimes define the function
    ``wealth_to_income`` (``RATIO_TARGET``; the SCF's net worth over permanent income, e.g.
    end-of-period assets of a model normalised by permanent income) gets it; otherwise the
    wealth state over ``_income``. Rows of other regimes give NaN (never counted).
    """
    if not defines_ratio(model):
        income = _income(model)

        def over_income(codes, states, actions, params, period, age):  # noqa: ANN001, ANN202
            return states["wealth"] / income(codes, states, actions, params, period, age)

        return over_income
    evaluate = _by_regime(model, {r: [RATIO_TARGET] for r in model.regimes})

    def ratio(codes, states, actions, params, period, age):  # noqa: ANN001, ANN202
        out = jnp.full(codes.shape, jnp.nan, dtype=states["wealth"].dtype)
        for here, values in evaluate(codes, states, actions, params, period, age):
            out = jnp.where(here, jnp.broadcast_to(values[RATIO_TARGET], codes.shape), out)
        return out

    return ratio


def _income(model: RegimeModel) -> Any:
    """Return ``income(codes, states, actions, params, period, age)``: labour income or pension.

    For one period's subjects (1-D arrays); retirees (``working`` false) and regimes without
    ``working`` get the pension, ``params["pension"]`` (traced like every param, so variants
    that differ only in params share one compiled program).
    """
    targets = {}
    for regime, view in model.regimes.items():
        have = [t for t in INCOME_TARGETS if t in available_targets(view)]
        if "working" in have:
            targets[regime] = have
    evaluate = _by_regime(model, targets)

    def income(codes, states, actions, params, period, age):  # noqa: ANN001, ANN202
        shape = codes.shape
        out = jnp.full(shape, params["pension"], dtype=states["wealth"].dtype)
        for here, values in evaluate(codes, states, actions, params, period, age):
            labour = values.get("labor_income", jnp.full(shape, jnp.nan))
            working = jnp.broadcast_to(values["working"], shape) > 0.5
            out = jnp.where(here & working, jnp.broadcast_to(labour, shape), out)
        return out

    return income


def _by_regime(model: RegimeModel, targets: Mapping[str, Sequence[str]]) -> Any:
    """Return ``evaluate(codes, states, actions, params, period, age)``.

    It yields, for each regime of ``targets``, the mask of its subjects and the regime's
    ``targets`` evaluated at every subject's states and actions (one period's 1-D arrays).
    """
    evaluators = {regime: compose(model.regimes[regime], list(t)) for regime, t in targets.items()}

    def evaluate(codes, states, actions, params, period, age):  # noqa: ANN001, ANN202
        rows = {**states, **actions}
        for regime, combined in evaluators.items():

            def row(values, combined=combined):  # noqa: ANN001, ANN202
                return combined({**params, **values, "period": period, "age": age})

            yield codes == model.code(regime), jax.vmap(row)(rows)

    return evaluate
