"""pytask hooks of the pipeline (registered in pyproject.toml as ``hook_module``).

Three departures from pytask's defaults, all about respecting the user's time:

- **A task's own code is its state.** pytask 0.6 hashes a task's whole module file, so any
  edit to ``tasks.py`` would rerun every task in it. Here a task's state is the hash of its own
  source (``inspect.getsource``: decorators, signature with its dependency and product
  defaults, body), so editing one task reruns that task and what depends on its products.
  Values a task uses from module level must reach it as arguments (paths, ``PythonNode``), as
  they already must for pytask to track them.
- **The smoke profile builds in its own root.** With ``PROJECT_PROFILE=smoke`` the products go
  to ``bld/smoke/`` (``project.config.BLD``) and pytask's state (lock file and database) lives
  there too, so smoke and full builds never invalidate each other.
- **A parallel build starts a finished task's successors at once.** pytask-parallel 0.5's loop
  sleeps between looks at its running tasks, longer and longer (to 1 s) while none is ready; it
  sees a task finished only after its sleep and submits the successors after one more, so each
  waited 1-2 s once the sleep had grown. During a build its sleeps stay at most 50 ms
  (``POLL_SECONDS``): the successors start within about 0.1 s.

And three guards of the products:

- **One build per build root.** ``pytask`` takes an exclusive lock on ``<BLD>/.build.lock``
  before it runs anything; a second build of the same root refuses at once with
  ``BuildLockedError`` naming the running one, or waits for it with ``--wait-for-build-lock``
  (or ``PROJECT_WAIT_FOR_BUILD_LOCK=1``). The kernel releases the lock of a killed build.
- **The checkout being built is the one pytask runs in** (``project.config.checkout_root``); it
  is exported as ``$PROJECT_ROOT`` so that every worker builds into the same ``bld/``.
- **A full disk is one line**, not a traceback: ``DiskFullError`` is reported by its message.

Only pytask-facing code lives here; the engine never imports it.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import inspect
import logging
import os
import socket
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from _pytask.lockfile import LockfileState
from pytask import Task, hookimpl
from pytask_parallel import execute as parallel_execution

from project.checkout import ROOT_VARIABLE
from project.config import BLD, PROFILE, ROOT
from project.errors import BuildLockedError, ConfigurationError, DiskFullError

STATE_DIRECTORY = ".pytask"
BUILD_LOCK = ".build.lock"
WAIT_OPTION = "wait_for_build_lock"
WAIT_VARIABLE = "PROJECT_WAIT_FOR_BUILD_LOCK"
LOCK_KEY = "project_build_lock"
ROOT_KEY = "project_previous_root"
POLL_SECONDS = (0.01, 0.02, 0.03, 0.05)
"""The sleeps of a parallel build's loop between looks at its running tasks: from the first after
a task started to the longest, kept while none is ready (pytask-parallel's own grow to 1 s). On
this project's 2-core CPU a smoke build with ``-n 4`` (loky) took 31 s against 35.6 s, its model
chains on dask with two workers 14 s against 22 s; the looks cost no measurable CPU."""
logger = logging.getLogger(__name__)


class SourceStateTask(Task):
    """A task whose state is the hash of its function's source, not of its whole module."""

    def state(self) -> str | None:
        """Return the SHA-256 of the task function's source (None if it cannot be read)."""
        try:
            source = inspect.getsource(self.function)
        except (OSError, TypeError):
            return super().state()
        return hashlib.sha256(source.encode()).hexdigest()


def _own_state_root() -> bool:
    return PROFILE != "default"


@hookimpl(tryfirst=True)
def pytask_parse_config(config: dict[str, Any]) -> None:
    """Keep the smoke profile's database in its build root (unless a URL was given)."""
    if _own_state_root() and not config.get("database_url"):
        directory = BLD / STATE_DIRECTORY
        directory.mkdir(parents=True, exist_ok=True)
        config["database_url"] = f"sqlite:///{directory.as_posix()}/pytask.sqlite3"


def _keep_smoke_lockfile(config: dict[str, Any]) -> None:
    """Keep the smoke profile's lock file in its build root."""
    if not _own_state_root() or "lockfile_state" not in config:
        return
    path = BLD / "pytask.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    config["lockfile_path"] = path
    config["lockfile_state"] = LockfileState.from_path(path, config["root"])


@hookimpl(tryfirst=True)
def pytask_collect_modify_tasks(session: Any, tasks: list[Any]) -> None:
    """Give every collected task its own source as its state."""
    for index, task in enumerate(tasks):
        if type(task) is Task:
            tasks[index] = SourceStateTask(
                **{field.name: getattr(task, field.name) for field in fields(task) if field.init}
            )


@hookimpl
def pytask_extend_command_line_interface(cli: click.Group) -> None:
    """Add ``--wait-for-build-lock`` to ``pytask build``."""
    cli.commands["build"].params.append(
        click.Option(
            ["--wait-for-build-lock", WAIT_OPTION],
            is_flag=True,
            default=False,
            help=(
                "Wait for another build of the same build root to finish instead of refusing "
                f"to start (also: {WAIT_VARIABLE}=1)."
            ),
        )
    )


@hookimpl(trylast=True)
def pytask_post_parse(config: dict[str, Any]) -> None:
    """Keep the smoke profile's lock file in its build root; guard the build root."""
    _keep_smoke_lockfile(config)
    if config.get("command") != "build":
        return
    _check_checkout(Path(config["root"]))
    config[ROOT_KEY] = os.environ.get(ROOT_VARIABLE)  # restored when the build ends
    os.environ[ROOT_VARIABLE] = str(ROOT)  # workers (loky, dask, SLURM) build here too
    wait = bool(config.get(WAIT_OPTION)) or os.environ.get(WAIT_VARIABLE, "") == "1"
    config[LOCK_KEY] = acquire_build_lock(BLD, wait=wait)


@hookimpl
def pytask_unconfigure(session: Any) -> None:
    """Release the build lock; give ``$PROJECT_ROOT`` back its value from before the build."""
    descriptor = session.config.pop(LOCK_KEY, None)
    if descriptor is not None:
        os.close(descriptor)
    if ROOT_KEY in session.config:
        previous = session.config.pop(ROOT_KEY)
        if previous is None:
            os.environ.pop(ROOT_VARIABLE, None)
        else:
            os.environ[ROOT_VARIABLE] = previous


@hookimpl(wrapper=True)
def pytask_execute_build() -> Generator[None, Any, Any]:
    """Run the build; a parallel one looks at its running tasks every ``POLL_SECONDS``."""
    with prompt_polling():
        return (yield)


@contextmanager
def prompt_polling() -> Iterator[None]:
    """Cap pytask-parallel's sleeps between looks at its running tasks within the block.

    Its loop makes a new ``_Sleeper`` per build: within the block that is one with our sleeps
    (the class's own argument); after it, the class again, unless another build replaced it
    meanwhile. A pytask-parallel whose sleeper is not that class (a private name, which
    ``tests/test_parallel_polling.py`` pins) builds as it would without this.
    """
    original = getattr(parallel_execution, "_Sleeper", None)
    try:
        prompt = functools.partial(original, timings=list(POLL_SECONDS))
        prompt()
    except TypeError:  # no such class, or no such argument
        logger.debug("pytask-parallel's sleeper takes no timings: its own sleeps are kept.")
        yield
        return
    parallel_execution._Sleeper = prompt
    try:
        yield
    finally:
        if parallel_execution._Sleeper is prompt:
            parallel_execution._Sleeper = original


@hookimpl(tryfirst=True)
def pytask_execute_task_process_report(session: Any, report: Any) -> None:
    """Report a full disk by its message alone (the traceback says nothing more)."""
    if report.exc_info and isinstance(report.exc_info[1], DiskFullError):
        error = report.exc_info[1]
        report.exc_info = (type(error), error, None)


def _check_checkout(pytask_root: Path) -> None:
    if pytask_root.resolve() != ROOT:
        msg = (
            f"pytask builds the project in {pytask_root}, but the products would go to {ROOT} "
            f"(the checkout found from the working directory {Path.cwd()} or ${ROOT_VARIABLE}). "
            f"Run pytask from inside the checkout you want to build, or set {ROOT_VARIABLE}."
        )
        raise ConfigurationError(msg)


def acquire_build_lock(build_root: Path, *, wait: bool) -> int:
    """Take the build root's lock and return its descriptor; refuse or wait when it is held."""
    build_root.mkdir(parents=True, exist_ok=True)
    path = build_root / BUILD_LOCK
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = path.read_text().strip() or "a build that has not said who it is"
        if not wait:
            os.close(descriptor)
            msg = (
                f"Another build is running in {build_root} ({holder}; lock {path}). Two builds "
                "of one build root would race on every product. Wait for it to finish, stop it, "
                f"or run `pytask --wait-for-build-lock` (or set {WAIT_VARIABLE}=1) to start "
                "when it is done."
            )
            raise BuildLockedError(msg) from None
        logger.warning("Waiting for the build running in %s (%s) to finish.", build_root, holder)
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    started = datetime.now(tz=UTC).isoformat(timespec="seconds")
    os.ftruncate(descriptor, 0)
    os.pwrite(
        descriptor, f"pid {os.getpid()} on {socket.gethostname()} since {started}".encode(), 0
    )
    return descriptor
