"""Guards of the build: one build per build root, the root is the checkout run in, a full disk.

Oracles: a second ``pytask`` in a build root that another one holds refuses with
``BuildLockedError`` (or waits for it when asked) and the product stays intact; a build run in
one checkout with another checkout's package writes only into its own ``bld/``; a full disk
during a save raises ``DiskFullError`` naming the product, leaves the old product intact and
no partial copy behind.
"""

import errno
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from checkouts import environment, make_checkout, run_python

from project.config import ROOT as PACKAGE_CHECKOUT
from project.errors import DiskFullError
from project.persist import atomic
from project.persist.manifest import verify_directory, write_marker

TASKS = textwrap.dedent("""
    import time
    from pathlib import Path
    from project.config import BLD
    from project.persist.atomic import write_bytes_atomically

    HERE = Path(__file__).parent

    def task_gated(produces: Path = BLD / "gated.txt") -> None:
        (HERE / "started").write_text("")
        while not (HERE / "gate").exists():
            time.sleep(0.05)
        write_bytes_atomically(produces, str(BLD).encode())
""")


def pytask(checkout: Path, *arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pytask", *arguments],
        cwd=checkout,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def test_a_second_build_refuses_and_a_waiting_one_runs_after_the_first(tmp_path):
    checkout = make_checkout(tmp_path / "clone", tasks=TASKS)
    first = pytask(checkout)
    wait_for(checkout / "started")  # the first build holds the lock and runs its task
    second = pytask(checkout)
    output, _ = second.communicate(timeout=60)
    assert second.returncode != 0
    assert "BuildLockedError" in output and "Another build is running" in output, output
    assert "--wait-for-build-lock" in output
    waiting = pytask(checkout, "--wait-for-build-lock")
    time.sleep(2)
    assert waiting.poll() is None, "the waiting build did not wait"
    (checkout / "gate").write_text("")
    assert first.wait(timeout=60) == 0, first.stdout.read()
    output, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0, output
    assert (checkout / "bld" / "gated.txt").read_text() == str(checkout / "bld")


def test_a_killed_build_does_not_block_the_next(tmp_path):
    checkout = make_checkout(tmp_path / "clone", tasks=TASKS)
    first = pytask(checkout)
    wait_for(checkout / "started")
    first.kill()
    first.wait(timeout=30)
    (checkout / "gate").write_text("")
    output, _ = pytask(checkout).communicate(timeout=60)
    assert (checkout / "bld" / "gated.txt").read_text() == str(checkout / "bld"), output


def test_a_build_writes_into_the_checkout_it_runs_in_not_the_packages(tmp_path):
    """Clone A built with the package installed from another checkout (this one)."""
    clone_a = make_checkout(tmp_path / "clone_a", tasks=TASKS)
    (clone_a / "gate").write_text("")
    before = sorted((PACKAGE_CHECKOUT / "bld").glob("gated.txt"))
    process = pytask(clone_a)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    assert (clone_a / "bld" / "gated.txt").read_text() == str(clone_a / "bld")
    assert sorted((PACKAGE_CHECKOUT / "bld").glob("gated.txt")) == before
    assert clone_a != PACKAGE_CHECKOUT


def test_the_root_is_found_from_the_working_directory_or_project_root(tmp_path):
    clone = make_checkout(tmp_path / "clone", tasks=TASKS)
    (clone / "deep" / "er").mkdir(parents=True)
    code = "from project.config import ROOT, BLD; print(ROOT); print(BLD)"
    run = run_python(clone / "deep" / "er", "-c", code)
    assert run.stdout.split() == [str(clone), str(clone / "bld")], run.stderr
    other = make_checkout(tmp_path / "other", tasks=TASKS)
    run = run_python(clone, "-c", code, env={"PROJECT_ROOT": str(other)})
    assert run.stdout.split() == [str(other), str(other / "bld")], run.stderr


def write_product(target: Path, content: str) -> None:
    with atomic.atomic_directory(target, digest_of=lambda s: write_marker(s, kind="t")) as stage:
        (stage / "data.bin").write_text(content * 1000)


def test_a_full_disk_names_the_product_and_leaves_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "product"
    write_product(target, "old")

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(Path, "write_text", full)
        with pytest.raises(DiskFullError) as caught:
            write_product(target, "new")
    message = str(caught.value)
    assert str(target) in message and "MiB are free" in message and "intact" in message
    verify_directory(target, kind="t", hint="")
    assert (target / "data.bin").read_text() == "old" * 1000
    staging = [p.name for p in tmp_path.iterdir() if atomic.WRITING in p.name]
    assert staging == [], "the partial copy was left behind"


def test_a_full_disk_raised_deep_inside_a_save_is_recognised(tmp_path):
    target = tmp_path / "product"
    with (
        pytest.raises(DiskFullError),
        atomic.atomic_directory(target, digest_of=lambda s: write_marker(s, kind="t")),
    ):
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as error:
            msg = "a library's own error while saving"
            raise RuntimeError(msg) from error
    assert not target.exists()


def test_another_error_during_a_save_is_not_called_a_full_disk(tmp_path):
    with (
        pytest.raises(PermissionError),
        atomic.atomic_directory(
            tmp_path / "product", digest_of=lambda s: write_marker(s, kind="t")
        ),
    ):
        raise PermissionError(errno.EACCES, "denied")


def test_a_build_in_a_process_gives_back_the_lock_and_the_environment(tmp_path):
    """Two programmatic builds in one process: the lock and ``$PROJECT_ROOT`` are given back."""
    checkout = make_checkout(tmp_path / "clone", tasks=TASKS)
    (checkout / "gate").write_text("")
    code = textwrap.dedent("""
        import os, pytask
        codes = [int(pytask.build(force=True).exit_code) for _ in range(2)]
        print(codes, os.environ.get("PROJECT_ROOT"))
    """)
    run = run_python(checkout, "-c", code)
    assert run.stdout.strip().splitlines()[-1] == "[0, 0] None", run.stdout + run.stderr


def test_slurm_jobs_start_in_the_checkout_being_built():
    from project.cluster import job_settings
    from project.config import SLURM_CLUSTER

    prologue = job_settings()["job_script_prologue"]
    assert prologue[:2] == [f"export PROJECT_ROOT={PACKAGE_CHECKOUT}", f"cd {PACKAGE_CHECKOUT}"]
    assert "job_script_prologue" not in SLURM_CLUSTER, "the settings were changed in place"


def test_slurm_settings_from_the_environment_override_the_configured_ones(monkeypatch):
    from project.cluster import job_settings
    from project.config import SLURM_CLUSTER

    monkeypatch.setenv("PROJECT_SLURM", '{"cores": 2, "queue": "gpu"}')
    settings = job_settings()
    assert settings["cores"] == 2 and settings["queue"] == "gpu"
    assert settings["memory"] == SLURM_CLUSTER["memory"]


@pytest.mark.parametrize("text", ["{cores: 2}", "[2]"])
def test_slurm_settings_that_are_no_json_object_are_refused(monkeypatch, text):
    from project.cluster import job_settings
    from project.errors import ConfigurationError

    monkeypatch.setenv("PROJECT_SLURM", text)
    with pytest.raises(ConfigurationError, match=r"\$PROJECT_SLURM must be a JSON object"):
        job_settings()


@pytest.mark.parametrize("kind", ["directory", "link"])
def test_git_ignores_bld_as_a_directory_and_as_a_link_to_another_disk(tmp_path, kind):
    repository, elsewhere = tmp_path / "repo", tmp_path / "disk"
    repository.mkdir()
    elsewhere.mkdir()
    (repository / ".gitignore").write_text((PACKAGE_CHECKOUT / ".gitignore").read_text())
    if kind == "link":
        (repository / "bld").symlink_to(elsewhere, target_is_directory=True)
    else:
        (repository / "bld").mkdir()
    (repository / "bld" / "product.txt").write_text("")
    git = ["git", "-C", str(repository)]
    subprocess.run([*git, "init", "-q"], check=True)
    status = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "bld" not in status.stdout, status.stdout
