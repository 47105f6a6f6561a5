"""Persist products atomically: orbax checkpoints of arrays plus human-readable metadata."""

from project.persist.atomic import atomic_directory
from project.persist.bundle import load_bundle, save_bundle
from project.persist.solution import MARKER_NAME, load_solution, save_solution

__all__ = [
    "MARKER_NAME",
    "atomic_directory",
    "load_bundle",
    "load_solution",
    "save_bundle",
    "save_solution",
]
