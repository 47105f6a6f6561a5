"""The drawn moments of the compiled program, summed as the simulation's scan runs.

Each period of the scan (``simulation.regime_steps.scan_steps``) reduces its subjects to what
the moments need and adds it to running totals: the log wealth-to-income ratio of the living
(``ScannedGroupSums``: each age group's sum, to the bit the sum over the whole panel was),
the subject-years read per group, which subjects a group has read, and the choice count at its
period. No panel of subject-years is kept: the program's largest temporaries were that panel
(periods by subjects, for codes, states and actions) and its rearranged copy for the sums.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from project.estimation.choice_count import ChoiceCount, choice_counter
from project.estimation.group_sums import ScannedGroupSums, layer_tables
from project.estimation.ratios import moment_ratio
from project.regimes.spec import RegimeModel
from project.simulation.regime_steps import scan_steps


def build_drawn_moments(
    model: RegimeModel,
    *,
    methods: dict[str, str],
    members: np.ndarray,
    stop: int,
    subjects: int,
    choice: ChoiceCount | None,
) -> Callable[..., Any]:
    """Return ``moments(panel, groups)``: the moments, the living per group and the choice count.

    ``panel``: ``(codes, states, ids, inputs, params, periods, ages, seed)`` of the scan;
    ``members``: (periods, groups), static, and ``groups`` the same as the program's input;
    ``stop``: the periods simulated (at least the last group's and the choice count's);
    ``subjects``: the subjects simulated. The moments are each group's mean log ratio over the
    living subject-years where the ratio is positive; the living are the subjects with such a
    year in the group; the count is (deciding, choosing) at the choice's period (zeros without).
    """
    ratio_of = moment_ratio(model)
    living_codes = jnp.asarray([model.code(r) for r in model.regimes])
    sums = ScannedGroupSums(members=members, read=stop, subjects=subjects)
    layers = layer_tables([np.flatnonzero(row) for row in members], scratch=members.shape[1])
    count = _choice_count(model, choice)
    steps = scan_steps(model, methods=methods, stop=stop)

    def moments(panel, groups):  # noqa: ANN001, ANN202
        params, periods, ages = panel[4], panel[5], panel[6]
        dtype = ages.dtype

        def reduce(totals, record, period, age):  # noqa: ANN001, ANN202
            logs, years, read_by, counted = totals
            here_codes, here_states, actions, _ = record
            ratio = ratio_of(here_codes, here_states, actions, params, period, age)
            read = jnp.isin(here_codes, living_codes) & (ratio > 0)
            member = groups[period]
            # log 1 = +0 where a subject-year is not read (never -0: the sums' bits rely on it)
            logs = sums.add(logs, values=jnp.log(jnp.where(read, ratio, 1.0)), period=period)
            years = years + read.sum(dtype=jnp.int32) * member.astype(jnp.int32)
            for layer in layers:  # the subjects read in the period's group(s)
                group = jnp.asarray(layer)[period]
                read_by = read_by.at[group].set(read_by[group] | read)
            counted = count(counted, here_codes, actions, period)
            return (logs, years, read_by, counted), None

        start = (
            sums.start(dtype),
            jnp.zeros(members.shape[1], jnp.int32),
            jnp.zeros((members.shape[1] + 1, subjects), bool),
            jnp.zeros(2, dtype),
        )
        totals, _, final = steps(*panel, reduce, start)
        if final is not None:  # every period simulated: the terminal one's record too
            totals, _ = reduce(totals, final, periods[-1], ages[-1])
        logs, years, read_by, counted = totals
        return sums.finish(logs, groups=groups) / years, read_by[:-1].sum(axis=1), counted

    return moments


def _choice_count(model: RegimeModel, choice: ChoiceCount | None) -> Callable[..., Any]:
    """Return ``count(counted, codes, actions, period)``: (deciding, choosing) at its period.

    ``choice_counter``'s count of the one period it reads, kept as the scan passes it; zeros
    without a ``choice``.
    """
    if choice is None:
        return lambda counted, codes, actions, period: counted
    at, of_record = choice.period(model), choice_counter(model, choice, every_period=True)

    def count(counted, codes, actions, period):  # noqa: ANN001, ANN202
        return jnp.where(period == at, of_record(codes, actions, counted.dtype), counted)

    return count
