"""The shocks a simulation drew, drawn again after it: model functions at the realised draws.

The simulation draws each subject's iid shock combination in each period from the subject's key
for that period (``keys.subject_keys``: the seed, the subject id and the period), in the stream
after those of the stochastic discrete states (``steps.build_advance``). The draw depends on
nothing else, so it can be made again after the simulation: ``realised_functions`` evaluates
model functions at a panel's rows with the shocks the simulation drew there, e.g. the growth of
the normaliser of a model stated in units of permanent income (``lifecycle_normalised``'s
``pension_units``), which turns the panel back into levels. Call it in the simulation's
precision: the draw inverts the CDF at a uniform number of that precision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from project._xla import jit
from project.model.spec import Model
from project.points import float_dtype
from project.shocks import shock_tables
from project.simulation.keys import draw_category, subject_keys
from project.solver.sweep import compose


def realised_functions(
    *,
    model: Model,
    params: Mapping[str, Any],
    seed: int,
    subject_ids: np.ndarray,
    periods: np.ndarray,
    ages: np.ndarray,
    values: Mapping[str, np.ndarray],
    targets: Sequence[str],
) -> dict[str, np.ndarray]:
    """Return ``targets`` (model functions) at each row, with the shocks drawn there.

    ``model``: the regime (a ``Model``) the rows were in; ``values``: its states and actions
    at each row (discrete ones as codes); ``subject_ids``, ``periods``, ``ages``: one per row.
    The shocks are those the simulation with ``seed`` drew when it advanced each row's subject
    from that period to the next.
    """
    dtype = float_dtype()
    on_device = {name: jnp.asarray(value) for name, value in params.items()}
    shocks, weights, _ = shock_tables(model.shocks, on_device) if model.shocks else ({}, None, None)
    stream = len(model.stochastic_transitions)
    combined = compose(model, list(targets))

    def one(subject, period, age, row):  # noqa: ANN001, ANN202
        env = {**on_device, **row, "period": period, "age": age}
        if model.shocks:
            key = subject_keys(seed=seed, subject_ids=subject, period=period)
            combination = draw_category(key=key, probabilities=weights.astype(dtype), stream=stream)
            env |= {name: table[combination] for name, table in shocks.items()}
        return combined(env)

    rows = {name: jnp.asarray(value) for name, value in values.items()}
    evaluated = jit(jax.vmap(one))(
        jnp.asarray(subject_ids, dtype=jnp.int32),
        jnp.asarray(periods, dtype=jnp.int32),
        jnp.asarray(ages, dtype=dtype),
        rows,
    )
    return {name: np.asarray(evaluated[name]) for name in targets}
