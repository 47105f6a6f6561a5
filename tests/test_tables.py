# ruff: noqa: RUF001 (the paper's Greek letters)
"""Tables in LaTeX, Typst and Markdown: notation, alignment, compilation, the statistics."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from latex_documents import compile_tables, latex_ready

from project.analysis.notation import parameter_label, variant_name
from project.analysis.panel_statistics import weighted_median
from project.analysis.table_cells import Symbol, typst_escape
from project.analysis.table_output import to_typst, write_table
from project.analysis.tables import (
    claiming_table,
    parameter_table,
    summary_statistics,
    write_parameter_table,
    write_summary_tables,
)

REGIMES = ["working", "retired", "dead"]
CLAIM = ["working", "claim"]
METHODS = {"baseline": "dcegm", "benefit_cut": "dcegm"}


@pytest.fixture(scope="module")
def specifications():
    """The variants' specifications at made-up estimates and a calibrated cost of working."""
    from project.config import VARIANTS
    from project.pipeline import variant_specification

    return {
        name: variant_specification(
            VARIANTS[name], estimates={"crra": 1.2, "beta": 0.95}, calibrated={"work_cost": 0.6}
        )
        for name in ("baseline", "benefit_cut")
    }


def tiny_panel() -> pd.DataFrame:
    """Three households at ages 60-64 of the pipeline's model.

    Household 0 works at 60-61, decides at 61 to claim at 62 and is retired at 62-64 (unit 0.8,
    its pension); household 1 works at 60-61 and is dead from 62; household 2 works
    throughout, never claiming. Wealth and consumption are in the row's unit (``income_unit``).
    """
    rows = []
    for age in range(60, 65):
        retired = age >= 62
        rows.append(
            {
                "subject_id": 0,
                "regime": "retired" if retired else "working",
                "claim": None if retired else ("claim" if age == 61 else "working"),
                "wealth": float(age - 57),
                "consumption": 1.0 if retired else 2.0,
                "wealth_to_income": float(age - 58),
                "income_unit": 0.8 if retired else 1.0 + (age - 60) / 10,
            }
        )
        dead = age >= 62
        rows.append(
            {
                "subject_id": 1,
                "regime": "dead" if dead else "working",
                "claim": None if dead else "working",
                "wealth": np.nan if dead else 10.0,
                "consumption": np.nan if dead else 3.0,
                "wealth_to_income": np.nan if dead else 9.0,
                "income_unit": np.nan if dead else 2.0,
            }
        )
        rows.append(
            {
                "subject_id": 2,
                "regime": "working",
                "claim": "working",
                "wealth": 20.0,
                "consumption": 4.0,
                "wealth_to_income": 16.0,
                "income_unit": 0.5,
            }
        )
    frame = pd.DataFrame(rows).assign(age=lambda f: 60.0 + f.index // 3)
    frame["regime"] = pd.Categorical(frame["regime"], categories=REGIMES)
    frame["claim"] = pd.Categorical(frame["claim"], categories=CLAIM)
    return frame.sort_values(["subject_id", "age"]).reset_index(drop=True)


def test_summary_statistics_match_hand_computation():
    table = summary_statistics(panels={"baseline": tiny_panel()}).set_index("Statistic")
    column = table["Baseline"]
    # levels: wealth * unit; household 0 at 61: 4 * 1.1, household 1: 10 * 2, household 2: 20 * 0.5
    assert column["Mean wealth at 61"] == pytest.approx((4 * 1.1 + 20 + 10) / 3)
    assert column["Median wealth-to-income ratio at 60"] == pytest.approx(9.0)  # 2, 9, 16
    consumption = [2.0, 2.2, 0.8, 0.8, 0.8, 6.0, 6.0, *[2.0] * 5]
    assert column["Mean consumption, ages 25\u201399"] == pytest.approx(np.mean(consumption))
    # of the three workers alive at 61, household 0 decides to claim at 62
    assert column["Share of workers claiming at 62"] == pytest.approx(1 / 3)
    assert column["Mean claiming age"] == pytest.approx(62.0)  # the first pension's age
    assert column["Share of years retired"] == pytest.approx(3 / 12)  # of the 12 living rows
    # from the last working year (2 * 1.1) to the first retired year (1 * 0.8), in levels
    assert column["Consumption change at retirement"] == pytest.approx(np.log(0.8 / 2.2))
    assert column["Households simulated"] == 3


def test_summary_statistics_keep_variant_order_and_refuse_a_panel_without_units():
    panels = {"benefit_cut": tiny_panel(), "baseline": tiny_panel()}
    table = summary_statistics(panels=panels)
    assert list(table.columns) == ["Statistic", "Benefit cut", "Baseline"]
    with pytest.raises(KeyError, match="income_unit"):
        summary_statistics(panels={"baseline": tiny_panel().drop(columns="income_unit")})


def test_claiming_ages_match_hand_computation():
    panel = tiny_panel()
    later = panel["subject_id"] == 2
    panel.loc[later & (panel["age"] == 63), "claim"] = "claim"  # household 2 claims at 64
    table = claiming_table(panels={"baseline": panel}).set_index("Variant").loc["Baseline"]
    assert table["62"] == pytest.approx(0.5) and table["64"] == pytest.approx(0.5)
    assert table["63"] == table["70"] == 0.0 and table["Mean claiming age"] == pytest.approx(63.0)


def test_weighted_median_is_the_median_with_equal_weights():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 8):
        values = rng.normal(size=n)
        assert weighted_median(values, np.full(n, 0.3)) == pytest.approx(np.median(values))
    assert weighted_median([1.0, 2.0, 3.0], [1.0, 1.0, 5.0]) == 3.0


def test_parameters_print_in_the_paper_notation_per_format():
    label = parameter_label("crra")
    assert label == Symbol(
        text="Relative risk aversion γ",
        latex=r"Relative risk aversion $\gamma$",
        typst="Relative risk aversion $gamma$",
    )
    assert parameter_label("work_cost").text == "Cost of working (share of consumption) κ"
    assert parameter_label("some_new_param").text == "Some new param"
    assert variant_name("benefit_cut") == "Benefit cut"


def test_parameter_table_marks_estimated_and_calibrated_params_and_names_sources(
    tmp_path, specifications
):
    table = parameter_table(specifications=specifications, methods=METHODS)
    assert list(table.columns) == ["Parameter", "Baseline", "Benefit cut", "Source"]
    rows = {str(label): values for label, *values in table.itertuples(index=False)}
    assert rows["Relative risk aversion γ"] == [
        "1.200",
        "1.200",
        "Estimated (MSM on SCF wealth-to-income by age)",
    ]
    assert rows["Discount factor β"][:2] == ["0.9500", "0.9500"]
    assert rows["Cost of working (share of consumption) κ"][2].startswith("Calibrated jointly")
    assert rows["Share of scheduled benefits paid φ"][:2] == ["1", "0.79"]
    assert rows["Replacement rate π"][2].startswith("Cocco, Gomes and Maenhout")
    assert rows["Ages"][:2] == ["25\u201399"] * 2
    assert rows["Solution method"][:2] == ["DC-EGM", "DC-EGM"]
    assert rows["Bequest weight ω"][2] == "Illustrative"
    paths = {s: tmp_path / f"parameters.{s}" for s in ("tex", "typ", "md")}
    write_parameter_table(specifications=specifications, methods=METHODS, paths=paths)
    for path in paths.values():
        text = path.read_text()
        for code_name in ("benefit_cut", "dcegm", "work_cost", "0.99,", "[0."):
            assert code_name not in text, (path.name, code_name)
    assert not re.search(r"\bbeta\b|\bcrra\b", paths["md"].read_text())
    assert r"$\gamma$" in paths["tex"].read_text()
    assert "$gamma$" in paths["typ"].read_text()


def numbers_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Group": ["a_b", "a_b", "#c"],
            "Name": ["x*y", "[z]", "@w <v>"],
            "Value": [-12.345, 3.1, 0.0],
            "Count": [7, 1200, 3],
        }
    )


def test_write_table_writes_three_formats_with_provenance_deterministically(tmp_path):
    provenance = {"seed": "1", "commit": "abc"}
    contents = []
    for run in ("a", "b"):
        paths = write_table(
            table=numbers_table(),
            latex_path=tmp_path / run / "t.tex",
            markdown_path=tmp_path / run / "t.md",
            typst_path=tmp_path / run / "t.typ",
            caption="Values & counts",
            label="tab:values",
            formats={"Value": "{:.3f}"},
            group_column="Group",
            provenance=provenance,
        )
        assert [p.suffix for p in paths] == [".tex", ".md", ".typ"]
        contents.append([p.read_bytes() for p in paths])
    assert contents[0] == contents[1]
    latex, markdown, typst_text = (c.decode() for c in contents[0])
    comment = '"commit": "abc", "seed": "1"'
    assert latex.splitlines()[0] == "% provenance: {" + comment + "}"
    assert typst_text.splitlines()[0] == "// provenance: {" + comment + "}"
    assert markdown.splitlines()[0] == "<!-- provenance: {" + comment + "} -->"
    # LaTeX: siunitx columns sized by the formatted numbers, headers in braces.
    assert r"\begin{tabular}{l l S[table-format=-2.3] S[table-format=4.0]}" in latex
    assert r"Group & Name & {Value} & {Count} \\" in latex
    assert r"a\_b & x*y & -12.345 & 7 \\" in latex
    assert r" & [z] & 3.100 & 1200 \\" in latex  # the group printed once
    # Typst: specials escaped, true minus, decimals padded, the figure labelled.
    assert r"[a\_b], [x\*y], [−12.345], [7]," in typst_text
    assert r"[], [\[z\]], [3.100], [1200]," in typst_text
    assert r"[\#c], [\@w \<v\>], [0.000], [3]," in typst_text
    assert "align: (left, left, right, right,)," in typst_text
    assert typst_text.rstrip().endswith(") <tab:values>")
    assert "caption: [Values & counts]," in typst_text
    assert typst_text.count("table.hline(") == 4  # top, below header, between groups, bottom
    assert "| a_b | x*y | -12.345 | 7 |" in markdown


def test_typst_numbers_align_on_the_decimal_point():
    cells = pd.DataFrame({"x": ["1.5", "-10.25", "3"]}, dtype=object)
    text = to_typst(cells=cells, caption="c", label="tab:c")
    assert "[1.5\u2007]," in text
    assert "[−10.25]," in text
    assert "[3\u2008\u2007\u2007]," in text
    assert typst_escape("1. a / b - c") == r"1\. a \/ b \- c"


def test_a_typst_document_including_the_tables_compiles(tmp_path, specifications):
    import typst

    tables = tmp_path / "tables"
    write_parameter_table(
        specifications=specifications,
        methods=METHODS,
        paths={s: tables / f"parameters.{s}" for s in ("tex", "typ", "md")},
        provenance={"commit": "abc"},
    )
    write_table(
        table=numbers_table(),
        latex_path=tables / "t.tex",
        markdown_path=tables / "t.md",
        typst_path=tables / "t.typ",
        caption=Symbol(text="With γ", latex=r"With $\gamma$", typst="With $gamma$"),
        label="tab:values",
        group_column="Group",
    )
    summary = {s: tables / f"summary.{s}" for s in ("tex", "typ", "md")}
    claiming = {s: tables / f"claiming.{s}" for s in ("tex", "typ", "md")}
    write_summary_tables(
        panels={"baseline": tiny_panel(), "benefit_cut": tiny_panel()},
        paths={"summary_statistics": summary, "claiming_ages": claiming},
    )
    document = tmp_path / "doc.typ"
    document.write_text(
        "See @tab:parameters, @tab:values, @tab:summary_statistics and @tab:claiming_ages.\n"
        '#include "/tables/parameters.typ"\n#include "/tables/t.typ"\n'
        '#include "/tables/summary.typ"\n#include "/tables/claiming.typ"\n'
    )
    pdf = typst.compile(str(document), root=str(tmp_path))
    assert pdf.startswith(b"%PDF")


@pytest.mark.skipif(not latex_ready(), reason="needs pdflatex with siunitx")
def test_a_latex_document_inputting_the_tables_compiles_without_overfull_boxes(
    tmp_path, specifications
):
    write_parameter_table(
        specifications=specifications,
        methods=METHODS,
        paths={s: tmp_path / f"parameters.{s}" for s in ("tex", "md")},
        provenance={"commit": "abc"},
    )
    write_table(
        table=numbers_table(),
        latex_path=tmp_path / "t.tex",
        markdown_path=tmp_path / "t.md",
        caption="Values",
        label="tab:values",
        group_column="Group",
    )
    write_summary_tables(
        panels={v: tiny_panel() for v in specifications},
        paths={
            "summary_statistics": {s: tmp_path / f"summary.{s}" for s in ("tex", "md")},
            "claiming_ages": {s: tmp_path / f"claiming.{s}" for s in ("tex", "md")},
        },
    )
    code, log = compile_tables(tmp_path, stems=["parameters", "t", "summary", "claiming"])
    assert code == 0, log[-3000:]
    assert (tmp_path / "doc.pdf").read_bytes().startswith(b"%PDF")
    assert "Overfull \\hbox" not in log, log


def test_only_a_wide_table_is_resized(tmp_path):
    narrow = pd.DataFrame({"a": [1.0], "b": [2.0]})
    wide = pd.DataFrame({f"A rather long column header {i}": [1.0] for i in range(6)})
    texts = []
    for name, table in (("narrow", narrow), ("wide", wide)):
        latex, _ = write_table(
            table=table,
            latex_path=tmp_path / f"{name}.tex",
            markdown_path=tmp_path / f"{name}.md",
            caption="c",
            label=f"tab:{name}",
        )
        texts.append(latex.read_text())
    assert r"\resizebox" not in texts[0]
    assert r"\resizebox{\textwidth}{!}{%" in texts[1]


@pytest.mark.skipif(not latex_ready(), reason="needs pdflatex with siunitx")
def test_numeric_columns_count_as_wide_as_siunitx_reserves(tmp_path):
    """The summary table of the default build: a 5-digit count widens every S column."""
    table = pd.DataFrame(
        {
            "Statistic": ["Mean wealth", "Consumption change at retirement", "Households"],
            "Baseline": ["2.621", "-0.090", "20000"],
            "Benefit cut": ["2.938", "-0.031", "20000"],
        }
    )
    latex, _ = write_table(
        table=table,
        latex_path=tmp_path / "summary.tex",
        markdown_path=tmp_path / "summary.md",
        caption="c",
        label="tab:summary",
        font_size="footnotesize",
    )
    assert r"S[table-format=-5.3]" in latex.read_text()
    code, log = compile_tables(tmp_path, stems=["summary"])
    assert code == 0, log[-3000:]
    assert "Overfull \\hbox" not in log, log[-3000:]


@pytest.mark.skipif(not latex_ready(), reason="pdflatex with siunitx is not installed")
def test_the_welfare_table_compiles_in_latex(tmp_path, welfare):
    """λ, true minus signs, "< 0.01 %" and an interval in brackets all compile."""
    import json

    from project.analysis.welfare_table import write_welfare_table

    (tmp_path / "welfare.json").write_text(json.dumps(welfare))
    paths = {s: tmp_path / f"welfare.{s}" for s in ("tex", "typ", "md")}
    write_welfare_table(welfare_path=tmp_path / "welfare.json", paths=paths)
    assert "\\ensuremath{\\lambda}" in paths["tex"].read_text()
    code, log = compile_tables(tmp_path, stems=["welfare"])
    assert code == 0, log[-2000:]
