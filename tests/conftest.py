"""Shared fixtures: float64 on demand (float32 the default), a SLURM cluster, a welfare result.

Also JAX's persistent compilation cache for the whole session (below), Python's garbage
collector tuned for tracing, and each test module's compiled programs dropped when it ends
(``release_compiled_programs``).
"""

import gc
import os
from pathlib import Path

import jax
import pytest

from project.config import COMPILATION_CACHE, TRACING_GC_THRESHOLDS
from project.model.internal import forget_all

# Compiled programs are cached on disk and reused across the test workers and runs, as the
# build does (project.config.COMPILATION_CACHE): the tests build the same models many times,
# each a new object whose programs JAX traces again but XLA need not compile again. The
# environment reaches subprocesses (the pipeline builds); the config this process, before its
# first compile.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(COMPILATION_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update(
    "jax_persistent_cache_min_compile_time_secs",
    float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]),
)
jax.config.update(
    "jax_persistent_cache_min_entry_size_bytes",
    int(os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"]),
)

# Python's cyclic garbage collector as the smoke build sets it (project.config.
# TRACING_GC_THRESHOLDS: full collections had taken a fifth of a test worker's CPU time); the
# objects that live through collection are frozen out of every later collection
# (pytest_collection_finish); and a test module's programs are collected at its end only when
# they hold too many memory mappings (release_compiled_programs). Together: 31 -> 5 s of
# collections per test worker.
gc.set_threshold(*TRACING_GC_THRESHOLDS)


def pytest_collection_finish(session):
    """Keep the objects that exist once the tests are collected out of every later collection."""
    gc.collect()
    gc.freeze()


# tests/sharded needs 4 fake devices set before JAX starts: tests/test_sharded.py runs it in a
# subprocess, so this process must not collect it.
collect_ignore = ["sharded"]


FIRST = "tests/pipeline/"
"""The pipeline's builds (tests/pipeline/test_incremental.py alone, 5 min 21 s run by itself
with a warm compilation cache, is the largest file of the suite's 13 minutes): handed out
first (pyproject.toml: ``--no-loadscope-reorder``), so that the other worker runs the rest
beside them, whatever folders are added."""


def pytest_collection_modifyitems(items):
    """Put the pipeline's build tests first, every file's own order kept."""
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))


MAPS = Path("/proc/self/maps")
MAX_MAP_COUNT = Path("/proc/sys/vm/max_map_count")
DEFAULT_MAX_MAP_COUNT = 65_530
MAPS_LEFT_SHARE = 0.25
"""At most this share of Linux's default limit on memory mappings (or of a lower one set here)
may stay in use after a module."""


@pytest.fixture(autouse=True, scope="module")
def release_compiled_programs():
    """Drop JAX's compiled programs when a test module ends, and check they were let go.

    XLA:CPU maps every compiled program's code into the process, about 19 mappings each. A
    test worker that kept the programs of every module it ran reached Linux's default limit
    (``vm.max_map_count``, 65,530) after about 3,000 programs, and XLA then crashed the worker
    with a segmentation fault while compiling or loading the next one. The models' facts go
    too (the compiled programs among them); the next module finds its programs in the
    persistent cache. On a CPU, programs that reference cycles keep alive are collected here
    only when the mappings in use exceed the share checked (a full collection per module took
    about half of a worker's collection time); otherwise Python's collector frees them later.
    """
    yield
    forget_all()
    jax.clear_caches()
    if not (MAPS.exists() and MAX_MAP_COUNT.exists()):
        gc.collect()
        return
    limit = min(int(MAX_MAP_COUNT.read_text()), DEFAULT_MAX_MAP_COUNT)
    in_use = mappings_in_use()
    # Programs kept by reference cycles: collected when they hold too many mappings, and always
    # on an accelerator, where they would hold device memory the next module's planner reads.
    if in_use > MAPS_LEFT_SHARE * limit or jax.default_backend() != "cpu":
        gc.collect()
        in_use = mappings_in_use()
    assert in_use <= MAPS_LEFT_SHARE * limit, (
        f"{in_use} memory mappings are still in use after this module (the limit is {limit}): "
        "something keeps compiled programs alive after its tests, e.g. a module-level cache "
        "that holds models or jitted functions; release them, or the worker will crash."
    )


def mappings_in_use() -> int:
    """Return how many memory mappings this process has (``/proc/self/maps``)."""
    return len(MAPS.read_text().splitlines())


@pytest.fixture
def x64():
    """Enable float64 for one test and restore float32 afterwards."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A running one-node SLURM cluster (tests/slurm.py), stopped at the end of the session.

    Skipped, with the reason, only where SLURM can neither be found nor installed (no root or no
    apt-get), and never under ``PROJECT_REQUIRE_SLURM=1`` (``.ci/run`` installs SLURM and sets
    it, so CI fails rather than skips).
    """
    from slurm import SlurmCluster, SlurmUnavailableError

    try:
        cluster = SlurmCluster.start(tmp_path_factory.mktemp("slurm"))
    except SlurmUnavailableError as error:
        if os.environ.get("PROJECT_REQUIRE_SLURM") == "1":
            raise
        pytest.skip(f"no SLURM cluster can run here: {error}")
    yield cluster
    cluster.stop()


@pytest.fixture
def welfare():
    """A welfare result as ``welfare.json`` holds it: λ with both s.e., V0, V1, the C check."""
    from project.analysis.welfare_text import welfare_numbers

    values = {
        "lambda": -0.01126,
        "lambda_se": 0.000143,
        "lambda_se_fixed_cost": 0.000147,
        "base_value": -186.045,
        "counterfactual_value": -186.286,
        "value_difference": -0.2409,
        "consumption_utility": -185.304,
        "simulated_consumption_utility": -184.897,
        "simulated_consumption_utility_se": 0.174,
        "n_households": 20_000,
    }
    result = {k: values[k] for k in ("lambda", "lambda_se", "lambda_se_fixed_cost")}
    return result | {"numbers": welfare_numbers(values), "values": values}
