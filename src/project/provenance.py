"""What every product records about how it was made: commit, dirty flag, config, seed, versions.

``product_provenance`` returns a flat ``{str: str}`` mapping, the form every container takes:
Arrow schema metadata (``arrow_metadata``), JSON (under the key ``"provenance"``), PDF and PNG
metadata of figures (``figure_metadata``) and the paper's PDF keywords.

Everything in it is a function of the checkout and the inputs, never of the clock: the build
date is ``SOURCE_DATE_EPOCH`` when set, else the commit's date, else "unknown". So two builds
of the same commit with the same inputs stay byte-identical. Outside a git checkout (the tests'
copies) commit and dirty flag read "unknown".
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyarrow import feather

from project.checkout import checkout_root

PROVENANCE_KEY = "provenance"
"""The key under which JSON products and Arrow schema metadata hold the provenance."""
PACKAGES = (
    "project",
    "jax",
    "jaxlib",
    "numpy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "optimagic",
    "orbax-checkpoint",
    "typst",
)
"""The packages whose versions a product records."""
UNKNOWN = "unknown"


def _git(*arguments: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", *arguments],
            cwd=checkout_root(),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


@cache
def checkout() -> dict[str, str]:
    """Return the commit, the dirty flag and the commit's date (cached per process)."""
    inside = _git("rev-parse", "--is-inside-work-tree") == "true"
    top = _git("rev-parse", "--show-toplevel") if inside else None
    if not inside or top is None or Path(top).resolve() != checkout_root():
        return {"commit": UNKNOWN, "dirty": UNKNOWN, "commit_date": UNKNOWN}
    status = _git("status", "--porcelain")
    commit_time = _git("log", "-1", "--format=%ct")
    return {
        "commit": _git("rev-parse", "HEAD") or UNKNOWN,
        "dirty": UNKNOWN if status is None else str(bool(status)).lower(),
        "commit_date": _iso_date(commit_time) if commit_time else UNKNOWN,
    }


def _iso_date(epoch: str) -> str:
    return datetime.fromtimestamp(int(epoch), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_date() -> str:
    """Return the build date: ``SOURCE_DATE_EPOCH`` if set, else the commit's date."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return _iso_date(epoch.strip())
    return checkout()["commit_date"]


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Return the installed versions of ``names`` (``"absent"`` for one not installed)."""
    return dict(_versions(tuple(names)))


@cache
def _versions(names: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    found = []
    for name in names:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            found.append((name, "absent"))
    return tuple(found)


def config_digest(config: Any) -> str:
    """Return the SHA-256 of ``config``'s sorted JSON text (what the product was made from)."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def product_provenance(*, config: Any = None, seed: int | None = None) -> dict[str, str]:
    """Return the provenance of a product made from ``config`` with ``seed``, as strings.

    Keys: ``commit``, ``dirty``, ``build_date``, ``config_digest`` (of ``config``; "none"
    without one), ``seed`` ("none" without one), ``python`` and ``versions`` (JSON text).
    """
    state = checkout()
    return {
        "commit": state["commit"],
        "dirty": state["dirty"],
        "build_date": build_date(),
        "config_digest": "none" if config is None else config_digest(config),
        "seed": "none" if seed is None else str(int(seed)),
        "python": platform.python_version(),
        "versions": json.dumps(package_versions(), sort_keys=True),
    }


def arrow_metadata(provenance: Mapping[str, str]) -> dict[bytes, bytes]:
    """Return Arrow schema metadata holding ``provenance`` as JSON under ``PROVENANCE_KEY``."""
    return {PROVENANCE_KEY.encode(): json.dumps(dict(provenance), sort_keys=True).encode()}


def write_arrow(
    *,
    frame: Any,
    path: Path,
    provenance: Mapping[str, str],
    compression: str | None = None,
) -> None:
    """Write the pandas ``frame`` to ``path`` as Feather with ``provenance`` in its schema.

    The schema keeps pandas' own metadata (categoricals, index), so ``pd.read_feather`` returns
    the frame as ``DataFrame.to_feather`` would; ``compression`` is Feather's (default lz4).
    """
    table = pa.Table.from_pandas(frame, preserve_index=None)
    metadata = {**(table.schema.metadata or {}), **arrow_metadata(provenance)}
    feather.write_feather(table.replace_schema_metadata(metadata), path, compression=compression)


def with_provenance(content: Mapping[str, Any], provenance: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``content`` (a JSON product's object) with ``provenance`` under ``PROVENANCE_KEY``.

    Entries already under the key (e.g. a fingerprint) are kept and win over ``provenance``'s.
    """
    recorded = content.get(PROVENANCE_KEY) or {}
    return {**content, PROVENANCE_KEY: {**provenance, **recorded}}


def without_provenance(content: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``content`` without its ``PROVENANCE_KEY`` entry (what a product says, not how)."""
    return {k: v for k, v in content.items() if k != PROVENANCE_KEY}


def read_arrow_provenance(path: Path) -> dict[str, str]:
    """Return the provenance recorded in the Arrow file ``path`` (empty if it has none)."""
    metadata = feather.read_table(path, memory_map=False).schema.metadata or {}
    raw = metadata.get(PROVENANCE_KEY.encode())
    return {} if raw is None else json.loads(raw)


def figure_metadata(provenance: Mapping[str, str], *, fmt: str) -> dict[str, str | None]:
    """Return matplotlib ``savefig`` metadata for ``fmt`` ("png" or "pdf") holding provenance.

    No time stamps: PDF's ``CreationDate`` is switched off; the provenance goes to ``Subject``
    (PDF) or a ``Provenance`` text chunk (PNG), as sorted JSON.
    """
    text = json.dumps(dict(provenance), sort_keys=True)
    if fmt == "pdf":
        return {"Creator": None, "Producer": None, "CreationDate": None, "Subject": text}
    return {"Software": None, "Provenance": text}
