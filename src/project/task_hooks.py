"""pytask hooks of the pipeline (registered in pyproject.toml as ``hook_module``).

Two departures from pytask's defaults, both about respecting the user's time:

- **A task's own code is its state.** pytask 0.6 hashes a task's whole module file, so any
  edit to ``tasks.py`` would rerun every task in it. Here a task's state is the hash of its own
  source (``inspect.getsource``: decorators, signature with its dependency and product
  defaults, body), so editing one task reruns that task and what depends on its products.
  Values a task uses from module level must reach it as arguments (paths, ``PythonNode``), as
  they already must for pytask to track them.
- **The smoke profile builds in its own root.** With ``PROJECT_PROFILE=smoke`` the products go
  to ``bld/smoke/`` (``project.config.BLD``) and pytask's state (lock file and database) lives
  there too, so smoke and full builds never invalidate each other.

Only pytask-facing code lives here; the engine never imports it.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import fields
from typing import Any

from _pytask.lockfile import LockfileState
from pytask import Task, hookimpl

from project.config import BLD, PROFILE

STATE_DIRECTORY = ".pytask"


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


@hookimpl(trylast=True)
def pytask_post_parse(config: dict[str, Any]) -> None:
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
