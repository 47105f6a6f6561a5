"""Figures and tables of project.analysis: files written, deterministic, numbers right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from project import solve
from project.analysis import (
    lifecycle_profiles,
    parameter_table,
    plot_lifecycle_profiles,
    plot_policy_functions,
    plot_variant_comparison,
    summary_statistics,
    write_table,
)
from project.models.lifecycle import DEFAULT_PARAMS, DEFAULT_TASTE_SHOCK_SCALE, build_model
from project.style import save_figure

PREF_TYPES = ["work_loving", "leisure_loving"]
RETIREMENT = ["working", "retired"]


@pytest.fixture(scope="module")
def tiny_solution():
    model = build_model(n_wealth=10, n_consumption=10, n_periods=4, start_age=66)
    return solve(model=model, params=DEFAULT_PARAMS, log_level="off")


@pytest.fixture(scope="module")
def tiny_dcegm_solution():
    """The pipeline's kind of solution: DC-EGM with taste shocks (no policy indices)."""
    model = build_model(
        n_wealth=10, n_consumption=10, n_periods=4, start_age=66, n_savings=30, taste_shocks=True
    )
    params = DEFAULT_PARAMS | {"taste_shock_scale": DEFAULT_TASTE_SHOCK_SCALE}
    solution = solve(model=model, params=params, log_level="off")
    assert solution.method == "dcegm"
    return solution


def synthetic_panel(*, n_subjects: int = 6, ages: range = range(50, 62), shift: float = 0.0):
    """Return a panel like SimulationResult.to_dataframe(): categoricals, one row per age."""
    subject = np.repeat(np.arange(n_subjects), len(ages))
    age = np.tile(np.asarray(ages, dtype=float), n_subjects)
    retire_at = 55 + subject % 5
    return pd.DataFrame(
        {
            "subject_id": subject,
            "period": np.tile(np.arange(len(ages)), n_subjects),
            "age": age,
            "value": -1.0 / (1.0 + age),
            "pref_type": pd.Categorical.from_codes(subject % 2, categories=PREF_TYPES),
            "lagged_retirement": pd.Categorical.from_codes(
                (age > retire_at).astype(int), categories=RETIREMENT
            ),
            "wealth": (1.0 + 0.1 * subject + 0.05 * (age - 50) + shift).astype(np.float32),
            "retirement": pd.Categorical.from_codes(
                (age >= retire_at).astype(int), categories=RETIREMENT
            ),
            "consumption": (0.5 + 0.01 * subject + shift / 2).astype(np.float32),
        }
    )


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


def render_twice(tmp_path: Path, plot, **kwargs) -> dict[str, tuple[bytes, bytes]]:
    out = {}
    for run in ("a", "b"):
        paths = {fmt: tmp_path / run / f"figure.{fmt}" for fmt in ("png", "pdf")}
        assert plot(paths=paths, **kwargs) == [paths["png"], paths["pdf"]]
        for fmt, path in paths.items():
            out.setdefault(fmt, ())
            out[fmt] = (*out[fmt], path.read_bytes())
    return out


def assert_deterministic_figures(rendered: dict[str, tuple[bytes, bytes]]) -> None:
    png_first, png_second = rendered["png"]
    pdf_first, pdf_second = rendered["pdf"]
    assert png_first.startswith(b"\x89PNG") and len(png_first) > 10_000
    assert pdf_first.startswith(b"%PDF") and len(pdf_first) > 5_000
    assert png_first == png_second
    assert pdf_first == pdf_second
    assert b"CreationDate" not in pdf_first
    assert b"Matplotlib" not in pdf_first
    assert b"Software" not in png_first


def test_policy_functions_figure_is_written_and_deterministic(tmp_path, tiny_solution):
    rendered = render_twice(tmp_path, plot_policy_functions, solution=tiny_solution)
    assert_deterministic_figures(rendered)


def test_policy_functions_of_a_dcegm_solution_are_written_and_deterministic(
    tmp_path, tiny_dcegm_solution
):
    rendered = render_twice(tmp_path, plot_policy_functions, solution=tiny_dcegm_solution)
    assert_deterministic_figures(rendered)


def test_policy_functions_reject_unknown_age_and_label(tmp_path, tiny_solution):
    paths = {"png": tmp_path / "f.png"}
    with pytest.raises(ValueError, match="not an age"):
        plot_policy_functions(solution=tiny_solution, paths=paths, ages=[50])
    with pytest.raises(ValueError, match="not a label"):
        plot_policy_functions(
            solution=tiny_solution,
            paths=paths,
            fixed_states={"lagged_retirement": "idle", "income": "node_2"},
        )


def test_lifecycle_profiles_figure_is_written_and_deterministic(tmp_path):
    rendered = render_twice(
        tmp_path, plot_lifecycle_profiles, panel=synthetic_panel(), variant="baseline"
    )
    assert_deterministic_figures(rendered)


def test_variant_comparison_figure_is_written_and_deterministic(tmp_path):
    panels = {"baseline": synthetic_panel(), "low_pension": synthetic_panel(shift=0.5)}
    rendered = render_twice(tmp_path, plot_variant_comparison, panels=panels)
    assert_deterministic_figures(rendered)


def test_save_figure_rejects_unknown_formats(tmp_path):
    from matplotlib.figure import Figure

    with pytest.raises(ValueError, match="png"):
        save_figure(figure=Figure(), paths={"svg": tmp_path / "f.svg"})


def test_lifecycle_profiles_by_type_match_hand_computation():
    profiles = lifecycle_profiles(panel=hand_panel(), by=["pref_type"])
    assert list(profiles.columns) == [
        "pref_type",
        "age",
        "mean_wealth",
        "median_wealth",
        "mean_consumption",
        "share_retired",
        "n",
    ]
    assert list(profiles["pref_type"].astype(str).unique()) == PREF_TYPES
    leisure = profiles[profiles["pref_type"] == "leisure_loving"].set_index("age")
    assert leisure.loc[52.0, "share_retired"] == 0.0
    assert leisure.loc[53.0, "share_retired"] == 1.0
    assert leisure.loc[56.0, "mean_wealth"] == 16.0
    pooled = lifecycle_profiles(panel=hand_panel()).set_index("age")
    assert pooled.loc[53.0, "share_retired"] == 0.5
    assert pooled.loc[50.0, "median_wealth"] == 5.0
    assert pooled.loc[50.0, "n"] == 2


def test_summary_statistics_match_hand_computation():
    table = summary_statistics(panels={"baseline": hand_panel()}).set_index("Statistic")
    assert list(table.columns) == ["Baseline"]
    stats = table["Baseline"]
    # Subject 0 holds wealth 0..6 and retires at 55, subject 1 wealth 10..16 and retires at 53.
    assert stats["Mean wealth"] == pytest.approx((21 + 91) / 14)
    assert stats["Median wealth"] == pytest.approx((6 + 10) / 2)
    assert stats["Mean consumption"] == pytest.approx(2.0)
    assert stats["Share of years retired"] == pytest.approx(6 / 14)
    assert stats["Share who retire"] == 1.0
    assert stats["Mean retirement age"] == pytest.approx(54.0)
    assert stats["Consumption change at retirement"] == pytest.approx(0.0)
    assert stats["Households simulated"] == 2


def test_summary_statistics_accept_integer_codes_and_keep_variant_order():
    coded = hand_panel()
    coded["retirement"] = coded["retirement"].cat.codes.astype(np.int32)
    text = hand_panel()
    text["retirement"] = text["retirement"].astype("string")
    panels = {"z_variant": coded, "a_variant": hand_panel(), "m_variant": text}
    table = summary_statistics(panels=panels)
    assert list(table.columns) == ["Statistic", "Z variant", "A variant", "M variant"]
    np.testing.assert_array_equal(table["Z variant"], table["A variant"])
    np.testing.assert_array_equal(table["Z variant"], table["M variant"])


def test_summary_statistics_reject_panel_without_columns():
    with pytest.raises(KeyError, match="retirement"):
        summary_statistics(panels={"x": hand_panel().drop(columns="retirement")})


def test_parameter_table_formats_values_and_missing_entries():
    specifications = {
        "baseline": {"params": dict(DEFAULT_PARAMS), "sizes": {"n_savings": 100}},
        "low_pension": {"params": {**DEFAULT_PARAMS, "pension": 0.3}},
    }
    table = parameter_table(specifications=specifications)
    table = table.set_index(table["Parameter"].map(str))
    assert list(table.columns) == ["Parameter", "Baseline", "Low pension"]
    assert table.loc["Pension p", "Baseline"] == "0.45"
    assert table.loc["Pension p", "Low pension"] == "0.3"
    assert table.loc["Disutility of work δ_τ", "Baseline"] == "0.15, 0.6"
    assert table.loc["Savings grid points", "Baseline"] == "100"
    assert table.loc["Savings grid points", "Low pension"] == ""
    assert list(table.index)[-1] == "Savings grid points"


def test_parameter_table_prints_the_solution_method_last():
    specifications = {
        "baseline": {"params": dict(DEFAULT_PARAMS), "sizes": {"n_savings": 200}},
        "grid": {"params": dict(DEFAULT_PARAMS)},
    }
    methods = {"baseline": "dcegm", "grid": "grid"}
    table = parameter_table(specifications=specifications, methods=methods)
    assert table.iloc[-1].tolist() == ["Solution method", "DC-EGM", "grid search"]
    labels = parameter_table(specifications=specifications)["Parameter"].map(str).tolist()
    assert "Solution method" not in labels
    with pytest.raises(KeyError, match="other"):
        parameter_table(specifications=specifications, methods={"other": "dcegm"})


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


def test_is_retired_counts_the_retired_regime_and_the_retirement_choice():
    from project.analysis.profiles import is_retired

    panel = regime_panel()
    retired = is_retired(panel)
    by_subject = {s: retired[panel["subject_id"] == s].tolist() for s in (0, 1, 2)}
    assert by_subject[0] == [0.0] * 5 + [1.0, 1.0]  # chooses to retire at 55, retired at 56
    assert by_subject[1] == [0.0] * 7  # works, then dead (missing retirement)
    assert by_subject[2] == [1.0] * 7  # the retired regime, retirement missing
    coded = panel.assign(retirement=panel["retirement"].cat.codes.astype(np.int32))
    pd.testing.assert_series_equal(is_retired(coded), retired)  # codes: -1 missing, 1 retired
    hand = hand_panel()
    assert is_retired(hand).tolist() == [float(r == "retired") for r in hand["retirement"]]


def test_lifecycle_profiles_are_of_the_living():
    profiles = lifecycle_profiles(panel=regime_panel()).set_index("age")
    assert profiles.loc[52.0, "n"] == 3
    assert profiles.loc[53.0, "n"] == 2
    assert profiles.loc[53.0, "mean_wealth"] == pytest.approx((3 + 20) / 2)
    assert profiles.loc[55.0, "share_retired"] == 1.0


def test_weighted_summary_statistics_match_hand_computation():
    """Weights 1, 3, 2 for subjects 0, 1, 2 over the living rows."""
    table = summary_statistics(panels={"baseline": regime_panel()}, weights={"baseline": WEIGHTS})
    stats = table.set_index("Statistic")["Baseline"]
    # Subject 0: wealth 0..6, consumption 1, retires at 55 (weight 1, 7 years); subject 1:
    # wealth 10, consumption 2 at 50-52 (weight 3); subject 2: wealth 20, consumption 3,
    # retired from 50 (weight 2, 7 years). Total weight 7 + 9 + 14 = 30.
    assert stats["Mean wealth"] == pytest.approx((21 + 3 * 30 + 2 * 140) / 30)
    assert stats["Mean consumption"] == pytest.approx((7 + 3 * 6 + 2 * 21) / 30)
    assert stats["Share of years retired"] == pytest.approx((2 + 2 * 7) / 30)
    assert stats["Share who retire"] == pytest.approx(3 / 6)
    assert stats["Mean retirement age"] == pytest.approx((55 + 2 * 50) / 3)
    assert stats["Households simulated"] == 3


def test_unweighted_summary_statistics_of_the_living_match_hand_computation():
    stats = summary_statistics(panels={"baseline": regime_panel()}).set_index("Statistic")
    stats = stats["Baseline"]
    assert stats["Mean wealth"] == pytest.approx((21 + 30 + 140) / 17)
    assert stats["Mean consumption"] == pytest.approx(2.0)
    assert stats["Share of years retired"] == pytest.approx(9 / 17)
    assert stats["Median wealth"] == pytest.approx(10.0)


def test_equal_weights_give_the_unweighted_summary_statistics():
    panels = {"baseline": regime_panel(), "plain": hand_panel()}
    equal = {
        "baseline": WEIGHTS.assign(weight=2.5),
        "plain": pd.DataFrame({"subject_id": [0, 1], "weight": [0.7, 0.7]}),
    }
    pd.testing.assert_frame_equal(
        summary_statistics(panels=panels, weights=equal),
        summary_statistics(panels=panels),
        check_exact=False,
        rtol=1e-12,
    )
    # A variant without weights counts every subject alike.
    partial = summary_statistics(panels=panels, weights={"baseline": WEIGHTS})
    unweighted = summary_statistics(panels=panels)
    pd.testing.assert_series_equal(partial["Plain"], unweighted["Plain"])
    assert partial["Baseline"].iloc[0] != pytest.approx(unweighted["Baseline"].iloc[0])


def test_the_dead_are_excluded_from_the_means():
    """The dead's rows (wealth 1e6) change nothing: the table equals that of the living rows."""
    panel = regime_panel()
    alive = panel.loc[panel["regime"] != "dead"].reset_index(drop=True)
    for weights in (None, {"baseline": WEIGHTS}):
        with_dead = summary_statistics(panels={"baseline": panel}, weights=weights)
        pd.testing.assert_frame_equal(
            with_dead, summary_statistics(panels={"baseline": alive}, weights=weights)
        )
        assert with_dead.set_index("Statistic").loc["Mean wealth", "Baseline"] < 100


def test_weights_missing_a_living_subject_are_refused():
    from project.calibration.errors import CalibrationError

    with pytest.raises(CalibrationError, match=r"no entry for subjects \[2\]"):
        summary_statistics(
            panels={"baseline": regime_panel()}, weights={"baseline": WEIGHTS.iloc[:2]}
        )


def test_the_robustness_sentence_states_the_summary_table_s_wealth_gap():
    """The grid-search check's wealth gap is the weighted one of the summary statistics table
    (hand computation below), not an unweighted mean over every living row."""
    from project.analysis.numbers import percent, robustness_sentence

    base = regime_panel()
    grid = base.assign(wealth=base["wealth"] * 1.1)
    grid.loc[grid["subject_id"] == 2, "wealth"] = 21.0  # subject 2 is 5 % richer, the rest 10 %
    weighted = {"baseline": WEIGHTS, "baseline_grid": WEIGHTS}
    sentence = robustness_sentence(
        panels={"baseline": base, "baseline_grid": grid}, weights=weighted, validation={}
    )
    grid_mean, base_mean = (21 * 1.1 + 3 * 30 * 1.1 + 2 * 147) / 30, (21 + 3 * 30 + 2 * 140) / 30
    expected = round(grid_mean, 3) / round(base_mean, 3) - 1  # the table's printed numbers
    assert (
        f"a mean wealth {percent(expected)} higher ({grid_mean:.3f} against {base_mean:.3f})."
        in sentence
    )
    for row in ("share of years retired", "share who retire", "mean retirement age"):
        assert f"a {row} of " in sentence
    unweighted = robustness_sentence(
        panels={"baseline": base, "baseline_grid": grid}, weights={}, validation={}
    )
    assert unweighted != sentence  # the weights matter here


def test_the_calibration_bounds_are_printed_on_their_safe_side():
    """ "At least" the smallest share rounds down; "no weight above" the largest ratio rounds up."""
    from project.analysis.numbers import calibration_numbers

    summaries = {
        "baseline": {"weights": {"effective_sample_share": 0.95860, "max_weight_ratio": 1.9}},
        "grid": {"weights": {"effective_sample_share": 0.97, "max_weight_ratio": 2.0728}},
    }
    assert calibration_numbers(summaries) == {"ess_min": "95.8 %", "max_weight": "2.08"}
