"""Compile LaTeX tables in a document, for the tests of the tables' .tex files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PREAMBLE = "\\documentclass{article}\n\\usepackage{booktabs,siunitx,graphicx}\n"


def latex_ready() -> bool:
    """Return whether pdflatex and siunitx are installed (`.ci/run` installs them)."""
    if shutil.which("pdflatex") is None or shutil.which("kpsewhich") is None:
        return False
    found = subprocess.run(
        ["kpsewhich", "siunitx.sty"], capture_output=True, text=True, check=False
    )
    return bool(found.stdout.strip())


def compile_tables(directory: Path, *, stems: list[str]) -> tuple[int, str]:
    """Compile ``doc.tex`` inputting ``<stem>.tex`` of ``directory``; return the code and log."""
    inputs = "".join(f"\\input{{{stem}.tex}}\n" for stem in stems)
    (directory / "doc.tex").write_text(
        PREAMBLE + f"\\begin{{document}}\n{inputs}\\end{{document}}\n"
    )
    completed = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return completed.returncode, (directory / "doc.log").read_text(errors="replace")
