"""Solve one variant in several processes (JAX multi-process): check, launch, wait.

A variant with ``processes`` > 1 (``project.config.Variant``) is solved by that many processes
of ``python -m project.solve_worker``, each holding its share of the blocks of the model's
``distributed`` states on its devices; every process saves its blocks into the one product
(``project.persist.solution.save_solution``), which the primary publishes. The launcher:

- ``srun`` (``$PROJECT_LAUNCHER=srun``, or ``auto`` inside a SLURM allocation): one job step of
  ``srun -n <processes>``; JAX finds the process ids and the coordinator in SLURM's
  environment. Inside an allocation each process gets its share of the allocation's CPUs;
  ``$PROJECT_SRUN_OPTIONS`` adds options (a partition, ``--gres=gpu:1``, ``--cpus-per-task``).
- ``local`` (``auto`` elsewhere): local processes with a loopback coordinator.

On CPUs each process gets one CPU device per block it holds, and gloo collectives.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from project.dispatch import choose_method
from project.errors import ConfigurationError, DistributedSolveError
from project.model.spec import Model
from project.regimes.spec import RegimeModel

logger = logging.getLogger("project.launch")

LAUNCHER_ENV = "PROJECT_LAUNCHER"
SRUN_OPTIONS_ENV = "PROJECT_SRUN_OPTIONS"
WORKER_KEYS = (
    "SPECIFICATION",
    "DIRECTORY",
    "FINGERPRINT",
    "CPU_DEVICES",
    "COORDINATOR",
    "PROCESS_ID",
    "PROCESSES",
)
"""The worker's inputs, passed in its environment as ``PROJECT_SOLVE_<key>`` (srun passes the
environment on); the last three only to local processes."""
LAUNCHERS = ("auto", "srun", "local")


def check_processes(*, model: Model | RegimeModel, name: str, processes: int) -> None:
    """Raise ``ConfigurationError`` unless ``model`` can be solved in ``processes`` processes."""
    if processes == 1:
        return
    where = f"Variant {name!r} sets processes={processes}"
    if isinstance(model, RegimeModel):
        msg = (
            f"{where}, but its model has regimes, which cannot be sharded yet. Set processes=1 "
            "in src/project/config.py, or use a model without regimes whose permanent types "
            "are distributed (e.g. 'lifecycle' with distributed_types=True)."
        )
        raise ConfigurationError(msg)
    if not model.permanent_states:
        msg = (
            f"{where}, but its model has no distributed state to share among the processes. "
            "Mark a permanent discrete state distributed (for 'lifecycle': sizes "
            "distributed_types=True) or set processes=1."
        )
        raise ConfigurationError(msg)
    if choose_method(model, method=None) != "grid":
        msg = (
            f"{where}, but its model solves by (DC-)EGM, which runs on one device. Leave out "
            "the savings grid (n_savings) so that it solves by grid search, or set processes=1."
        )
        raise ConfigurationError(msg)
    blocks = block_count(model)
    if blocks % processes:
        msg = (
            f"{where}, but its distributed states have {blocks} blocks, which do not split "
            f"evenly over {processes} processes. Use a process count that divides {blocks}."
        )
        raise ConfigurationError(msg)


def block_count(model: Model) -> int:
    """Return the number of blocks of the model's distributed states (one per device)."""
    return math.prod(model.states[s].n_points for s in model.permanent_states)


def solve_in_processes(
    *,
    specification: dict[str, Any],
    model: Model,
    directory: Path,
    fingerprint: str,
) -> None:
    """Solve ``specification`` in its ``processes`` processes into ``directory``.

    Raises ``DistributedSolveError`` with the processes' output when one of them fails.
    """
    processes = specification["processes"]
    check_processes(model=model, name=specification["name"], processes=processes)
    how = chosen_launcher()
    env = os.environ | _worker_env(
        SPECIFICATION=json.dumps(specification),
        DIRECTORY=str(Path(directory).resolve()),
        FINGERPRINT=fingerprint,
        CPU_DEVICES=str(block_count(model) // processes),
    )
    started = time.perf_counter()
    run = _run_srun if how == "srun" else _run_local
    for said in run(processes=processes, env=env):
        logger.info("The solve processes said:\n%s", said.strip()[-4000:])
    logger.info(
        "Solved %r in %d processes (%s) in %.1f s.",
        specification["name"],
        processes,
        how,
        time.perf_counter() - started,
    )


def chosen_launcher() -> str:
    """Return "srun" or "local" as ``$PROJECT_LAUNCHER`` says ("auto": srun in an allocation)."""
    choice = os.environ.get(LAUNCHER_ENV, "auto")
    if choice not in LAUNCHERS:
        msg = f"{LAUNCHER_ENV}={choice!r} is no launcher: use one of {list(LAUNCHERS)}."
        raise ConfigurationError(msg)
    if choice == "auto":
        return "srun" if "SLURM_JOB_ID" in os.environ and shutil.which("srun") else "local"
    if choice == "srun" and not shutil.which("srun"):
        msg = f"{LAUNCHER_ENV}=srun, but no srun is on PATH: load SLURM or set it to 'local'."
        raise ConfigurationError(msg)
    return choice


def worker_setting(key: str, *, required: bool = True) -> str | None:
    """Return the worker input ``key`` (one of ``WORKER_KEYS``) from the environment."""
    value = os.environ.get(f"PROJECT_SOLVE_{key}")
    if value is None and required:
        msg = (
            f"PROJECT_SOLVE_{key} is not set: project.solve_worker is started by "
            "project.launch (a variant with processes > 1), not by hand."
        )
        raise ConfigurationError(msg)
    return value


def _worker_env(**values: str) -> dict[str, str]:
    return {f"PROJECT_SOLVE_{key}": value for key, value in values.items()}


def _worker_command() -> list[str]:
    return [sys.executable, "-m", "project.solve_worker"]


def _run_srun(*, processes: int, env: dict[str, str]) -> list[str]:
    """Run the workers as one ``srun`` job step; return its output, or raise with it."""
    command = ["srun", f"--ntasks={processes}", "--kill-on-bad-exit=1"]
    cpus = os.environ.get("SLURM_CPUS_ON_NODE")
    if "SLURM_JOB_ID" in os.environ and cpus:  # a step inside an allocation: share its CPUs
        command.append(f"--cpus-per-task={max(1, int(cpus) // processes)}")
    command += shlex.split(os.environ.get(SRUN_OPTIONS_ENV, ""))
    with tempfile.TemporaryFile(mode="w+") as output:
        done = subprocess.run(
            [*command, *_worker_command()],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            check=False,
        )
        if done.returncode:
            _raise_failed(f"`{shlex.join(command)}` exited with {done.returncode}", [output])
        return _contents([output])


def _run_local(*, processes: int, env: dict[str, str]) -> list[str]:
    """Run the workers as local processes with a loopback coordinator; return their output.

    Once one fails, the others are stopped (they would wait for it) and the error says why.
    """
    port = _free_port()
    with contextlib.ExitStack() as stack:
        outputs = [stack.enter_context(tempfile.TemporaryFile(mode="w+")) for _ in range(processes)]
        workers = [
            subprocess.Popen(
                _worker_command(),
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env
                | _worker_env(
                    COORDINATOR=f"127.0.0.1:{port}", PROCESS_ID=str(i), PROCESSES=str(processes)
                ),
            )
            for i, output in enumerate(outputs)
        ]
        stack.callback(_stop, workers)
        codes = _wait_all(workers)
        failed = [i for i, code in enumerate(codes) if code]
        if failed:
            _raise_failed(f"local solve process(es) {failed} exited with {codes}", outputs)
        return _contents(outputs)


def _stop(workers: list[subprocess.Popen]) -> None:
    """Kill the workers still running (the parent was interrupted or one failed)."""
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _wait_all(workers: list[subprocess.Popen]) -> list[int]:
    """Wait for every worker; once one fails, stop the others (they would wait for it)."""
    while any(w.poll() is None for w in workers):
        if any(w.poll() not in (None, 0) for w in workers):
            _stop(workers)
            break
        time.sleep(0.2)
    return [w.returncode for w in workers]


def _contents(outputs: list[IO[str]]) -> list[str]:
    for output in outputs:
        output.seek(0)
    return [output.read() for output in outputs]


def _raise_failed(what: str, outputs: list[IO[str]]) -> None:
    tails = [text[-4000:] for text in _contents(outputs)]
    msg = (
        f"The multi-process solve failed: {what}. The processes' output ends:\n"
        + "\n---\n".join(tails)
        + "\nFix the cause above and run pytask again (no half-written solution is published)."
    )
    raise DistributedSolveError(msg)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
