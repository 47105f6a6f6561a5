"""XLA settings: when the quick-compile options apply, and that they leave DC-EGM's answer alone.

The options (older loop emitters, LLVM -O1) only change how XLA:CPU generates code, so a DC-EGM
solve compiled with them must equal one compiled with XLA's defaults to rounding.
"""

import os

import jax
import numpy as np
import pytest

import project._xla as xla
import project.egm.program as egm_program
from project import solve
from project.models import ijrs

PARAMS = ijrs.DEFAULT_PARAMS | {"taste_shock_scale": 0.05}


def test_quick_compile_options_apply_on_cpu_with_a_verified_jaxlib(monkeypatch):
    monkeypatch.setattr(xla, "_verified_jaxlib", lambda: True)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert xla.quick_compile_options() == xla.QUICK_COMPILE_OPTIONS


@pytest.mark.parametrize(("backend", "verified"), [("gpu", True), ("cpu", False)])
def test_quick_compile_options_stay_off_elsewhere(monkeypatch, backend, verified):
    monkeypatch.setattr(xla, "_verified_jaxlib", lambda: verified)
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    assert xla.quick_compile_options() == {}


def test_keep_flag_leaves_xla_flags_alone(monkeypatch):
    monkeypatch.setenv("PROJECT_KEEP_XLA_FLAGS", "1")
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/nowhere")
    assert not xla.configure_xla_flags()
    assert os.environ["XLA_FLAGS"] == "--xla_dump_to=/tmp/nowhere"


def _solve_arrays() -> dict[str, np.ndarray]:
    # A new model object: compiled programs are cached per model.
    model = ijrs.build_model(n_periods=4, n_savings=200, taste_shocks=True)
    solution = solve(model=model, params=PARAMS, method="dcegm")
    return {name: np.asarray(array) for name, array in solution.arrays._asdict().items()}


def test_dcegm_with_quick_options_equals_xla_defaults(monkeypatch, x64):
    if not xla.quick_compile_options():
        pytest.skip("the quick-compile options do not apply on this backend or jaxlib")
    quick = _solve_arrays()
    monkeypatch.setattr(egm_program, "quick_compile_options", dict)
    default = _solve_arrays()
    for name, array in quick.items():
        if array.dtype == bool:
            np.testing.assert_array_equal(array, default[name], err_msg=name)
        else:
            np.testing.assert_allclose(array, default[name], rtol=1e-13, atol=1e-13, err_msg=name)
