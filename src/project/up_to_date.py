"""Up-to-date products: fingerprints of what made them, JSON rewritten only when it changed.

A fingerprint hashes everything that determines a product (a specification, the engine's source
files, package versions); a task whose product is intact and carries the expected fingerprint
returns at once, so an edit of the pipeline declaration does not repeat a long solve.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from project.errors import CheckpointError
from project.persist.atomic import MARKER_NAME, write_bytes_atomically
from project.persist.solution import (
    package_versions,
)
from project.provenance import PROVENANCE_KEY, product_provenance, without_provenance

logger = logging.getLogger("project.pipeline")


def write_json_if_changed(
    *, content: dict[str, Any], path: Path, provenance: Mapping[str, str] | None = None
) -> bool:
    """Write ``content`` and its provenance as sorted JSON unless unchanged; return if written.

    The ``"provenance"`` entry (``provenance``, default ``product_provenance`` of ``content``)
    is left out of the comparison, so a new commit alone rewrites nothing (and reruns nothing
    downstream); a file without one (an older build) is rewritten once.
    """
    path = Path(path)
    bare = without_provenance(content)
    try:
        recorded = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        recorded = None
    if (
        isinstance(recorded, dict)
        and isinstance(recorded.get(PROVENANCE_KEY), dict)
        and json.dumps(without_provenance(recorded), sort_keys=True)
        == json.dumps(bare, sort_keys=True)
    ):
        return False
    if provenance is None:
        provenance = product_provenance(config=bare)
    text = json.dumps({**bare, PROVENANCE_KEY: dict(provenance)}, indent=2, sort_keys=True)
    write_bytes_atomically(path, (text + "\n").encode())
    return True


def read_specification(path: Path) -> dict[str, Any]:
    """Return the variant specification in ``path`` (a ``model.json``) without its provenance.

    What a task computes from a specification (fingerprints, config digests, models) depends on
    the model, never on the commit that happened to write the file.
    """
    return without_provenance(json.loads(Path(path).read_text()))


def fingerprint(*, specification: dict[str, Any], sources: Sequence[Path]) -> str:
    """Return a SHA-256 of the specification, the sources' bytes and package versions."""
    digest = hashlib.sha256(json.dumps(specification, sort_keys=True).encode())
    for source in sorted(Path(s) for s in sources):
        digest.update(source.name.encode() + Path(source).read_bytes())
    digest.update(json.dumps(package_versions(), sort_keys=True).encode())
    return digest.hexdigest()


def intact_fingerprint(
    directory: Path, *, read: Callable[[Path], str | None], again: str
) -> str | None:
    """Return the fingerprint ``read`` finds in the verified product (None: absent, damaged).

    ``read`` verifies the product and raises ``CheckpointError`` when it is damaged, which is
    logged ("<again> again: ...") so that the caller builds it again.
    """
    if not (directory / MARKER_NAME).exists():  # never built (pytask made the empty folder)
        return None
    try:
        return read(directory)
    except CheckpointError as error:
        logger.warning("%s again: %s", again, error)
        return None
