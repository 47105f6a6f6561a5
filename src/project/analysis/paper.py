"""What paper/paper.tex reads and how it is compiled (for the pipeline's paper task).

The paper compiles in ``paper/`` and reads the generated files through relative paths
(``../bld/figures/<name>.pdf``, ``../bld/tables/<name>.tex``); the PDF goes to ``bld/paper/``.
"""

from __future__ import annotations

from pathlib import Path

PAPER_FIGURES = (
    "policy_functions_baseline",
    "lifecycle_profiles_baseline",
    "variant_comparison",
    "estimation_fit",
)
"""Figure stems the paper includes from ``bld/figures/`` (as ``.pdf``)."""

PAPER_TABLES = ("parameters", "summary_statistics", "estimates", "moment_fit")
"""Table stems the paper inputs from ``bld/tables/`` (as ``.tex``); labels are ``tab:<stem>``."""

LATEXMK_COMMAND = (
    "latexmk",
    "-pdf",
    "-interaction=nonstopmode",
    "-halt-on-error",
    "-outdir=../bld/paper",
    "paper.tex",
)
"""Run with the working directory ``paper/``; it writes ``bld/paper/paper.pdf``."""


def paper_inputs(*, bld: Path) -> dict[str, Path]:
    """Return every generated file the paper reads, keyed by stem, under build folder ``bld``."""
    figures = {stem: Path(bld) / "figures" / f"{stem}.pdf" for stem in PAPER_FIGURES}
    tables = {stem: Path(bld) / "tables" / f"{stem}.tex" for stem in PAPER_TABLES}
    return figures | tables


LATEX_BY_PRODUCTS = (".aux", ".log", ".fls", ".fdb_latexmk", ".out", ".synctex.gz", ".toc")
"""Files latexmk leaves beside the PDF: they hold paths and times, so they are removed."""


def remove_latex_by_products(document: Path) -> None:
    """Delete latexmk's by-products beside ``document`` (only the PDF is a product)."""
    for suffix in LATEX_BY_PRODUCTS:
        Path(document).with_suffix(suffix).unlink(missing_ok=True)


def table_label(stem: str) -> str:
    """Return the LaTeX label the paper refers to for table ``stem``: ``tab:<stem>``."""
    return f"tab:{stem}"
