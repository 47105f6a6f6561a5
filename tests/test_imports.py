"""Task dependencies found in the code: the import closure of what a task runs.

Oracles: the modules a real call loads (``sys.modules`` after it) lie inside the closure; each
task in ``tasks.py`` declares exactly what ``modules_run_by`` finds; lazy exports resolve to the
one module they name; the closure read from the facts file equals the closure parsed afresh,
and a damaged facts file is never read.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from project.errors import ConfigurationError
from project.imports import SOURCE_ROOT, import_closure, module_file, modules_run_by
from project.task_sources import RUNS, runs_sources

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def own_facts(tmp_path, monkeypatch):
    """Give each test an empty facts store and file (not the user's), and no stale closures."""
    from project import imports

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(imports, "_FACTS", imports._FactStore())
    imports._imports_of.cache_clear()
    yield
    imports._imports_of.cache_clear()


def relative(paths) -> set[str]:
    return {str(Path(p).relative_to(SOURCE_ROOT / "project")) for p in paths}


def test_a_body_import_reaches_what_that_module_imports_and_its_packages():
    def plot():
        from project.pipeline import load_variant_solution  # noqa: F401

    files = relative(modules_run_by(plot))
    # The modules issue 28 found missing from the figures' hand-kept list: evaluating a solution
    # runs them.
    assert {"pipeline.py", "egm/solution.py", "solver/evaluate.py", "persist/solution.py"} <= files
    assert {"__init__.py", "egm/__init__.py", "solver/__init__.py"} <= files
    assert not {f for f in files if f.startswith("analysis/")}


def test_a_lazy_export_resolves_to_the_module_it_names_only():
    def plot():
        from project.analysis import plot_policy_functions  # noqa: F401

    files = relative(modules_run_by(plot))
    assert {"analysis/__init__.py", "analysis/figures.py"} <= files
    assert "analysis/tables.py" not in files  # another lazy export of the same package


def test_names_the_body_uses_bring_their_modules():
    from project.grids import LinSpacedGrid

    def grid():
        return LinSpacedGrid(start=0, stop=1, n_points=3)

    assert "grids.py" in relative(modules_run_by(grid))


def test_a_module_started_by_name_is_run_by_its_starter():
    """``launch`` starts ``python -m project.solve_worker``: no import, a string."""
    assert "project.solve_worker" in import_closure(["project.launch"])
    assert module_file("project.no_such_module") is None
    assert import_closure(["project.no_such_module"]) == set()


def test_the_closure_follows_every_edit_of_the_modules(tmp_path, monkeypatch):
    """Each module is parsed once per state of the tree, never read stale after an edit.

    The edit keeps the file's size and its modification time: only the files' bytes tell the
    two states apart. An editor's lock file (a dangling link named like a module) is no module.
    """
    from project import imports

    package = tmp_path / "project"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("b", "c", "d"):
        (package / f"{name}.py").write_text("")
    (package / ".#b.py").symlink_to(tmp_path / "nowhere")
    monkeypatch.setattr(imports, "SOURCE_ROOT", tmp_path)
    first = package / "a.py"
    first.write_text("import project.b\n")
    stamp = first.stat().st_mtime_ns
    assert import_closure(["project.a"]) == {"project", "project.a", "project.b"}
    parsed = imports._imports_of.cache_info().misses
    assert import_closure(["project.a"]) == {"project", "project.a", "project.b"}
    assert imports._imports_of.cache_info().misses == parsed  # the same state: nothing parsed
    first.write_text("import project.c\n")
    os.utime(first, ns=(stamp, stamp))
    assert import_closure(["project.a"]) == {"project", "project.a", "project.c"}
    (package / "c.py").write_text('from project import d\nNAME = f"project.b.{1}"\n')
    assert import_closure(["project.a"]) == {"project", "project.a", "project.c", "project.d"}
    (package / "d.py").unlink()
    assert import_closure(["project.a"]) == {"project", "project.a", "project.c"}
    assert module_file("project.b.") is None


LOADED = textwrap.dedent("""
    import json, sys
    import project.pipeline
    print("LOADED=" + json.dumps(sorted(
        m.__file__ for n, m in sys.modules.items()
        if n.split(".")[0] == "project" and getattr(m, "__file__", None)
    )))
""")


def test_every_module_an_import_loads_lies_in_its_closure():
    result = subprocess.run(
        [sys.executable, "-c", LOADED],
        env=os.environ | {"PYTHONPATH": str(SOURCE_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("LOADED=")]
    loaded = relative(json.loads(line.removeprefix("LOADED=")))
    closure = relative(module_file(m) for m in import_closure(["project.pipeline"]))
    assert loaded <= closure, sorted(loaded - closure)


DECLARED = textwrap.dedent("""
    import inspect, json, sys
    sys.path.insert(0, ".")
    import tasks
    from _pytask.task_utils import COLLECTED_TASKS
    from project.imports import module_file, modules_run_by
    functions = [f for found in COLLECTED_TASKS.values() for f in found]
    functions += [v for k, v in vars(tasks).items() if k.startswith("task_") and callable(v)]
    report = {}
    for func in functions:
        declared = inspect.signature(func).parameters["sources"].default.value
        found = [p for p in modules_run_by(func) if p != module_file("project.config")]
        report[func.__name__] = [sorted(map(str, declared)) == sorted(map(str, found)), len(found)]
    print("DECLARED=" + json.dumps(report))
""")


def test_every_task_declares_the_modules_its_code_runs(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", DECLARED],
        cwd=ROOT,
        env=os.environ
        | {
            "PYTHONPATH": str(SOURCE_ROOT),
            "PROJECT_PROFILE": "smoke",
            "PROJECT_ROOT": str(tmp_path),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("DECLARED=")]
    report = json.loads(line.removeprefix("DECLARED="))
    assert len(report) >= 20  # every task of the pipeline, loops included
    assert all(same and count > 0 for same, count in report.values()), report
    assert report["task_prepare_data"][1] < report["task_solve"][1]  # not one list for all


def test_a_task_without_a_sources_placeholder_is_refused():
    def task_without(produces: Path = Path("x")) -> None:
        pass

    with pytest.raises(ConfigurationError, match="sources: list\\[Path\\] = RUNS"):
        runs_sources(task_without)

    def task_with(sources: list[Path] = RUNS) -> None:
        from project.grids import LinSpacedGrid  # noqa: F401

    assert "grids.py" in relative(runs_sources(task_with).__defaults__[0].value)


def package_of(path: Path) -> str:
    """Return the package a module file's relative imports start from."""
    name = ".".join(path.relative_to(SOURCE_ROOT).with_suffix("").parts).removesuffix(".__init__")
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def package_imports() -> dict[str, set[str]]:
    """Return, per package of ``project``, the other packages its modules import."""
    import ast

    from project.imports import _imported

    top = SOURCE_ROOT / "project"
    packages = {p.name for p in top.iterdir() if (p / "__init__.py").is_file()}
    edges: dict[str, set[str]] = {name: set() for name in packages}
    for path in top.rglob("*.py"):
        parts = path.relative_to(SOURCE_ROOT).with_suffix("").parts
        if len(parts) < 3:  # a top-level module, below every package
            continue
        for imported in _imported(ast.parse(path.read_text()), package=package_of(path)):
            target = imported.split(".")[1] if imported.count(".") else ""
            if target in packages and target != parts[1]:
                edges[parts[1]].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> set[frozenset[str]]:
    """Return the groups of packages that import each other (strongly connected, size > 1)."""

    def reach(start: str) -> set[str]:
        seen, pending = set(), [start]
        while pending:
            for following in edges.get(pending.pop(), ()):
                if following not in seen:
                    seen.add(following)
                    pending.append(following)
        return seen

    reachable = {name: reach(name) for name in edges}
    return {
        frozenset({name} | {o for o in reachable[name] if name in reachable[o]})
        for name in edges
        if name in reachable[name]
    }


KNOWN_CYCLES = {
    # SimulationResult.save/load forward to persist: deprecated shims kept for one release
    # (CHANGELOG); test_the_known_cycle_closes_only_in_deprecated_shims... holds it to them.
    frozenset({"persist", "simulation"}),
}
SOLVE_LAYERS = ("solver", "egm", "regimes", "dispatch")
"""The solve, bottom up: the grid method with the shared infrastructure, (DC-)EGM, the regimes
(which run either), the public dispatcher. A package imports only those before it."""


def test_the_cycle_finder_finds_cycles_and_only_those():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == {frozenset({"a", "b", "c"})}


def test_packages_import_each_other_only_where_known():
    """No new import cycle between packages; the known ones are listed with their reason."""
    found = cycles(package_imports())
    assert found <= KNOWN_CYCLES, sorted(map(sorted, found - KNOWN_CYCLES))
    assert "analysis" not in package_imports()["calibration"]  # the figure style sits below both


def _without_deprecated_functions(tree):
    """Return ``tree`` without the functions that call ``warn_deprecated`` (the shims)."""
    import ast

    class DropShims(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST | None:
            calls = (n for n in ast.walk(node) if isinstance(n, ast.Call))
            if any(getattr(call.func, "id", "") == "warn_deprecated" for call in calls):
                return None
            return self.generic_visit(node)

    return DropShims().visit(tree)


def _persist_imports(*, drop_shims: bool) -> set[str]:
    """Return the persistence modules the simulation's modules import (as the graph reads)."""
    import ast

    from project.imports import _imported

    found = set()
    for path in sorted((SOURCE_ROOT / "project" / "simulation").rglob("*.py")):
        tree = ast.parse(path.read_text())
        if drop_shims:
            tree = _without_deprecated_functions(tree)
        imported = _imported(tree, package=package_of(path))
        found |= {m for m in imported if m == "project.persist" or m.startswith("project.persist.")}
    return found


def test_the_known_cycle_closes_only_in_deprecated_shims_until_their_removal():
    """The simulation imports persistence only in functions that warn of their deprecation
    (``SimulationResult.save``/``load``), and only while the package is older than the release
    that removes them (``REMOVED_IN``); the imports are read as the package graph reads them
    (absolute, relative, a module named in a string)."""
    import tomllib

    from project.deprecation import REMOVED_IN

    assert _persist_imports(drop_shims=True) == set()
    assert _persist_imports(drop_shims=False), (
        "the shims are gone: drop the cycle from KNOWN_CYCLES"
    )
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    release = tuple(int(part) for part in version.split(".")[:3])
    assert release < tuple(int(part) for part in REMOVED_IN.split(".")), "remove the shims"


def test_the_solve_layers_point_one_way():
    edges = package_imports()
    upward = {
        (lower, upper)
        for i, lower in enumerate(SOLVE_LAYERS)
        for upper in SOLVE_LAYERS[i + 1 :]
        if upper in edges[lower]
    }
    assert not upward, sorted(upward)
    below_the_solve = set(edges) - {"dispatch", "analysis", "estimation", "calibration"}
    assert not {p for p in below_the_solve if "dispatch" in edges[p]}


SOLUTION_CLASSES = {"Solution", "EGMSolution", "RegimeSolution"}
FORMAT_READER = "persist/solution.py"


def test_no_module_asks_which_solution_class_it_holds():
    """Solutions are read through ``SolutionInterface``; only the format reader builds classes."""
    import ast

    asked = []
    for path in sorted((SOURCE_ROOT / "project").rglob("*.py")):
        name = str(path.relative_to(SOURCE_ROOT / "project"))
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"):
                continue
            kinds = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if kinds & SOLUTION_CLASSES and name != FORMAT_READER:
                asked.append(f"{name}:{node.lineno}")
    assert not asked, asked


def parses_of(monkeypatch) -> list[int]:
    """Count the modules parsed for their facts from now on."""
    from project import imports

    count = [0]
    read = imports.ModuleFacts.read.__func__

    def counted(cls, tree, **options):
        count[0] += 1
        return read(cls, tree, **options)

    monkeypatch.setattr(imports.ModuleFacts, "read", classmethod(counted))
    return count


def fresh_reading():
    """Forget this process's facts and closures: the next closure reads the facts file."""
    from project import imports

    imports._FACTS = imports._FactStore()
    imports._imports_of.cache_clear()


def test_a_new_process_reads_the_facts_file_and_parses_nothing(monkeypatch):
    from project.imports import facts_file

    parsed = parses_of(monkeypatch)
    first = import_closure(["project.pipeline"])
    assert parsed[0] > 100 and facts_file().is_file()
    fresh_reading()
    parsed[0] = 0
    assert import_closure(["project.pipeline"]) == first
    assert parsed[0] == 0


@pytest.mark.parametrize(
    "damage",
    [
        "not json",
        '{"format": 1, "facts": {"a-3.11-b": 5}}',
        '{"format": 999, "facts": {}}',
        "[]",
        "truncate",
    ],
)
def test_a_damaged_facts_file_is_not_read_and_is_written_anew(monkeypatch, damage):
    from project.imports import FACTS_FORMAT, facts_file

    expected = import_closure(["project.task_sources"])
    target = facts_file()
    if damage == "truncate":  # a half-written file (saves replace the file whole)
        target.write_text(target.read_text()[: len(target.read_text()) // 2])
    else:
        target.write_text(damage)
    fresh_reading()
    parsed = parses_of(monkeypatch)
    assert import_closure(["project.task_sources"]) == expected
    assert parsed[0] == len(expected) > 3  # every module parsed again, once
    data = json.loads(target.read_text())
    assert data["format"] == FACTS_FORMAT and len(data["facts"]) == len(expected)


def test_facts_another_reader_wrote_are_kept_and_never_read(monkeypatch):
    """Entries are keyed by the reader's source: another checkout's reader neither serves ours
    (its facts may be read differently) nor loses its entries when ours are written."""
    from project import imports

    expected = import_closure(["project.task_sources"])
    target = imports.facts_file()
    data = json.loads(target.read_text())
    ours = imports._reader_digest()
    lying = imports.ModuleFacts((), (), (), {}).to_json()  # "imports nothing"
    foreign = {key.replace(ours, "0" * len(ours)): lying for key in data["facts"]}
    target.write_text(json.dumps({"format": data["format"], "facts": foreign}))
    fresh_reading()
    parsed = parses_of(monkeypatch)
    assert import_closure(["project.task_sources"]) == expected  # the lying entries unread
    assert parsed[0] == len(expected)
    kept = json.loads(target.read_text())["facts"]
    assert set(foreign) <= set(kept) and len(kept) == 2 * len(expected)


def test_facts_of_wrong_types_are_refused():
    from project.imports import ModuleFacts

    good = ModuleFacts(("project.a",), ((1, "b", ("c",)),), ("project.d",), {"e": "project.f"})
    assert ModuleFacts.from_json(json.loads(json.dumps(good.to_json()))) == good
    for bad in (
        [["project.a"], [[1, "b", [2]]], [], {}],
        [[3], [], [], {}],
        [[], [], [], {"e": 1}],
    ):
        with pytest.raises(ValueError, match="not a module's facts"):
            ModuleFacts.from_json(bad)


def test_an_unwritable_cache_leaves_the_closure_right(tmp_path, monkeypatch):
    expected = import_closure(["project.task_sources"])
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    fresh_reading()
    parsed = parses_of(monkeypatch)
    assert import_closure(["project.task_sources"]) == expected  # no error: parsed, not saved
    assert parsed[0] == len(expected)
