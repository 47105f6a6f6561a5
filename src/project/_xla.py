"""XLA settings that our benchmarks showed to matter: process flags and per-program options.

On jaxlib 0.10 CPU, XLA hands fused reductions to YNNPACK, which made the vmap-and-max solve
kernel 15-20x slower; disabling those fusion types fixes it. XLA aborts on flags it does not
know, so the flag is only added for jaxlib versions where it was verified. Set
``PROJECT_KEEP_XLA_FLAGS=1`` to leave ``XLA_FLAGS`` untouched.

``quick_compile_options`` are per-program options for the (DC-)EGM programs on CPU, whose
compile time is mostly LLVM code generation of many small fusions: XLA's older loop emitters
and LLVM at -O1 cut the IJRS program's compile from 1.8 s to 1.05 s with the same warm time
(``docs/tuning.md``). The grid solver's kernels keep the defaults: there, the older emitters
made warm solves up to 3x slower.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

logger = logging.getLogger(__name__)

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce,-eltwise"
VERIFIED_JAXLIB_PREFIXES = ("0.10.",)
QUICK_COMPILE_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1}


def configure_xla_flags() -> bool:
    """Add the YNNPACK flag to ``XLA_FLAGS`` where it is known to help; return whether added."""
    if os.environ.get("PROJECT_KEEP_XLA_FLAGS") == "1":
        return False
    if not _verified_jaxlib():
        return False
    current = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_experimental_ynn_fusion_type" in current:
        return False
    if _backend_started():
        logger.debug("JAX backend already started; XLA_FLAGS left unchanged.")
        return False
    os.environ["XLA_FLAGS"] = f"{current} {YNN_FLAG}".strip()
    return True


def quick_compile_options() -> dict[str, Any]:
    """Return the options that compile an EGM program faster; none off CPU or unverified jaxlib.

    Call at solve time, not import time: it asks JAX for the default backend.
    """
    import jax  # noqa: PLC0415  (not at import: the package sets XLA flags before JAX starts)

    if jax.default_backend() != "cpu" or not _verified_jaxlib():
        return {}
    return dict(QUICK_COMPILE_OPTIONS)


def _verified_jaxlib() -> bool:
    try:
        return version("jaxlib").startswith(VERIFIED_JAXLIB_PREFIXES)
    except PackageNotFoundError:
        return False


def _backend_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge  # noqa: PLC0415

    return bool(xla_bridge.backends_are_initialized())
