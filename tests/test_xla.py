"""XLA settings: the package's per-program options, and the quick-compile options' answers.

The YNN option (``program_options``) must compile the package's programs exactly as the process
flag ``--xla_cpu_experimental_ynn_fusion_type=-reduce,-eltwise`` did, and leave the user's own
programs and ``XLA_FLAGS`` alone. The quick-compile options (older loop emitters, LLVM -O1) only
change how XLA:CPU generates code, so a DC-EGM solve compiled with them must equal one compiled
without them to rounding.
"""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
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


def test_program_options_keep_single_dot_fusions_on_a_verified_jaxlib(monkeypatch):
    monkeypatch.setattr(xla, "_verified_jaxlib", lambda: True)
    monkeypatch.delenv("PROJECT_KEEP_XLA_FLAGS", raising=False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/nowhere")
    assert xla.program_options() == {xla.YNN_OPTION: xla.YNN_FUSIONS}


@pytest.mark.parametrize(
    ("keep", "flags", "verified"),
    [
        ("1", "", True),
        ("0", "--xla_cpu_experimental_ynn_fusion_type=-reduce", True),
        ("0", "", False),
    ],
)
def test_program_options_stay_off_where_asked_or_unverified(monkeypatch, keep, flags, verified):
    monkeypatch.setattr(xla, "_verified_jaxlib", lambda: verified)
    monkeypatch.setenv("PROJECT_KEEP_XLA_FLAGS", keep)
    monkeypatch.setenv("XLA_FLAGS", flags)
    assert xla.program_options() == {}


def test_jit_merges_the_package_options_with_the_callers(monkeypatch):
    calls = []
    monkeypatch.setattr(xla, "program_options", lambda: {"a": 1, "b": 2})
    monkeypatch.setattr(jax, "jit", lambda fun, **kw: calls.append(kw) or fun)
    xla.jit(abs, compiler_options={"b": 3}, static_argnums=0)
    # The top-level program takes the merged options; the one for transformations none.
    assert calls == [
        {"compiler_options": {"a": 1, "b": 3}, "static_argnums": 0},
        {"static_argnums": 0},
    ]


def test_a_program_under_a_transformation_runs_without_options(x64):
    program = xla.jit(lambda x: jnp.sum(jnp.sin(x) ** 2))
    x = jnp.linspace(0.0, 1.0, 7)
    assert float(jax.jit(lambda y: program(y) + 1)(x)) == float(program(x)) + 1
    np.testing.assert_allclose(jax.grad(program)(x), jnp.sin(2 * x), rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(program)(x[:, None]), jnp.sin(x) ** 2, rtol=1e-12)


COMPILED_TEXT = """
import hashlib, os, sys
import jax, jax.numpy as jnp
if sys.argv[1] != "bare":  # a process that never imports the package
    import project
    from project._xla import jit
    from project import solve  # the package's modules load; none may touch XLA_FLAGS

def kernel(a, b, c):
    return jnp.max(a[:, None, :] * b[None, :, :], axis=-1).sum(0), a @ c + jnp.tanh(a).sum()

a = jnp.linspace(0, 1, 12000).reshape(30, 400)
args = (a, jnp.cos(a), jnp.ones((400, 3)))
which = jit if sys.argv[1] == "package" else jax.jit
text = which(kernel).lower(*args).compile().as_text()
print(os.environ.get("XLA_FLAGS", "<unset>"), hashlib.sha256(text.encode()).hexdigest())
"""


def _compiled(which: str, **env: str) -> tuple[str, str]:
    # Each process compiles afresh: a program read back from JAX's persistent cache prints
    # another text than the one compiled.
    left_out = ("XLA_FLAGS", "PROJECT_KEEP_XLA_FLAGS", "JAX_COMPILATION_CACHE_DIR")
    base = {k: v for k, v in os.environ.items() if k not in left_out}
    out = subprocess.run(
        [sys.executable, "-c", COMPILED_TEXT, which],
        env=base | env,
        capture_output=True,
        text=True,
        check=True,
    )
    flags, digest = out.stdout.split()
    return flags, digest


@pytest.mark.skipif(not xla._verified_jaxlib(), reason="the YNN option is not verified here")
def test_the_option_compiles_what_the_process_flag_did_and_leaves_users_alone():
    flag = "--xla_cpu_experimental_ynn_fusion_type=-reduce,-eltwise"
    flags, package = _compiled("package")
    assert flags == "<unset>"  # importing the package set no flag
    _, by_flag = _compiled("user", XLA_FLAGS=flag)
    assert package == by_flag  # the package's program: the flag's compiled code exactly
    _, user = _compiled("user")
    _, bare = _compiled("bare")
    assert user == bare != package  # the user's own program: as without the package


def _solve_arrays() -> dict[str, np.ndarray]:
    # A new model object: compiled programs are cached per model.
    model = ijrs.build_model(n_periods=4, n_savings=200, taste_shocks=True)
    solution = solve(model=model, params=PARAMS, method="dcegm")
    return {name: np.asarray(array) for name, array in solution.arrays._asdict().items()}


def test_dcegm_with_quick_options_equals_dcegm_without_them(monkeypatch, x64):
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
