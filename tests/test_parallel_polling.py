"""A parallel build looks at its running tasks every ``POLL_SECONDS`` (``project.task_hooks``).

Oracles: in a real ``pytask -n 2`` build, every sleep of pytask-parallel's loop while a task
runs is at most the project's longest (its own grow past them within a second); outside a build
the loop's sleeper is pytask-parallel's own again, also after nested builds.
"""

import json
import textwrap

from checkouts import make_checkout, run_python
from pytask_parallel import execute

from project.task_hooks import POLL_SECONDS, prompt_polling

# The loop sleeps through its module's ``time``: record each sleep. The threads backend runs
# the tasks in the build's process, so the second task reads what the loop slept meanwhile.
TASKS = textwrap.dedent("""
    import json
    import time
    from pathlib import Path

    from pytask_parallel import execute

    from project.config import BLD

    SLEPT = []


    class RecordedTime:
        def sleep(self, seconds):
            SLEPT.append(seconds)
            time.sleep(seconds)


    execute.time = RecordedTime()


    def task_slow(produces: Path = BLD / "slow.txt") -> None:
        time.sleep(0.8)
        produces.write_text("done")


    def task_after(slow: Path = BLD / "slow.txt", produces: Path = BLD / "slept.json") -> None:
        produces.write_text(json.dumps(SLEPT))
""")


def test_the_loop_sleeps_at_most_poll_seconds_while_a_task_runs(tmp_path):
    """Unpatched, pytask-parallel 0.5 sleeps 0.01, 0.04, 0.09, ... 0.64 s within 0.8 s."""
    checkout = make_checkout(tmp_path / "clone", tasks=TASKS)
    run = run_python(checkout, "-m", "pytask", "-n", "2", "--parallel-backend", "threads")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    slept = json.loads((checkout / "bld" / "slept.json").read_text())
    assert len(slept) >= 10, slept  # the loop looked many times while the slow task ran
    assert max(slept) <= max(POLL_SECONDS), slept


def test_outside_a_build_the_sleeper_is_pytask_parallels_own():
    own = execute._Sleeper
    assert max(own().timings) == 1  # pytask-parallel 0.5's longest sleep
    with prompt_polling():
        assert execute._Sleeper().timings == list(POLL_SECONDS)
        inner = execute._Sleeper
        with prompt_polling():
            pass
        assert execute._Sleeper is inner  # a nested build restores what it found
    assert execute._Sleeper is own
