"""Lazy package exports (PEP 562): importing a package does not import its heavy modules.

``import project.config`` (what the pipeline declaration needs) must not start JAX, pandas or
matplotlib; names are imported from their module on first access instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that imports each name from its module on first use."""

    def __getattr__(name: str) -> Any:  # noqa: N807
        if name not in exports:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(exports[name]), name)

    return __getattr__
