"""The inputs of a robustness check's estimation: the status quo with one assumption changed.

Contract: ``robustness_specification(check=..., specification=..., protected=...)`` returns the
status quo's specification (``bld/<status quo>/estimation_model.json``) with the check's
changes (sizes, income profiles, calibrated params) and its own name;
``robustness_settings(check=..., settings=..., estimates=..., calibrated=...)`` returns the
estimation's settings for it: the check's age groups, if any, one local search from the
status quo's estimates (``n_starts`` 1; an estimate within the search's initial trust radius
of a bound starts that far inside) without the criterion slices, and the calibration of the
jointly calibrated param again, from the status quo's value.
The result is estimated by ``estimate_variant`` as the status quo is, and nothing downstream
uses it but the robustness table: counterfactuals and every product keep the status quo's
estimates.

A check that changes an estimated or calibrated param, names a param the model lacks or gives
a param another shape raises ``ConfigurationError`` naming the check and the param.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from project.errors import ConfigurationError
from project.models import MODEL_BUILDERS, income_params_of

PREFIX = "robustness_"
"""A check's estimation is named ``robustness_<check>`` (its summary's ``variant``)."""


def robustness_specification(
    *, check: Mapping[str, Any], specification: Mapping[str, Any], protected: Sequence[str]
) -> dict[str, Any]:
    """Return ``specification`` with the check's changes and its own name.

    ``protected``: the params the estimation estimates or calibrates, which no check may set.
    The check's ``sizes`` change the model (its params are then the new model's: a param the
    new model adds, such as ``taste_shock_scale``, must be set by the check), its
    ``profiles`` replace the income params by another calibration's
    (``project.models.income_params_of``), and its ``params`` are set last.
    """
    where = f"Robustness check {check['name']!r} (ROBUSTNESS in src/project/config.py)"
    model_name = str(specification["model"])
    sizes = dict(specification["sizes"]) | dict(check.get("sizes") or {})
    params = dict(specification["params"])
    if check.get("profiles"):
        params |= income_params_of(name=model_name, calibration=str(check["profiles"]))
    changed = dict(check.get("params") or {})
    clash = sorted(set(changed) & set(protected))
    if clash:
        msg = (
            f"{where} sets the params {clash}, which the estimation estimates or calibrates: a "
            "check changes other assumptions and estimates them again; remove them from it."
        )
        raise ConfigurationError(msg)
    template = MODEL_BUILDERS[model_name](**sizes).params_template
    unknown = sorted(set(changed) - set(template))
    if unknown:
        msg = f"{where} sets unknown params {unknown}; the model's params are {sorted(template)}."
        raise ConfigurationError(msg)
    for name, value in changed.items():
        if np.shape(value) != tuple(template[name]):
            msg = (
                f"{where}: param {name!r} has shape {tuple(template[name])} in the model, got "
                f"{value!r} of shape {np.shape(value)}."
            )
            raise ConfigurationError(msg)
    params = {k: v for k, v in params.items() if k in template} | changed
    missing = sorted(set(template) - set(params))
    if missing:
        msg = f"{where} changes the model's sizes to {sizes}, which needs the params {missing}."
        raise ConfigurationError(msg)
    return {
        **specification,
        "name": PREFIX + str(check["name"]),
        "sizes": dict(sorted(sizes.items())),
        "params": dict(sorted(params.items())),
    }


def robustness_settings(
    *,
    check: Mapping[str, Any],
    settings: Mapping[str, Any],
    estimates: Mapping[str, float],
    calibrated: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Return the status quo's estimation ``settings`` for ``check``: see the module docstring.

    ``calibrated``: the status quo's calibrated param, where the estimation calibrates one;
    the check calibrates it again, starting there.
    """
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
    target = settings.get("calibration")
    if target and calibrated and target["param"] in calibrated:
        out["calibration"] = dict(target) | {"start": float(calibrated[target["param"]])}
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
