"""The paper's source holds no typed number; the paper compiler fails loudly, not silently.

The built paper itself (sections, resolved references, every number equal to the products') is
checked on the smoke build in tests/pipeline/test_incremental.py.
"""

import json
import re
from pathlib import Path

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

    sizes = {"n_consumption": 100, "n_wealth": 80}
    both = method_sentence(
        {"baseline": "dcegm", "low_pension": "dcegm", "baseline_grid": "grid"}, sizes=sizes
    )
    assert both.startswith("The build solved the baseline and the low-pension variant by DC-EGM.")
    assert "by grid search over 100 consumption points at each of 80 wealth points" in both
    alone = method_sentence({"baseline": "grid", "low_pension": "dcegm"}, sizes=sizes)
    assert (
        alone == "The build solved the baseline by grid search; the low-pension variant by DC-EGM."
    )


def _panel(retire_ages: dict[int, float]) -> pd.DataFrame:
    rows = []
    for subject, age_retired in retire_ages.items():
        for age in (60.0, 61.0, 62.0):
            retired = "retired" if age >= age_retired else "working"
            rows.append(
                {
                    "subject_id": subject,
                    "age": age,
                    "regime": "retired" if age > age_retired else "working",
                    "retirement": retired,
                    "pref_type": "work_loving",
                    "wealth": 1.0 + subject,
                    "consumption": 0.5,
                }
            )
    frame = pd.DataFrame(rows)
    for column in ("regime", "retirement", "pref_type"):
        frame[column] = frame[column].astype("category")
    frame["regime"] = frame["regime"].cat.set_categories(["working", "retired", "dead"])
    return frame


SAME_RETIREMENT_AGE = {
    v: {"params": {"mandatory_retirement_age": 62.0}} for v in ("baseline", "low_pension")
}


def test_results_sentences_follow_the_numbers():
    from project.analysis.numbers import results_numbers

    same = results_numbers(
        panels={"baseline": _panel({0: 61.0}), "low_pension": _panel({0: 61.0})},
        weights={},
        specifications=SAME_RETIREMENT_AGE,
    )
    assert "keep retiring at 61.0" in same["counterfactual"]
    assert ("lowers" not in same["counterfactual"] and "raises" not in same["counterfactual"]) or (
        "by 0.0 %" in same["counterfactual"]
    )
    later = results_numbers(
        panels={"baseline": _panel({0: 60.0}), "low_pension": _panel({0: 62.0})},
        weights={},
        specifications=SAME_RETIREMENT_AGE,
    )
    assert "postpone retirement on average (from 60.0 to 62.0)" in later["counterfactual"]


def test_the_counterfactual_wealth_change_is_that_of_the_summary_table():
    from project.analysis.numbers import results_numbers
    from project.analysis.tables import STATISTIC, summary_statistics

    panels = {"baseline": _panel({0: 60.0}), "low_pension": _panel({0: 62.0})}
    panels["low_pension"]["wealth"] *= 1.25
    table = summary_statistics(panels=panels, specifications=SAME_RETIREMENT_AGE)
    row = table.set_index(STATISTIC).loc["Mean wealth at age 61"]
    assert row["Low pension"] == pytest.approx(1.25 * row["Baseline"])
    numbers = results_numbers(panels=panels, weights={}, specifications=SAME_RETIREMENT_AGE)
    assert numbers["numbers"]["probe_age"] == "61"
    assert "raises mean wealth at age 61 by 25.0 %" in numbers["counterfactual"]


def test_variants_with_different_retirement_ages_have_no_common_probe_age():
    from project.analysis.numbers import results_numbers
    from project.errors import ConfigurationError

    panels = {"baseline": _panel({0: 60.0}), "low_pension": _panel({0: 60.0})}
    specifications = dict(SAME_RETIREMENT_AGE)
    specifications["low_pension"] = {"params": {"mandatory_retirement_age": 65.0}}
    with pytest.raises(ConfigurationError, match="mandatory retirement age"):
        results_numbers(panels=panels, weights={}, specifications=specifications)


def test_the_monte_carlo_check_reports_the_distance_in_standard_errors():
    from project.analysis.numbers import monte_carlo_sentence

    values = {
        "consumption_utility": -17.34,
        "simulated_consumption_utility": -17.28,
        "simulated_consumption_utility_se": 0.03,
        "n_households": 20_000,
    }
    sentence = monte_carlo_sentence({"values": values})
    assert "20,000 simulated households" in sentence
    assert "are 2.0 standard errors apart, beyond the 5 % critical value of 1.96: " in sentence
    values["simulated_consumption_utility_se"] = 0.06
    within = monte_carlo_sentence({"values": values})
    assert "1.0 standard errors apart, within the two-sided 5 % critical value of 1.96" in within
    assert within.endswith("the check passes at the 5 % level.")
    assert monte_carlo_sentence({"values": {}}) == ""


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


def test_a_type_with_a_tiny_welfare_standard_error_is_explained():
    from project.analysis.welfare_text import precise_types_sentence

    welfare = {
        "lambda_by_type": {"work_loving": -0.0344, "leisure_loving": -0.0563},
        "numbers": {"lambda_work_loving_se": "< 0.01 %", "lambda_leisure_loving_se": "0.24 %"},
    }
    ages = {
        "baseline": {"Work-loving": "70.0", "Leisure-loving": "62.1"},
        "low_pension": {"Work-loving": "70.0", "Leisure-loving": "69.2"},
    }
    sentence = precise_types_sentence(welfare, retirement_ages=ages, mandatory_age="70")
    assert "standard error of the work-loving households\u2019 λ is below 0.01 %" in sentence
    assert "retire at the mandatory age of 70 under both pensions" in sentence
    assert "leisure-loving" not in sentence
    earlier = {v: {**a, "Work-loving": "68.0"} for v, a in ages.items()}
    unexplained = precise_types_sentence(welfare, retirement_ages=earlier, mandatory_age="70")
    assert unexplained.endswith("is below 0.01 %.")
    welfare["numbers"]["lambda_work_loving_se"] = "0.02 %"
    assert precise_types_sentence(welfare, retirement_ages=ages, mandatory_age="70") == ""


def test_the_welfare_table_prints_the_numbers_the_text_cites(welfare):
    """λ overall and by type, its s.e. and interval, and the Monte Carlo check: one string each."""
    from project.analysis.welfare_table import welfare_table
    from project.analysis.welfare_text import (
        monte_carlo_numbers,
        monte_carlo_sentence,
        welfare_sentence,
    )

    table = welfare_table(welfare)
    cells = {str(cell) for cell in table.to_numpy().ravel()}
    text = welfare_sentence(welfare)["sentence"] + monte_carlo_sentence(welfare)
    printed = {k: v for k, v in welfare["numbers"].items() if k.startswith("lambda")}
    printed |= {k: monte_carlo_numbers(welfare)[k] for k in ("exact", "simulated", "simulated_se")}
    assert len(printed) == 12
    for key, value in printed.items():
        assert value in cells, key
        if not (key.endswith("_ci") and key != "lambda_ci"):  # the text gives no type's interval
            assert value in text, key
    assert list(table["Households"][:3]) == ["All", "Leisure-loving", "Work-loving"]
    assert "< 0.01 %" in cells  # the work-loving type's tiny standard error, as the text says
    without_check = welfare_table({**welfare, "values": {}})
    assert len(without_check) == 3
