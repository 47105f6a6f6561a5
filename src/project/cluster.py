"""The SLURM backend of ``pytask --parallel-backend custom`` (registered in tasks.py)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from concurrent.futures import Executor
from typing import Any

from project.checkout import ROOT_VARIABLE
from project.config import ROOT, SLURM_CLUSTER
from project.errors import ConfigurationError

SETTINGS_VARIABLE = "PROJECT_SLURM"
"""An environment variable holding a JSON object that overrides keys of ``SLURM_CLUSTER``."""


def slurm_executor(n_workers: int) -> Executor:
    """Return a dask executor whose workers are SLURM jobs (``--parallel-backend custom``).

    Needs ``dask-jobqueue`` (in the development set; ``uv sync --extra cluster`` elsewhere).
    Settings: ``SLURM_CLUSTER`` in src/project/config.py, with the keys of ``$PROJECT_SLURM``
    (a JSON object, e.g. ``{"cores": 2, "memory": "4GiB", "queue": "gpu"}``) in their place.
    Each job starts in the checkout being built, with ``$PROJECT_ROOT`` set to it (also where a
    cluster does not pass the environment on to its jobs).
    """
    if shutil.which("sbatch") is None:
        msg = (
            "--parallel-backend custom starts SLURM jobs, but `sbatch` is not on PATH: run it "
            "on a SLURM login node, or use `pytask -n K` (loky) on this machine."
        )
        raise ConfigurationError(msg)
    from dask_jobqueue import SLURMCluster  # noqa: PLC0415
    from distributed import Client  # noqa: PLC0415

    cluster = SLURMCluster(**job_settings())
    # Adaptive at a fixed size: a job that ends early (cancelled, preempted, out of time) is
    # replaced, and dask runs the tasks it held again on the new worker (the saves are atomic, so
    # a killed task leaves no half-written product); a task that kills its worker repeatedly
    # fails the build with KilledWorker instead of waiting forever.
    cluster.adapt(minimum_jobs=n_workers, maximum_jobs=n_workers)
    return Client(cluster).get_executor()


def job_settings() -> dict[str, Any]:
    """Return the cluster's settings with a prologue that puts each job in the checkout."""
    prologue = [
        f"export {ROOT_VARIABLE}={shlex.quote(str(ROOT))}",
        f"cd {shlex.quote(str(ROOT))}",
    ]
    settings = dict(SLURM_CLUSTER) | settings_from_environment()
    settings["job_script_prologue"] = [*prologue, *settings.get("job_script_prologue", [])]
    return settings


def settings_from_environment() -> dict[str, Any]:
    """Return the overrides in ``$PROJECT_SLURM`` (empty when it is unset)."""
    text = os.environ.get(SETTINGS_VARIABLE, "").strip()
    if not text:
        return {}
    try:
        overrides = json.loads(text)
    except json.JSONDecodeError as error:
        msg = (
            f"${SETTINGS_VARIABLE} must be a JSON object of SLURMCluster settings, e.g. "
            f'\'{{"cores": 2, "memory": "4GiB"}}\'; it does not parse ({error}): {text!r}.'
        )
        raise ConfigurationError(msg) from error
    if not isinstance(overrides, dict):
        msg = (
            f"${SETTINGS_VARIABLE} must be a JSON object (keys of SLURM_CLUSTER in "
            f"src/project/config.py), not {type(overrides).__name__}: {text!r}."
        )
        raise ConfigurationError(msg)
    return overrides
