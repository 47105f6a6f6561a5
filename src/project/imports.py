"""Which ``project`` modules a function runs: its imports and names, closed under imports.

pytask does not follow imports, so a task depends on the library code it runs only through a
declared node (``tasks.py``). Hand-kept lists of those files drift; here they are read off the
code instead. ``modules_run_by(func)`` starts from the ``project`` modules the function's body
imports and the module-level ``project`` objects it names (their defining modules), and closes
that set under imports, read statically from each module's syntax tree:

- every ``import``/``from ... import`` anywhere in a module (module level or inside a function:
  a call may run either), absolute or relative;
- a package's ``__init__`` with every module of the package (Python runs it first);
- ``from package import name`` with ``package/name.py`` where that is a module, and with the
  module a lazy export names (``_EXPORTS`` in the package's ``__init__``, ``project._lazy``);
- a module named in a string (``python -m project.solve_worker``, ``import_module``).

An import is code that runs, so the closure may hold modules a call never reaches, never fewer
than it runs: an edit of any module a task runs reruns it.

Each module's imports are read once per state of the source tree (``_imports_of``, keyed by
a digest of every module file's path and bytes): ``tasks.py`` asks for the closure of each of
its tasks, and parsing every module again for each took 12 s of every build's start.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import os
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

PACKAGE = "project"
READS = 3
"""How often a closure is read again when a module changed while it was read."""
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def module_file(name: str) -> Path | None:
    """Return the file of module ``name`` (a package's ``__init__.py``), or None.

    None as well for a name that is no dotted identifier (``"project.models."``, a prefix of
    module names in an f-string), which the path would otherwise resolve.
    """
    if not all(part.isidentifier() for part in name.split(".")):
        return None
    base = SOURCE_ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def modules_run_by(func: Callable[..., Any]) -> list[Path]:
    """Return the files of the ``project`` modules ``func`` runs, sorted (see the module)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    (definition,) = tree.body
    assert isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef)
    body = ast.Module(body=definition.body, type_ignores=[])
    start = _imported(body, package=PACKAGE)
    scope = dict(func.__globals__)
    if func.__closure__:
        scope |= dict(
            zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__), strict=True)
        )
    for node in ast.walk(body):
        if isinstance(node, ast.Name) and node.id in scope:
            start.update(_defining_modules(scope[node.id]))
    return sorted(module_file(name) for name in import_closure(start))


def import_closure(modules: Iterable[str]) -> set[str]:
    """Return ``modules`` (``project`` modules by name) and every module they import, closed."""
    modules = list(modules)
    for _ in range(READS):
        state = _source_state()
        pending = [m for m in modules if module_file(m) is not None]
        seen: set[str] = set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            pending.extend(m for m in _imports_of(name, state=state) if m not in seen)
        if _source_state() == state:
            return seen
        # A module changed while the closure read it: what was read may be of either state.
        _imports_of.cache_clear()
    return seen  # the tree keeps changing: the last reading, as an uncached read would give


@functools.cache
def _imports_of(name: str, *, state: str) -> frozenset[str]:
    """Return the modules that module ``name`` imports, and its parents, while ``state`` holds.

    ``state`` (``_source_state``) keys the result: an edited, added or removed module file
    makes a new key, so a closure never reads a stale module.
    """
    path = module_file(name)
    assert path is not None
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = _imported(ast.parse(path.read_text()), package=package) | set(_parents(name))
    return frozenset(m for m in found if module_file(m) is not None)


def _source_state() -> str:
    """Return a digest of every module file of the package: its path and its bytes.

    Bytes, not modification times: an edit within the file system's time stamp granularity,
    to the same size, must still make a new state.
    """
    digest = hashlib.sha256()
    paths = [SOURCE_ROOT / f"{PACKAGE}.py"]
    for directory, folders, files in os.walk(SOURCE_ROOT / PACKAGE, followlinks=True):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        paths += [Path(directory, f) for f in sorted(files) if _names_module(f)]
    for path in paths:
        if not path.is_file():  # an editor's lock file (a dangling link), or no module
            continue
        content = path.read_bytes()
        digest.update(f"{path}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def _names_module(file: str) -> bool:
    """Return whether a file name names a module (``a.py``; not ``.#a.py`` or ``a.txt``)."""
    stem, dot, suffix = file.rpartition(".")
    return bool(dot) and suffix == "py" and stem.isidentifier()


def _imported(tree: ast.Module, *, package: str) -> set[str]:
    """Return the ``project`` modules ``tree`` imports (``package``: where relative ones start)."""
    found: set[str] = set()
    for node in _nodes_outside_lazy_exports(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if _ours(a.name))
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package=package)
            if not _ours(base):
                continue
            found.add(base)
            for alias in node.names:
                found.update(_from_import(base, alias.name))
        elif isinstance(node, ast.Constant) and _names_a_module(node.value):
            found.add(node.value)
    return found


def _nodes_outside_lazy_exports(tree: ast.AST) -> Iterator[ast.AST]:
    """Yield every node of ``tree`` but those of lazy exports, which run on access only."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if _is_lazy_exports(node):  # read by ``_from_import`` where an import names one
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _absolute(node: ast.ImportFrom, *, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    anchor = ".".join(parts[: len(parts) - node.level + 1])
    return f"{anchor}.{node.module}" if node.module else anchor


def _from_import(base: str, name: str) -> set[str]:
    """Return what ``from base import name`` runs besides ``base``: a submodule, a lazy export."""
    if module_file(f"{base}.{name}") is not None:
        return {f"{base}.{name}"}
    exported = _lazy_exports(base).get(name)
    return {exported} if exported else set()


def _lazy_exports(package: str) -> dict[str, str]:
    """Return a package's lazy exports (name -> module), read from its ``_EXPORTS`` literal."""
    path = module_file(package)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.parse(path.read_text()).body:
        if _is_lazy_exports(node):
            assert isinstance(node, ast.Assign)
            expression = ast.Expression(body=node.value)
            return eval(compile(expression, str(path), "eval"), {"dict": dict})
    return {}


def _is_lazy_exports(node: ast.AST) -> bool:
    """Return whether ``node`` assigns a package's lazy exports (``_EXPORTS = {...}``)."""
    targets = node.targets if isinstance(node, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets)


def _defining_modules(value: Any) -> set[str]:
    """Return the ``project`` module that defines ``value`` (a module, function or class)."""
    name = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
    return {name} if isinstance(name, str) and _ours(name) else set()


def _names_a_module(value: object) -> bool:
    return isinstance(value, str) and _ours(value) and module_file(value) is not None


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(f"{PACKAGE}.")
