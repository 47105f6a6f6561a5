"""The pipeline's solve step for a variant solved in two processes (``Variant.processes``).

``project.pipeline.solve_variant`` (what ``task_solve`` runs) launches two processes of
``project.solve_worker``: local processes with a loopback coordinator, or one ``srun -n 2`` job
step on a running SLURM cluster, where ``jax.distributed.initialize()`` finds the processes and
the coordinator in SLURM's environment. Each process holds two of the four preference-type
blocks on its two CPU devices (multi-process JAX, gloo collectives) and saves them into the
one product; the product, loaded in this process, equals a one-process solve value for value.
"""

import contextlib
import dataclasses
import logging

import numpy as np
import pytest

from project import solve
from project.config import VARIANTS, Variant
from project.errors import ConfigurationError, DistributedSolveError
from project.imports import modules_run_by
from project.launch import LAUNCHER_ENV, chosen_launcher
from project.models import lifecycle
from project.persist.solution import load_solution
from project.pipeline import build_variant_model, solve_variant, variant_specification

SIZES = {"n_wealth": 16, "n_consumption": 16, "n_periods": 4, "start_age": 66, "n_types": 4}
TWO_PROCESSES = Variant(
    name="distributed",
    model="lifecycle",
    sizes=SIZES | {"distributed_types": True},
    processes=2,
)


def solve_step(directory, *, variant=TWO_PROCESSES):
    """Run the solve task's engine call for ``variant`` into ``directory``; say if it solved."""
    return solve_variant(
        specification=variant_specification(variant),
        directory=directory,
        sources=modules_run_by(solve_variant),
    )


def assert_equals_one_process(directory):
    model = lifecycle.build_model(**SIZES)
    single = solve(model=model, params=lifecycle.default_params(n_types=4))
    saved = load_solution(directory=directory, model=model)
    for t, value in enumerate(single.value_function):
        np.testing.assert_array_equal(
            np.asarray(saved.value_function[t]), np.asarray(value), f"period {t}"
        )
    leftovers = [p.name for p in directory.parent.iterdir() if p.name.startswith(".solution.w")]
    assert not leftovers


def assert_each_process_held_its_blocks(log: str, *, launcher: str):
    assert "process 0 of 2 holds blocks [0, 1] of ['pref_type']" in log
    assert "process 1 of 2 holds blocks [2, 3] of ['pref_type']" in log
    assert f"Solved 'distributed' in 2 processes ({launcher})" in log


@pytest.fixture(scope="module")
def local_solution(tmp_path_factory):
    """The two-process variant solved by local processes (the launcher outside SLURM)."""
    directory = tmp_path_factory.mktemp("local") / "solution"
    directory.mkdir()
    with pytest.MonkeyPatch.context() as patch, captured_log() as messages:
        patch.setenv(LAUNCHER_ENV, "local")
        solved = solve_step(directory)
    return directory, solved, "\n".join(messages)


@contextlib.contextmanager
def captured_log():
    """Collect the messages of the package's loggers at INFO (module-scoped: no caplog)."""
    messages: list[str] = []
    handler = logging.Handler(level=logging.INFO)
    handler.emit = lambda record: messages.append(record.getMessage())
    logger = logging.getLogger("project")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_local_two_process_solve_step_equals_one_process(local_solution):
    directory, solved, log = local_solution
    assert solved
    assert_each_process_held_its_blocks(log, launcher="local")
    assert_equals_one_process(directory)


def test_the_two_process_solution_is_up_to_date_on_the_next_build(local_solution):
    directory, _, _ = local_solution
    assert solve_step(directory) is False


def test_a_failing_process_raises_with_its_output_and_keeps_the_product(local_solution):
    """A bad param fails in every process: the error holds their output; nothing is published."""
    directory, _, _ = local_solution
    before = sorted(p.name for p in directory.parent.iterdir())
    bad = dataclasses.replace(TWO_PROCESSES, params={"disutility_of_work": [0.1, 0.2]})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LAUNCHER_ENV, "local")
        with pytest.raises(DistributedSolveError, match=r"(?s)exited with.*disutility_of_work"):
            solve_step(directory, variant=bad)
    assert sorted(p.name for p in directory.parent.iterdir()) == before
    assert_equals_one_process(directory)


def test_srun_two_process_solve_step_equals_one_process(slurm_cluster, tmp_path, monkeypatch):
    directory = tmp_path / "solution"
    directory.mkdir()
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    monkeypatch.setenv(LAUNCHER_ENV, "srun")
    with captured_log() as messages:
        assert solve_step(directory)
    assert_each_process_held_its_blocks("\n".join(messages), launcher="srun")
    assert_equals_one_process(directory)


def test_the_launcher_is_srun_inside_an_allocation_and_local_elsewhere(monkeypatch):
    monkeypatch.delenv(LAUNCHER_ENV, raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert chosen_launcher() == "local"
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    assert chosen_launcher() == "srun"
    monkeypatch.setenv(LAUNCHER_ENV, "mpirun")
    with pytest.raises(ConfigurationError, match="PROJECT_LAUNCHER='mpirun' is no launcher"):
        chosen_launcher()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "lifecycle_regimes", "sizes": {}}, "has regimes"),
        ({"sizes": SIZES}, "no distributed state"),
        ({"sizes": SIZES | {"distributed_types": True, "n_savings": 20}}, r"\(DC-\)EGM"),
        ({"processes": 3}, "4 blocks, which do not split evenly over 3 processes"),
    ],
)
def test_a_variant_that_cannot_be_solved_in_its_processes_is_refused(change, message):
    with pytest.raises(ConfigurationError, match=message):
        variant_specification(dataclasses.replace(TWO_PROCESSES, **change))


@pytest.mark.parametrize("processes", [0, 1.5, "2"])
def test_a_process_count_that_is_no_whole_number_is_refused(processes):
    with pytest.raises(ConfigurationError, match="processes must be a whole number"):
        Variant(name="bad", processes=processes)


def test_the_pipeline_variants_solve_in_one_process_each():
    """The shipped variants have regimes (not shardable yet): one process, recorded as such."""
    for variant in VARIANTS.values():
        specification = variant_specification(variant)
        assert specification["processes"] == 1
        assert build_variant_model(model=variant.model, sizes=variant.sizes).permanent_states == ()
