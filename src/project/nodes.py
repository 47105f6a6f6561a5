"""pytask nodes for directory products (the one module besides ``tasks.py`` that uses pytask).

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

from dataclasses import dataclass
from pathlib import Path

from pytask import PathNode

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
