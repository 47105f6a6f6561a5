"""Products are never half-published, never left behind, and never used when damaged.

Oracles: a writer killed at every step of a publication (and at random moments of real saves)
leaves the complete old or the complete new product and nothing else after the next save; every
kind of damage to a product's files is named by its loader; the pytask state of a directory
product changes with any write into it and with nothing else.
"""

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from project import CheckpointError, solve
from project.models import lifecycle, precautionary
from project.persist import MARKER_NAME, load_bundle, load_solution, save_bundle, save_solution
from project.persist.atomic import atomic_directory, atomic_file, current_generation, lock_path
from project.persist.bundle import TABLE_NAME, load_table
from project.persist.manifest import (
    directory_state,
    product_files,
    verify_directory,
    write_marker,
)
from project.simulation import draw_initial_conditions, simulate

ROOT = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": str(ROOT / "src")}


def leftovers(target: Path) -> list[str]:
    """Return what lies beside ``target`` besides its link, current generation and lock file."""
    keep = {target.name, current_generation(target).name if target.is_symlink() else None}
    keep.add(lock_path(target).name)
    return sorted(p.name for p in target.parent.iterdir() if p.name not in keep)


def dead_pid() -> int:
    """Return the id of a process that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def contents(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != MARKER_NAME
    }


# -- A writer killed at every step of a publication ------------------------------------------

KILL_AT_STEP = textwrap.dedent("""
    import os, shutil, signal, sys
    from pathlib import Path
    from project.persist.atomic import atomic_directory
    from project.persist.manifest import write_marker

    target, content, step = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    calls = [0]

    def killing(function):
        def wrapped(*args, **kwargs):
            calls[0] += 1
            if calls[0] == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return wrapped

    # Every operation that changes the file system during a publication.
    Path.rename = killing(Path.rename)
    Path.replace = killing(Path.replace)
    Path.symlink_to = killing(Path.symlink_to)
    shutil.rmtree = killing(shutil.rmtree)
    os.fsync = killing(os.fsync)
    with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="test")) as staging:
        for name in ("a.bin", "b/c.bin"):
            (staging / name).parent.mkdir(exist_ok=True)
            (staging / name).write_text(content * 1000 + name)
    print("published", flush=True)
""")


def publish_in_child(target: Path, content: str, step: int) -> bool:
    """Publish ``content`` in a process killed at its ``step``-th file operation; say if done."""
    result = subprocess.run(
        [sys.executable, "-c", KILL_AT_STEP, str(target), content, str(step)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode == -signal.SIGKILL:
        return False
    assert result.returncode == 0 and "published" in result.stdout, result.stderr
    return True


def expected(content: str) -> dict[str, bytes]:
    return {name: (content * 1000 + name).encode() for name in ("a.bin", "b/c.bin")}


@pytest.mark.parametrize("first", ["new", "legacy"])
def test_a_kill_at_every_step_leaves_the_old_or_the_new_product(tmp_path, first):
    """Kill the second publication at each of its file operations in turn.

    "legacy": the old product is a plain directory (the layout before generations).
    """
    killed, gaps = 0, 0
    for step in range(1, 100):
        target = tmp_path / f"step{step}" / "product"
        if first == "legacy":
            target.mkdir(parents=True)
            for name, data in expected("old").items():
                (target / name).parent.mkdir(exist_ok=True)
                (target / name).write_bytes(data)
            write_marker(target, kind="test")
        else:
            assert publish_in_child(target, "old", step=0)
        done = publish_in_child(target, "new", step=step)
        if not target.exists():  # documented: moving a plain directory aside, once
            assert first == "legacy", f"no product after a kill at step {step}"
            gaps += 1
            assert gaps == 1
            assert publish_in_child(target, "third", step=0)
            assert leftovers(target) == []
            continue
        verify_directory(target, kind="test", hint="")
        assert contents(target) in (expected("old"), expected("new")), step
        if done:
            assert contents(target) == expected("new")
            assert leftovers(target) == []
            break
        killed += 1
        # The next publication cleans up whatever the killed one left behind.
        assert publish_in_child(target, "third", step=0)
        assert contents(target) == expected("third")
        assert leftovers(target) == [], step
    assert killed >= 5, "the publication should have several steps to kill"


def test_staging_of_a_live_writer_is_left_alone(tmp_path):
    target = tmp_path / "product"
    host = socket.gethostname().replace("-", "_")
    alive = tmp_path / f".product.writing-{host}-1-cafe0000"
    alive.mkdir()  # pid 1 is always alive
    dead = tmp_path / f".product.writing-{host}-{dead_pid()}-cafe0000"
    dead.mkdir()
    with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="test")) as staging:
        (staging / "x").write_text("x")
    assert alive.exists()
    assert not dead.exists()


def test_saving_identical_content_leaves_the_product_untouched(tmp_path):
    target = tmp_path / "product"

    def publish(text):
        with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="t")) as staging:
            (staging / "x").write_text(text)

    publish("same")
    state, generation = directory_state(target), current_generation(target)
    time.sleep(0.01)
    publish("same")
    assert directory_state(target) == state
    assert current_generation(target) == generation
    publish("other")
    assert directory_state(target) != state
    assert leftovers(target) == []


def test_a_damaged_current_generation_is_repaired_by_the_same_content(tmp_path):
    target = tmp_path / "product"

    def publish():
        with atomic_directory(target, digest_of=lambda s: write_marker(s, kind="t")) as staging:
            (staging / "x").write_text("content")

    publish()
    (target / "x").write_text("damage!")
    with pytest.raises(CheckpointError, match="x does not match the digest"):
        verify_directory(target, kind="t", hint="")
    publish()
    verify_directory(target, kind="t", hint="")
    assert leftovers(target) == []


def test_atomic_file_replaces_whole_and_cleans_dead_temporaries(tmp_path):
    path = tmp_path / "table.arrow"
    host = socket.gethostname().replace("-", "_")
    stale = tmp_path / f".table.arrow.writing-{host}-{dead_pid()}-beef0000"
    stale.write_text("half")
    with atomic_file(path) as temporary:
        temporary.write_text("whole")
    assert path.read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.arrow"]
    with pytest.raises(RuntimeError), atomic_file(path) as temporary:
        temporary.write_text("ha")
        raise RuntimeError
    assert path.read_text() == "whole"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.arrow"]


# -- Real saves killed at random moments -----------------------------------------------------

WRITERS = textwrap.dedent("""
    import os, signal, sys, time, traceback
    from pathlib import Path
    import numpy as np
    from project.models import precautionary
    from project.persist import save_solution
    from project.solver import Solution

    # JAX has not started here (its threads would not survive a fork); the other threads, of
    # OpenBLAS and of pyarrow's jemalloc, have fork handlers. Each writer is forked from this
    # process, its imports done once, and starts JAX itself; the kernel reaps killed writers.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    target, parent = Path(sys.argv[1]), os.getpid()

    def orphaned():
        return os.getppid() != parent  # the test ended without killing this writer

    def write_forever(control):
        model = precautionary.build_model(n_wealth=300, n_consumption=40, n_periods=4)
        shape = tuple(g.n_points for g in model.states.values())

        def solution(beta):  # arrays of the right shapes; solving would only cost time here
            return Solution.from_periods(
                model=model,
                params=precautionary.DEFAULT_PARAMS | {"beta": beta},
                value_function=[np.full(shape, beta * t, np.float32) for t in range(4)],
                policy=[{a: np.full(shape, t, np.int32) for a in model.actions} for t in range(4)],
            )

        solutions = [solution(0.95), solution(0.9)]
        (control / "loaded").touch()
        while not (control / "go").exists():  # the writer before is dead
            if orphaned():
                return
            time.sleep(0.002)
        save_solution(solution=solutions[0], directory=target)
        (control / "ready").touch()
        turn = 1
        while not orphaned():
            save_solution(solution=solutions[turn % 2], directory=target)
            turn += 1

    print("imported", flush=True)
    for line in sys.stdin:  # a writer's control folder: fork it, answer its pid
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its own subprocesses (git) as usual
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the pids' pipe is the parent's
            try:
                write_forever(Path(line.strip()))
            except BaseException:
                traceback.print_exc()
            os._exit(1)
        print(pid, flush=True)
""")


def _wait_for(path: Path, *, pid: int) -> None:
    """Wait until ``path`` exists; fail if writer ``pid`` died first or 60 s pass."""
    deadline = time.monotonic() + 60
    while not path.exists():
        assert _alive(pid), f"writer {pid} died before it wrote {path.name}"
        assert time.monotonic() < deadline, f"writer {pid} wrote no {path.name} in 60 s"
        time.sleep(0.002)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _kill(pid: int) -> None:
    """Kill writer ``pid`` and wait until it is gone (its parent lets the kernel reap it)."""
    with contextlib.suppress(ProcessLookupError):  # it died by itself
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _alive(pid):
        assert time.monotonic() < deadline, f"writer {pid} outlived SIGKILL by 30 s"
        time.sleep(0.002)


@pytest.mark.slow
def test_random_kills_of_real_saves_leave_a_complete_solution_and_no_leftovers(tmp_path):
    """Writers in turn on one product, each killed at a random moment of its saves.

    Each writer starts (JAX, its solutions) while the one before it still saves, and touches
    the product only once that one is dead. The writers are forked from one process that
    imported the package once, so that a trial costs its saves, not an interpreter's start;
    they share its process group, which the test kills at its end.
    """
    model = precautionary.build_model(n_wealth=300, n_consumption=40, n_periods=4)
    target = tmp_path / "product" / "solution"
    target.parent.mkdir()
    generator = random.Random(20261124)
    trials = 20
    parent = subprocess.Popen(
        [sys.executable, "-c", WRITERS, str(target)],
        env=ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )

    def writer(trial: int) -> tuple[int, Path]:
        control = tmp_path / "writers" / str(trial)
        control.mkdir(parents=True)
        parent.stdin.write(f"{control}\n")
        parent.stdin.flush()
        return int(parent.stdout.readline()), control

    with parent:
        try:
            assert parent.stdout.readline().strip() == "imported"
            following = writer(0)
            for trial in range(trials):
                pid, control = following
                following = writer(trial + 1) if trial + 1 < trials else None
                try:
                    _wait_for(control / "loaded", pid=pid)
                    (control / "go").touch()
                    _wait_for(control / "ready", pid=pid)
                    time.sleep(generator.uniform(0.0, 0.4))
                finally:
                    _kill(pid)
                loaded = load_solution(directory=target, model=model)
                beta = float(loaded.params["beta"])
                assert beta in (pytest.approx(0.95), pytest.approx(0.9))
                np.testing.assert_allclose(np.asarray(loaded.value_function[1]), beta, rtol=1e-6)
        finally:
            os.killpg(parent.pid, signal.SIGKILL)  # the parent and every writer left
            parent.wait(timeout=30)
    save_solution(solution=loaded, directory=target)
    assert leftovers(target) == []


# -- Damage is named by the loaders ----------------------------------------------------------


@pytest.fixture(scope="module")
def saved_solution(tmp_path_factory):
    model = precautionary.build_model(n_wealth=40, n_consumption=20, n_periods=3)
    solution = solve(model=model, params=precautionary.DEFAULT_PARAMS)
    directory = tmp_path_factory.mktemp("solution") / "solution"
    save_solution(solution=solution, directory=directory)
    return model, directory


@pytest.fixture
def solution_copy(saved_solution, tmp_path):
    import shutil

    model, directory = saved_solution
    return model, Path(shutil.copytree(directory, tmp_path / "solution"))


def flip_bytes(path: Path, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    start = max(0, len(data) // 2 - count // 2)
    for i in range(start, min(len(data), start + count)):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def largest_file(directory: Path) -> Path:
    return max((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


def test_flipped_bytes_in_the_largest_array_file_are_named(solution_copy):
    model, directory = solution_copy
    victim = largest_file(directory / "arrays")
    flip_bytes(victim)
    with pytest.raises(CheckpointError, match=rf"{victim.name} does not match the digest"):
        load_solution(directory=directory, model=model)


def test_a_changed_dtype_in_the_metadata_is_named(solution_copy):
    model, directory = solution_copy
    metadata = json.loads((directory / "metadata.json").read_text())
    metadata["dtype"] = "float16"
    (directory / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(CheckpointError, match=r"metadata\.json does not match the digest"):
        load_solution(directory=directory, model=model)


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda d: (d / MARKER_NAME).write_text(""), "not valid JSON"),
        (lambda d: (d / MARKER_NAME).unlink(), f"has no {MARKER_NAME}"),
        (lambda d: (d / "metadata.json").unlink(), r"metadata\.json is missing"),
        (lambda d: (d / "stray.txt").write_text("?"), "stray.txt is not part of"),
        (lambda d: (d / "metadata.json").write_text("{"), "does not match the digest"),
    ],
    ids=["emptied marker", "no marker", "no metadata", "stray file", "broken metadata"],
)
def test_damaged_solutions_raise_our_error_naming_the_file(solution_copy, damage, match):
    model, directory = solution_copy
    damage(directory)
    with pytest.raises(CheckpointError, match=match):
        load_solution(directory=directory, model=model)


def test_a_resigned_but_malformed_metadata_raises_our_error(solution_copy):
    model, directory = solution_copy
    (directory / "metadata.json").write_text('{"model": 1}')
    write_marker(directory, kind="solution")
    with pytest.raises(CheckpointError, match=r"metadata\.json lacks the entries"):
        load_solution(directory=directory, model=model)


@pytest.fixture(scope="module")
def saved_bundle(tmp_path_factory):
    model = lifecycle.build_model(n_wealth=10, n_consumption=10, n_periods=3, start_age=60)
    params = lifecycle.DEFAULT_PARAMS
    initial = draw_initial_conditions(
        model=model,
        n_subjects=30,
        seed=1,
        distribution={
            "pref_type": {"probabilities": [0.5, 0.5]},
            "lagged_retirement": {"label": "working"},
            "income": {"probabilities": [0.2] * 5},
            "wealth": {"uniform": [1, 10]},
        },
    )
    result = simulate(
        params=params,
        initial_conditions=initial,
        solution=solve(model=model, params=params),
        seed=3,
    )
    directory = tmp_path_factory.mktemp("bundle") / "simulation"
    save_bundle(result=result, directory=directory)
    return directory


def test_a_truncated_table_is_named_by_both_loaders(saved_bundle, tmp_path):
    import shutil

    directory = Path(shutil.copytree(saved_bundle, tmp_path / "simulation"))
    table = directory / TABLE_NAME
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    for load in (lambda: load_table(directory), lambda: load_bundle(directory=directory)):
        with pytest.raises(CheckpointError, match=rf"{TABLE_NAME} does not match the digest"):
            load()


def test_the_table_loader_reads_a_verified_table(saved_bundle):
    frame = load_table(saved_bundle)
    assert len(frame) == 30 * 3
    assert np.isfinite(frame["wealth"]).all()


# -- The build tool's view: the state of a directory product ---------------------------------


def test_directory_state_changes_with_any_write_and_with_nothing_else(saved_bundle, tmp_path):
    import shutil

    directory = Path(shutil.copytree(saved_bundle, tmp_path / "simulation"))
    state = directory_state(directory)
    assert state is not None
    assert directory_state(directory) == state
    os.utime(directory.parent)  # unrelated activity beside the product
    assert directory_state(directory) == state
    victim = largest_file(directory / "arrays")
    time.sleep(0.01)
    flip_bytes(victim, count=8)  # same size: only the time stamp tells
    assert directory_state(directory) != state
    (directory / MARKER_NAME).write_text("")
    assert directory_state(directory) not in (state, None)
    (directory / MARKER_NAME).unlink()
    assert directory_state(directory) is None


def test_a_product_lists_files_and_links_at_any_depth_and_enters_no_linked_folder(tmp_path):
    """What ``product_files`` lists: what a marker records and what every state read checks."""
    product = tmp_path / "product"
    (product / "arrays" / "deep").mkdir(parents=True)
    (product / "arrays" / "deep" / "x.bin").write_bytes(b"x")
    (product / ".hidden").write_bytes(b"h")
    (product / MARKER_NAME).write_text("{}")  # the product's own marker: left out
    (product / "arrays" / MARKER_NAME).write_text("{}")  # a file of that name deeper: listed
    (product / "arrays" / "to_file").symlink_to(product / ".hidden")
    (product / "to_folder").symlink_to(product / "arrays")  # listed, not entered
    (product / "dangling").symlink_to(tmp_path / "nowhere")
    (product / "empty").mkdir()
    os.mkfifo(product / "fifo")  # no file: left out
    expected = [
        ".hidden",
        f"arrays/{MARKER_NAME}",
        "arrays/deep/x.bin",
        "arrays/to_file",
        "dangling",
        "to_folder",
    ]
    assert product_files(product) == expected
    (tmp_path / "link").symlink_to(product)  # a product reached through its generation link
    assert product_files(tmp_path / "link") == expected
    assert product_files(tmp_path / "missing") == []
    by_rglob = sorted(  # the listing before the walk of its own, as an oracle
        p.relative_to(product).as_posix()
        for p in product.rglob("*")
        if (p.is_file() or p.is_symlink()) and p.relative_to(product).as_posix() != MARKER_NAME
    )
    assert by_rglob == expected


def test_a_rewrite_that_restores_the_time_stamps_still_changes_the_state(saved_bundle, tmp_path):
    """The change time counts: same size, same modification time, other bytes."""
    import shutil

    directory = Path(shutil.copytree(saved_bundle, tmp_path / "simulation"))
    state = directory_state(directory)
    victim = largest_file(directory / "arrays")
    before = victim.stat()
    time.sleep(0.01)
    flip_bytes(victim, count=8)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert victim.stat().st_mtime_ns == before.st_mtime_ns
    assert victim.stat().st_size == before.st_size
    assert directory_state(directory) != state


def test_the_state_ignores_provenance_but_the_loader_checks_it(saved_solution, tmp_path):
    model, _ = saved_solution
    solution = load_solution(directory=saved_solution[1], model=model)
    one, two = tmp_path / "one" / "solution", tmp_path / "two" / "solution"
    save_solution(solution=solution, directory=one, provenance={"fingerprint": "a"})
    save_solution(solution=solution, directory=two, provenance={"fingerprint": "b"})
    assert directory_state(one) == directory_state(two)
    assert current_generation(one).name != current_generation(two).name
    (two / "provenance.json").write_text('{"fingerprint": "c"}')
    assert directory_state(two) != directory_state(one)
    with pytest.raises(CheckpointError, match=r"provenance\.json does not match the digest"):
        load_solution(directory=two, model=model)
