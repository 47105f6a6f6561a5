"""The catalogue of a build (bld/index.md): products, sizes, checksums, figures, exclusions."""

import hashlib
import logging

import pytest

from project.catalogue import (
    NO_DESCRIPTION,
    catalogue_products,
    describe,
    human_size,
    matches,
    write_catalogue,
)
from project.persist.atomic import MARKER_NAME, atomic_directory
from project.persist.manifest import write_marker
from project.provenance import product_provenance

DESCRIPTIONS = {
    "figures/*": "A figure of the paper.",
    "figures/special.png": "The special figure.",
    "*/model.json": "A variant's specification.",
    "*/*": "Anything two levels down.",
    "*/solution": "A variant's solution.",
    "*/calibration": "A variant's calibration.",
}
LISTED = [
    "extra.txt",
    "figures/a.pdf",
    "figures/a.png",
    "figures/special.png",
    "v/calibration",
    "v/model.json",
    "v/solution",
]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _directory_product(target, files):
    with atomic_directory(
        target, digest_of=lambda staging: write_marker(staging, kind="test")
    ) as staging:
        for name, data in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)


@pytest.fixture
def bld(tmp_path):
    """A small build: files, two directory products behind links, leftovers and excluded paths."""
    bld = tmp_path / "bld"
    files = {
        "figures/a.png": b"\x89PNG a",
        "figures/a.pdf": b"%PDF a",
        "figures/special.png": b"\x89PNG special",
        "v/model.json": b'{"name": "v"}\n',
        "extra.txt": b"not described",
        "logs/build.log": b"log",
        "benchmarks/solve.json": b"{}",
        "smoke/v/model.json": b"{}",
        "pytask.lock": b"lock",
        "v/.model.json.writing-host-1-abcd": b"a dead writer's temporary",
        ".pytask/db": b"pytask's state",
    }
    for name, data in files.items():
        (bld / name).parent.mkdir(parents=True, exist_ok=True)
        (bld / name).write_bytes(data)
    _directory_product(bld / "v" / "solution", {"metadata.json": b"{}", "arrays/.zarray": b"z"})
    _directory_product(
        bld / "v" / "calibration", {"calibration_loss.png": b"\x89PNG loss", "weights.arrow": b"w"}
    )
    (bld / "v" / ".solution.0123456789abcdef").mkdir()  # an unreferenced generation
    return bld


def test_every_product_is_listed_with_its_size_and_checksum(bld):
    products = catalogue_products(bld=bld, products=DESCRIPTIONS)
    assert [p.path for p in products] == LISTED
    by_path = {p.path: p for p in products}
    png = by_path["figures/a.png"]
    assert (png.size, png.sha256, png.directory) == (6, _sha(b"\x89PNG a"), False)
    solution = by_path["v/solution"]
    assert solution.directory
    assert [f.path for f in solution.files] == [
        f"v/solution/{MARKER_NAME}",
        "v/solution/arrays/.zarray",
        "v/solution/metadata.json",
    ]
    marker = (bld / "v" / "solution" / MARKER_NAME).read_bytes()
    assert solution.sha256 == _sha(marker)
    assert solution.size == len(marker) + 1 + 2
    assert by_path["v/solution"].description == "A variant's solution."
    assert by_path["figures/special.png"].description == "The special figure."
    assert by_path["figures/a.pdf"].description == "A figure of the paper."
    assert by_path["v/model.json"].description == "A variant's specification."
    assert by_path["extra.txt"].description is None


def test_the_catalogue_is_written_sorted_with_figures_embedded(bld, caplog):
    path = bld / "index.md"
    provenance = product_provenance(config=DESCRIPTIONS)
    with caplog.at_level(logging.WARNING, logger="project.catalogue"):
        listed = write_catalogue(bld=bld, products=DESCRIPTIONS, path=path)
    assert [p.path for p in listed] == LISTED
    assert "no description for extra.txt" in caplog.text
    text = path.read_text()
    assert text.startswith("# Products of the build\n")
    assert f"- Commit: `{provenance['commit']}`" in text
    assert f"- Build date: `{provenance['build_date']}`" in text
    assert "pyarrow " in text
    digest = _sha(b"\x89PNG a")
    row = f"| [figures/a.png](figures/a.png) | A figure of the paper. | 1 | 6 B | 6 | `{digest}` |"
    assert row in text
    assert f"| [extra.txt](extra.txt) | {NO_DESCRIPTION} | 1 |" in text
    assert "| [v/solution/](v/solution) | A variant's solution. | 3 |" in text
    assert "## v/solution/" in text
    assert "| [v/solution/arrays/.zarray](v/solution/arrays/.zarray) | 1 B | 1 |" in text
    images = [line for line in text.splitlines() if line.startswith("![")]
    assert images == [
        "![figures/a.png](figures/a.png)",
        "![figures/special.png](figures/special.png)",
        "![v/calibration/calibration_loss.png](v/calibration/calibration_loss.png)",
    ]
    for left_out in (
        "logs",
        "benchmarks",
        "smoke",
        "pytask.lock",
        ".solution.",
        "writing",
        ".pytask",
    ):
        assert left_out not in text, left_out
    assert [p.name for p in bld.iterdir() if p.name.startswith(".index")] == []


def test_the_same_build_gives_the_same_bytes_and_a_change_shows(bld):
    path = bld / "index.md"
    write_catalogue(bld=bld, products=DESCRIPTIONS, path=path)
    first = path.read_bytes()
    write_catalogue(bld=bld, products=DESCRIPTIONS, path=path)  # the index itself is not listed
    assert path.read_bytes() == first
    (bld / "figures" / "a.pdf").write_bytes(b"%PDF changed")
    write_catalogue(bld=bld, products=DESCRIPTIONS, path=path)
    text = path.read_text()
    assert _sha(b"%PDF changed") in text
    assert _sha(b"%PDF a") not in text


def test_links_lead_from_a_catalogue_outside_the_build(bld, tmp_path):
    path = tmp_path / "elsewhere" / "index.md"
    write_catalogue(bld=bld, products=DESCRIPTIONS, path=path, exclude=())
    text = path.read_text()
    assert "![figures/a.png](../bld/figures/a.png)" in text
    assert "[logs/build.log](../bld/logs/build.log)" in text  # nothing excluded
    assert "pytask.lock" in text


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("figures/a.png", "figures/*", True),
        ("figures/sub/a.png", "figures/*", False),
        ("v/model.json", "*/model.json", True),
        ("model.json", "*/model.json", False),
        ("a/b/pytask.lock", "**/pytask.lock", True),
        ("pytask.lock", "**/pytask.lock", True),
        ("logs", "logs", True),
        ("logs2", "logs", False),
    ],
)
def test_patterns_match_segment_by_segment(path, pattern, expected):
    assert matches(path, pattern) is expected


def test_the_most_literal_description_wins():
    assert describe("figures/special.png", descriptions=DESCRIPTIONS) == "The special figure."
    assert describe("v/model.json", descriptions=DESCRIPTIONS) == "A variant's specification."
    assert describe("v/other.json", descriptions=DESCRIPTIONS) == "Anything two levels down."
    assert describe("top.txt", descriptions=DESCRIPTIONS) is None


@pytest.mark.parametrize(
    ("size", "expected"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (3 * 2**20, "3.0 MiB")],
)
def test_sizes_read_in_binary_units(size, expected):
    assert human_size(size) == expected


def test_only_the_declared_products_are_listed_where_they_are_given(bld, tmp_path):
    """A file an older build left behind (no task declares it now) is left out."""
    declared = [
        bld / "figures" / "a.png",
        bld / "v" / "model.json",
        bld / "v" / "solution" / MARKER_NAME,  # a directory product, through its marker
    ]
    listed = write_catalogue(
        bld=bld, products=DESCRIPTIONS, path=tmp_path / "index.md", declared=declared
    )
    assert [p.path for p in listed] == ["figures/a.png", "v/model.json", "v/solution"]
    text = (tmp_path / "index.md").read_text()
    assert "extra.txt" not in text and "figures/special.png" not in text
    every = write_catalogue(bld=bld, products=DESCRIPTIONS, path=tmp_path / "all.md")
    assert [p.path for p in every] == LISTED
