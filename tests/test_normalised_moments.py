"""The SCF moments of the model normalised by permanent income (``wealth_to_income``).

Oracles: the moment of an age group is the mean of log(m - c), the assets a living subject
keeps at the period's end in units of her permanent income, over the subject-years with
positive assets (the SCF keeps positive net worth), computed here from the simulated panel
itself; the one compiled program and the table path give the same moments; a model whose
living regimes define the ratio only in part is refused.
"""

import numpy as np
import pytest

from project.config import SimulationSettings
from project.dispatch import solve
from project.estimation import EstimationError
from project.estimation.lifecycle import LifecycleMoments
from project.model import Model
from project.models import default_params_of
from project.models import lifecycle_normalised as model_module
from project.regimes import RegimeModel
from project.simulation import draw_initial_conditions, simulate

GROUPS = ((25, 30), (40, 45), (55, 60), (70, 75), (85, 90))
SEED = 7
ESTIMATED = ("crra", "beta")
POINT = {"crra": 2.0, "beta": 0.95}


@pytest.fixture(scope="module")
def setup():
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        model = model_module.build_model(n_savings=60, taste_shocks=False)
        params = default_params_of(name="lifecycle_normalised", model=model) | POINT
        initial = draw_initial_conditions(
            model=model,
            n_subjects=300,
            seed=SEED,
            distribution=SimulationSettings().initial_distribution,
        )
        yield model, params, initial
    finally:
        jax.config.update("jax_enable_x64", False)


def moments_of(setup, *, compiled: bool) -> np.ndarray:
    model, params, initial = setup
    simulator = LifecycleMoments(
        model=model,
        base_params=params,
        initial_conditions=initial,
        seed=SEED + 1,
        age_groups=GROUPS,
        estimated=ESTIMATED,
        compiled=compiled,
    )
    assert (simulator.program is not None) is compiled
    return simulator(POINT)


def test_the_moment_is_mean_log_assets_over_permanent_income_of_positive_wealth(setup, x64):
    model, params, initial = setup
    solution = solve(model=model, params=params, log_level="off")
    panel = simulate(
        params=params, initial_conditions=initial, solution=solution, seed=SEED + 1
    ).to_dataframe()
    living = panel.loc[panel["regime"] != "dead"]
    assets = (living["wealth"] - living["consumption"]).to_numpy()
    ages = living["age"].to_numpy()
    expected = [
        np.log(assets[(ages > lo) & (ages <= hi) & (assets > 0)]).mean() for lo, hi in GROUPS
    ]
    # The retirees of 71-75 keep assets in units of their pension: the same formula holds; at
    # 86-90 some have spent everything, and the moment leaves them out as the SCF does.
    assert (living.loc[living["age"] > 70, "regime"] == "retired").any()
    assert (assets[(ages > 85) & (ages <= 90)] <= 0).any()
    np.testing.assert_allclose(moments_of(setup, compiled=False), expected, rtol=1e-12)
    np.testing.assert_allclose(moments_of(setup, compiled=True), expected, rtol=1e-10)


def without_ratio(view):
    """Return the regime ``view`` as a model without its ``wealth_to_income``."""
    return Model(
        name=view.name,
        states=view.states,
        actions=view.actions,
        functions={k: f for k, f in view.functions.items() if k != "wealth_to_income"},
        constraints=view.constraints,
        ages=view.ages,
        param_shapes=view.param_shapes,
        post_decision_grid=view.stated_post_decision_grid,
    )


def test_a_ratio_defined_in_some_living_regimes_only_is_refused(setup, x64):
    model, params, initial = setup
    partial = RegimeModel(
        name="partial",
        regimes={
            "working": model.regimes["working"],
            "retired": without_ratio(model.regimes["retired"]),
            "dead": model.terminal["dead"],
        },
        transitions={
            "working": model_module.working_transition,
            "retired": model_module.retired_transition,
        },
    )
    with pytest.raises(EstimationError, match=r"define 'wealth_to_income' but \['retired'\]"):
        LifecycleMoments(
            model=partial,
            base_params=params,
            initial_conditions=initial,
            seed=SEED,
            age_groups=GROUPS,
            estimated=ESTIMATED,
        )
