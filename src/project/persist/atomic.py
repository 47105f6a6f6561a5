"""Write a directory product all-or-nothing.

Everything is written into a temporary sibling directory, which is renamed into place only
after the body finished. An exception or a killed process at any point leaves the previous
product intact and no directory under the target name that looks complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

MARKER_NAME = "COMPLETE.json"
"""The file written last into every directory product: its presence means "complete"."""


@contextlib.contextmanager
def atomic_directory(target: Path) -> Iterator[Path]:
    """Yield a fresh temporary directory that replaces ``target`` when the block succeeds."""
    target = Path(target).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.writing-", dir=target.parent))
    staging.chmod(0o777 & ~_current_umask())
    try:
        yield staging
        retired = None
        if target.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            target.rename(retired / target.name)
        staging.rename(target)
        if retired is not None:
            shutil.rmtree(retired, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
