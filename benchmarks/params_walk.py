"""Walk ``params`` through ``solve`` and ``simulate``: which modules a call enters, how often.

Usage::

    uv run python benchmarks/params_walk.py [--json bld/benchmarks/params_walk.json]

Issue 28 asks that a walk of ``params`` through ``solve`` and through ``simulate`` visit each
module at most twice. This script measures it on the pipeline's model (the status quo's
``lifecycle_normalised``, two regimes, DC-EGM) with ``sys.setprofile`` over one call, counting
a visit each time a function of a ``project`` module is called from another module (or from
outside the package). Three calls, three counts each:

- ``solve``, warm: a solve of a model solved before in the process (the compiled program runs);
- ``solve``, first: the first solve of a new model object (its program traced, compiled or
  read from JAX's persistent cache);
- ``simulate``, warm: a simulation of that solution, after a first one.

The counts:

- **every call**: each entry into a module by any call, params or not (a model's property, a
  grid's ``to_jax``, a fact looked up in the internal model);
- **params**: entries by a call that receives ``params`` or a value computed from it (as a
  named argument or inside ``*args``/``**kwargs``): the return value of any Python call (the
  package's or a library's) given such a value is such a value, and so are the items of a
  returned tuple, list or dict, but for the interpreter's shared objects (None, booleans,
  numbers, strings, the empty tuple), which many calls return. Values made by C functions
  (``np.asarray``) are not followed, and neither are the tracers JAX makes of the params
  while it traces a program;
- **params or traced**: as params, and also every call given a JAX tracer (inside a traced
  program every traced value is made of the program's inputs: params and the grids).

The first two follow the data a user passes; the third adds what tracing the program visits,
once per model. The table shows each count's modules and the most visited ones.
"""

from __future__ import annotations

import collections
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _measure import environment, print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "project"
KINDS = ("every call", "params", "params or traced")
SHARED = (type(None), bool, int, float, complex, str, bytes)
"""Types of values that stand for no computation: never followed (module docstring)."""


class Walk:
    """Count module entries of one call under ``sys.setprofile`` (module docstring)."""

    def __init__(self, *, params: Any) -> None:
        import jax  # noqa: PLC0415

        self.followed: dict[int, Any] = {id(params): params}  # kept alive: ids stay unique
        self.counts = {kind: collections.Counter() for kind in KINDS}
        self.frames: list[tuple[Any, bool]] = []
        self.tracer = jax.core.Tracer

    def run(self, call: Callable[[], Any]) -> dict[str, collections.Counter]:
        """Run ``call`` under the profiler and return the counts by kind."""
        outer = sys.getprofile()
        sys.setprofile(self._event)
        try:
            call()
        finally:
            sys.setprofile(outer)
        return self.counts

    def _event(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            carries, traced = self._arguments(frame)
            self.frames.append((frame, carries))
            module = _module(frame)
            if module is None or _module(_caller(frame)) == module:
                return
            self.counts["every call"][module] += 1
            if carries:
                self.counts["params"][module] += 1
            if carries or traced:
                self.counts["params or traced"][module] += 1
        elif event == "return" and self.frames and self.frames[-1][0] is frame:
            _, carries = self.frames.pop()
            if carries and arg is not None:
                self._follow(arg)

    def _arguments(self, frame: Any) -> tuple[bool, bool]:
        """Return whether the call's arguments (``*args``/``**kwargs`` too) hold params, tracers."""
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & inspect.CO_VARARGS)
        count += bool(code.co_flags & inspect.CO_VARKEYWORDS)
        values = []
        for name in code.co_varnames[:count]:
            value = frame.f_locals.get(name)
            if isinstance(value, tuple):
                values.extend(value)
            elif isinstance(value, dict):
                values.extend(value.values())
            values.append(value)
        carries = any(id(v) in self.followed for v in values)
        return carries, any(isinstance(v, self.tracer) for v in values)

    def _follow(self, value: Any) -> None:
        pending = [value]
        while pending:
            item = pending.pop()
            empty = isinstance(item, tuple) and not item
            if empty or isinstance(item, SHARED) or id(item) in self.followed:
                continue
            self.followed[id(item)] = item
            if isinstance(item, tuple | list):
                pending.extend(item)
            elif isinstance(item, dict):
                pending.extend(item.values())


def _module(frame: Any) -> str | None:
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    return str(path.relative_to(PACKAGE)) if path.is_relative_to(PACKAGE) else None


def _caller(frame: Any) -> Any:
    """Return the nearest calling frame in the package (None if the call came from outside)."""
    caller = frame.f_back
    while caller is not None and _module(caller) is None:
        caller = caller.f_back
    return caller


def walks(
    *, sizes: dict[str, Any] | None = None, n_subjects: int = 1_000, first: bool = True
) -> dict[str, dict[str, collections.Counter]]:
    """Return the counts of the three calls (module docstring); ``sizes`` replace the model's.

    ``first=False`` leaves out the first solve (its trace, profiled call by call, is the slow
    part).
    """
    import jax  # noqa: PLC0415

    jax.config.update("jax_enable_x64", True)
    from project import solve  # noqa: PLC0415
    from project.config import STATUS_QUO, VARIANTS  # noqa: PLC0415
    from project.models import MODEL_BUILDERS  # noqa: PLC0415
    from project.pipeline import variant_specification  # noqa: PLC0415
    from project.simulation import draw_initial_conditions  # noqa: PLC0415
    from project.simulation.forward import simulate  # noqa: PLC0415

    variant = VARIANTS[STATUS_QUO]
    specification = variant_specification(variant)
    params = dict(specification["params"])

    def model() -> Any:
        return MODEL_BUILDERS[specification["model"]](**(sizes or specification["sizes"]))

    solved = model()
    solution = solve(model=solved, params=params)
    initial = draw_initial_conditions(
        model=solved,
        n_subjects=n_subjects,
        seed=1,
        distribution=variant.simulation.initial_distribution,
    )

    def simulation() -> Any:
        return simulate(params=params, solution=solution, initial_conditions=initial, seed=2)

    simulation()
    calls = {"solve, warm": lambda: solve(model=solved, params=params)}
    if first:
        fresh = model()
        calls["solve, first"] = lambda: solve(model=fresh, params=params)
    calls["simulate, warm"] = simulation
    return {name: Walk(params=params).run(call) for name, call in calls.items()}


def main() -> None:
    """Print the walks and write their JSON."""
    json_path = Path(sys.argv[sys.argv.index("--json") + 1]) if "--json" in sys.argv else None
    found = walks()
    rows = []
    for name, counts in found.items():
        for kind in KINDS:
            top = counts[kind].most_common(3)
            rows.append(
                [
                    name,
                    kind,
                    str(len(counts[kind])),
                    str(top[0][1] if top else 0),
                    ", ".join(f"{m} {n}" for m, n in top),
                ]
            )
    print_table(
        "Module visits of one call (issue 28: at most 2 per module)",
        ["call", "count", "modules", "most visits", "most visited"],
        rows,
    )
    write_json(
        json_path or ROOT / "bld" / "benchmarks" / "params_walk.json",
        {
            "environment": environment(),
            "walks": {
                name: {kind: dict(c.most_common()) for kind, c in counts.items()}
                for name, counts in found.items()
            },
        },
    )


if __name__ == "__main__":
    main()
