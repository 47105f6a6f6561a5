"""Persist products atomically: orbax checkpoints of arrays plus human-readable metadata."""

from project._lazy import lazy_exports

_EXPORTS = {
    "MARKER_NAME": "project.persist.atomic",
    "atomic_directory": "project.persist.atomic",
    "load_bundle": "project.persist.bundle",
    "save_bundle": "project.persist.bundle",
    "load_solution": "project.persist.solution",
    "save_solution": "project.persist.solution",
}
__all__ = [
    "MARKER_NAME",
    "atomic_directory",
    "load_bundle",
    "load_solution",
    "save_bundle",
    "save_solution",
]
__getattr__ = lazy_exports(__name__, _EXPORTS)
