"""The catalogue of a build: every product with its description, size and checksum.

``write_catalogue(bld=..., products=..., path=...)`` walks the build folder and writes
``<bld>/index.md``: the build's provenance (``project.provenance``), one table row per product
(description, number of files, size in words and in bytes, SHA-256), the files of every
directory product, and every PNG figure embedded as a Markdown image.

A product is a file, or a directory product: a directory holding a marker (``COMPLETE.json``,
see ``project.persist.manifest``), reached through its link (``bld/x/solution`` ->
``.solution.<digest>``, see ``project.persist.atomic``) and listed under the link's name; its
files are grouped under it, and its row's checksum is its marker's, which lists every file's.
Hidden entries (generations, staging leftovers, ``.pytask``), the excluded paths (``EXCLUDE``:
the logs, the benchmarks, the smoke build, pytask's lock file) and the catalogue itself are
left out. Descriptions come from ``products``: relative paths or glob patterns (``*`` within one
path segment, ``**`` for any number of segments) mapped to a sentence; an exact path wins over
a pattern, and a more literal pattern over a looser one. Everything is sorted and no clock time
is read, so the same build gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from urllib.parse import quote

from project.persist.atomic import MARKER_NAME, write_bytes_atomically
from project.provenance import product_provenance

EXCLUDE = ("logs", "benchmarks", "smoke", "**/pytask.lock", "**/pytask.lock.journal")
"""Paths (patterns relative to the build folder) that are no products of the build."""
FIGURE_SUFFIXES = (".png",)
"""Files embedded as images (Markdown renders PNG; PDF figures are listed only)."""
NO_DESCRIPTION = "(no description)"
UNITS = ("KiB", "MiB", "GiB", "TiB")

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class CatalogueFile:
    """One file: its path relative to the build folder, its size in bytes and its SHA-256."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Product:
    """A file product or a directory product (``directory``) with its files and description."""

    path: str
    description: str | None
    files: tuple[CatalogueFile, ...]
    directory: bool
    sha256: str

    @property
    def size(self) -> int:
        """Return the bytes of all its files."""
        return sum(f.size for f in self.files)


def write_catalogue(
    *,
    bld: Path,
    products: Mapping[str, str],
    path: Path,
    exclude: Sequence[str] = EXCLUDE,
    provenance: Mapping[str, str] | None = None,
    declared: Collection[Path] | None = None,
) -> list[Product]:
    """Write the catalogue of ``bld`` to ``path`` atomically; return the products it lists.

    ``products`` maps relative paths or patterns to descriptions; ``exclude`` lists patterns
    to leave out; ``provenance`` (default: ``product_provenance`` of ``products``) heads it;
    ``declared``: the build's products (files, or a directory product's marker), the only
    ones listed where given, so that a file an older build left behind is not.
    """
    bld, path = Path(bld).absolute(), Path(path).absolute()
    found = catalogue_products(bld=bld, products=products, exclude=exclude, skip=(path,))
    if declared is not None:
        wanted = {Path(p).absolute() for p in declared}
        found = [p for p in found if _declared(bld, product=p, wanted=wanted)]
    undescribed = [p.path for p in found if p.description is None]
    if undescribed:
        logger.warning("The catalogue has no description for %s.", ", ".join(undescribed))
    if provenance is None:
        provenance = product_provenance(config=dict(products))
    links = Path(os.path.relpath(bld, path.parent)).as_posix()
    text = render_catalogue(products=found, provenance=provenance, links=links)
    write_bytes_atomically(path, text.encode())
    return found


def catalogue_products(
    *,
    bld: Path,
    products: Mapping[str, str],
    exclude: Sequence[str] = EXCLUDE,
    skip: Sequence[Path] = (),
) -> list[Product]:
    """Return the products under ``bld`` with their descriptions, sorted by path.

    ``skip``: files to leave out (the catalogue itself).
    """
    bld = Path(bld).absolute()
    skipped = {Path(p).absolute() for p in skip}
    found = []
    for relative, entry in _entries(bld, exclude=exclude, skipped=skipped):
        description = describe(relative, descriptions=products)
        if entry.is_dir():
            files = _directory_files(entry, relative=relative)
            marker = next(f for f in files if f.path == f"{relative}/{MARKER_NAME}")
            found.append(
                Product(
                    path=relative,
                    description=description,
                    files=files,
                    directory=True,
                    sha256=marker.sha256,
                )
            )
        else:
            file = _catalogue_file(entry, relative=relative)
            found.append(
                Product(
                    path=relative,
                    description=description,
                    files=(file,),
                    directory=False,
                    sha256=file.sha256,
                )
            )
    return sorted(found, key=lambda p: p.path)


def _declared(bld: Path, *, product: Product, wanted: set[Path]) -> bool:
    """Say whether ``product`` (a file, or a directory through its marker) is in ``wanted``."""
    location = bld / product.path
    return (location / MARKER_NAME if product.directory else location) in wanted


def _entries(
    bld: Path, *, exclude: Sequence[str], skipped: set[Path]
) -> Iterator[tuple[str, Path]]:
    """Yield (relative path, path) of every product: files and directories with a marker."""
    pending: list[tuple[str, Path]] = [("", bld)]
    visited: set[Path] = set()
    while pending:
        prefix, directory = pending.pop()
        resolved = directory.resolve()
        if resolved in visited:  # a link back into the tree
            continue
        visited.add(resolved)
        for entry in sorted(directory.iterdir(), key=lambda p: p.name):
            relative = f"{prefix}{entry.name}"
            if (
                entry.name.startswith(".")
                or entry.absolute() in skipped
                or any(matches(relative, pattern) for pattern in exclude)
            ):
                continue
            if entry.is_dir():
                if (entry / MARKER_NAME).is_file():
                    yield relative, entry
                else:
                    pending.append((f"{relative}/", entry))
            elif entry.is_file():
                yield relative, entry


def _directory_files(directory: Path, *, relative: str) -> tuple[CatalogueFile, ...]:
    """Return every file of a directory product (hidden ones included), sorted."""
    names = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    return tuple(_catalogue_file(directory / n, relative=f"{relative}/{n}") for n in names)


def _catalogue_file(path: Path, *, relative: str) -> CatalogueFile:
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return CatalogueFile(path=relative, size=path.stat().st_size, sha256=digest)


def matches(path: str, pattern: str) -> bool:
    """Say whether the relative POSIX ``path`` matches ``pattern`` segment by segment.

    ``*``, ``?`` and ``[...]`` match within one segment; a ``**`` segment matches any number of
    segments (none included).
    """
    return _match(path.strip("/").split("/"), pattern.strip("/").split("/"))


def _match(parts: list[str], segments: list[str]) -> bool:
    if not segments:
        return not parts
    if segments[0] == "**":
        return any(_match(parts[i:], segments[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], segments[0]) and _match(parts[1:], segments[1:])


def describe(path: str, *, descriptions: Mapping[str, str]) -> str | None:
    """Return the description of ``path``: its exact entry, else the most literal match."""
    if path in descriptions:
        return descriptions[path]
    candidates = [p for p in descriptions if matches(path, p)]
    if not candidates:
        return None
    return descriptions[min(candidates, key=lambda p: (-_literal_characters(p), p))]


def _literal_characters(pattern: str) -> int:
    return sum(c not in "*?[]" for c in pattern)


def human_size(size: int) -> str:
    """Return ``size`` bytes in words: "812 B", "12.3 KiB", "1.2 MiB"."""
    if size < 1024:
        return f"{size} B"
    value, unit = float(size), UNITS[0]
    for unit in UNITS:  # noqa: B007  (the loop leaves the unit that fits)
        value /= 1024
        if value < 1024:
            break
    return f"{value:.1f} {unit}"


def render_catalogue(
    *, products: Sequence[Product], provenance: Mapping[str, str], links: str = "."
) -> str:
    """Return the catalogue as Markdown; ``links`` leads from the catalogue to the build folder."""
    files = sum(len(p.files) for p in products)
    total = sum(p.size for p in products)
    lines = [
        "# Products of the build",
        "",
        *_provenance_lines(provenance),
        "",
        f"{len(products)} products, {files} files, {human_size(total)} ({total:,} bytes) in all.",
        "Sizes in binary units (1 KiB = 1024 bytes) and in bytes; checksums are SHA-256. A",
        "directory product's checksum is its marker's (`COMPLETE.json`, which lists the",
        "checksum of each of its files).",
        "",
        *_product_table(products, links=links),
        *_directory_tables(products, links=links),
        *_figure_sections(products, links=links),
    ]
    return "\n".join(lines) + "\n"


def _product_table(products: Sequence[Product], *, links: str) -> list[str]:
    """Return the table of every product, one row each."""
    lines = [
        "## Products",
        "",
        "| Product | Description | Files | Size | Bytes | SHA-256 |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for product in products:
        name = product.path + ("/" if product.directory else "")
        lines.append(
            f"| {_link(name, target=product.path, links=links)} | {_description(product)} | "
            f"{len(product.files)} | {human_size(product.size)} | {product.size:,} | "
            f"`{product.sha256}` |"
        )
    return lines


def _directory_tables(products: Sequence[Product], *, links: str) -> list[str]:
    """Return a section per directory product, with a table of its files."""
    lines: list[str] = []
    for product in (p for p in products if p.directory):
        lines += [
            "",
            f"## {_cell(product.path)}/",
            "",
            _description(product),
            "",
            "| File | Size | Bytes | SHA-256 |",
            "| --- | ---: | ---: | --- |",
        ]
        for file in product.files:
            lines.append(
                f"| {_link(file.path, target=file.path, links=links)} | {human_size(file.size)} "
                f"| {file.size:,} | `{file.sha256}` |"
            )
    return lines


def _figure_sections(products: Sequence[Product], *, links: str) -> list[str]:
    """Return the figures' section: each figure under its file name, shown inline."""
    figures = [
        (product, file)
        for product in products
        for file in product.files
        if file.path.lower().endswith(FIGURE_SUFFIXES)
    ]
    lines = ["", "## Figures"] if figures else []
    for product, file in figures:
        lines += [
            "",
            f"### {_cell(file.path)}",
            "",
            _description(product),
            "",
            f"![{_cell(file.path)}]({_target(file.path, links=links)})",
        ]
    return lines


def _provenance_lines(provenance: Mapping[str, str]) -> list[str]:
    """Return the build's provenance as a short list; the package versions on one line."""
    labels = {
        "commit": "Commit",
        "dirty": "Uncommitted changes",
        "build_date": "Build date",
        "python": "Python",
    }
    lines = [
        f"- {label}: `{provenance[key]}`" for key, label in labels.items() if key in provenance
    ]
    versions = provenance.get("versions")
    if versions is not None:
        try:
            parsed = json.loads(versions)
        except (TypeError, ValueError):
            parsed = None
        if isinstance(parsed, dict):
            versions = ", ".join(f"{name} {parsed[name]}" for name in sorted(parsed))
        lines.append(f"- Packages: {versions}")
    others = sorted(set(provenance) - set(labels) - {"versions", "config_digest", "seed"})
    lines += [f"- {key}: `{provenance[key]}`" for key in others]
    return ["Built from:", "", *lines]


def _description(product: Product) -> str:
    return _cell(product.description or NO_DESCRIPTION)


def _link(text: str, *, target: str, links: str) -> str:
    return f"[{_cell(text)}]({_target(target, links=links)})"


def _target(path: str, *, links: str) -> str:
    joined = path if links in ("", ".") else f"{links}/{path}"
    return quote(joined, safe="/-_.~")


def _cell(text: str) -> str:
    """Return ``text`` safe inside a Markdown table cell (one line, no bare pipes)."""
    return " ".join(str(text).split()).replace("|", "\\|")
