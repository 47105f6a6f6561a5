"""Run tests/sharded in a separate process with 4 fake CPU devices.

The device count must be set before JAX starts, so these tests cannot share this process.
"""

import os
import subprocess
import sys
from pathlib import Path

SHARDED = Path(__file__).parent / "sharded"


def test_sharded_suite_passes_on_four_fake_devices():
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(SHARDED),
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "--rootdir",
            str(SHARDED),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert " passed" in result.stdout
