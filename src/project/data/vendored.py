"""The data files shipped in ``data/``: where they live and the SHA-256 they must have.

The files are byte-identical copies from the ``econ-ark`` 0.17.2 wheel or the econ-ark/HARK
repository (Apache-2.0), or (the replication's age profiles) written with HARK 0.17.2 by
``data/replication/make_profiles.py``; see data/README.md for their provenance and columns.
They are never edited: a file whose checksum differs from the one recorded here was
altered and is refused.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from project.config import ROOT
from project.errors import DataError

DATA_DIR = ROOT / "data"
"""The folder of the shipped data files (paths below are relative to it)."""

VENDORED: dict[str, tuple[str, str]] = {
    "scf_wealth_income_stats": (
        "scf/WealthIncomeStats.csv",
        "8015ca2e88d5c9e7b8a84acdcadab6f65d57621bfa9219e155fd4b50b82d75ef",
    ),
    "scf_wealth_reduced": (
        "scf/SCFwealthDataReduced.txt",
        "a3f8bbb43d787cc1516122684a942117b65113d4298986a1f7617427742a802d",
    ),
    "us_life_table": (
        "life_tables/USactuarial.txt",
        "807aa92d0f2cb71a9240a31ae35a34b4033ef0f7382d6dd1940b1162e91a7309",
    ),
    "profiles_hark2019": (
        "replication/profiles_hark2019.csv",
        "7285ef70d2a996a4180ba32a1e271c34a2447ba813e09dfbcc5f7c51fe31c5c6",
    ),
    "profiles_notes2026": (
        "replication/profiles_notes2026.csv",
        "cc8ede53a4c8772b002ee9505533d4f996a2e91217bc6b9a08d33039df67a4fe",
    ),
    "scf_wealth_income_ratios": (
        "replication/SCFdata.csv",
        "8a1935cb2e9c32259cb959754cb7d6946d37eecb5b85b02d107011bd8800df76",
    ),
}
"""Name of each vendored file -> (path relative to ``DATA_DIR``, expected SHA-256 in hex)."""

_CHUNK = 1 << 20
logger = logging.getLogger(__name__)


def vendored_path(name: str) -> Path:
    """Return where the vendored file ``name`` lives, without checking it."""
    _known(name)
    return DATA_DIR / VENDORED[name][0]


def sha256_of(path: Path) -> str:
    """Return the SHA-256 of the file at ``path`` in hex."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(*, path: Path, expected_sha256: str) -> Path:
    """Return ``path`` after checking that it exists and has the expected checksum."""
    path = Path(path)
    shown = display_path(path)
    if not path.is_file():
        msg = (
            f"Data file {shown} is missing. Restore it from git (`git checkout -- {shown}`) or "
            "copy it again from the econ-ark 0.17.2 wheel (see data/README.md)."
        )
        raise DataError(msg)
    actual = sha256_of(path)
    if actual != expected_sha256:
        msg = (
            f"Data file {shown} was altered: its SHA-256 is {actual}, expected "
            f"{expected_sha256}. Vendored files are never edited: restore it from git "
            f"(`git checkout -- {shown}`) or from the econ-ark 0.17.2 wheel (see data/README.md)."
        )
        raise DataError(msg)
    logger.debug("Verified %s (sha256 %s).", path, actual)
    return path


def verified_path(name: str) -> Path:
    """Return the path of the vendored file ``name`` after checking its existence and checksum."""
    _known(name)
    relative, expected = VENDORED[name]
    return verify_file(path=DATA_DIR / relative, expected_sha256=expected)


def display_path(path: Path) -> str:
    """Return ``path`` relative to the repository root where it lies inside it, else in full."""
    path = Path(path).absolute()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def _known(name: str) -> None:
    if name not in VENDORED:
        msg = f"Unknown vendored data file {name!r}; known are {sorted(VENDORED)}."
        raise DataError(msg)
