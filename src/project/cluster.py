"""The SLURM backend of ``pytask --parallel-backend custom`` (registered in tasks.py)."""

from __future__ import annotations

import shlex
import shutil
from concurrent.futures import Executor

from project.checkout import ROOT_VARIABLE
from project.config import ROOT, SLURM_CLUSTER
from project.errors import ConfigurationError


def slurm_executor(n_workers: int) -> Executor:
    """Return a dask executor whose workers are SLURM jobs (``--parallel-backend custom``).

    Needs the optional dependencies: ``uv sync --extra cluster``. Settings: ``SLURM_CLUSTER``
    in src/project/config.py. Each job starts in the checkout being built, with ``$PROJECT_ROOT``
    set to it (also where a cluster does not pass the environment on to its jobs).
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
    cluster.scale(jobs=n_workers)
    return Client(cluster).get_executor()


def job_settings() -> dict:
    """Return ``SLURM_CLUSTER`` with a prologue that puts each job in the checkout being built."""
    prologue = [
        f"export {ROOT_VARIABLE}={shlex.quote(str(ROOT))}",
        f"cd {shlex.quote(str(ROOT))}",
    ]
    settings = dict(SLURM_CLUSTER)
    settings["job_script_prologue"] = [*prologue, *settings.get("job_script_prologue", [])]
    return settings
