"""Two live writers of one product never lose it: every interleaving of their publications.

Each writer runs in its own process and stops at every named point of a save
(``project.persist.atomic._checkpoint``: start, staged, locked, renamed, flipped) until told to go
on. For every pair of stopping points, both resume orders and same or different content, the
product must end as a link to one complete, verified generation holding one writer's content,
with nothing else beside it, and both writers must succeed; a writer that needs the lock while
the other, stopped, holds it must wait. 5 x 5 stopping points x 2 resume orders x 2 contents:
100 schedules. The old code lost the product (a dangling link) in 11 of the 50 schedules with
different content, whenever one writer stopped after its rename or before its flip while the
other cleaned up.
"""

import fcntl
import functools
import os
import select
import subprocess
import sys
import tempfile
import textwrap
import time
from itertools import product
from pathlib import Path

import pytest

from project.persist.atomic import atomic_directory, current_generation, lock_path
from project.persist.manifest import verify_directory, write_marker

ROOT = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": str(ROOT / "src")}
POINTS = ("start", "staged", "locked", "renamed", "flipped")
HOLDING_THE_LOCK = ("locked", "renamed", "flipped")
"""A writer stopped at one of these holds the product's lock."""
LOCK_TAKEN_AFTER = ("start", "staged")
"""A writer going on from one of these takes the lock before its next point."""
LOCKS = Path("/proc/locks")
"""Linux lists every lock here, a process waiting for one on a line marked ``->``."""
POLL_S = 0.005
"""How often a silent writer is looked up among the processes waiting for a lock."""
BLOCKED_AFTER_S = 0.5
"""Without ``/proc/locks``: a writer silent this long while the other holds the lock waits."""
PATIENCE_S = 120.0
"""A writer silent this long otherwise is stuck (a slow machine is not taken for a lock wait)."""

WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from project.persist import atomic
    from project.persist.manifest import write_marker

    def checkpoint(point):
        print("at", point, flush=True)
        assert sys.stdin.readline().strip() == "go"

    atomic._checkpoint = checkpoint
    target, content = Path(sys.argv[1]), sys.argv[2]
    with atomic.atomic_directory(
        target, digest_of=lambda s: write_marker(s, kind="test")
    ) as staging:
        for name in ("a.bin", "b/c.bin"):
            (staging / name).parent.mkdir(exist_ok=True)
            (staging / name).write_text(content * 100 + name)
    print("done", flush=True)
""")


def flocks() -> set[tuple[bool, int, int]]:
    """Return ``/proc/locks``'s ``flock`` lines as (waiting, process id, inode).

    A line reads ``1: FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF``; a process
    waiting for the lock has ``->`` after the number.
    """
    found = set()
    for line in LOCKS.read_text().splitlines():
        fields = line.split()[1:]
        waiting = fields[:1] == ["->"]
        fields = fields[waiting:]
        if len(fields) > 4 and fields[0] == "FLOCK":
            found.add((waiting, int(fields[3]), int(fields[4].rpartition(":")[2])))
    return found


@functools.cache
def locks_are_listed() -> bool:
    """Return whether ``/proc/locks`` shows this process's own ``flock`` (not in every sandbox)."""
    if not LOCKS.exists():
        return False
    with tempfile.TemporaryFile() as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        return (False, os.getpid(), os.fstat(handle.fileno()).st_ino) in flocks()


class Writer:
    """A writer process driven point by point over its standard input and output."""

    def __init__(self, target: Path, content: str) -> None:
        self.target = target
        self.content = content
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), content],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.waiting = False  # stopped at a point, not yet told to go on
        self.last: str | None = None  # the last point reached

    @property
    def holds_lock(self) -> bool:
        return self.waiting and self.last in HOLDING_THE_LOCK

    def run(self, *, stop_at: str | None = None, other: "Writer | None" = None) -> str:
        """Go on until ``stop_at`` ("stopped"), the end ("done") or a lock wait ("blocked").

        A lock wait is only taken for one while ``other`` holds the lock.
        """
        if self.waiting:
            self._send_go()
        while True:
            may_wait = other is not None and other.holds_lock and self.last in LOCK_TAKEN_AFTER
            if not self._speaks(may_wait=may_wait):
                return "blocked"
            line = self.process.stdout.readline().strip()
            if line == "done" or not line:
                assert self.process.wait(timeout=30) == 0, self.process.stderr.read()
                return "done"
            self.last = line.removeprefix("at ")
            if self.last == stop_at:
                self.waiting = True
                return "stopped"
            self._send_go()

    def _speaks(self, *, may_wait: bool) -> bool:
        """Wait for the writer's next line; False if it waits for the lock instead.

        Where Linux lists the processes waiting for a lock, waiting is seen there; elsewhere
        it is taken from silence.
        """
        if not (may_wait and locks_are_listed()):
            timeout = BLOCKED_AFTER_S if may_wait else PATIENCE_S
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            assert ready or may_wait, f"a writer was silent for {timeout} s after {self.last}"
            return bool(ready)
        deadline = time.monotonic() + PATIENCE_S
        while not select.select([self.process.stdout], [], [], POLL_S)[0]:
            if self._waits_for_a_lock():
                return False
            assert time.monotonic() < deadline, f"a writer was stuck after {self.last}"
        return True

    def _waits_for_a_lock(self) -> bool:
        """Return whether the writer waits for the product's lock (``/proc/locks``)."""
        return (True, self.process.pid, lock_path(self.target).stat().st_ino) in flocks()

    def _send_go(self) -> None:
        self.waiting = False
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def finish(self, other: "Writer") -> None:
        """Run to the end, letting ``other`` run whenever this one waits for the lock."""
        while (state := self.run(other=other)) == "blocked":
            assert other.run(other=self) == "done"
        assert state == "done"


def publish_in_this_process(target: Path, content: str) -> None:
    with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="test")) as staging:
        for name, data in expected(content).items():
            (staging / name).parent.mkdir(exist_ok=True)
            (staging / name).write_bytes(data)


def expected(content: str) -> dict[str, bytes]:
    return {name: (content * 100 + name).encode() for name in ("a.bin", "b/c.bin")}


def check_one_complete_generation(target: Path, contents: set[str]) -> None:
    assert target.is_symlink(), "the product is no link"
    generation = current_generation(target)
    assert generation.is_dir(), f"dangling link to {generation.name}"
    verify_directory(target, kind="test", hint="")
    files = {
        p.relative_to(target).as_posix(): p.read_bytes()
        for p in sorted(target.rglob("*"))
        if p.is_file() and p.name != "COMPLETE.json"
    }
    assert files in [expected(c) for c in contents]
    beside = {p.name for p in target.parent.iterdir()}
    assert beside == {target.name, generation.name, lock_path(target).name}, beside


@pytest.mark.parametrize("same_content", [True, False], ids=["same", "different"])
def test_two_writers_in_every_interleaving_leave_one_complete_product(tmp_path, same_content):
    schedules = list(product(POINTS, POINTS, ("first", "second")))
    for index, (stop_a, stop_b, resume) in enumerate(schedules):
        target = tmp_path / f"s{index}" / "product"
        publish_in_this_process(target, "old")  # an existing product, as in a rebuild
        a = Writer(target, "new")
        b = Writer(target, "new" if same_content else "other")
        try:
            assert a.run(stop_at=stop_a) == "stopped"
            state_b = b.run(stop_at=stop_b, other=a)
            if stop_a in HOLDING_THE_LOCK and stop_b != "start":  # B needs the lock A holds
                assert state_b == "blocked", f"B passed A's lock to {b.last}"
            if resume == "first":
                a.finish(b)
                b.finish(a)
            else:
                b.finish(a)
                a.finish(b)
        finally:
            for writer in (a, b):
                writer.process.kill() if writer.process.poll() is None else None
        schedule = f"A stopped at {stop_a}, B at {stop_b}, {resume} resumed first"
        try:
            check_one_complete_generation(target, {a.content, b.content})
        except AssertionError as error:
            raise AssertionError(f"{schedule}: {error}") from error
