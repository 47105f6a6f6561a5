"""The inputs of a robustness check's estimation: the status quo with one assumption changed.

Contract: ``robustness_specification(check=..., specification=..., estimated=...)`` returns the
status quo's specification (``bld/<status quo>/estimation_model.json``) with the check's
calibrated params set and its own name; ``robustness_settings(check=..., settings=...,
estimates=...)`` returns the estimation's settings for it: the check's age groups, if any, and
one local search from the status quo's estimates (``n_starts`` 1; an estimate within the
search's initial trust radius of a bound starts that far inside) without the criterion slices.
The result is estimated by ``estimate_variant`` as the status quo is, and nothing downstream
uses it but the robustness table: counterfactuals and every product keep the status quo's
estimates.

A check that changes an estimated param, names a param the model lacks or gives a param
another shape raises ``ConfigurationError`` naming the check and the param.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from project.errors import ConfigurationError

PREFIX = "robustness_"
"""A check's estimation is named ``robustness_<check>`` (its summary's ``variant``)."""


def robustness_specification(
    *, check: Mapping[str, Any], specification: Mapping[str, Any], estimated: Sequence[str]
) -> dict[str, Any]:
    """Return ``specification`` with ``check["params"]`` set and the check's name."""
    where = f"Robustness check {check['name']!r} (ROBUSTNESS in src/project/config.py)"
    params = dict(specification["params"])
    changed = dict(check["params"])
    clash = sorted(set(changed) & set(estimated))
    if clash:
        msg = (
            f"{where} sets the estimated params {clash}: a check changes calibrated "
            "assumptions and estimates the preferences again; remove them from its params."
        )
        raise ConfigurationError(msg)
    unknown = sorted(set(changed) - set(params))
    if unknown:
        msg = f"{where} sets unknown params {unknown}; the model's params are {sorted(params)}."
        raise ConfigurationError(msg)
    for name, value in changed.items():
        if np.shape(value) != np.shape(params[name]):
            msg = (
                f"{where}: param {name!r} has shape {np.shape(params[name])} in the model, got "
                f"{value!r} of shape {np.shape(value)}."
            )
            raise ConfigurationError(msg)
    return {**specification, "name": PREFIX + str(check["name"]), "params": params | changed}


def robustness_settings(
    *,
    check: Mapping[str, Any],
    settings: Mapping[str, Any],
    estimates: Mapping[str, float],
) -> dict[str, Any]:
    """Return the status quo's estimation ``settings`` for ``check``: see the module docstring."""
    missing = [name for name in settings["estimated"] if name not in estimates]
    if missing:
        msg = (
            f"Robustness check {check['name']!r}: the status quo's estimates lack {missing}; "
            "rebuild the estimation (`uv run pytask`)."
        )
        raise ConfigurationError(msg)
    out = dict(settings)
    margin = float(settings.get("algo_options", {}).get("trustregion_initial_radius", 0.0))
    out["start"] = {
        name: _inside(float(estimates[name]), bounds=settings["bounds"][name], margin=margin)
        for name in settings["estimated"]
    }
    out["n_starts"] = 1
    out["profiles"] = False
    out["alternative_steps"] = []  # the status quo's table reports them; a check's does not
    if check.get("age_groups") is not None:
        out["age_groups"] = [list(group) for group in check["age_groups"]]
    return out


def _inside(value: float, *, bounds: Sequence[float], margin: float) -> float:
    """Return ``value`` moved at least ``margin`` inside ``bounds`` (their middle if too narrow).

    A local search by trust region (pounders) must start one initial radius away from a
    bound, and the status quo's estimate may sit at one.
    """
    lower, upper = (float(b) for b in bounds)
    if upper - lower <= 2 * margin:
        return (lower + upper) / 2
    return min(max(value, lower + margin), upper - margin)
