"""The source files each pipeline task runs, discovered from its code (``tasks.py``).

A task states ``sources: list[Path] = RUNS`` and ``@runs_sources`` fills that default with the
``project`` modules its body runs (``project.imports.modules_run_by``: what it imports and
names, closed under imports), so an edit of any module a task runs reruns it, and no list can
drift. The fingerprinted tasks (solve, estimate) also hash these files into their
fingerprints. Files that are no Python modules (the paper's Typst source) are declared as they
are.

``project.config`` is left out (its imports are followed): it is the pipeline's declaration, and
what a task reads from it reaches the task as hashed values (``tasks.py``), so an edit of one
variant's params or of the simulation's seed reruns exactly what reads them, not every solve
and estimation.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from project.errors import ConfigurationError
from project.imports import module_file, modules_run_by
from project.nodes import source_files

RUNS: Any = object()
"""The placeholder default of a task's ``sources`` parameter (``runs_sources`` replaces it)."""
SOURCES_PARAMETER = "sources"

Task = TypeVar("Task", bound=Callable[..., Any])


def runs_sources(func: Task) -> Task:
    """Return ``func`` with its ``sources`` default the node of the modules its body runs."""
    parameters = list(inspect.signature(func).parameters.values())
    defaults = list(func.__defaults__ or ())
    with_default = parameters[len(parameters) - len(defaults) :]
    names = [p.name for p in with_default]
    if SOURCES_PARAMETER not in names or defaults[names.index(SOURCES_PARAMETER)] is not RUNS:
        msg = (
            f"Task {func.__name__!r}: @runs_sources needs a parameter "
            f"'{SOURCES_PARAMETER}: list[Path] = RUNS' to fill with the modules the task runs."
        )
        raise ConfigurationError(msg)
    declaration = module_file("project.config")
    runs = [path for path in modules_run_by(func) if path != declaration]
    defaults[names.index(SOURCES_PARAMETER)] = source_files(runs)
    func.__defaults__ = tuple(defaults)
    return func


def declared_sources(func: Callable[..., Any]) -> list[Path]:
    """Return the files a task declares as its ``sources`` (what ``runs_sources`` filled in)."""
    default = inspect.signature(func).parameters[SOURCES_PARAMETER].default
    return list(default.value)


__all__ = ["RUNS", "declared_sources", "runs_sources"]
