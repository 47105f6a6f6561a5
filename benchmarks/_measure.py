"""Shared helpers for the benchmark scripts: timing, peak memory, subprocess runs and tables.

Benchmarks run every configuration in its own Python process so that peak memory (``ru_maxrss``
only ever grows) and JAX's in-memory compile caches do not leak between configurations. A child
prints one line ``RESULT_MARKER <json>``; the parent collects those lines.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULT_MARKER = "BENCHMARK_RESULT"
PEER_REFERENCES = Path(__file__).with_name("peer_references.json")
PEER_TOLERANCE = 2.0
"""A peer's warm time more than this factor away from its reference run is flagged."""


def child_parser(*, description: str, name: str, quick_help: str) -> argparse.ArgumentParser:
    """Return the parser every benchmark starts from: --json, --quick, --only (and --single)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--json",
        type=Path,
        default=Path(f"bld/benchmarks/{name}.json"),
        help="where to write the results (folder is created)",
    )
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--only", default="", help="only configurations whose label contains this")
    parser.add_argument("--single", help=argparse.SUPPRESS)
    return parser


def peak_rss_mib() -> float:
    """Return the peak resident set size of this process in MiB (``ru_maxrss``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def time_call(func: Callable[[], Any]) -> tuple[float, Any]:
    """Return ``(seconds, result)`` of one call, timed with ``time.perf_counter``."""
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def repeat_seconds(func: Callable[[], Any], *, repeats: int) -> list[float]:
    """Return the wall-clock seconds of ``repeats`` calls of ``func``."""
    return [time_call(func)[0] for _ in range(repeats)]


def summarize(seconds: Sequence[float]) -> dict[str, float | list[float]]:
    """Return median, min and the raw samples of a list of timings."""
    return {"median": statistics.median(seconds), "min": min(seconds), "samples": list(seconds)}


@dataclass
class CompileEvents:
    """Collect JAX's compile-phase timers (trace, lower to MLIR, backend compile) per function.

    Uses ``jax.monitoring`` duration events, which JAX records for every jitted function it
    traces, lowers or compiles. Register once per process, then ``with events.recording():``.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    _active: bool = False

    PHASES = {  # noqa: RUF012
        "/jax/core/compile/jaxpr_trace_duration": "trace",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
        "/jax/core/compile/backend_compile_duration": "compile",
    }

    def register(self) -> None:
        """Install the listener (call before the first JAX operation)."""
        import jax.monitoring  # noqa: PLC0415

        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event: str, duration: float, **kwargs: Any) -> None:
        if self._active and event in self.PHASES:
            name = str(kwargs.get("fun_name", "?")).removeprefix("jit(").removesuffix(")")
            self.records.append(
                {"phase": self.PHASES[event], "function": name, "seconds": duration}
            )

    @contextmanager
    def recording(self) -> Iterator[list[dict[str, Any]]]:
        """Record events inside the block into a fresh list, which is yielded."""
        self.records = []
        self._active = True
        try:
            yield self.records
        finally:
            self._active = False


def run_child(
    script: Path,
    config: dict[str, Any],
    *,
    extra_args: Sequence[str] = (),
    timeout: float = 600,
    partial_on_timeout: bool = False,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``script --single <config> *extra_args`` in a fresh interpreter; return its result.

    On failure the returned dict holds ``error`` with the tail of the child's stderr. With
    ``partial_on_timeout``, a child that timed out after emitting a result line (children may
    emit several, each more complete) returns its last one with ``timed_out_after_seconds``.
    ``env`` replaces the child's environment (default: this process's).
    """
    command = [sys.executable, str(script), "--single", json.dumps(config), *extra_args]
    started = time.perf_counter()
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired as error:
        partial = _last_result(_text(error.stdout)) if partial_on_timeout else None
        if partial is None:
            return {"config": config, "error": f"timed out after {timeout:.0f} s"}
        partial["timed_out_after_seconds"] = timeout
        partial["process_wall_seconds"] = time.perf_counter() - started
        return partial
    wall = time.perf_counter() - started
    result = _last_result(completed.stdout)
    if result is not None:
        result["process_wall_seconds"] = wall
        return result
    tail = (completed.stderr or completed.stdout)[-3000:]
    return {"config": config, "error": f"exit code {completed.returncode}: {tail}"}


def ensure_peer(peer_python: Path, *, setup_script: Path) -> None:
    """Build a peer's environment by ``setup_script`` (given its folder) when it is missing."""
    if not peer_python.exists():
        env_dir = peer_python.parent.parent
        subprocess.run(["bash", str(setup_script), str(env_dir)], check=True)


def run_peer_script(python: Path, script: Path, arguments: Sequence[str]) -> dict[str, Any]:
    """Run a peer's ``script`` by its environment's ``python``; return the JSON it wrote.

    The script gets ``arguments`` and ``--out=<file>``; a failure returns ``{"error": <the tail
    of its stderr>}``.
    """
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "peer.json"
        command = [str(python), str(script), *arguments, f"--out={out}"]
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            return {"error": completed.stderr[-3000:]}
        return json.loads(out.read_text())


def peer_speed_warnings(
    peer: str, measured: dict[str, float], *, references: Path = PEER_REFERENCES
) -> list[str]:
    """Return a warning for each configuration whose peer time is off its reference by > 2x.

    ``measured``: the peer's warm seconds by configuration label (the labels of
    ``peer_references.json``); configurations without a reference are skipped. Each benchmark
    prints the warnings under its tables and stores them in its JSON: a ratio against a slowed
    (or suspiciously fast) peer is not to be reported until the cause is known.
    """
    table = json.loads(references.read_text())[peer]
    warnings = []
    for label, seconds in measured.items():
        reference = table["seconds"].get(label)
        if reference is None or seconds is None:
            continue
        factor = seconds / reference
        if not 1 / PEER_TOLERANCE <= factor <= PEER_TOLERANCE:
            warnings.append(
                f"{peer} took {seconds * 1e3:.3g} ms at {label}, {factor:.2f} times its reference "
                f"{reference * 1e3:.3g} ms ({table['source']}): check the peer's environment "
                "(versions, XLA flags, device, load) before reporting a ratio against it."
            )
    return warnings


def print_warnings(warnings: Sequence[str]) -> None:
    """Print each peer-speed warning on its own line, loudly."""
    for warning in warnings:
        print(f"WARNING: {warning}")


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


def _last_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_MARKER):
            return json.loads(line[len(RESULT_MARKER) :])
    return None


def current_rss_mib() -> float:
    """Return the current resident set size of this process in MiB (Linux; else the peak)."""
    try:
        resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return peak_rss_mib()
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def emit_result(result: dict[str, Any]) -> None:
    """Print the child's result as the one line the parent looks for."""
    print(RESULT_MARKER + json.dumps(result), flush=True)


def environment() -> dict[str, Any]:
    """Return machine facts worth keeping next to timings (load matters on shared machines)."""
    return {
        "python": platform.python_version(),
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "project_xla_options": _project_xla_options(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _project_xla_options() -> dict[str, Any] | None:
    """Return the XLA options the package compiles its programs with (None without it)."""
    try:
        from project._xla import program_options  # noqa: PLC0415
    except ImportError:
        return None
    return program_options()


def _version(package: str) -> str | None:
    """Return an installed package's version (None when it is missing), without importing it."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` as indented JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")


def verdict(value: float | None, limit: float) -> str:
    """Return PASS/FAIL for ``value < limit`` (or n/a when not measured)."""
    if value is None:
        return "n/a"
    return "PASS" if value < limit else "FAIL"


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print a table with rich, right-aligning every column but the first."""
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in rows:
        styled = [
            f"[green]{c}[/]" if c == "PASS" else f"[red]{c}[/]" if c == "FAIL" else c for c in row
        ]
        table.add_row(*styled)
    Console(width=200).print(table)
