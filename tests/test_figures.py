"""Figures of lifecycle_normalised: provenance, readable labels with units, the data drawn.

Panels are small synthetic ones with the simulated panel's columns (regimes working, retired,
dead; the claim; income_unit); the policy figure draws a coarse solution of the model itself.
"""

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
from project.analysis.figures import MIN_CELL
from project.analysis.policy_figures import broken_at_switches
from project.analysis.profiles import at_risk_of_retiring
from project.models import lifecycle_normalised, lifecycle_normalised_params

REGIMES = ["working", "retired", "dead"]
CLAIMS = ["working", "claim"]
PROVENANCE = {"commit": "c0ffee1234", "dirty": "false", "seed": "7", "config_digest": "abc"}


@pytest.fixture(scope="module")
def solution():
    """A coarse solution of lifecycle_normalised at its default params (no taste shocks)."""
    params = lifecycle_normalised_params.default_params()
    params.pop("taste_shock_scale")
    model = lifecycle_normalised.build_model(n_savings=30, taste_shocks=False)
    return solve(model=model, params=params, log_level="off")


def normalised_panel(*, n_subjects: int = 60, shift: float = 0.0) -> pd.DataFrame:
    """Return a panel like the simulated one of lifecycle_normalised, ages 25-99.

    Subject s works and claims at 62 + s % 6 (retired from the next year), dies at 70 + s % 25
    (dead from then on: its rows hold nonsense and NaN units); wealth rises with s and age,
    the unit is 1 + (age - 25) / 50 working and 0.5 retired; ``shift`` raises wealth.
    """
    ages = np.arange(25, 100, dtype=float)
    frames = []
    for s in range(n_subjects):
        claim_at, death = 62 + s % 6, 70 + s % 25
        dead, retired = ages >= death, (ages > claim_at) & (ages < death)
        working = ~dead & ~retired
        wealth = np.where(dead, 1e6, 1.0 + 0.05 * s + 0.02 * (ages - 25) + shift)
        consumption = np.where(dead, np.nan, 0.8 + 0.002 * s)
        frames.append(
            pd.DataFrame(
                {
                    "subject_id": s,
                    "period": np.arange(ages.size),
                    "age": ages,
                    "regime": np.where(dead, "dead", np.where(retired, "retired", "working")),
                    "value": -1.0,
                    "wealth": wealth,
                    "claim": np.where(
                        working, np.where(ages == claim_at, "claim", "working"), None
                    ),
                    "consumption": consumption,
                    "wealth_to_income": wealth - consumption,
                    "income_unit": np.where(
                        dead, np.nan, np.where(retired, 0.5, 1.0 + (ages - 25) / 50)
                    ),
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["regime"] = pd.Categorical(frame["regime"], categories=REGIMES)
    frame["claim"] = pd.Categorical(frame["claim"], categories=CLAIMS)
    return frame


def alive(panel: pd.DataFrame) -> pd.DataFrame:
    return panel.loc[panel["regime"].astype(str) != "dead"]


def capture(monkeypatch) -> list[Figure]:
    """Make ``style.save_figure`` keep the figures it writes (and still write them)."""
    figures: list[Figure] = []
    save = style.save_figure

    def keep(*, figure, paths, provenance=None):
        figures.append(figure)
        return save(figure=figure, paths=paths, provenance=provenance)

    monkeypatch.setattr(style, "save_figure", keep)
    return figures


def legends(figure) -> list:
    """Return the legends of ``figure``, its subfigures and its axes."""
    found = [*figure.legends, *(a.get_legend() for a in figure.axes if a.get_legend())]
    for subfigure in figure.subfigs:
        found += legends(subfigure)
    return found


def legend_texts(figure) -> list[str]:
    return [t.get_text() for legend in legends(figure) for t in legend.get_texts()]


def texts(figure: Figure) -> list[str]:
    """Return every text a reader sees: suptitle, titles, axis labels, legend entries."""
    found = [figure._suptitle.get_text()] if figure._suptitle else []
    for axis in figure.axes:
        found += [axis.get_title(), axis.get_xlabel(), axis.get_ylabel()]
    return [t for t in [*found, *legend_texts(figure)] if t]


def assert_readable(figure: Figure) -> None:
    for text in texts(figure):
        assert "_" not in text, text
        for code in ("pref type", "dcegm", "income unit", "benefit cut"):
            assert code not in text, text


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


@pytest.mark.parametrize("plot", ["policy", "lifecycle", "retirement", "comparison"])
def test_every_figure_records_provenance_deterministically_in_words(
    tmp_path, monkeypatch, solution, plot
):
    panel = normalised_panel()
    calls = {
        "policy": lambda p: plot_policy_functions(
            solution=solution, panel=panel, variant="baseline", paths=p, provenance=PROVENANCE
        ),
        "lifecycle": lambda p: plot_lifecycle_profiles(
            panel=panel, variant="baseline", paths=p, provenance=PROVENANCE
        ),
        "retirement": lambda p: plot_retirement_policy(
            panel=panel, variant="benefit_cut", paths=p, provenance=PROVENANCE
        ),
        "comparison": lambda p: plot_variant_comparison(
            panels={"baseline": panel, "benefit_cut": normalised_panel(shift=0.5)},
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


def test_lifecycle_figure_draws_levels_of_the_living(tmp_path, monkeypatch):
    """Cash on hand and consumption are wealth and consumption times the unit, by age."""
    figures = capture(monkeypatch)
    panel = normalised_panel()
    plot_lifecycle_profiles(panel=panel, variant="benefit_cut", paths=paths_in(tmp_path))
    figure = figures[0]
    living = alive(panel)
    by_age = living.assign(
        level=living["wealth"] * living["income_unit"],
        spending=living["consumption"] * living["income_unit"],
        retired=(living["regime"] == "retired").astype(float),
    ).groupby("age")
    expected = [
        [by_age["level"].mean(), by_age["level"].median()],
        [by_age["spending"].mean()],
        [by_age["wealth_to_income"].median()],
        [by_age["retired"].mean()],
    ]
    for axis, series in zip(figure.axes, expected, strict=True):
        lines = axis.get_lines()
        assert len(lines) == len(series)
        for line, values in zip(lines, series, strict=True):
            assert line.get_xdata().tolist() == values.index.tolist()
            np.testing.assert_allclose(line.get_ydata(), values.to_numpy())
    assert expected[0][0].loc[80.0] < 1e3  # the dead's wealth of 1e6 is left out
    for axis in figure.axes[:3]:
        assert axis.get_ylim()[0] == 0.0
    assert "permanent income at 25" in figure.axes[0].get_ylabel().replace("\n", " ")
    assert "permanent income at 25" in figure.axes[1].get_ylabel().replace("\n", " ")
    assert legend_texts(figure) == ["Mean", "Median"]
    assert figure._suptitle.get_text() == "Benefit cut: simulated life cycle, all households"


def test_retirement_figure_draws_the_claim_shares_by_wealth_third(tmp_path, monkeypatch):
    figures = capture(monkeypatch)
    panel = normalised_panel(n_subjects=90)
    plot_retirement_policy(panel=panel, paths=paths_in(tmp_path))
    axis = figures[0].axes[0]
    hazard = retirement_hazard(panel=panel, n_groups=3)
    lines = axis.get_lines()
    assert len(lines) == 4  # three wealth thirds and all deciders
    for group, line in enumerate(lines[:3]):
        cells = hazard.loc[(hazard["wealth_group"] == group) & (hazard["n"] >= MIN_CELL)]
        assert line.get_xdata().tolist() == cells["age"].tolist()
        np.testing.assert_allclose(line.get_ydata(), cells["share_claiming"].to_numpy())
    # Subject s decides at 62 + s % 6, a claim at 63 + s % 6 (the pension starts the year
    # after): none of the 90 workers at 61 claims at 62; of the 90 - 15 k left at 62 + k, 15.
    shares = [0.0] + [15 / (90 - 15 * k) for k in range(6)]
    assert lines[3].get_xdata().tolist() == [62.0, 63.0, 64.0, 65.0, 66.0, 67.0, 68.0]
    np.testing.assert_allclose(lines[3].get_ydata(), shares)
    assert 68.0 not in lines[0].get_xdata()  # 15 deciders at 67: thirds of 5 are left out
    assert axis.get_xlim() == (61.5, 70.5)
    assert legend_texts(figures[0])[0] == "Lowest third of cash on hand"


def test_variant_comparison_draws_a_line_per_variant_in_levels(tmp_path, monkeypatch):
    figures = capture(monkeypatch)
    panels = {"baseline": normalised_panel(), "benefit_cut": normalised_panel(shift=0.5)}
    plot_variant_comparison(panels=panels, paths=paths_in(tmp_path))
    figure = figures[0]
    assert [a.get_title() for a in figure.axes] == [
        "Share retired",
        "Mean consumption",
        "Mean cash on hand",
    ]
    assert legend_texts(figure) == ["Baseline", "Benefit cut"]
    cut = alive(panels["benefit_cut"])
    expected = (cut["wealth"] * cut["income_unit"]).groupby(cut["age"]).mean()
    line = figure.axes[2].get_lines()[1]
    assert line.get_xdata().tolist() == expected.index.tolist()
    np.testing.assert_allclose(line.get_ydata(), expected.to_numpy())
    for axis in figure.axes[1:]:
        assert axis.get_ylim()[0] == 0.0
        assert "permanent income at 25" in axis.get_ylabel().replace("\n", " ")
    with pytest.raises(ValueError, match="at least one panel"):
        plot_variant_comparison(panels={}, paths=paths_in(tmp_path))


def assert_draws_the_solution(figure, *, solution, ages) -> int:
    """Assert that each column draws V and consumption of its regime at the wealth it shows,
    consumption broken at every switch of the claim; return the number of switches drawn."""
    value_axes, consumption_axes = figure.axes[0::2], figure.axes[1::2]
    switches = 0
    for j, (regime, shown) in enumerate(ages.items()):
        age_lines = [
            line for line in consumption_axes[j].get_lines() if line.get_label().startswith("Age")
        ]
        assert [line.get_label() for line in age_lines] == [f"Age {a:g}" for a in shown]
        for age, value_line, consumption_line in zip(
            shown, value_axes[j].get_lines(), age_lines, strict=False
        ):
            period = int(age) - lifecycle_normalised.FIRST_AGE
            states = {"wealth": np.asarray(value_line.get_xdata())}
            expected = solution.value(period=period, regime=regime, states=states)
            np.testing.assert_allclose(value_line.get_ydata(), expected)
            policy = solution.policy(period=period, regime=regime, states=states)
            drawn = np.asarray(consumption_line.get_ydata(), dtype=float)
            np.testing.assert_allclose(drawn[np.isfinite(drawn)], policy["consumption"])
            changes = int(np.sum(np.diff(policy["claim"]) != 0)) if "claim" in policy else 0
            assert int(np.isnan(drawn).sum()) == changes  # not joined across a switch
            switches += changes
    return switches


def test_policy_figure_draws_the_solution_where_each_regime_lives(tmp_path, monkeypatch, solution):
    figures = capture(monkeypatch)
    panel = normalised_panel()
    ages = {"working": (30.0, 62.0, 69.0), "retired": (66.0, 75.0)}  # no worker is 69
    plot_policy_functions(solution=solution, panel=panel, ages=ages, paths=paths_in(tmp_path))
    figure = figures[0]
    assert [a.get_title() for a in figure.axes[0::2]] == [
        "Workers (units of permanent income P)",
        "Retirees (units of pension B)",
    ]
    shown = {"working": (30.0, 62.0), "retired": (66.0, 75.0)}
    assert_draws_the_solution(figure, solution=solution, ages=shown)
    living = alive(panel)
    for j, (regime, regime_ages) in enumerate(shown.items()):
        rows = living.loc[(living["regime"] == regime) & living["age"].isin(regime_ages)]
        low, high = rows["wealth"].quantile(0.01), rows["wealth"].quantile(0.99)
        for axis in figure.axes[2 * j : 2 * j + 2]:
            assert axis.get_xlim() == pytest.approx((low, high))
        assert figure.axes[2 * j + 1].get_ylim()[0] == 0.0
    assert "Cash on hand m = M / B" in figure.axes[3].get_xlabel()
    assert "Consumption c = C / P" in figure.axes[1].get_ylabel()


def test_policy_figure_without_panel_spans_the_grid_and_breaks_at_claims(
    tmp_path, monkeypatch, solution
):
    figures = capture(monkeypatch)
    ages = {"working": (45.0, 62.0, 69.0), "retired": (85.0,)}
    plot_policy_functions(
        solution=solution, ages=ages, paths=paths_in(tmp_path), variant="baseline"
    )
    figure = figures[0]
    grid = np.asarray(solution.solution("working").model.states["wealth"].to_jax())
    assert figure.axes[0].get_xlim() == pytest.approx((grid.min(), grid.max()))
    assert figure._suptitle.get_text() == "Baseline: policy functions by DC-EGM"
    # at these params the poorest workers claim early: the workers' rules switch
    assert assert_draws_the_solution(figure, solution=solution, ages=ages) >= 1
    assert legend_texts(figure) == [
        "c = m",
        "Claim choice switches",
        "Age 45",
        "Age 62",
        "Age 69",
        "Age 85",
    ]


def test_policy_figure_checks_its_input(tmp_path, solution):
    with pytest.raises(ValueError, match="age 20 is not an age of the model"):
        plot_policy_functions(
            solution=solution, paths=paths_in(tmp_path), ages={"working": (20.0,)}
        )
    with pytest.raises(TypeError, match="RegimeSolution"):
        plot_policy_functions(solution=solution.solution("working"), paths=paths_in(tmp_path))


def test_consumption_is_broken_where_the_choice_switches():
    wealth = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    values = np.array([0.9, 1.0, 0.8, 0.9, 1.1])
    x, y = broken_at_switches(wealth=wealth, values=values, choice=np.array([0, 0, 1, 1, 0]))
    np.testing.assert_array_equal(x, [1.0, 2.0, np.nan, 3.0, 4.0, np.nan, 5.0])
    np.testing.assert_array_equal(y, [0.9, 1.0, np.nan, 0.8, 0.9, np.nan, 1.1])
    unchanged = broken_at_switches(wealth=wealth, values=values, choice=None)
    assert unchanged[0] is wealth and unchanged[1] is values


DECISIONS_AT_63 = ["working", "claim", "working", "claim", "claim", "working"]


def claim_panel() -> pd.DataFrame:
    """Six workers at 63 with cash on hand 1..6 (subjects 1, 4 and 3 decide to claim at 64),
    and rows that are not deciding: a worker at 60, a retiree and a dead subject at 63."""
    return pd.DataFrame(
        {
            "subject_id": [0, 1, 2, 3, 4, 5, 6, 7, 8],
            "age": [63.0] * 6 + [60.0, 63.0, 63.0],
            "regime": ["working"] * 7 + ["retired", "dead"],
            "wealth": [3.0, 1.0, 2.0, 6.0, 5.0, 4.0, 9.0, 9.0, 9.0],
            "consumption": [1.0] * 8 + [np.nan],
            "claim": [*DECISIONS_AT_63, "working", None, None],
        }
    )


def test_retirement_hazard_matches_hand_computation():
    panel = claim_panel()
    hazard = retirement_hazard(panel=panel, n_groups=3)
    # thirds by wealth: {1, 2} -> subjects 1, 2; {3, 4} -> 0, 5; {5, 6} -> 4, 3; the age is
    # the claiming age of the decision at 63
    assert hazard["age"].tolist() == [64.0] * 3
    assert hazard["wealth_group"].tolist() == [0, 1, 2]
    assert hazard["n"].tolist() == [2, 2, 2]
    assert hazard["share_claiming"].tolist() == [0.5, 0.0, 1.0]
    assert hazard["mean_wealth"].tolist() == [1.5, 3.5, 5.5]
    halves = retirement_hazard(panel=panel, n_groups=2)
    assert halves["share_claiming"].tolist() == pytest.approx([1 / 3, 2 / 3])
    ratio = retirement_hazard(panel=panel.assign(ratio=-panel["wealth"]), wealth_column="ratio")
    assert ratio["share_claiming"].tolist() == [1.0, 0.0, 0.5]  # the order turned round
    with pytest.raises(ValueError, match="n_groups"):
        retirement_hazard(panel=panel, n_groups=0)


def test_the_deciders_are_the_workers_from_61_with_a_claim():
    panel = claim_panel()
    assert at_risk_of_retiring(panel).tolist() == [True] * 6 + [False] * 3
    coded = panel.assign(
        claim=pd.Categorical(panel["claim"], categories=CLAIMS).codes.astype(np.int32)
    )
    assert at_risk_of_retiring(coded).tolist() == [True] * 6 + [False] * 3
    pd.testing.assert_frame_equal(
        retirement_hazard(panel=coded), retirement_hazard(panel=panel), check_dtype=False
    )
    with pytest.raises(KeyError, match="claim"):
        at_risk_of_retiring(panel.drop(columns="claim"))


def test_printed_names():
    assert style.variant_label("baseline") == "Baseline"
    assert style.variant_label("benefit_cut") == "Benefit cut"
    assert style.variant_label("high_wage") == "High wage"
    assert style.display_name("benefit_cut") == "benefit cut"
    nodes = [f"node_{k}" for k in range(5)]
    assert style.income_label("node_2", labels=nodes) == "median income"
    assert style.state_label("claim", "claim") == "claim"
    assert style.method_name("dcegm") == "DC-EGM"
    assert style.normalised_label("Cash on hand", symbol="m", regime="retired") == (
        "Cash on hand m = M / B"
    )
    assert style.regime_unit_title("working") == "Workers (units of permanent income P)"
    assert style.value_label(regime="working") == "Value $V / P^{1 - \\gamma}$"
