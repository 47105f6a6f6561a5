"""Sums by age group equal, bit for bit, XLA's sum over the padded panel they replace.

Oracle: ``jnp.where(members, values, 0).sum(axis=(0, 1))`` over a (periods, subjects, groups)
array, compiled by XLA as the package compiles its programs (``program_options``: reductions
kept off YNNPACK), with the estimation program's quick-compile options and without, at the
estimation's shape and at shapes where no dimension, one or both exceed XLA's window. A plain sum
over the group's rows alone is shown to differ in its last bits, so the order is what is tested.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from project._xla import program_options, quick_compile_options
from project.estimation.group_sums import WINDOW, ScannedGroupSums, group_sums


def age_members(*, periods: int, first_age: int, groups: list[tuple[int, int]]) -> np.ndarray:
    ages = np.arange(first_age, first_age + periods)
    return np.stack([(ages > lo) & (ages <= hi) for lo, hi in groups], axis=1)


ESTIMATION_GROUPS = [(25, 30), (30, 35), (35, 40), (40, 45), (45, 50), (50, 55), (55, 60)]


def log_ratios(*, periods: int, subjects: int, seed: int) -> np.ndarray:
    """Return logs of positive ratios, exactly 0 (log 1) where a subject-year is not read."""
    rng = np.random.default_rng(seed)
    read = rng.random((periods, subjects)) < 0.8
    return np.where(read, np.log(rng.lognormal(size=(periods, subjects))), 0.0)


def padded_sum(values: np.ndarray, members: np.ndarray, options: dict) -> np.ndarray:
    """Return the sum the program took before: the groups an input, the panel padded."""

    def total(v, groups):
        padded = jnp.pad(v, ((0, groups.shape[0] - v.shape[0]), (0, 0)))
        return jnp.where(groups[:, None, :], padded[:, :, None], 0.0).sum(axis=(0, 1))

    return np.asarray(jax.jit(total, compiler_options=options)(values, members))


def ours(values: np.ndarray, members: np.ndarray, options: dict) -> np.ndarray:
    compiled = jax.jit(
        lambda v, g: group_sums(values=v, members=members, groups=g), compiler_options=options
    )
    return np.asarray(compiled(values, members))


CASES = {
    "estimation": (37, 60_000, age_members(periods=75, first_age=25, groups=ESTIMATION_GROUPS)),
    "every period read": (75, 999, age_members(periods=75, first_age=25, groups=ESTIMATION_GROUPS)),
    "short panel": (12, 2_049, age_members(periods=30, first_age=20, groups=[(21, 26), (26, 31)])),
    "within one window": (
        20,
        30,
        age_members(periods=25, first_age=25, groups=[(25, 30), (32, 44)]),
    ),
    "a group never read": (
        10,
        5_000,
        age_members(periods=40, first_age=25, groups=[(25, 30), (40, 50), (30, 34)]),
    ),
}


@pytest.mark.parametrize("options", ["program", "default"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_group_sums_are_xla_s_padded_sums_bit_for_bit(x64, case, options):
    periods, subjects, members = CASES[case]
    compiler = program_options() | (quick_compile_options() if options == "program" else {})
    for seed in range(2):
        values = log_ratios(periods=periods, subjects=subjects, seed=seed)
        expected = padded_sum(values, members, compiler)
        got = ours(values, members, compiler)
        assert got.tobytes() == expected.tobytes(), (got - expected, got)


def test_the_order_of_the_additions_is_what_makes_the_bits(x64):
    periods, subjects, members = CASES["estimation"]
    assert subjects > WINDOW
    values = log_ratios(periods=periods, subjects=subjects, seed=0)
    expected = padded_sum(values, members, program_options() | quick_compile_options())
    plain = np.array(
        [np.sum(values[np.flatnonzero(members[:periods, g])]) for g in range(members.shape[1])]
    )
    np.testing.assert_allclose(plain, expected, rtol=1e-12)
    assert plain.tobytes() != expected.tobytes()


def scanned_sums(values: np.ndarray, members: np.ndarray, options: dict) -> np.ndarray:
    """Return the groups' sums taken period by period in a scan (``ScannedGroupSums``)."""
    scanned = ScannedGroupSums(members=members, read=values.shape[0], subjects=values.shape[1])

    def by_period(v, groups):
        def add(sums, row):
            return scanned.add(sums, values=row[0], period=row[1]), None

        periods = jnp.arange(v.shape[0], dtype=jnp.int32)
        sums, _ = jax.lax.scan(add, scanned.start(v.dtype), (v, periods))
        return scanned.finish(sums, groups=groups)

    return np.asarray(jax.jit(by_period, compiler_options=options)(values, members))


@pytest.mark.parametrize("case", sorted(CASES))
def test_sums_taken_period_by_period_are_the_panel_s_sums_bit_for_bit(x64, case):
    """The scanned sums (no panel kept) equal ``group_sums`` of the whole panel, to the bit.

    Where no dimension exceeds the window, both are XLA's one-pass sum of a small panel, whose
    order depends on the program around it (a panel read from the input or built in a loop):
    there they agree to rounding.
    """
    periods, subjects, members = CASES[case]
    compiler = program_options() | quick_compile_options()
    for seed in range(2):
        values = log_ratios(periods=periods, subjects=subjects, seed=seed)
        expected = ours(values, members, compiler)
        got = scanned_sums(values, members, compiler)
        if max(members.shape[0], subjects) <= WINDOW:
            np.testing.assert_allclose(got, expected, rtol=1e-14)
        else:
            assert got.tobytes() == expected.tobytes(), (got - expected, got)


def test_a_period_of_two_groups_adds_to_both(x64):
    """Overlapping groups (age 36 in all three): each group's scanned sum is its panel sum."""
    members = age_members(periods=70, first_age=25, groups=[(25, 40), (35, 60), (30, 36)])
    assert ScannedGroupSums(members=members, read=50, subjects=3_001).tables.shape[0] == 3
    values = log_ratios(periods=50, subjects=3_001, seed=7)
    compiler = program_options() | quick_compile_options()
    got = scanned_sums(values, members, compiler)
    assert got.tobytes() == ours(values, members, compiler).tobytes()
    assert len(set(got.tolist())) == 3
