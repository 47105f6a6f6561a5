"""Every name the README and the tutorial use from ``project`` exists, and the README's
self-contained examples run.

The ```python blocks are parsed with ``ast``: ``from project... import X``, ``import project...``,
and attribute chains on those names (``project.X``, ``iid_income.build_model``) are resolved.
A block runs when it reads no build products (``bld/``) and every name it reads is defined in
it, a builtin, or a public name of ``project`` (the README uses ``solve`` across blocks).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/tutorial.md")
FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#+ (.*)$", re.MULTILINE)


def python_blocks(path: Path) -> list[tuple[str, str]]:
    """Return (section heading, code) of every ```python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        headings = HEADING.findall(text[: match.start()])
        blocks.append((headings[-1] if headings else "", match.group(1)))
    return blocks


def _project_imports(tree: ast.AST) -> tuple[set[str], dict[str, str]]:
    """Return the used dotted names and the local aliases bound to them."""
    used, aliases = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "project":
            for alias in node.names:
                used.add(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "project":
                    used.add(alias.name)
                    aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else "project"
                    )
    return used, aliases


def _attribute_chain(node: ast.Attribute) -> list[str] | None:
    """Return ``["a", "b", "c"]`` for ``a.b.c``, or None if it is not rooted at a name."""
    parts: list[str] = []
    current: ast.expr = node
    while isinstance(current, ast.Attribute):
        parts.insert(0, current.attr)
        current = current.value
    return [current.id, *parts] if isinstance(current, ast.Name) else None


def used_names(code: str) -> set[str]:
    """Return the dotted ``project`` names ``code`` imports or reads as attributes."""
    tree = ast.parse(code)
    used, aliases = _project_imports(tree)
    for node in ast.walk(tree):
        chain = _attribute_chain(node) if isinstance(node, ast.Attribute) else None
        if chain and chain[0] in aliases:
            used.add(".".join([aliases[chain[0]], *chain[1:]]))
    return used


def resolve(dotted: str) -> Any:
    """Return the object named ``dotted``: import the longest module prefix, then getattr."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for i, attribute in enumerate(parts[split:], start=split):
            if not isinstance(obj, ModuleType | type):
                return obj  # an attribute of a value (an instance), not an API name
            if not hasattr(obj, attribute):
                msg = f"{'.'.join(parts[:i])} has no attribute {attribute!r} ({dotted})"
                raise AttributeError(msg)
            obj = getattr(obj, attribute)
        return obj
    msg = f"No module of {dotted!r} can be imported."
    raise ModuleNotFoundError(msg)


def documented_names() -> list[tuple[str, str]]:
    """Return (document, dotted name) for every name the documents use."""
    names = set()
    for document in DOCUMENTS:
        path = ROOT / document
        if path.exists():
            for _, code in python_blocks(path):
                names |= {(document, name) for name in used_names(code)}
    return sorted(names)


def test_documents_use_project_names():
    assert any(name.startswith("project.") for _, name in documented_names())


@pytest.mark.parametrize(("document", "name"), documented_names())
def test_documented_name_exists(document, name):
    resolve(name)


def free_names(code: str) -> set[str]:
    """Return the names ``code`` reads without defining them (nor builtins)."""
    tree = ast.parse(code)
    stored, loaded = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, ast.alias):
            stored.add(node.asname or node.name.split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            stored.add(node.name)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return loaded - stored - set(dir(builtins))


def runnable_readme_blocks() -> list[tuple[str, str]]:
    """Return the README blocks that read no build products and define what they read."""
    import project

    public = set(project.__all__)
    return [
        (heading, code)
        for heading, code in python_blocks(ROOT / "README.md")
        if "bld/" not in code and free_names(code) <= public
    ]


def test_the_stating_a_model_block_is_runnable():
    assert "Stating a model" in [heading for heading, _ in runnable_readme_blocks()]


# Blocks known to fail as the README states them: (a line of the block, why). Strict, so a fix
# shows up as an unexpected pass and the entry is removed.
KNOWN_FAILURES: dict[str, str] = {}
"""README lines whose block is known to fail (line -> why): a strict xfail, so a fix shows."""


def _readme_block_params() -> list[Any]:
    """Return the runnable blocks as pytest params, known failures marked."""
    params = []
    for _, code in runnable_readme_blocks():
        reasons = [why for line, why in KNOWN_FAILURES.items() if line in code]
        marks = [pytest.mark.xfail(reason=reasons[0], strict=True)] if reasons else []
        params.append(pytest.param(code, marks=marks, id=code.split("\n")[0]))
    return params


@pytest.mark.parametrize("code", _readme_block_params())
def test_readme_block_runs(code, tmp_path, monkeypatch):
    import project

    monkeypatch.chdir(tmp_path)
    namespace = {name: getattr(project, name) for name in project.__all__}
    exec(compile(code, "README.md", "exec"), namespace)
