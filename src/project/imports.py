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
its tasks, and parsing every module again for each took 12 s of every build's start. What a
module's syntax says (``ModuleFacts``: its imports, the module names in its strings, its lazy
exports) is kept on disk too, keyed by the digest of its bytes and of this reader's own source
(``facts_file()``, beside the compilation cache; safe to delete): a build's start parsed all
190 modules again, 0.5 s of each ``pytask``, where now it reads one file. A damaged file is
ignored and written anew; another reader's entries (another checkout's) are kept beside ours.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import logging
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("project.imports")

PACKAGE = "project"
READS = 3
"""How often a closure is read again when a module changed while it was read."""
SOURCE_ROOT = Path(__file__).resolve().parent.parent
FACTS_FORMAT = 1
"""The facts file's layout (an entry's key names the reader that wrote it: ``_facts_key``)."""
FACTS_KEPT = 1024
"""The most module states the facts file keeps (those read last; about 0.5 MB)."""


def facts_file() -> Path:
    """Return the file of module facts: ``$XDG_CACHE_HOME/project`` (else ``~/.cache/project``)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "project" / "import-facts.json"


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
            _FACTS.save()
            return seen
        # A module changed while the closure read it: what was read may be of either state.
        _imports_of.cache_clear()
    _FACTS.save()
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
    found = _FACTS.of(path).imported(package=package) | set(_parents(name))
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
    return ModuleFacts.read(tree).imported(package=package)


@dataclass(frozen=True)
class ModuleFacts:
    """What a module's syntax says about the modules it runs (lazy exports left out).

    ``imports``: ``import`` names of ours; ``froms``: ``from`` imports as (level, module,
    names); ``strings``: constants that may name a module of ours; ``exports``: the package's
    lazy exports (name -> module), empty where it has none.
    """

    imports: tuple[str, ...]
    froms: tuple[tuple[int, str, tuple[str, ...]], ...]
    strings: tuple[str, ...]
    exports: dict[str, str]

    @classmethod
    def read(cls, tree: ast.Module, *, package: bool = False) -> ModuleFacts:
        """Return the facts of a parsed module or function body (``package``: an ``__init__``)."""
        imports, froms, strings = [], [], []
        for node in _nodes_outside_lazy_exports(tree):
            if isinstance(node, ast.Import):
                imports += [a.name for a in node.names if _ours(a.name)]
            elif isinstance(node, ast.ImportFrom) and (node.level or _ours(node.module or "")):
                names = tuple(a.name for a in node.names)
                froms.append((node.level, node.module or "", names))
            elif (
                isinstance(node, ast.Constant) and isinstance(node.value, str) and _ours(node.value)
            ):
                strings.append(node.value)
        exports = _exports_in(tree) if package else {}
        return cls(tuple(imports), tuple(froms), tuple(strings), exports)

    def imported(self, *, package: str) -> set[str]:
        """Return the ``project`` modules these imports run, relative ones from ``package``."""
        found = set(self.imports)
        for level, module, names in self.froms:
            base = _absolute(level, module, package=package)
            if not _ours(base):
                continue
            found.add(base)
            for name in names:
                found.update(_from_import(base, name))
        found.update(value for value in self.strings if _names_a_module(value))
        return found

    def to_json(self) -> list[Any]:
        """Return the facts as a JSON value (``from_json`` reads it back)."""
        return [list(self.imports), [list(f) for f in self.froms], list(self.strings), self.exports]

    @classmethod
    def from_json(cls, data: Any) -> ModuleFacts:
        """Return the facts of a JSON entry; raise ``ValueError`` for anything else."""
        imports, froms, strings, exports = data
        checked = cls(
            tuple(imports),
            tuple((int(level), module, tuple(names)) for level, module, names in froms),
            tuple(strings),
            dict(exports),
        )
        texts = [*checked.imports, *checked.strings, *checked.exports, *checked.exports.values()]
        texts += [text for _, module, names in checked.froms for text in (module, *names)]
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("not a module's facts")
        return checked


class _FactStore:
    """Module facts by the digest of the module's bytes, read from and saved to ``facts_file``."""

    def __init__(self) -> None:
        self._entries: dict[str, ModuleFacts] | None = None
        self._new: dict[str, ModuleFacts] = {}
        self._used: set[str] = set()

    def of(self, path: Path) -> ModuleFacts:
        """Return the facts of the module file ``path`` (parsed only if no entry has them)."""
        content = path.read_bytes()
        key = _facts_key(content)
        entries = self._loaded()
        if key not in entries:
            package = path.name == "__init__.py"
            entries[key] = self._new[key] = ModuleFacts.read(ast.parse(content), package=package)
        self._used.add(key)
        return entries[key]

    def save(self) -> None:
        """Write the new facts beside those on disk, atomically (``FACTS_KEPT``: those read last).

        Where nothing was parsed the file stays as it is.
        """
        if not self._new:
            return
        target = facts_file()
        merged = {k: v.to_json() for k, v in _read_facts(target).items()}
        merged |= {k: v.to_json() for k, v in self._new.items()}
        order = [k for k in merged if k not in self._used] + [k for k in merged if k in self._used]
        kept = {k: merged[k] for k in order[-FACTS_KEPT:]}
        temporary = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", dir=target.parent, prefix=".import-facts.", delete=False
            ) as handle:
                temporary = Path(handle.name)
                json.dump({"format": FACTS_FORMAT, "facts": kept}, handle)
            temporary.replace(target)
        except OSError as error:  # a read-only home: the next start parses again
            logger.debug("Module facts not saved to %s: %s", target, error)
            if temporary is not None:
                temporary.unlink(missing_ok=True)
            return
        self._new.clear()

    def _loaded(self) -> dict[str, ModuleFacts]:
        if self._entries is None:
            self._entries = _read_facts(facts_file())
        return self._entries


def _facts_key(content: bytes) -> str:
    """Return the key of a module's facts: this reader, the Python version and the bytes."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"{_reader_digest()}-{python}-{hashlib.sha256(content).hexdigest()}"


@functools.cache
def _reader_digest() -> str:
    """Return a digest of this module's source: an edit of how facts are read changes keys."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def _read_facts(path: Path) -> dict[str, ModuleFacts]:
    """Return the facts a file holds; nothing from a missing, damaged or foreign file."""
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FACTS_FORMAT:
            return {}
        return {str(k): ModuleFacts.from_json(v) for k, v in data["facts"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as error:
        if path.exists():
            logger.debug("Module facts in %s not read: %s", path, error)
        return {}


_FACTS = _FactStore()


def _nodes_outside_lazy_exports(tree: ast.AST) -> Iterator[ast.AST]:
    """Yield every node of ``tree`` but those of lazy exports, which run on access only."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if _is_lazy_exports(node):  # read by ``_from_import`` where an import names one
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _absolute(level: int, module: str, *, package: str) -> str:
    if not level:
        return module
    parts = package.split(".")
    anchor = ".".join(parts[: len(parts) - level + 1])
    return f"{anchor}.{module}" if module else anchor


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
    return dict(_FACTS.of(path).exports)


def _exports_in(tree: ast.Module) -> dict[str, str]:
    """Return the lazy exports a module's top level assigns (``_EXPORTS = {...}``), or none."""
    for node in tree.body:
        if _is_lazy_exports(node):
            assert isinstance(node, ast.Assign)
            expression = ast.Expression(body=node.value)
            return eval(compile(expression, "<_EXPORTS>", "eval"), {"dict": dict})
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
