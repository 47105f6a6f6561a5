"""Publish products without a gap: generations behind an atomically flipped link.

A directory product ``bld/x/solution`` is a symbolic link to a generation directory beside it,
``bld/x/.solution.<digest>``, named after the content digest of its marker. A save writes into a
staging directory ``.solution.writing-<host>-<pid>-<random>``, syncs every file and the
directory to disk, renames the staging directory to its generation name and then replaces the
link with ``os.replace`` (a ``rename(2)`` of a new link over the old one). At every instant the
product's path therefore resolves to the complete old or the complete new generation, never to
neither: a process killed at any point leaves one of them in place. The previous generation is
removed after the flip. Saving identical content again finds its generation already in place
and changes nothing (not even modification times).

A single-file product is written to ``.<name>.writing-<host>-<pid>-<random>`` beside it,
synced, and renamed over it (``atomic_file``).

Concurrent writers of one product are serialised where it matters: the clean-up of leftovers
and the publication (rename of the staging directory, then the link flip) run under the
product's lock, an exclusive ``flock(2)`` on ``.<name>.lock`` beside it (never removed). A
generation renamed but not yet linked by one writer can therefore never be taken for a
leftover by another, and two writers always end with one complete generation behind the link
(the last one published). Staging happens outside the lock, so writers still work in parallel.
The kernel drops the lock of a killed process.

Leftovers of killed writers (staging directories, temporaries, unreferenced generations) are
removed by the next save into the same folder: a staging name records its writer's host and
process id, and one whose process is still alive on this host (or is this process's own save in
progress) is left alone.

A full disk (``ENOSPC``, ``EDQUOT``) during a save removes the staging at once and raises
``DiskFullError`` naming the product, what it had written so far and the free space there
(also when a library, such as orbax through tensorstore, says so only in its message).

Promised on POSIX file systems with atomic ``rename(2)`` (local disks, NFS for one writer per
product): a killed process never exposes a partial product; after a power loss a product whose
link flip reached the disk is complete (files and directories are synced before the flip). Not
promised: locks on file systems without ``flock`` (some NFS set-ups: there, one writer per
product); readers that resolved the link before a flip may see the old generation disappear
once the writer removes it (pytask never reads a product while its task writes it); a product
path that is a plain directory (written by an older version) is moved aside once before the
first link is made, a short gap that happens only during that migration.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

from project.errors import DiskFullError

MARKER_NAME = "COMPLETE.json"
"""The file written last into every directory product: its digests describe the product."""
WRITING = "writing"
LOCK_SUFFIX = "lock"
DIGEST_LENGTH = 16
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_FULL_DISK_SIGNS = tuple(
    sign
    for code in DISK_FULL
    for sign in (os.strerror(code), f"os_error_code='{code}'", f'os_error_code="{code}"')
)
"""How a full disk shows in the message of a library's error that carries no error number."""
_IN_FLIGHT: set[str] = set()
"""Names of this process's stagings whose save is still running (entries live only as long as
their save): the clean-up of another save in this process must leave them alone."""


def _checkpoint(point: str) -> None:
    """Mark a point of a save (a no-op: tests replace it to force interleavings of writers)."""


def lock_path(target: Path) -> Path:
    """Return the lock file that serialises the publication and clean-up of ``target``."""
    return target.parent / f".{target.name}.{LOCK_SUFFIX}"


@contextlib.contextmanager
def product_lock(target: Path) -> Iterator[None]:
    """Hold ``target``'s exclusive lock (waiting for other writers) for the block."""
    descriptor = os.open(lock_path(target), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing the only descriptor releases the lock


def staging_path(target: Path) -> Path:
    """Return a fresh staging name beside ``target`` that records this host and process."""
    host = socket.gethostname().replace("-", "_")
    return target.parent / f".{target.name}.{WRITING}-{host}-{os.getpid()}-{secrets.token_hex(4)}"


def generation_path(target: Path, *, digest: str) -> Path:
    """Return the generation directory of ``target`` holding content with ``digest``."""
    return target.parent / f".{target.name}.{digest[:DIGEST_LENGTH]}"


@contextlib.contextmanager
def atomic_directory(target: Path, *, digest_of: Callable[[Path], str]) -> Iterator[Path]:
    """Yield a staging directory; publish it as ``target``'s generation when the block succeeds.

    ``digest_of(staging)`` is called after the block and names the generation (it writes the
    marker, see ``project.persist.manifest``).
    """
    target = Path(target).absolute()
    target.parent.mkdir(parents=True, exist_ok=True)
    _checkpoint("start")
    with product_lock(target):
        remove_leftovers(target)
    staging = staging_path(target)
    _IN_FLIGHT.add(staging.name)
    try:
        with _reporting_full_disk(target=target, staging=staging):
            staging.mkdir(mode=0o777)
            yield staging
            generation = generation_path(target, digest=digest_of(staging))
            sync_tree(staging)
        _checkpoint("staged")
        with product_lock(target):
            _checkpoint("locked")
            publish(staging=staging, generation=generation, target=target)
    finally:
        _IN_FLIGHT.discard(staging.name)
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _reporting_full_disk(*, target: Path, staging: Path) -> Iterator[None]:
    """Turn a full disk while staging into one ``DiskFullError`` (the staging removed first)."""
    try:
        yield
    except Exception as error:
        if not _caused_by_full_disk(error):
            raise
        written = _size_of(staging)
        _remove(staging)
        raise DiskFullError(_disk_full_message(target=target, written=written)) from None


def _caused_by_full_disk(error: BaseException) -> bool:
    """Say whether ``error`` or an exception it was raised from is a full disk.

    Python's own writes raise ``OSError`` with the error number; orbax's (tensorstore) raise
    ``ValueError`` whose message ends in the system's text and ``[os_error_code='28']``.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL:
            return True
        if any(sign in str(current) for sign in _FULL_DISK_SIGNS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _disk_full_message(*, target: Path, written: int) -> str:
    try:
        free = shutil.disk_usage(target.parent).free
    except OSError:
        free = 0
    exists = target.exists() or target.is_symlink()
    previous = f"the previous {target.name} is intact" if exists else "nothing was there before,"
    return (
        f"The disk is full: saving {target} stopped after writing {_mib(written)} (the product "
        f"needs at least that much, likely more), and {_mib(free)} are free on the file system "
        f"of {target.parent}. Nothing was published: {previous} and the partial copy was "
        "removed. Free space there (or point bld/ at a larger disk with a "
        "symbolic link) and run the build again."
    )


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:,.1f} MiB"


def _size_of(directory: Path) -> int:
    if not directory.exists():
        return 0
    if directory.is_file():
        return directory.stat().st_size
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def publish(*, staging: Path, generation: Path, target: Path) -> None:
    """Rename ``staging`` to ``generation`` (unless it exists) and point ``target`` at it.

    Call it holding ``product_lock(target)``: then no other writer is between its own rename and
    flip, and a generation that exists but is not linked is a leftover.
    """
    previous = current_generation(target)
    if generation.exists() and previous != generation:
        shutil.rmtree(generation)  # an unreferenced leftover under the same name
    if not generation.exists():
        staging.rename(generation)
    elif previous == generation and not _same_files(staging, generation):
        # The current generation was damaged in place: publish the repair under another name.
        generation = generation.with_name(generation.name + "-repaired")
        if generation.exists():
            shutil.rmtree(generation)
        staging.rename(generation)
    _checkpoint("renamed")
    if previous != generation:
        _flip_link(target, generation)
    sync_directory(target.parent)
    _checkpoint("flipped")
    remove_leftovers(target)


def current_generation(target: Path) -> Path | None:
    """Return the generation ``target`` links to (None when it is no link)."""
    if not target.is_symlink():
        return None
    return target.parent / target.readlink()


def _flip_link(target: Path, generation: Path) -> None:
    link = staging_path(target)
    link.symlink_to(generation.name, target_is_directory=True)
    if target.is_dir() and not target.is_symlink():  # the old layout: a plain directory
        legacy = staging_path(target)
        target.rename(legacy)
        link.replace(target)
        shutil.rmtree(legacy, ignore_errors=True)
        return
    link.replace(target)


def remove_leftovers(target: Path) -> None:
    """Remove dead writers' staging and temporaries and generations ``target`` does not use."""
    parent = target.parent
    if not parent.is_dir():
        return
    current = current_generation(target)
    prefix = f".{target.name}."
    for entry in parent.iterdir():
        if not entry.name.startswith(prefix) or entry == current:
            continue
        rest = entry.name[len(prefix) :]
        if rest == LOCK_SUFFIX:
            continue
        if rest.startswith(f"{WRITING}-"):
            if entry.name in _IN_FLIGHT or _writer_alive(rest):
                continue
        elif not _is_generation_name(rest) and not rest.startswith("old-"):  # old layout
            continue
        _remove(entry)


def _is_generation_name(rest: str) -> bool:
    digest = rest.removesuffix("-repaired")
    return len(digest) == DIGEST_LENGTH and all(c in "0123456789abcdef" for c in digest)


def _writer_alive(rest: str) -> bool:
    """Say whether the writer named in a staging suffix may still be running."""
    parts = rest.split("-")
    if len(parts) != 4 or not parts[2].isdigit():  # writing, host, pid, token
        return False
    host, pid = parts[1], int(parts[2])
    if host != socket.gethostname().replace("-", "_"):
        return True  # another machine's writer: its own next save cleans up
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(entry: Path) -> None:
    if entry.is_symlink() or entry.is_file():
        entry.unlink(missing_ok=True)
    else:
        shutil.rmtree(entry, ignore_errors=True)


def _same_files(left: Path, right: Path) -> bool:
    names = sorted(p.relative_to(left) for p in left.rglob("*") if p.is_file())
    if names != sorted(p.relative_to(right) for p in right.rglob("*") if p.is_file()):
        return False
    return all((left / n).read_bytes() == (right / n).read_bytes() for n in names)


@contextlib.contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; sync it and rename it over ``path`` on success."""
    path = Path(path).absolute()
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(path)  # a single rename publishes: no generation to protect, no lock
    temporary = staging_path(path)
    _IN_FLIGHT.add(temporary.name)
    try:
        with _reporting_full_disk(target=path, staging=temporary):
            yield temporary
            sync_file(temporary)
        temporary.replace(path)
        sync_directory(path.parent)
    finally:
        _IN_FLIGHT.discard(temporary.name)
        temporary.unlink(missing_ok=True)


def write_bytes_atomically(path: Path, content: bytes) -> None:
    """Replace ``path`` by ``content`` without a moment where it is partial."""
    with atomic_file(path) as temporary:
        temporary.write_bytes(content)


def copy_atomically(source: Path, destination: Path) -> None:
    """Copy ``source`` to ``destination`` without a moment where it is partial."""
    with atomic_file(destination) as temporary:
        shutil.copyfile(source, temporary)


def sync_file(path: Path) -> None:
    """Flush ``path``'s content to disk."""
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def sync_directory(path: Path) -> None:
    """Flush a directory's entries (names, renames) to disk where the platform allows it."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError as error:  # some file systems refuse fsync on directories
        if error.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(handle)


def sync_tree(root: Path) -> None:
    """Flush every file and directory under ``root`` (the root included) to disk."""
    for directory, _, files in os.walk(root):
        for name in files:
            sync_file(Path(directory) / name)
        sync_directory(Path(directory))
