"""Where the build's log records go: a file under ``bld/logs/``, the console on request.

Every process of a build (the main one, loky and dask workers, SLURM jobs) appends the INFO
records of our loggers (``project.*``: kernel choices, solve times, memory peaks) and every
warning to ``bld/logs/build.log``, one line per record with time, process and logger. pytask
also captures them per task and shows them with a failing task's report; ``pytask --log-cli
--log-cli-level=INFO`` streams them live. The file is a diary of builds, not a product: it holds
times and process ids, so it is the one file under ``bld/`` that differs between two builds.
"""

from __future__ import annotations

import logging
from pathlib import Path

FORMAT = "%(asctime)s pid %(process)d %(levelname)s %(name)s: %(message)s"


class _BuildLogHandler(logging.FileHandler):
    """Append to the build log, creating its folder when the first record arrives."""

    def _open(self):  # noqa: ANN202  (logging's own signature)
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def log_to_file(path: Path) -> None:
    """Append our INFO records and everyone's warnings to ``path`` (once per process)."""
    path = Path(path).resolve()
    root = logging.getLogger()
    if any(isinstance(h, _BuildLogHandler) and h.baseFilename == str(path) for h in root.handlers):
        return
    handler = _BuildLogHandler(path, delay=True, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(_ours_or_warnings)
    root.addHandler(handler)


def _ours_or_warnings(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or record.name.split(".")[0] == "project"
