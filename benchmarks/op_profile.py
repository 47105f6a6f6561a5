"""Where a compiled program spends its time: XLA:CPU's operations by self time, from JAX's profiler.

Usage::

    uv run python benchmarks/op_profile.py dcegm --periods 20 --points 2000
    uv run python benchmarks/op_profile.py grid --model ijrs --n-wealth 100 --n-consumption 500
    uv run python benchmarks/op_profile.py replication

Runs the program a few times warm under ``jax.profiler`` and reads the trace back
(``jax.profiler.ProfileData``): every event on XLA's CPU threads, nested events subtracted, so
a while loop's own time is apart from its body's operations. Times are per run, summed over
the threads (2 on this machine, so the total exceeds the wall time); the profiler's own cost
per event inflates the smallest operations: compare operations within one run, not with the
benchmarks' timings. ``ThunkExecutor::Execute`` is XLA's dispatch of the operations. The names
are the compiled HLO's; ``--hlo FILE`` writes the program's optimised HLO to look them up.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import environment, print_table, write_json

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    """Profile the chosen program, print its operations by self time and write the JSON."""
    args = _parser().parse_args()
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    program, inputs = PROGRAMS[args.program](args)
    rows, total = top_operations(program, inputs, runs=args.runs)
    shown = rows[: args.top]
    print_table(
        f"{args.program}: XLA:CPU operations by self time per run ({total:.3f} ms in all)",
        ["operation", "self ms", "with nested ms", "calls per run"],
        [
            [name, f"{own:.3f}", f"{nested:.3f}", f"{calls:.1f}"]
            for name, own, nested, calls in shown
        ],
    )
    if args.hlo:
        compiled = program if hasattr(program, "as_text") else program.lower(*inputs).compile()
        Path(args.hlo).write_text(compiled.as_text())
    write_json(
        args.json,
        {
            "environment": environment(),
            "program": args.program,
            "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "total_ms": total,
            "operations": [
                {"name": n, "self_ms": o, "nested_ms": w, "calls": c} for n, o, w, c in rows
            ],
        },
    )
    print(f"\nwrote {args.json}")


def top_operations(
    program: Callable[..., Any], inputs: tuple[Any, ...], *, runs: int
) -> tuple[list[tuple[str, float, float, float]], float]:
    """Return (name, self ms, ms with nested events, calls) per run, largest first, and the sum."""
    import jax  # noqa: PLC0415

    for _ in range(3):
        jax.block_until_ready(program(*inputs))
    with tempfile.TemporaryDirectory(prefix="op_profile_") as folder:
        jax.profiler.start_trace(folder)
        for _ in range(runs):
            jax.block_until_ready(program(*inputs))
        jax.profiler.stop_trace()
        trace = sorted(Path(folder).rglob("*.xplane.pb"))[-1]
        data = jax.profiler.ProfileData.from_file(str(trace))
    own, nested, calls = collections.Counter(), collections.Counter(), collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            if line.name.startswith("tf_XLA"):
                _self_times(line.events, own=own, nested=nested, calls=calls)
    own.pop("ThunkExecutor::Execute (wait for completion)", None)
    rows = [
        (name, own[name] / runs / 1e6, nested[name] / runs / 1e6, calls[name] / runs)
        for name, _ in own.most_common()
    ]
    return rows, sum(row[1] for row in rows)


def _self_times(
    events: Any,
    *,
    own: collections.Counter,
    nested: collections.Counter,
    calls: collections.Counter,
) -> None:
    """Add each event's duration less its nested events' (one thread's events, by name)."""
    spans = sorted(((e.start_ns, e.start_ns + e.duration_ns, e.name) for e in events), key=_order)
    stack: list[list[Any]] = []  # [end, name, nested time, duration]

    def close() -> None:
        _, name, inner, duration = stack.pop()
        own[name] += duration - inner
        if stack:
            stack[-1][2] += duration

    for start, end, name in spans:
        while stack and stack[-1][0] <= start:
            close()
        stack.append([end, name, 0, end - start])
        calls[name] += 1
        nested[name] += end - start
    while stack:
        close()


def _order(span: tuple[int, int, str]) -> tuple[int, int]:
    return span[0], -span[1]


def _dcegm(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...]]:
    """Return the IJRS DC-EGM program of ``compare_dcegm.py`` and its inputs."""
    import compare_dcegm  # noqa: PLC0415

    from project.egm.solve import WINDOW_LEARNED, _program, _savings  # noqa: PLC0415
    from project.model.params import pack_params, params_on_host  # noqa: PLC0415

    model, params = compare_dcegm.ijrs_model(periods=args.periods, n_savings=args.points)
    flat = pack_params(params_on_host(model=model, params=params))
    window = WINDOW_LEARNED.of(model)
    program = _program(model, window=window, memory_limit=None, log_level="off")
    return program, (flat, _savings(model))


def _grid(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...]]:
    """Return the grid-search program ``solve`` runs for a model of ``compare_pylcm.py``."""
    import compare_pylcm  # noqa: PLC0415

    from project.model.params import pack_params, params_on_host  # noqa: PLC0415
    from project.models import MODEL_BUILDERS  # noqa: PLC0415
    from project.solver import grid_points_of  # noqa: PLC0415
    from project.solver.plan import plan_for  # noqa: PLC0415
    from project.solver.program import solve_program  # noqa: PLC0415
    from project.solver.selection import choose_kernels  # noqa: PLC0415

    model = MODEL_BUILDERS[args.model](
        n_wealth=args.n_wealth, n_consumption=args.n_consumption, n_periods=5, wealth_batch_size=0
    )
    params = compare_pylcm.PARAMS[args.model]
    slopes = (bool(params.get("r", 0) == 0),) * model.n_periods
    plan = plan_for(model)
    kernels = tuple(c.name for c in choose_kernels(plan, unit_slope=slopes))
    flat = pack_params(params_on_host(model=model, params=params))
    return solve_program(plan, kernels=kernels, mesh=None), (flat, grid_points_of(model))


def _replication(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...]]:
    """Return the replication's EGM solve program (buffer stock, 66 periods) and its inputs."""
    from project.config import REPLICATION  # noqa: PLC0415
    from project.data.replication import read_profiles  # noqa: PLC0415
    from project.egm.envelope import WINDOW  # noqa: PLC0415
    from project.egm.program import build_program  # noqa: PLC0415
    from project.estimation.replication import ReplicationMoments  # noqa: PLC0415
    from project.model.params import pack_params, params_on_host  # noqa: PLC0415

    profiles = read_profiles(ROOT / "data" / "replication" / "profiles_hark2019.csv")
    moments = ReplicationMoments(
        profiles=profiles, n_subjects=100, seed=REPLICATION.seed, n_savings=REPLICATION.n_savings
    )
    params = params_on_host(model=moments.model, params=moments.params({"beta": 0.99, "crra": 4}))
    program = build_program(moments.model, window=WINDOW)
    return program, (pack_params(params), moments.model.post_decision_grid.to_jax())


PROGRAMS = {"dcegm": _dcegm, "grid": _grid, "replication": _replication}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", choices=sorted(PROGRAMS))
    parser.add_argument("--periods", type=int, default=20, help="dcegm: T")
    parser.add_argument("--points", type=int, default=2000, help="dcegm: savings points")
    parser.add_argument("--model", default="ijrs", help="grid: ijrs or precautionary")
    parser.add_argument("--n-wealth", type=int, default=100)
    parser.add_argument("--n-consumption", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10, help="profiled warm runs")
    parser.add_argument("--top", type=int, default=30, help="operations shown")
    parser.add_argument("--hlo", type=Path, default=None, help="write the optimised HLO here")
    parser.add_argument("--json", type=Path, default=Path("bld/benchmarks/op_profile.json"))
    return parser


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
