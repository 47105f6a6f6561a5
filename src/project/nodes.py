"""pytask nodes of the pipeline: directory products, and the source files a task runs.

A directory product (a solution, a simulation bundle) is declared through its marker file,
``COMPLETE.json``. pytask's own path node follows only that file's modification time, so damage
to any other file inside the product would go unnoticed and the build would keep using it.
``DirectoryProduct``'s state is ``project.persist.manifest.directory_state``: the content digest
of a product whose every file matches its marker, else a "damaged" state. Any damage (a
truncated table, a flipped byte in an array file, an emptied marker, a removed or stray file)
changes it, so pytask reruns the producing task; a rebuild with the same content (only its
provenance differs) leaves it unchanged, so nothing downstream reruns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytask import PathNode, PythonNode

from project.persist.manifest import directory_state


@dataclass(kw_only=True)
class DirectoryProduct(PathNode):
    """A directory product declared through its marker; its state covers every file in it."""

    def state(self) -> str | None:
        """Return the product's fingerprint, or None when it is absent or incomplete."""
        return directory_state(Path(self.path).parent)


def directory_product(marker: Path) -> DirectoryProduct:
    """Return the node of the directory product whose marker is ``marker``."""
    return DirectoryProduct(name=Path(marker).as_posix(), path=Path(marker))


@dataclass(kw_only=True)
class SourceFiles(PythonNode):
    """The source files a task runs, as one dependency; the task receives the list of paths.

    Its state is one SHA-256 of every file's path and bytes (None when one is missing), so an
    edit to any of them reruns the task, while pytask records one state instead of one per
    file (about a hundred for the solve: a thousand fewer database writes per build).
    """

    def state(self) -> str | None:
        """Return the digest of the files' paths and contents, or None if one is missing."""
        digest = hashlib.sha256()
        for path in sorted(Path(p) for p in self.value):
            try:
                content = path.read_bytes()
            except OSError:
                return None
            digest.update(path.as_posix().encode() + b"\0" + content)
        return digest.hexdigest()


def source_files(paths: Iterable[Path]) -> SourceFiles:
    """Return the node of the source files ``paths`` (a task argument: ``list[Path]``)."""
    return SourceFiles(value=[Path(p) for p in paths], hash=True)
