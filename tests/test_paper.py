"""The paper's source holds no typed number; the paper compiler fails loudly, not silently.

The built paper itself (sections, resolved references, every number equal to the products') is
checked on the smoke build in tests/pipeline/test_incremental.py.
"""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from project.analysis.numbers import number, percent, provenance_numbers
from project.analysis.paper import PAPER_FIGURES, PAPER_TABLES, compile_paper, paper_inputs
from project.config import PAPER, ROOT
from project.errors import PaperError

MATH = re.compile(r"\$[^$]*\$", re.DOTALL)
COMMENT = re.compile(r"//[^\n]*")
LABEL = re.compile(r"<[a-z_:-]+>")


def prose_of(source: str) -> str:
    """Return the Typst source without comments, labels and math."""
    return MATH.sub(" ", LABEL.sub(" ", COMMENT.sub(" ", source)))


def test_the_paper_types_no_number_outside_math():
    source = (PAPER / "paper.typ").read_text()
    digits = [
        (i + 1, line.strip())
        for i, line in enumerate(prose_of(source).splitlines())
        if re.search(r"\d", line)
    ]
    assert digits == [], f"typed numbers in paper/paper.typ (use n.*): {digits}"


def test_math_holds_no_result_only_structural_constants():
    source = COMMENT.sub(" ", (PAPER / "paper.typ").read_text())
    numbers_in_math = [m for block in MATH.findall(source) for m in re.findall(r"\d+\.?\d*", block)]
    assert set(numbers_in_math) <= {"1"}, numbers_in_math


@pytest.mark.parametrize(
    ("source", "found"),
    [("Risk aversion is 2.5 here.", True), ("$a_(t+1)$ and #n.model.pension", False)],
)
def test_the_digit_rule_catches_a_typed_number(source, found):
    assert bool(re.search(r"\d", prose_of(source))) is found


def test_the_paper_includes_exactly_the_declared_inputs():
    source = (PAPER / "paper.typ").read_text()
    figures = re.findall(r'figure-file\("([a-z_]+)"\)', source)
    tables = re.findall(r'table-file\("([a-z_]+)"\)', source)
    assert sorted(figures) == sorted(PAPER_FIGURES)
    assert sorted(tables) == sorted(PAPER_TABLES)
    for stem in PAPER_TABLES:
        assert f"@tab:{stem}" in source, f"table {stem} is never referred to"
    inputs = paper_inputs(bld=Path("bld"))
    assert inputs["numbers"] == Path("bld/paper/numbers.json")
    assert inputs["table_validation"] == Path("bld/tables/validation.typ")


def test_numbers_are_printed_with_a_true_minus_and_no_negative_zero():
    assert number(-0.25, decimals=2) == "\u22120.25"
    assert number(-0.0001, decimals=2) == "0.00"
    assert percent(0.125) == "12.5 %"


def test_provenance_keywords_name_the_commit_and_the_versions():
    provenance = {
        "commit": "a" * 40,
        "dirty": "true",
        "build_date": "2026-11-24T00:00:00Z",
        "config_digest": "none",
        "seed": "none",
        "python": "3.11.7",
        "versions": json.dumps({"jax": "0.10.2", "typst": "0.15.2"}),
    }
    numbers = provenance_numbers(provenance)
    assert numbers["commit"] == "a" * 12
    assert numbers["dirty"] == "with uncommitted changes"
    assert numbers["jax"] == "0.10.2"
    assert f"commit={'a' * 40}" in numbers["keywords"]
    assert "typst=0.15.2" in numbers["keywords"]


def _tiny_paper(root: Path, text: str) -> Path:
    source = root / "paper" / "doc.typ"
    source.parent.mkdir(parents=True)
    source.write_text(text)
    return source


def test_a_missing_generated_input_names_the_file(tmp_path):
    source = _tiny_paper(tmp_path, "= Title\n")
    with pytest.raises(PaperError, match=r"numbers\.json"):
        compile_paper(
            source=source, document=tmp_path / "out.pdf", bld=tmp_path / "bld", root=tmp_path
        )
    assert not (tmp_path / "out.pdf").exists()


def test_a_broken_reference_fails_the_paper_and_leaves_the_old_pdf(tmp_path, monkeypatch):
    bld = tmp_path / "bld"
    for path in paper_inputs(bld=bld).values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    document = tmp_path / "out.pdf"
    document.write_bytes(b"old")
    source = _tiny_paper(tmp_path, "= Title\nSee @fig:nowhere.\n")
    with pytest.raises(PaperError, match="nowhere"):
        compile_paper(source=source, document=document, bld=bld, root=tmp_path)
    assert document.read_bytes() == b"old"


def test_a_build_root_outside_the_repository_without_products_names_the_missing(tmp_path):
    with pytest.raises(PaperError, match="needs generated files that are missing"):
        compile_paper(
            source=PAPER / "paper.typ", document=tmp_path / "p.pdf", bld=tmp_path, root=ROOT
        )


def test_the_method_sentence_names_the_method_read_from_each_solution():
    from project.analysis.numbers import method_sentence

    both = method_sentence({"baseline": "dcegm", "benefit_cut": "dcegm"})
    assert both == "The build solved the baseline and the benefit cut by DC-EGM."
    alone = method_sentence({"baseline": "egm", "benefit_cut": "dcegm"})
    assert alone == "The build solved the baseline by EGM; the benefit cut by DC-EGM."


def _panel(*, claim_age: float, scale: float = 1.0) -> pd.DataFrame:
    """Two households at 60-64: one decides at ``claim_age`` (retired after), one never."""
    rows = []
    for subject in (0, 1):
        for age in np.arange(60.0, 65.0):
            retired = subject == 0 and age > claim_age
            claim = (
                None if retired else ("claim" if subject == 0 and age == claim_age else "working")
            )
            rows.append(
                {
                    "subject_id": subject,
                    "age": age,
                    "regime": "retired" if retired else "working",
                    "claim": claim,
                    "wealth": scale * (2.0 + subject + age - 60),
                    "consumption": 1.0 if not retired else 0.8,
                    "wealth_to_income": 1.0 + subject,
                    "income_unit": 1.0,
                }
            )
    frame = pd.DataFrame(rows)
    frame["regime"] = pd.Categorical(frame["regime"], categories=["working", "retired", "dead"])
    frame["claim"] = pd.Categorical(frame["claim"], categories=["working", "claim"])
    return frame


def test_results_sentences_follow_the_numbers_of_the_summary_table():
    from project.analysis.numbers import results_numbers
    from project.analysis.tables import STATISTIC, summary_statistics

    # decisions at 61 and 62: first pensions (claiming ages) at 62 and 63
    panels = {"baseline": _panel(claim_age=61.0), "benefit_cut": _panel(claim_age=62.0, scale=1.25)}
    found = results_numbers(panels=panels)
    table = summary_statistics(panels=panels).set_index(STATISTIC)
    base, cut = table["Baseline"], table["Benefit cut"]
    assert cut["Mean wealth at 61"] == pytest.approx(1.25 * base["Mean wealth at 61"])
    numbers = found["numbers"]
    assert numbers["wealth_change"] == "25.0 %"
    assert (
        "raises mean wealth at the last age before the earliest claim by 25.0 %"
        in (found["counterfactual"])
    )
    assert "moves the mean claiming age from 62.00 to 63.00" in found["counterfactual"]
    assert numbers["baseline"]["share_earliest"] == "50.0 %"  # one of two workers at 62
    assert numbers["benefit_cut"]["share_earliest"] == "0.0 %"
    assert "its consumption falls on average" in found["results"]
    assert "(a mean log change of \u22120.223)" in found["results"]  # log(0.8), as printed
    lower = results_numbers(
        panels={"baseline": panels["benefit_cut"], "benefit_cut": panels["baseline"]}
    )
    assert "lowers mean wealth" in lower["counterfactual"]


def test_a_build_root_linked_to_another_disk_is_readable_by_typst(tmp_path):
    """``bld/`` as a link elsewhere: Typst reads below the directory holding both."""
    import typst

    from project.analysis.paper import typst_root

    repository, elsewhere = tmp_path / "repo", tmp_path / "disk" / "bld"
    (repository / "paper").mkdir(parents=True)
    elsewhere.mkdir(parents=True)
    (repository / "bld").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "number.txt").write_text("42")
    source = repository / "paper" / "p.typ"
    source.write_text('#read("/" + sys.inputs.bld + "/number.txt")')
    root, relative = typst_root(root=repository, bld=repository / "bld")
    assert (root, relative) == (tmp_path, "disk/bld")
    assert typst_root(root=repository, bld=repository / "paper") == (repository, "paper")
    pdf = typst.compile(str(source), root=str(root), sys_inputs={"bld": relative})
    assert pdf.startswith(b"%PDF")


def test_the_calibration_sentence_lists_the_targets_by_statistic_and_age():
    from project.analysis.calibration_text import calibration_targets_sentence

    table = pd.DataFrame(
        {
            "target": ["wealth_50_54", "wealth_55_59", "retirees_60_64", "work_loving_50_54"],
            "held_out": [False, False, False, True],
            "tolerance": [0.01, 0.01, 0.01, 0.02],
            "relative_miss_after": [0.0001, -0.002, 0.0, 0.052],
            "within_tolerance_after": [True, True, True, False],
            "within_tolerance_before": [False, False, False, False],
        }
    )
    sentence = calibration_targets_sentence(table, whose="The baseline\u2019s weights")
    assert sentence.startswith(
        "The baseline\u2019s weights fit 3 targets within 1 % (largest miss 0.20 %): "
        "total wealth at 50\u201354 and 55\u201359; retiree years at 60\u201364."
    )
    assert "Held out as checks, work-loving years at 50\u201354: 0 of 1 lie within 2 %" in sentence
    assert "work-loving years at 50\u201354: 5.2 % above its target after weighting" in sentence
    assert "lie within 2 % after weighting, 0 before" in sentence
    below = table.assign(
        relative_miss_after=[0.0001, -0.002, 0.0, -0.052],
        relative_miss_before=[0.01, 0.02, 0.03, 0.061],
    )
    assert "5.2 % below its target after weighting, 6.1 % above before" in (
        calibration_targets_sentence(below)
    )
    none_held = calibration_targets_sentence(table.iloc[:3])
    assert "Held out" not in none_held
