"""Set XLA flags that our benchmarks showed to matter, before JAX starts a backend.

On jaxlib 0.10 CPU, XLA hands fused reductions to YNNPACK, which made the vmap-and-max solve
kernel 15-20x slower; disabling those fusion types fixes it. XLA aborts on flags it does not
know, so the flag is only added for jaxlib versions where it was verified. Set
``PROJECT_KEEP_XLA_FLAGS=1`` to leave ``XLA_FLAGS`` untouched.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, version

logger = logging.getLogger(__name__)

YNN_FLAG = "--xla_cpu_experimental_ynn_fusion_type=-reduce,-eltwise"
VERIFIED_JAXLIB_PREFIXES = ("0.10.",)


def configure_xla_flags() -> bool:
    """Add the YNNPACK flag to ``XLA_FLAGS`` where it is known to help; return whether added."""
    if os.environ.get("PROJECT_KEEP_XLA_FLAGS") == "1":
        return False
    try:
        jaxlib_version = version("jaxlib")
    except PackageNotFoundError:
        return False
    if not jaxlib_version.startswith(VERIFIED_JAXLIB_PREFIXES):
        return False
    current = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_experimental_ynn_fusion_type" in current:
        return False
    if _backend_started():
        logger.debug("JAX backend already started; XLA_FLAGS left unchanged.")
        return False
    os.environ["XLA_FLAGS"] = f"{current} {YNN_FLAG}".strip()
    return True


def _backend_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge  # noqa: PLC0415

    return bool(xla_bridge.backends_are_initialized())
