"""A throwaway checkout for a real ``pytask`` run: a pyproject and a tasks module, nothing else.

Used by the tests that build in a subprocess (the build guards, the parallel loop's polling).
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PYPROJECT = textwrap.dedent("""
    [tool.pytask.ini_options]
    paths = ["tasks.py"]
    task_files = ["tasks.py"]
""")


def make_checkout(root: Path, *, tasks: str) -> Path:
    """Create ``root`` holding the pyproject and ``tasks`` as its tasks.py; return it."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tasks.py").write_text(tasks)
    return root


def environment() -> dict[str, str]:
    """Return this process's environment without the project's build settings."""
    env = dict(os.environ)
    for name in ("PROJECT_ROOT", "PROJECT_PROFILE", "PROJECT_WAIT_FOR_BUILD_LOCK"):
        env.pop(name, None)
    return env


def run_python(
    directory: Path, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run ``python *arguments`` in ``directory`` with that environment (and ``env``)."""
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=directory,
        env=environment() | (env or {}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
