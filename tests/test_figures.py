"""Figures as research output: provenance, readable labels, the axes shown, retirement hazard."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from PIL import Image

from project import solve, style
from project.analysis import (
    plot_lifecycle_profiles,
    plot_policy_functions,
    plot_retirement_policy,
    plot_variant_comparison,
    retirement_hazard,
)
from project.analysis.policy_figures import policy_ages
from project.analysis.profiles import at_risk_of_retiring, wealth_upper_bound
from project.models import lifecycle_regimes

TYPES = ["work_loving", "leisure_loving"]
STATUS = ["working", "retired"]
REGIMES = ["working", "retired", "dead"]
TYPES_SHOWN = ["Work-loving", "Leisure-loving"]
PROVENANCE = {"commit": "c0ffee1234", "dirty": "false", "seed": "7", "config_digest": "abc"}


@pytest.fixture(scope="module")
def regime_solution():
    model = lifecycle_regimes.build_model(
        n_wealth=10, n_consumption=10, n_periods=4, start_age=66, n_savings=30, taste_shocks=True
    )
    params = lifecycle_regimes.default_params() | {"taste_shock_scale": 0.01}
    return solve(model=model, params=params, log_level="off")


def regime_panel(*, n_subjects: int = 40, ages=range(66, 70), shift: float = 0.0):
    """Return a panel like the regimes model's: a subject retires at 67 + id % 3, dies at 69 if
    its id is divisible by 7; wealth grows with the id (the dead's rows hold nonsense)."""
    rows = []
    for subject in range(n_subjects):
        retire_at = 67 + subject % 3
        for age in ages:
            dead = subject % 7 == 0 and age >= 69
            regime = "dead" if dead else ("retired" if age > retire_at else "working")
            rows.append(
                {
                    "subject_id": subject,
                    "age": float(age),
                    "regime": regime,
                    "pref_type": None if dead else TYPES[subject % 2],
                    "wealth": 1e6 if dead else 0.5 + 0.1 * subject + shift,
                    "consumption": np.nan if dead else 0.4 + 0.01 * subject,
                    "retirement": (STATUS[int(age == retire_at)] if regime == "working" else None),
                }
            )
    frame = pd.DataFrame(rows)
    for column, categories in (("regime", REGIMES), ("pref_type", TYPES), ("retirement", STATUS)):
        frame[column] = pd.Categorical(frame[column], categories=categories)
    return frame


def capture(monkeypatch) -> list[Figure]:
    """Make ``style.save_figure`` keep the figures it writes (and still write them)."""
    figures: list[Figure] = []
    save = style.save_figure

    def keep(*, figure, paths, provenance=None):
        figures.append(figure)
        return save(figure=figure, paths=paths, provenance=provenance)

    monkeypatch.setattr(style, "save_figure", keep)
    return figures


def texts(figure: Figure) -> list[str]:
    """Return every text a reader sees: suptitle, titles, axis labels, legend entries."""
    found = [figure._suptitle.get_text()] if figure._suptitle else []
    for axis in figure.axes:
        found += [axis.get_title(), axis.get_xlabel(), axis.get_ylabel()]
    for legend in [*figure.legends, *(a.get_legend() for a in figure.axes if a.get_legend())]:
        found += [t.get_text() for t in legend.get_texts()]
    return [t for t in found if t]


def assert_readable(figure: Figure) -> None:
    for text in texts(figure):
        assert "_" not in text, text
        assert "node" not in text, text
        for code in ("pref type", "dcegm", "lagged"):
            assert code not in text.lower(), text


def paths_in(directory: Path) -> dict[str, Path]:
    return {fmt: directory / f"figure.{fmt}" for fmt in ("png", "pdf")}


def test_save_figure_records_provenance_and_is_byte_identical(tmp_path):
    written = {}
    for run in ("a", "b"):
        with style.styled():
            figure, axes = style.new_figure(nrows=1, ncols=1)
            axes[0][0].plot([0, 1], [1, 0])
        written[run] = style.save_figure(
            figure=figure, paths=paths_in(tmp_path / run), provenance=PROVENANCE
        )
    (png_a, pdf_a), (png_b, pdf_b) = written["a"], written["b"]
    assert png_a.read_bytes() == png_b.read_bytes()
    assert pdf_a.read_bytes() == pdf_b.read_bytes()
    with Image.open(png_a) as image:
        assert json.loads(image.text["Provenance"]) == PROVENANCE
        assert "Software" not in image.text
    pdf = pdf_a.read_bytes()
    assert b"/Subject" in pdf and b"c0ffee1234" in pdf
    assert b"CreationDate" not in pdf and b"Matplotlib" not in pdf


def test_save_figure_without_provenance_records_none(tmp_path):
    with style.styled():
        figure, _ = style.new_figure(nrows=1, ncols=1)
    png, pdf = style.save_figure(figure=figure, paths=paths_in(tmp_path))
    with Image.open(png) as image:
        assert "Provenance" not in image.text
    assert b"/Subject" not in pdf.read_bytes()


@pytest.mark.parametrize(
    "plot",
    ["policy", "lifecycle", "retirement", "comparison"],
)
def test_every_figure_records_provenance_deterministically_in_words(
    tmp_path, monkeypatch, regime_solution, plot
):
    panel = regime_panel()
    calls = {
        "policy": lambda p: plot_policy_functions(
            solution=regime_solution, panel=panel, paths=p, provenance=PROVENANCE
        ),
        "lifecycle": lambda p: plot_lifecycle_profiles(
            panel=panel, variant="baseline", paths=p, provenance=PROVENANCE
        ),
        "retirement": lambda p: plot_retirement_policy(
            panel=panel, variant="low_pension", paths=p, provenance=PROVENANCE
        ),
        "comparison": lambda p: plot_variant_comparison(
            panels={"baseline": panel, "low_pension": regime_panel(shift=0.2)},
            paths=p,
            provenance=PROVENANCE,
        ),
    }
    figures = capture(monkeypatch)
    first, second = paths_in(tmp_path / "a"), paths_in(tmp_path / "b")
    assert calls[plot](first) == [first["png"], first["pdf"]]
    calls[plot](second)
    for fmt in ("png", "pdf"):
        assert first[fmt].read_bytes() == second[fmt].read_bytes()
    with Image.open(first["png"]) as image:
        assert json.loads(image.text["Provenance"]) == PROVENANCE
    assert b"c0ffee1234" in first["pdf"].read_bytes()
    assert_readable(figures[0])


def test_policy_figure_shows_where_the_living_are_without_the_last_period(
    tmp_path, monkeypatch, regime_solution
):
    figures = capture(monkeypatch)
    panel = regime_panel()
    plot_policy_functions(
        solution=regime_solution, panel=panel, paths=paths_in(tmp_path), variant="baseline"
    )
    figure = figures[0]
    shown = [66.0, 67.0, 68.0]  # the model's ages 66-69 but the last; all have workers
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend[:3] == [f"Age {a:g}" for a in shown]
    assert not any("69" in entry for entry in legend)
    bound = wealth_upper_bound(panel=panel, ages=shown, regime="working", quantile=0.99)
    living_workers = panel.loc[(panel["regime"] == "working") & panel["age"].isin(shown)]
    assert bound == pytest.approx(living_workers["wealth"].quantile(0.99))
    grid = np.asarray(regime_solution.solution("working").model.states["wealth"].to_jax())
    assert bound < grid.max()
    value_axes, consumption_axes = figure.axes[:2], figure.axes[2:4]
    for axis in [*value_axes, *consumption_axes]:
        assert axis.get_xlim() == pytest.approx((grid.min(), bound))
    for axis in consumption_axes:
        low, high = axis.get_ylim()
        assert low == 0.0
        assert high < bound  # the consumption = wealth line does not set the axis
    assert [a.get_title() for a in value_axes] == ["Work-loving", "Leisure-loving"]
    suptitle = figure._suptitle.get_text()
    assert suptitle.startswith("Baseline: policy functions by DC-EGM")
    assert suptitle.endswith("working; median income")


def test_policy_figure_without_panel_spans_the_grid(tmp_path, monkeypatch, regime_solution):
    figures = capture(monkeypatch)
    plot_policy_functions(solution=regime_solution, paths=paths_in(tmp_path))
    grid = np.asarray(regime_solution.solution("working").model.states["wealth"].to_jax())
    assert figures[0].axes[0].get_xlim() == pytest.approx((grid.min(), grid.max()))
    assert "69" not in " ".join(texts(figures[0]))


def test_policy_ages_leave_out_the_last_period_and_ages_without_workers():
    ages = [50.0, 51.0, 52.0, 53.0, 54.0, 55.0]
    assert policy_ages(ages=ages, n=3) == [50.0, 52.0, 54.0]
    panel = regime_panel(ages=range(50, 56))
    panel.loc[panel["age"] >= 53, "regime"] = "retired"
    assert policy_ages(ages=ages, panel=panel, regime="working", n=4) == [50.0, 51.0, 52.0]
    assert policy_ages(ages=ages, panel=panel, n=2) == [50.0, 54.0]


RETIREMENT_AT_60 = ["working", "working", "retired", "working", "retired", "retired", None, None]


def test_retirement_hazard_matches_hand_computation():
    """Six workers of one type at 60: wealth 1..6, the three richest retire but subject 3."""
    panel = pd.DataFrame(
        {
            "subject_id": [0, 1, 2, 3, 4, 5, 6, 7],
            "age": [60.0] * 6 + [60.0, 61.0],
            "regime": ["working"] * 6 + ["retired", "dead"],
            "pref_type": ["a"] * 6 + ["a", None],
            "wealth": [3.0, 1.0, 2.0, 6.0, 5.0, 4.0, 0.5, 9.0],
            "consumption": [1.0] * 8,
            "retirement": RETIREMENT_AT_60,
        }
    )
    hazard = retirement_hazard(panel=panel, by=["pref_type"], n_groups=3)
    # groups by wealth: {1, 2} -> subjects 1, 2; {3, 4} -> 0, 5; {5, 6} -> 4, 3
    assert hazard["wealth_group"].tolist() == [0, 1, 2]
    assert hazard["n"].tolist() == [2, 2, 2]
    assert hazard["share_retiring"].tolist() == [0.5, 0.5, 0.5]
    assert hazard["mean_wealth"].tolist() == [1.5, 3.5, 5.5]
    halves = retirement_hazard(panel=panel, by=["pref_type"], n_groups=2)
    assert halves["share_retiring"].tolist() == pytest.approx([1 / 3, 2 / 3])
    pooled = retirement_hazard(panel=panel, by=[], n_groups=1)
    assert pooled[["age", "n", "share_retiring"]].values.tolist() == [[60.0, 6, 0.5]]


def test_retirement_hazard_of_a_panel_with_regimes_by_type():
    panel = regime_panel()
    hazard = retirement_hazard(panel=panel, by=["pref_type"], n_groups=1)
    for (pref_type, age), cell in hazard.groupby(["pref_type", "age"], observed=True):
        at_risk = panel.loc[
            (panel["regime"] == "working")
            & (panel["pref_type"] == pref_type)
            & (panel["age"] == age)
        ]
        assert cell["n"].item() == len(at_risk)
        assert cell["share_retiring"].item() == pytest.approx(
            (at_risk["retirement"] == "retired").mean()
        )


def test_at_risk_of_retiring_without_regimes():
    """Without regimes: lagged status "working", else up to the first choice to retire."""
    panel = pd.DataFrame(
        {
            "subject_id": [0, 0, 0, 1, 1, 1],
            "age": [52.0, 50.0, 51.0, 50.0, 51.0, 52.0],
            "retirement": ["retired", "working", "retired", "retired", "retired", "retired"],
        }
    )
    assert at_risk_of_retiring(panel).tolist() == [False, True, True, True, False, False]
    lagged = panel.assign(lagged_retirement=["retired", "working", "working"] + ["retired"] * 3)
    assert at_risk_of_retiring(lagged).tolist() == [False, True, True, False, False, False]


def test_retirement_hazard_rejects_no_groups():
    with pytest.raises(ValueError, match="n_groups"):
        retirement_hazard(panel=regime_panel(), n_groups=0)


def test_variant_comparison_shows_each_type_of_the_living(tmp_path, monkeypatch):
    figures = capture(monkeypatch)
    panels = {"baseline": regime_panel(), "low_pension": regime_panel(shift=0.2)}
    plot_variant_comparison(panels=panels, paths=paths_in(tmp_path))
    figure = figures[0]
    assert len(figure.axes) == 6  # 3 outcomes x 2 types
    assert [a.get_title() for a in figure.axes[:2]] == ["Work-loving", "Leisure-loving"]
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert legend == ["Baseline", "Low pension"]
    wealth_leisure = figure.axes[5].get_lines()[1]  # mean wealth, leisure-loving, low pension
    living = panels["low_pension"].loc[
        (panels["low_pension"]["regime"] != "dead")
        & (panels["low_pension"]["pref_type"] == "leisure_loving")
    ]
    expected = living.groupby("age")["wealth"].mean()
    assert wealth_leisure.get_xdata().tolist() == expected.index.tolist()
    assert wealth_leisure.get_ydata() == pytest.approx(expected.to_numpy())
    for axis in figure.axes[2:]:
        assert axis.get_ylim()[0] == 0.0


def test_lifecycle_figure_levels_start_at_zero(tmp_path, monkeypatch):
    figures = capture(monkeypatch)
    plot_lifecycle_profiles(panel=regime_panel(), paths=paths_in(tmp_path))
    figure = figures[0]
    for axis in figure.axes[:3]:  # mean and median wealth, mean consumption
        assert axis.get_ylim()[0] == 0.0
    assert [t.get_text() for t in figure.legends[0].get_texts()] == TYPES_SHOWN
    assert figure._suptitle.get_text() == "Simulated life cycle"


def test_printed_names():
    assert style.variant_label("baseline") == "Baseline"
    assert style.variant_label("low_pension") == "Low pension"
    assert style.variant_label("baseline_grid") == "Baseline (grid search)"
    assert style.variant_label("high_wage") == "High wage"
    assert style.display_name("low_pension") == "low pension"
    assert style.type_label("leisure_loving") == "Leisure-loving"
    nodes = [f"node_{k}" for k in range(5)]
    assert [style.income_label(n, labels=nodes) for n in nodes] == [
        "lowest income",
        "low income",
        "median income",
        "high income",
        "highest income",
    ]
    seven = [f"node_{k}" for k in range(7)]
    assert style.income_label("node_3", labels=seven) == "median income"
    assert style.income_label("node_6", labels=seven) == "highest income"
    assert style.state_label("lagged_retirement", "working") == "working"
    assert style.method_name("dcegm") == "DC-EGM"
