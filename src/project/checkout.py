"""The checkout being built: where ``bld/``, ``paper/`` and ``data/`` are (no other imports)."""

from __future__ import annotations

import os
from pathlib import Path

SRC = Path(__file__).parent.resolve()
ROOT_VARIABLE = "PROJECT_ROOT"


def checkout_root() -> Path:
    """Return the checkout being built (the root of ``bld/``, ``paper/`` and ``data/``).

    ``$PROJECT_ROOT`` when set, else the nearest directory at or above the working directory
    holding both ``pyproject.toml`` and ``tasks.py``, else the checkout this package was
    installed from (a notebook run outside any checkout). Never the package's location first:
    two clones sharing one environment (worktrees) each build into their own ``bld/``. The
    pipeline's hooks export the root to ``$PROJECT_ROOT`` so that workers started elsewhere
    (loky, dask, SLURM jobs) build into the same one.
    """
    if os.environ.get(ROOT_VARIABLE):
        return Path(os.environ[ROOT_VARIABLE]).resolve()
    here = Path.cwd()
    for directory in (here, *here.parents):
        if (directory / "pyproject.toml").is_file() and (directory / "tasks.py").is_file():
            return directory
    return SRC.parents[1]
