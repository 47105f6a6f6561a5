"""Profiles, tables' files and the living rows of project.analysis: deterministic, right."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from project.analysis import lifecycle_profiles, write_table
from project.analysis.profiles import check_panel, is_retired, levels
from project.style import save_figure

PREF_TYPES = ["work_loving", "leisure_loving"]
RETIREMENT = ["working", "retired"]


def hand_panel() -> pd.DataFrame:
    """Two subjects, ages 50-56: subject 0 retires at 55, subject 1 at 53."""
    ages = np.arange(50, 57, dtype=float)
    rows = []
    for subject, (retire_at, base, consumption) in enumerate([(55, 0, 1.0), (53, 10, 3.0)]):
        for age in ages:
            rows.append(
                {
                    "subject_id": subject,
                    "age": age,
                    "pref_type": PREF_TYPES[subject],
                    "wealth": base + age - 50,
                    "consumption": consumption,
                    "retirement": RETIREMENT[int(age >= retire_at)],
                }
            )
    frame = pd.DataFrame(rows)
    for column, categories in (("pref_type", PREF_TYPES), ("retirement", RETIREMENT)):
        frame[column] = pd.Categorical(frame[column], categories=categories)
    return frame


def test_save_figure_rejects_unknown_formats(tmp_path):
    from matplotlib.figure import Figure

    with pytest.raises(ValueError, match="png"):
        save_figure(figure=Figure(), paths={"svg": tmp_path / "f.svg"})


def test_write_table_latex_and_markdown_are_right_and_deterministic(tmp_path):
    table = pd.DataFrame(
        {
            "Variant": ["Baseline", "Baseline", "Low pension"],
            "Ages": ["50-54", "55-59", "50-54"],
            "Mean wealth": [7.0, 10.5, 7.0],
            "N": [10, 4, 10],
        }
    )
    contents = []
    for run in ("a", "b"):
        latex, markdown = write_table(
            table=table,
            latex_path=tmp_path / run / "summary.tex",
            markdown_path=tmp_path / run / "summary.md",
            caption="Summary statistics (model units)",
            label="tab:summary",
            group_column="Variant",
        )
        contents.append((latex.read_bytes(), markdown.read_bytes()))
    assert contents[0] == contents[1]
    latex_text, markdown_text = (c.decode() for c in contents[0])
    for command in (r"\toprule", r"\midrule", r"\bottomrule", r"\label{tab:summary}"):
        assert command in latex_text
    assert r"\begin{tabular}{l l S[table-format=2.3] S[table-format=2.0]}" in latex_text
    assert r"Low pension & 50-54 & 7.000 & 10 \\" in latex_text
    assert r" & 55-59 & 10.500 & 4 \\" in latex_text
    lines = markdown_text.splitlines()
    assert lines[0] == "**Summary statistics (model units)**"
    assert lines[2] == "| Variant | Ages | Mean wealth | N |"
    assert lines[3] == "| --- | --- | ---: | ---: |"
    assert lines[4] == "| Baseline | 50-54 | 7.000 | 10 |"
    assert len(lines) == 4 + len(table)


def test_write_table_uses_given_formats(tmp_path):
    table = pd.DataFrame({"name": ["a|b"], "x": [1.23456], "n": [7]})
    latex, markdown = write_table(
        table=table,
        latex_path=tmp_path / "t.tex",
        markdown_path=tmp_path / "t.md",
        caption="A & B",
        label="tab:t",
        formats={"x": "{:.1f}"},
    )
    assert r"\caption{A \& B}" in latex.read_text()
    assert r"a|b & 1.2 & 7 \\" in latex.read_text()
    assert r"| a\|b | 1.2 | 7 |" in markdown.read_text()
    with pytest.raises(KeyError, match="missing"):
        write_table(
            table=table,
            latex_path=tmp_path / "u.tex",
            markdown_path=tmp_path / "u.md",
            caption="c",
            label="l",
            formats={"missing": "{:.1f}"},
        )


# ---------------------------------------------------------------------------------------------
# Panels of the regimes model: the living, retirement, weights

REGIMES = ["working", "retired", "dead"]
WEIGHTS = pd.DataFrame({"subject_id": [0, 1, 2], "weight": [1.0, 3.0, 2.0]})


def regime_panel() -> pd.DataFrame:
    """Three subjects, ages 50-56, with a ``regime`` column as the regimes model's panel.

    Subject 0 works, chooses to retire at 55 and is in regime "retired" from 56; subject 1
    works and is dead from 53 (the dead's rows hold nonsense: they must not count); subject 2
    is retired throughout. A retiree's retirement action is missing, as in the simulated panel.
    """
    rows = []
    for age in np.arange(50, 57, dtype=float):
        rows.append(
            {
                "subject_id": 0,
                "age": age,
                "regime": "retired" if age >= 56 else "working",
                "wealth": age - 50,
                "consumption": 1.0,
                "retirement": None if age >= 56 else RETIREMENT[int(age == 55)],
            }
        )
        dead = age >= 53
        rows.append(
            {
                "subject_id": 1,
                "age": age,
                "regime": "dead" if dead else "working",
                "wealth": 1e6 if dead else 10.0,
                "consumption": np.nan if dead else 2.0,
                "retirement": None if dead else "working",
            }
        )
        rows.append(
            {
                "subject_id": 2,
                "age": age,
                "regime": "retired",
                "wealth": 20.0,
                "consumption": 3.0,
                "retirement": None,
            }
        )
    frame = pd.DataFrame(rows)
    frame["regime"] = pd.Categorical(frame["regime"], categories=REGIMES)
    frame["retirement"] = pd.Categorical(frame["retirement"], categories=RETIREMENT)
    frame["pref_type"] = pd.Categorical.from_codes(frame["subject_id"] % 2, categories=PREF_TYPES)
    return frame


@pytest.mark.parametrize("as_text", [False, True])
def test_living_drops_the_rows_of_the_dead(as_text):
    from project.calibration.panel import living_rows

    panel = regime_panel()
    if as_text:
        panel["regime"] = panel["regime"].astype(str)
    alive = living_rows(panel=panel)
    assert len(alive) == len(panel) - 4  # subject 1 at ages 53-56
    assert (alive["regime"].astype(str) != "dead").all()
    assert alive.loc[alive["subject_id"] == 1, "age"].tolist() == [50.0, 51.0, 52.0]
    pd.testing.assert_frame_equal(alive, panel.loc[panel["regime"].astype(str) != "dead"])
    without_regimes = hand_panel()
    assert living_rows(panel=without_regimes) is without_regimes


def test_the_calibration_bounds_are_printed_on_their_safe_side():
    """ "At least" the smallest share rounds down; "no weight above" the largest ratio rounds up."""
    from project.analysis.numbers import reweighting_numbers

    summaries = {
        "baseline": {"weights": {"effective_sample_share": 0.95860, "max_weight_ratio": 1.9}},
        "grid": {"weights": {"effective_sample_share": 0.97, "max_weight_ratio": 2.0728}},
    }
    assert reweighting_numbers(summaries) == {"ess_min": "95.8 %", "max_weight": "2.08"}


# ---------------------------------------------------------------------------------------------
# Profiles of lifecycle_normalised panels: levels of the living, the retired regime

CLAIMS = ["working", "claim"]
HAND_ROWS = [
    # subject, age, regime, wealth, consumption, claim, income_unit
    (0, 62.0, "working", 4.0, 1.0, "claim", 1.0),
    (0, 63.0, "retired", 6.0, 2.0, None, 0.5),
    (0, 64.0, "retired", 5.0, 2.0, None, 0.5),
    (1, 62.0, "working", 2.0, 1.0, "working", 2.0),
    (1, 63.0, "working", 3.0, 1.0, "working", 2.0),
    (1, 64.0, "dead", 1e6, np.nan, None, np.nan),
    (2, 62.0, "working", 1.0, 0.5, "working", 1.0),
    (2, 63.0, "working", 1.5, 0.5, "working", 1.0),
    (2, 64.0, "working", 2.5, 1.5, "claim", 1.0),
]


def normalised_hand_panel() -> pd.DataFrame:
    """Three subjects at 62-64 with the columns of lifecycle_normalised's simulated panel.

    Subject 0 claims at 62 (still working then) and is retired from 63 (unit 0.5: the pension
    over permanent income at 25); subject 1 works (unit 2) and is dead at 64, where its row
    holds nonsense; subject 2 works throughout (unit 1) and claims at 64.
    """
    columns = ["subject_id", "age", "regime", "wealth", "consumption", "claim", "income_unit"]
    frame = pd.DataFrame(HAND_ROWS, columns=columns)
    frame["regime"] = pd.Categorical(frame["regime"], categories=REGIMES)
    frame["claim"] = pd.Categorical(frame["claim"], categories=CLAIMS)
    frame["wealth_to_income"] = frame["wealth"] - frame["consumption"]
    return frame


def test_lifecycle_profiles_are_levels_of_the_living_by_hand():
    profiles = lifecycle_profiles(panel=normalised_hand_panel())
    assert list(profiles.columns) == [
        "age",
        "mean_wealth",
        "median_wealth",
        "mean_consumption",
        "median_wealth_to_income",
        "share_retired",
        "n",
    ]
    # Levels are wealth (consumption) times the unit: at 62 wealth 4, 4, 1 and consumption
    # 1, 2, 0.5; at 63 wealth 3, 6, 1.5 and consumption 1, 2, 0.5; at 64 (subject 1 dead)
    # wealth 2.5, 2.5 and consumption 1, 1.5. The ratio m - c is not scaled: 3, 1, 0.5 at
    # 62; 4, 2, 1 at 63; 3, 1 at 64. Subject 0 is retired from 63, the year after its claim.
    expected = pd.DataFrame(
        {
            "age": [62.0, 63.0, 64.0],
            "mean_wealth": [3.0, 3.5, 2.5],
            "median_wealth": [4.0, 3.0, 2.5],
            "mean_consumption": [3.5 / 3, 3.5 / 3, 1.25],
            "median_wealth_to_income": [1.0, 2.0, 2.0],
            "share_retired": [0.0, 1 / 3, 0.5],
            "n": np.array([3, 3, 2], dtype=np.int64),
        }
    )
    pd.testing.assert_frame_equal(profiles, expected)


def test_lifecycle_profiles_by_a_group_keep_its_order():
    panel = normalised_hand_panel()
    panel["group"] = pd.Categorical(
        np.where(panel["subject_id"] == 2, "b", "a"), categories=["b", "a"]
    )
    profiles = lifecycle_profiles(panel=panel, by=["group"])
    assert profiles["group"].astype(str).tolist() == ["b"] * 3 + ["a"] * 3
    only_b = profiles.loc[profiles["group"] == "b"]
    assert only_b["mean_wealth"].tolist() == [1.0, 1.5, 2.5]  # subject 2, unit 1


def test_levels_are_wealth_times_the_unit():
    panel = normalised_hand_panel()
    expected = [4.0, 3.0, 2.5, 4.0, 6.0, np.nan, 1.0, 1.5, 2.5]
    np.testing.assert_array_equal(levels(panel, column="wealth").to_numpy(), expected)
    with pytest.raises(KeyError, match="income_unit"):
        levels(panel.drop(columns="income_unit"), column="wealth")


@pytest.mark.parametrize("as_text", [False, True])
def test_is_retired_is_the_retired_regime_not_the_claim_year(as_text):
    panel = normalised_hand_panel()
    if as_text:
        panel["regime"] = panel["regime"].astype(str)
    assert is_retired(panel).tolist() == [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    with pytest.raises(KeyError, match="regime"):
        is_retired(panel.drop(columns="regime"))


def test_check_panel_names_the_missing_columns():
    panel = normalised_hand_panel()
    check_panel(panel, extra=["income_unit"])
    with pytest.raises(KeyError, match=r"\['consumption', 'income_unit'\]"):
        check_panel(panel.drop(columns=["consumption", "income_unit"]), extra=["income_unit"])
    with pytest.raises(KeyError, match="wealth_to_income"):
        lifecycle_profiles(panel=panel.drop(columns="wealth_to_income"))
