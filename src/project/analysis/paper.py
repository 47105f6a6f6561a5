"""Compile the paper (Typst, through the ``typst`` Python package) from the generated files.

``paper/paper.typ`` reads, relative to the repository root and the build root ``bld``:
``<bld>/paper/numbers.json`` (every number of the text, ``project.analysis.numbers``),
``<bld>/figures/<stem>.pdf`` for ``PAPER_FIGURES`` and ``<bld>/tables/<stem>.typ`` for
``PAPER_TABLES``. The build root is handed in as ``sys.inputs.bld``, so the smoke profile's
paper reads ``bld/smoke/``. Typst fails on a reference to a missing label, so a PDF that builds
has every figure and table reference resolved.

Run by hand (after ``pytask``): ``uv run python -m project.analysis.paper``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from project.config import BLD, PAPER, ROOT
from project.errors import PaperError
from project.persist.atomic import write_bytes_atomically

logger = logging.getLogger("project.analysis")

PAPER_FIGURES = (
    "policy_functions_baseline",
    "lifecycle_profiles_baseline",
    "retirement_policy_baseline",
    "variant_comparison",
    "estimation_fit",
    "estimation_profiles",
)
"""Figure stems the paper shows from ``<bld>/figures/`` (as ``.pdf``)."""

PAPER_TABLES = (
    "parameters",
    "validation",
    "estimates",
    "moment_fit",
    "estimation_searches",
    "identification",
    "summary_statistics",
    "claiming_ages",
    "welfare",
    "robustness",
    "replication",
    "replication_fit",
)
"""Table stems the paper includes from ``<bld>/tables/`` (as ``.typ``); labels ``tab:<stem>``."""

PAPER_SOURCES = ("paper.typ", "template.typ", "references.bib")
"""The paper's own files in ``paper/``."""


def paper_inputs(*, bld: Path) -> dict[str, Path]:
    """Return every generated file the paper reads, keyed by stem, under build root ``bld``."""
    bld = Path(bld)
    figures = {stem: bld / "figures" / f"{stem}.pdf" for stem in PAPER_FIGURES}
    tables = {f"table_{stem}": bld / "tables" / f"{stem}.typ" for stem in PAPER_TABLES}
    return {**figures, **tables, "numbers": bld / "paper" / "numbers.json"}


def typst_root(*, root: Path, bld: Path) -> tuple[Path, str]:
    """Return the directory Typst may read and ``bld`` relative to it (links resolved).

    The repository when ``bld`` lies inside it, else the deepest directory holding both (a
    ``bld/`` linked to another disk).
    """
    root, bld = Path(root).resolve(), Path(bld).resolve()
    if not bld.is_relative_to(root):
        root = Path(os.path.commonpath([root, bld]))
    return root, bld.relative_to(root).as_posix()


def compile_paper(*, source: Path, document: Path, bld: Path, root: Path) -> Path:
    """Compile ``source`` to the PDF ``document`` (atomically) reading generated files in ``bld``.

    ``root`` is the repository; Typst may read below it, or below the directory holding both it
    and ``bld`` when ``bld/`` is a link to another disk.
    Raises ``PaperError`` with Typst's message when the paper does not compile.
    """
    import typst  # noqa: PLC0415

    root, relative_bld = typst_root(root=root, bld=bld)
    bld = root / relative_bld
    missing = [str(p) for p in paper_inputs(bld=bld).values() if not p.exists()]
    if missing:
        msg = f"The paper {source} needs generated files that are missing: {missing}. Run pytask."
        raise PaperError(msg)
    try:
        pdf = typst.compile(str(source), root=str(root), sys_inputs={"bld": relative_bld})
    except Exception as error:  # typst.TypstError and its relatives
        msg = f"Typst could not compile {source}: {error}"
        raise PaperError(msg) from error
    write_bytes_atomically(Path(document), pdf)
    logger.info("Wrote the paper to %s (%d bytes).", document, len(pdf))
    return Path(document)


def paper_headings(*, source: Path, bld: Path, root: Path) -> list[str]:
    """Return the texts of the paper's level-one headings, in order (for checks)."""
    import typst  # noqa: PLC0415

    root, relative_bld = typst_root(root=root, bld=bld)
    found = typst.query(str(source), "heading", root=str(root), sys_inputs={"bld": relative_bld})
    return [_plain(item["body"]) for item in json.loads(found) if item["level"] == 1]


def _plain(content: Mapping | str) -> str:
    """Return the plain text of Typst content as ``typst.query`` returns it."""
    if isinstance(content, str):
        return content
    if "text" in content:
        return str(content["text"])
    if "children" in content:
        return "".join(_plain(child) for child in content["children"])
    if content.get("func") == "space":
        return " "
    return ""


def main() -> None:
    """Compile ``paper/paper.typ`` against the current build root (``project.config.BLD``)."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    os.chdir(ROOT)
    compile_paper(
        source=PAPER / "paper.typ", document=BLD / "paper" / "paper.pdf", bld=BLD, root=ROOT
    )


if __name__ == "__main__":
    main()
