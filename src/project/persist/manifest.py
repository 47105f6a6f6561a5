"""The marker of a directory product: every file's digest, written last and checked on read.

``COMPLETE.json`` lists each file of the product (path relative to the product, size, SHA-256),
the product's kind, a digest over that list (``sha256``, which names the product's generation,
see ``project.persist.atomic``) and one over the list without ``provenance.json``
(``content_sha256``: what the product says, not how and when it was made). Its presence means
"complete"; its content means "these bytes":

- ``verify_directory`` rehashes every file and raises ``CheckpointError`` naming the first file
  that is missing, extra, truncated or altered (the metadata included), so no loader ever uses
  a damaged product;
- ``directory_state`` is the state build tools see (``project.nodes``): the content digest of a
  product whose every file verifies, and a "damaged" state otherwise, so pytask reruns the
  producing task after any damage, and nothing downstream when a rebuild gave the same content.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from project.errors import CheckpointError
from project.persist.atomic import MARKER_NAME, sync_file

MANIFEST_VERSION = 1
PROVENANCE_NAME = "provenance.json"
"""How and when a product was made (fingerprint, versions): verified, but not its content."""


def file_digest(path: Path) -> str:
    """Return the SHA-256 of a file's bytes."""
    with Path(path).open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def product_files(directory: Path) -> list[str]:
    """Return the product's files (POSIX paths relative to it), the marker excluded, sorted.

    Files are regular files and links of any kind, at any depth; folders that are links are
    not entered, and a missing directory has none (as ``Path.rglob`` does). Read with
    ``os.scandir``: a build asks for the files of every directory product many times
    (``directory_state``).
    """
    if not os.path.isdir(directory):  # noqa: PTH112 (one call per read of a product)
        return []
    found = _files_below(os.fspath(directory), prefix="")
    return sorted(name for name in found if name != MARKER_NAME)


def _files_below(folder: str, *, prefix: str) -> list[str]:
    found: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    found += _files_below(entry.path, prefix=f"{prefix}{entry.name}/")
                elif entry.is_symlink() or entry.is_file():
                    found.append(f"{prefix}{entry.name}")
    except PermissionError:  # an unreadable folder lists nothing, as in ``Path.rglob``
        return []
    return found


def write_marker(directory: Path, *, kind: str, extra: dict[str, Any] | None = None) -> str:
    """Write the marker listing every file of ``directory``; return the manifest's digest."""
    directory = Path(directory)
    files = {
        name: {"bytes": (directory / name).stat().st_size, "sha256": file_digest(directory / name)}
        for name in product_files(directory)
    }
    digest = _manifest_digest(kind=kind, files=files)
    marker = {
        "kind": kind,
        "manifest_version": MANIFEST_VERSION,
        "files": files,
        "sha256": digest,
        "content_sha256": _manifest_digest(
            kind=kind, files={n: f for n, f in files.items() if n != PROVENANCE_NAME}
        ),
        **(extra or {}),
    }
    path = directory / MARKER_NAME
    path.write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n")
    sync_file(path)
    return digest


def _manifest_digest(*, kind: str, files: dict[str, dict[str, Any]]) -> str:
    text = json.dumps({"kind": kind, "files": files}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def read_marker(directory: Path, *, kind: str, hint: str) -> dict[str, Any]:
    """Return the marker of a complete product of ``kind``; raise ``CheckpointError`` otherwise."""
    directory = Path(directory)
    path = directory / MARKER_NAME
    if not path.is_file():
        reason = "does not exist" if not directory.exists() else f"has no {MARKER_NAME}"
        msg = (
            f"{directory} is not a complete {kind} ({reason}): its save was interrupted or "
            f"never ran. {hint}"
        )
        raise CheckpointError(msg)
    marker = _parse_json(path, kind=kind, hint=hint)
    files = marker.get("files") if isinstance(marker, dict) else None
    if (
        not isinstance(files, dict)
        or marker.get("kind") != kind
        or marker.get("sha256") != _manifest_digest(kind=kind, files=files)
    ):
        msg = (
            f"{path} is not the marker of a {kind} written by this version (wrong kind, no "
            f"file list, or a list that does not match its digest): the {kind} is damaged or "
            f"outdated. {hint}"
        )
        raise CheckpointError(msg)
    return marker


def read_json_object(
    path: Path, *, kind: str, hint: str, required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Return the JSON object in ``path`` (a file of a ``kind`` product) with ``required`` keys.

    Raises ``CheckpointError`` naming the file when it is unreadable, no JSON object, or lacks
    an entry.
    """
    content = _parse_json(path, kind=kind, hint=hint)
    if not isinstance(content, dict):
        msg = f"{path} does not hold a JSON object: the {kind} is damaged. {hint}"
        raise CheckpointError(msg)
    missing = sorted(set(required) - set(content))
    if missing:
        msg = (
            f"{path} lacks the entries {missing}: the {kind} is damaged or was written by "
            f"another version. {hint}"
        )
        raise CheckpointError(msg)
    return content


def _parse_json(path: Path, *, kind: str, hint: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        msg = f"{path} is not valid JSON ({error}): the {kind} is damaged. {hint}"
        raise CheckpointError(msg) from error


def verify_directory(
    directory: Path, *, kind: str, hint: str, names: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Check every file of ``directory`` (or only ``names``) against its marker; return it.

    Raises ``CheckpointError`` naming the first file that is missing, unlisted, or whose size
    or SHA-256 differs from the recorded one.
    """
    directory = Path(directory)
    marker = read_marker(directory, kind=kind, hint=hint)
    recorded = marker["files"]
    if names is not None:
        recorded = {n: recorded.get(n, {}) for n in names}
    present = (
        product_files(directory)
        if names is None
        else [n for n in names if (directory / n).is_file()]
    )
    for name in sorted(set(recorded) - set(present)):
        msg = f"{directory / name} is missing: the {kind} {directory} is damaged. {hint}"
        raise CheckpointError(msg)
    for name in sorted(set(present) - set(recorded)):
        msg = (
            f"{directory / name} is not part of the {kind} {directory} (not in its "
            f"{MARKER_NAME}): the product was altered. {hint}"
        )
        raise CheckpointError(msg)
    for name in present:
        path, entry = directory / name, recorded[name]
        if path.stat().st_size != entry.get("bytes") or file_digest(path) != entry.get("sha256"):
            msg = (
                f"{path} does not match the digest recorded in {directory / MARKER_NAME}: the "
                f"{kind} is damaged (a truncated or altered file). {hint}"
            )
            raise CheckpointError(msg)
    return marker


def directory_state(directory: Path) -> str | None:
    """Return the content digest of an intact product, a "damaged" state, or None (absent).

    Every file is hashed (cached per file path, inode and time stamps within a process).
    """
    directory = Path(directory)
    marker_path = directory / MARKER_NAME
    if not marker_path.is_file():
        return None
    try:
        marker = json.loads(marker_path.read_text())
        files = marker["files"]
        intact = (
            marker["sha256"] == _manifest_digest(kind=marker["kind"], files=files)
            and sorted(files) == product_files(directory)
            and all(
                _stat_digest(os.path.join(directory, n)) == f["sha256"]  # noqa: PTH118 (speed)
                for n, f in files.items()
            )
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        intact = False
    if intact and isinstance(marker.get("content_sha256"), str):
        return marker["content_sha256"]
    damage = hashlib.sha256(marker_path.read_bytes())
    for name in product_files(directory):
        damage.update(f"{name}|{_stat_digest(directory / name)}".encode())
    return f"damaged-{damage.hexdigest()}"


def _stat_digest(path: str | os.PathLike[str]) -> str:
    """Return a file's SHA-256, read again only when its inode or time stamps changed.

    The change time counts too: a rewrite that restores the modification time still changes it.
    """
    stat = os.stat(path)  # noqa: PTH116 (no Path object: a build calls this per file, often)
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    return _cached_digest(os.fspath(path), identity)


@functools.lru_cache(maxsize=4096)
def _cached_digest(path: str, identity: tuple[int, ...]) -> str:
    """Return the file's digest (``identity``, its stat fields, is only the cache's key)."""
    return file_digest(Path(path))
