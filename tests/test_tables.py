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
from project.analysis.table_output import Symbol, to_typst, typst_escape, write_table
from project.analysis.tables import (
    parameter_table,
    retirement_age_table,
    summary_statistics,
    write_parameter_table,
    write_summary_tables,
)

REGIMES = ["working", "retired", "dead"]
RETIREMENT = ["working", "retired"]
PREF_TYPES = ["work_loving", "leisure_loving"]
NODES = ["node_0", "node_1", "node_2"]
WEIGHTS = pd.DataFrame({"subject_id": [0, 1, 2], "weight": [1.0, 3.0, 2.0]})
PARAMS = {
    "beta": 0.96,
    "crra": 2.0,
    "disutility_of_work": [0.15, 0.6],
    "income_rho": 0.5,
    "income_sigma": 0.2,
    "mandatory_retirement_age": 70.0,
    "pension": 0.4,
    "r": 0.03,
    "survival_probabilities": [0.99, 0.98, 0.97, 0.96],
    "taste_shock_scale": 0.01,
    "wage": 1.0,
}
SIZES = {"n_wealth": 12, "n_consumption": 12, "n_periods": 4, "start_age": 60}
SPECIFICATIONS = {
    "baseline": {"params": PARAMS, "sizes": SIZES | {"n_savings": 30, "survival": "life_table"}},
    "low_pension": {"params": PARAMS | {"pension": 0.3}, "sizes": SIZES | {"n_savings": 30}},
    "baseline_grid": {"params": PARAMS, "sizes": SIZES | {"survival": "life_table"}},
}
METHODS = {"baseline": "dcegm", "low_pension": "dcegm", "baseline_grid": "grid"}


def tiny_panel() -> pd.DataFrame:
    """Three subjects at ages 60-63, weights 1, 3, 2.

    Subject 0 (work loving) works at 60-61 (consumption 2, income node 2) and retires at 62
    (consumption 1, then the retired regime). Subject 1 (leisure loving) works at 60-61
    (node 0) and is dead from 62. Subject 2 (leisure loving) is retired throughout.
    """
    rows = []
    for age in range(60, 64):
        rows.append(
            {
                "subject_id": 0,
                "regime": "working" if age < 63 else "retired",
                "retirement": "working" if age < 62 else ("retired" if age == 62 else None),
                "income": "node_2" if age < 63 else None,
                "wealth": float(age - 59),
                "consumption": 2.0 if age < 62 else 1.0,
            }
        )
        dead = age >= 62
        rows.append(
            {
                "subject_id": 1,
                "regime": "dead" if dead else "working",
                "retirement": None if dead else "working",
                "income": None if dead else "node_0",
                "wealth": 1e6 if dead else 10.0,
                "consumption": np.nan if dead else 3.0,
            }
        )
        rows.append(
            {
                "subject_id": 2,
                "regime": "retired",
                "retirement": None,
                "income": None,
                "wealth": 20.0,
                "consumption": 4.0,
            }
        )
    frame = pd.DataFrame(rows).assign(age=lambda f: 60.0 + f.index // 3)
    frame["regime"] = pd.Categorical(frame["regime"], categories=REGIMES)
    frame["retirement"] = pd.Categorical(frame["retirement"], categories=RETIREMENT)
    frame["income"] = pd.Categorical(frame["income"], categories=NODES)
    frame["pref_type"] = pd.Categorical.from_codes(
        (frame["subject_id"] > 0).astype(int), categories=PREF_TYPES
    )
    return frame


def test_retirement_age_table_matches_hand_computation():
    table = retirement_age_table(panels={"baseline": tiny_panel()}, weights={"baseline": WEIGHTS})
    assert table["Variant"].tolist() == ["Baseline"] * 3
    assert table["Type"].tolist() == ["Work-loving", "Leisure-loving", "All"]
    share = table["Share who retire"].tolist()
    age = table["Retirement age"].tolist()
    # Work loving: subject 0 retires at 62. Leisure loving: subject 1 (weight 3) never,
    # subject 2 (weight 2) is retired from 60. All: weights 1 and 2 of 6 retire.
    assert share == pytest.approx([1.0, 2 / 5, 3 / 6])
    assert age == pytest.approx([62.0, 60.0, (62 + 2 * 60) / 3])
    unweighted = retirement_age_table(panels={"baseline": tiny_panel()})
    assert unweighted["Share who retire"].tolist() == pytest.approx([1.0, 0.5, 2 / 3])
    assert unweighted["Retirement age"].iloc[2] == pytest.approx(61.0)


def test_summary_statistics_match_hand_computation():
    table = summary_statistics(
        panels={"baseline": tiny_panel()},
        weights={"baseline": WEIGHTS},
        specifications=SPECIFICATIONS,
    ).set_index("Statistic")["Baseline"]
    # Living rows: subject 0 at 60-63 (weight 1), subject 1 at 60-61 (3), subject 2 (2).
    wealth = np.array([1, 2, 3, 4, 10, 10, 20, 20, 20, 20], dtype=float)
    weight = np.array([1, 1, 1, 1, 3, 3, 2, 2, 2, 2], dtype=float)
    consumption = np.array([2, 2, 1, 1, 3, 3, 4, 4, 4, 4], dtype=float)
    retired = np.array([0, 0, 1, 1, 0, 0, 1, 1, 1, 1], dtype=float)
    psi = np.sqrt(2.0) * 0.2 / np.sqrt(1 - 0.5**2)
    income = np.array([np.exp(psi)] * 2 + [0.4] * 2 + [np.exp(-psi)] * 2 + [0.4] * 4)
    assert table["Mean wealth"] == pytest.approx(wealth @ weight / weight.sum())
    assert table["Median wealth"] == pytest.approx(10.0)  # weights 4 below, 6 at 10, 8 above
    assert table["Mean consumption"] == pytest.approx(consumption @ weight / weight.sum())
    assert table["Share of years retired"] == pytest.approx(retired @ weight / weight.sum())
    assert table["Wealth-to-income ratio"] == pytest.approx(
        (wealth @ weight) / (income @ weight), rel=1e-6
    )
    assert table["Share who retire"] == pytest.approx(0.5)
    assert table["Mean retirement age"] == pytest.approx((62 + 2 * 60) / 3)
    assert table["Consumption change at retirement"] == pytest.approx(np.log(0.5))
    assert table["Households simulated"] == 3


def test_summary_statistics_leave_the_ratio_out_without_income_and_keep_variant_order():
    panels = {"low_pension": tiny_panel(), "baseline": tiny_panel()}
    table = summary_statistics(panels=panels)
    assert list(table.columns) == ["Statistic", "Low pension", "Baseline"]
    assert "Wealth-to-income ratio" not in table["Statistic"].tolist()
    assert "N" not in table["Statistic"].tolist()


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
    assert parameter_label("beta").text == "Discount factor β"
    assert parameter_label("some_new_param").text == "Some new param"
    assert variant_name("low_pension") == "Low pension"
    assert variant_name("baseline_grid") == "Baseline (grid search)"
    assert variant_name("high_pension_cut") == "High pension cut"


def test_parameter_table_fits_and_prints_no_code_names(tmp_path):
    table = parameter_table(specifications=SPECIFICATIONS, methods=METHODS)
    assert list(table.columns) == [
        "Parameter",
        "Baseline",
        "Low pension",
        "Baseline (grid search)",
    ]
    rows = {str(label): values for label, *values in table.itertuples(index=False)}
    assert rows["Pension p"] == ["0.4", "0.3", "0.4"]
    assert rows["Ages"] == ["60–63"] * 3
    assert rows["One-year survival s_t"] == ["SSA life table", "0.990 … 0.960", "SSA life table"]
    assert rows["Wealth grid points"] == ["12"] * 3
    # EGM and DC-EGM compute consumption: only the grid-search variant shows its action grid
    assert rows["Consumption grid points"] == ["", "", "12"]
    without_methods = parameter_table(specifications=SPECIFICATIONS).set_index("Parameter")
    assert list(without_methods.loc["Consumption grid points"]) == ["", "", "12"]
    assert rows["Savings grid points"] == ["30", "30", ""]
    assert rows["Solution method"] == ["DC-EGM", "DC-EGM", "grid search"]
    paths = {s: tmp_path / f"parameters.{s}" for s in ("tex", "typ", "md")}
    write_parameter_table(specifications=SPECIFICATIONS, methods=METHODS, paths=paths)
    for path in paths.values():
        text = path.read_text()
        for code_name in ("mandatory_retirement_age", "low_pension", "dcegm", "0.99,", "_grid"):
            assert code_name not in text, (path.name, code_name)
    assert not re.search(r"\bbeta\b|\bcrra\b", paths["md"].read_text())
    assert r"$\gamma$" in paths["tex"].read_text()
    assert "$gamma$" in paths["typ"].read_text()
    assert "| Relative risk aversion γ |" in paths["md"].read_text()
    assert r"\resizebox" not in paths["tex"].read_text()


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


def test_a_typst_document_including_the_tables_compiles(tmp_path):
    import typst

    tables = tmp_path / "tables"
    write_parameter_table(
        specifications=SPECIFICATIONS,
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
    retirement = {s: tables / f"retirement.{s}" for s in ("tex", "typ", "md")}
    write_summary_tables(
        panels={"baseline": tiny_panel(), "low_pension": tiny_panel()},
        weights={"baseline": WEIGHTS},
        specifications=SPECIFICATIONS,
        paths={"summary_statistics": summary, "retirement_age": retirement},
    )
    document = tmp_path / "doc.typ"
    document.write_text(
        "See @tab:parameters, @tab:values, @tab:summary_statistics and @tab:retirement_age.\n"
        '#include "/tables/parameters.typ"\n#include "/tables/t.typ"\n'
        '#include "/tables/summary.typ"\n#include "/tables/retirement.typ"\n'
    )
    pdf = typst.compile(str(document), root=str(tmp_path))
    assert pdf.startswith(b"%PDF")


@pytest.mark.skipif(not latex_ready(), reason="needs pdflatex with siunitx")
def test_a_latex_document_inputting_the_tables_compiles_without_overfull_boxes(tmp_path):
    write_parameter_table(
        specifications=SPECIFICATIONS,
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
        panels={v: tiny_panel() for v in SPECIFICATIONS},
        specifications=SPECIFICATIONS,
        paths={
            "summary_statistics": {s: tmp_path / f"summary.{s}" for s in ("tex", "md")},
            "retirement_age": {s: tmp_path / f"retirement.{s}" for s in ("tex", "md")},
        },
    )
    code, log = compile_tables(tmp_path, stems=["parameters", "t", "summary", "retirement"])
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
            "Low pension": ["2.938", "-0.031", "20000"],
            "Baseline (grid search)": ["2.722", "-0.076", "20000"],
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
