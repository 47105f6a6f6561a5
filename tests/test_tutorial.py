"""docs/tutorial.md runs as written: its ```python blocks, in order, in one namespace, in a fresh
Python process started in an empty directory (nothing leaks into or out of the test session)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"

RUNNER = """
import sys

path = sys.argv[1]
text = open(path, encoding="utf-8").read()
lines = text.splitlines()
namespace = {"__name__": "__main__"}
inside, start, block = False, 0, []
for number, line in enumerate(lines, start=1):
    if not inside and line == "```python":
        inside, start, block = True, number, []
    elif inside and line == "```":
        inside = False
        # Padding keeps the tutorial's line numbers in tracebacks.
        code = "\\n" * start + "\\n".join(block)
        exec(compile(code, path, "exec"), namespace)
    elif inside:
        block.append(line)
"""


def test_tutorial_has_blocks():
    assert TUTORIAL.read_text(encoding="utf-8").count("\n```python\n") >= 8


def test_tutorial_runs_in_order(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-c", RUNNER, str(TUTORIAL)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-6000:]
    assert "largest relative error" in completed.stdout
    assert not list(tmp_path.iterdir()), "the tutorial wrote files into its working directory"
