"""A full disk: one short ``DiskFullError``, the old product intact, no partial copy left.

The real tests mount a small tmpfs (they skip when mounting is not permitted: not root, or no
``mount``) and fill it by saving a product larger than it, through Python's writes, through
orbax (tensorstore, whose error carries no error number) and as a single file. A tiny pytask
project shows that pytask reports the error by its message, without a traceback.
"""

import errno
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from project.errors import DiskFullError
from project.persist.atomic import (
    WRITING,
    atomic_directory,
    lock_path,
    write_bytes_atomically,
)
from project.persist.checkpoint import write_checkpoint
from project.persist.manifest import verify_directory, write_marker

DISK_MIB = 4


@pytest.fixture
def small_disk(tmp_path):
    """Yield a directory on a fresh ``DISK_MIB`` MiB tmpfs (skip when it cannot be mounted)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m", "tmpfs", str(disk)],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        pytest.skip("no `mount` here")
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def save(target: Path, write) -> None:
    with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="t")) as staging:
        write(staging)


def small(staging: Path) -> None:
    (staging / "data.bin").write_bytes(b"old" * 1000)


def only_product_beside(target: Path) -> list[str]:
    names = {target.name, target.resolve().name, lock_path(target).name}
    return sorted(p.name for p in target.parent.iterdir() if p.name not in names)


def assert_old_product_intact(target: Path) -> None:
    verify_directory(target, kind="t", hint="")
    assert (target / "data.bin").read_bytes() == b"old" * 1000
    assert only_product_beside(target) == [], "the partial copy was left behind"


def assert_names_the_product_and_the_space(error: DiskFullError, target: Path) -> None:
    message = str(error)
    assert message.startswith("The disk is full")
    assert str(target) in message and "MiB are free" in message and "at least" in message
    assert len(message.splitlines()) == 1


def test_python_writes_filling_the_disk(small_disk):
    target = small_disk / "product"
    save(target, small)

    def too_big(staging: Path) -> None:
        for index in range(2 * DISK_MIB):
            (staging / f"part{index}.bin").write_bytes(os.urandom(2**20))

    with pytest.raises(DiskFullError) as caught:
        save(target, too_big)
    assert_names_the_product_and_the_space(caught.value, target)
    assert_old_product_intact(target)
    save(target, small)  # the space came back: the next save works


def test_orbax_filling_the_disk(small_disk):
    target = small_disk / "product"
    save(target, small)
    tree = {"a": np.random.default_rng(0).random((1000, 1000))}  # 7.6 MiB, incompressible
    with pytest.raises(DiskFullError) as caught:
        save(target, lambda staging: write_checkpoint(staging / "arrays", tree))
    assert_names_the_product_and_the_space(caught.value, target)
    assert_old_product_intact(target)


def test_a_single_file_filling_the_disk(small_disk):
    path = small_disk / "table.bin"
    write_bytes_atomically(path, b"old")
    with pytest.raises(DiskFullError) as caught:
        write_bytes_atomically(path, os.urandom(2 * DISK_MIB * 2**20))
    assert str(path) in str(caught.value)
    assert path.read_bytes() == b"old"
    assert [p.name for p in small_disk.iterdir()] == ["table.bin"]


def test_a_library_error_that_only_says_the_disk_is_full_is_recognised(tmp_path):
    """tensorstore's form: a ValueError without an error number."""
    target = tmp_path / "product"
    save(target, small)

    def tensorstore_like(staging: Path) -> None:
        (staging / "a").write_bytes(b"x" * 3 * 2**20)
        msg = (
            'RESOURCE_EXHAUSTED: Error writing local file "a/0.0": Failed to write 6468565 bytes '
            "to file 14: No space left on device [os_error_code='28']"
        )
        raise ValueError(msg)

    with pytest.raises(DiskFullError, match=re.escape("after writing 3.0 MiB")):
        save(target, tensorstore_like)
    assert_old_product_intact(target)
    assert not [p for p in tmp_path.iterdir() if WRITING in p.name]


def test_a_quota_is_a_full_disk_too(tmp_path):
    def over_quota(staging: Path) -> None:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    with pytest.raises(DiskFullError):
        save(tmp_path / "product", over_quota)


TASKS = textwrap.dedent("""
    import errno
    from pathlib import Path
    from project.config import BLD
    from project.persist.atomic import write_bytes_atomically

    def task_fill_the_disk(produces: Path = BLD / "big.bin") -> None:
        def full(self, *args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        Path.write_bytes = full
        write_bytes_atomically(produces, b"x")
""")


def test_pytask_reports_a_full_disk_in_a_few_lines(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytask.ini_options]\npaths = ["tasks.py"]\ntask_files = ["tasks.py"]\n'
    )  # the pipeline's hooks are a pytask plugin of the environment (an entry point)
    (tmp_path / "tasks.py").write_text(TASKS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROJECT_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytask"],
        cwd=tmp_path,
        env=env | {"COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode != 0
    assert "DiskFullError: The disk is full: saving" in output, output
    assert str(tmp_path / "bld" / "big.bin") in output
    assert "write_bytes_atomically" not in output, "the traceback was shown"
    assert "Traceback" not in output, output
