"""XLA settings that our benchmarks showed to matter, passed per program, never process-wide.

On jaxlib 0.10 CPU, XLA hands fused reductions and elementwise fusions to YNNPACK, which made
the estimation's moment program about 1.5x slower and DC-EGM 10 % slower here (and an earlier
vmap-and-max kernel 15-20x slower). Every program the package compiles (``jit`` below) asks
XLA to keep only YNNPACK's single dot fusions (``program_options``): what the process flag
``--xla_cpu_experimental_ynn_fusion_type=-reduce,-eltwise`` did, program for program the same
compiled code, without changing how the user's own JAX programs compile. The option is only
given on jaxlib versions where it was verified (XLA refuses options it does not know). Set
``PROJECT_KEEP_XLA_FLAGS=1``, or set the YNN flag in ``XLA_FLAGS`` yourself, to compile with
XLA's defaults (or your flag).

``quick_compile_options`` are per-program options for the (DC-)EGM programs on CPU, whose
compile time is mostly LLVM code generation of many small fusions: XLA's older loop emitters
and LLVM at -O1 cut the IJRS program's compile from 1.8 s to 1.05 s with the same warm time
(``docs/tuning.md``). The grid solver's kernels keep the defaults: there, the older emitters
made warm solves up to 3x slower.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

YNN_OPTION = "xla_cpu_experimental_ynn_fusion_type"
YNN_FUSIONS = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"
"""jaxlib 0.10's default YNN fusions (single dots, reductions, elementwise) less the last two."""
VERIFIED_JAXLIB_PREFIXES = ("0.10.",)
QUICK_COMPILE_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1}


def program_options() -> dict[str, Any]:
    """Return the XLA options every program of the package is compiled with (see above).

    Reads the environment and the installed jaxlib's version; starts no JAX backend, so it may
    run at import time.
    """
    if os.environ.get("PROJECT_KEEP_XLA_FLAGS") == "1" or not _verified_jaxlib():
        return {}
    if YNN_OPTION in os.environ.get("XLA_FLAGS", ""):
        return {}  # the user's own choice of YNN fusions wins
    return {YNN_OPTION: YNN_FUSIONS}


def jit(fun: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Return ``jax.jit(fun, **options)`` that compiles with ``program_options`` too.

    Usable as ``jit(f, static_argnames=...)``, as a decorator ``@jit`` and through
    ``functools.partial(jit, ...)``. ``compiler_options`` given here win over the package's.
    The package's options are read when ``jit`` is called (for a decorated module-level
    function: when its module is imported). XLA takes options only for a program it compiles
    on its own, so called under any transformation (inside another ``jit``, ``vmap``, ``grad``)
    the function runs as a plain ``jax.jit``: staged into another program it takes that
    program's options, otherwise XLA's defaults. So do the operations the package runs one by
    one, outside any ``jit``.
    """
    if fun is None:
        return functools.partial(jit, **options)
    compiler_options = program_options() | dict(options.pop("compiler_options", None) or {})
    return _Program(fun, compiler_options=compiler_options, options=options)


class _Program:
    """A jitted function with its own XLA options at the top level, plain under transformations."""

    def __init__(
        self, fun: Callable[..., Any], *, compiler_options: dict[str, Any], options: dict
    ) -> None:
        import jax  # noqa: PLC0415  (not at import: ``project.config`` stays free of JAX)
        from jax._src.core import trace_state_clean  # noqa: PLC0415  (no public equivalent)

        functools.update_wrapper(self, fun, updated=())
        self._at_top_level = trace_state_clean
        self._top = jax.jit(fun, compiler_options=compiler_options or None, **options)
        self._inlined = jax.jit(fun, **options) if compiler_options else self._top

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        program = self._top if self._at_top_level() else self._inlined
        return program(*args, **kwargs)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        return self if instance is None else functools.partial(self, instance)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "_top" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self._top, name)  # lower, trace, _cache_size, ...


def quick_compile_options() -> dict[str, Any]:
    """Return the options that compile an EGM program faster; none off CPU or unverified jaxlib.

    Call at solve time, not import time: it asks JAX for the default backend.
    """
    import jax  # noqa: PLC0415  (not at import: ``project.config`` stays free of JAX)

    if jax.default_backend() != "cpu" or not _verified_jaxlib():
        return {}
    return dict(QUICK_COMPILE_OPTIONS)


def _verified_jaxlib() -> bool:
    try:
        return version("jaxlib").startswith(VERIFIED_JAXLIB_PREFIXES)
    except PackageNotFoundError:
        return False
