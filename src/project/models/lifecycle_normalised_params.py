"""The params of ``lifecycle_normalised`` from the vendored income profiles and life table.

``default_params(calibration=...)`` fills ``lifecycle_normalised.model_params`` with a vendored
calibration's income profiles (``data/replication/profiles_<calibration>.csv``, its working
years only: ``working_transitions``) and the SSA life table's survival.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from project.models.lifecycle_normalised import FIRST_AGE, LAST_AGE, model_params, n_periods

INCOME_PARAMS = ("income_growth", "unemployment_risk", "permanent_nodes", "transitory_nodes")
"""The params a calibration's income profiles give (``default_params(calibration=...)``)."""


def income_profiles(*, calibration: str = "notes2026") -> dict[str, np.ndarray]:
    """Return the income profiles by period (ages 25..99) of a vendored calibration.

    ``income_growth``, ``permanent_shock_sd`` and ``transitory_shock_sd`` of
    ``data/replication/profiles_<calibration>.csv`` for its working transitions
    (``working_transitions``: to age 64 in ``notes2026``, 63 in ``hark2019``); later years keep
    growth 1 and the last working year's shock s.d.
    """
    from project.data.replication import read_profiles  # noqa: PLC0415
    from project.data.vendored import verified_path  # noqa: PLC0415

    n_working = working_years(calibration=calibration)
    frame = read_profiles(verified_path(f"profiles_{calibration}"))
    profiles = {}
    for name in ("income_growth", "permanent_shock_sd", "transitory_shock_sd"):
        working = frame[name].to_numpy(dtype=float)[:n_working]
        tail = 1.0 if name == "income_growth" else working[-1]
        profiles[name] = np.concatenate([working, np.full(n_periods() - working.size, tail)])
    return profiles


def working_years(*, calibration: str = "notes2026") -> int:
    """Return how many transitions of a vendored calibration's profiles are working years."""
    from project.data.replication import read_profiles  # noqa: PLC0415
    from project.data.vendored import verified_path  # noqa: PLC0415

    return working_transitions(read_profiles(verified_path(f"profiles_{calibration}")))


def working_transitions(frame: pd.DataFrame) -> int:
    """Return how many of a profile's transitions are working years (before its retirement).

    A published profile ends working life with a transition without income risk that applies
    its replacement rate (``notes2026``: 0.6821 from 64 to 65; ``hark2019``: 0.7 from 63 to
    64): the first transition whose shocks both have s.d. 0. This model pays its own pension
    on a claim, so it keeps the working transitions before it (and neither the drop nor the
    riskless years after).
    """
    riskless = (frame["permanent_shock_sd"] == 0) & (frame["transitory_shock_sd"] == 0)
    found = np.flatnonzero(riskless.to_numpy())
    return int(found[0]) if found.size else len(frame)


def default_params(*, calibration: str = "notes2026", female_share: float = 0.5) -> dict[str, Any]:
    """Return the params from the vendored profiles and life table, as JSON-ready lists.

    ``calibration``: the profiles ``data/replication/profiles_<calibration>.csv`` (``notes2026``:
    the Cocco-Gomes-Maenhout high-school income profile with Sabelhaus-Song shocks;
    ``hark2019``: the 2019 HARK example's); survival from the SSA table, mixing men and women
    with ``female_share``.
    """
    from project.data import survival_probabilities  # noqa: PLC0415
    from project.data.vendored import verified_path  # noqa: PLC0415

    ages = list(range(FIRST_AGE, LAST_AGE + 1))
    profiles = income_profiles(calibration=calibration)
    survival = survival_probabilities(
        path=verified_path("us_life_table"), ages=ages, female_share=female_share
    )
    params = model_params(**profiles, survival=np.asarray(survival, dtype=float))
    return {
        name: value.tolist() if isinstance(value, np.ndarray) else value
        for name, value in sorted(params.items())
    }
