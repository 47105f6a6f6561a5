"""A table of bad inputs: each must raise our own error, with a message naming the culprit.

Oracle: the exception is a ``ProjectError`` (never a raw Python or JAX error, never silence) and
its message contains the given fragment (the culprit's name or what to do). The cases cover
grids, the model statement, params, solve and simulate arguments, initial conditions, the
variant configuration, memory limits and damaged products (more damage, and the build's view of
it, in ``test_integrity.py``).
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from project import ContinuousAction, ModelSpecificationError, ProjectError, solve
from project.grids import DiscreteGrid, IrregSpacedGrid, LinSpacedGrid, LogSpacedGrid
from project.model import Model, validate_params
from project.models import lifecycle, lifecycle_regimes, precautionary
from project.regimes import RegimeModel
from project.simulation import draw_initial_conditions, simulate

LIFECYCLE = lifecycle.build_model(n_wealth=6, n_consumption=5, n_income=3, n_periods=3)
PRECAUTIONARY = precautionary.build_model(n_wealth=8, n_consumption=5, n_periods=3)
PARAMS = dict(lifecycle.DEFAULT_PARAMS)
DISTRIBUTION = {
    "pref_type": {"probabilities": [0.5, 0.5]},
    "lagged_retirement": {"label": "working"},
    "income": {"probabilities": [1 / 3] * 3},
    "wealth": {"uniform": [1, 5]},
}


def statement(**change):
    base = PRECAUTIONARY
    parts = {
        "name": "typed",
        "states": base.states,
        "actions": base.actions,
        "functions": base.functions,
        "constraints": base.constraints,
        "stochastic_transitions": base.stochastic_transitions,
        "n_periods": base.n_periods,
    }
    return Model(**(parts | change))


def params_with(**change):
    return validate_params(model=LIFECYCLE, params=PARAMS | change)


def initial(**change):
    states = {
        "pref_type": np.array([0, 1]),
        "lagged_retirement": np.array([0, 0]),
        "income": np.array([0, 2]),
        "wealth": np.array([2.0, 3.0]),
    }
    return {k: v for k, v in (states | change).items() if v is not None}


def drawn(**change):
    return draw_initial_conditions(
        model=LIFECYCLE, n_subjects=4, seed=0, distribution=DISTRIBUTION | change
    )


CASES: list[tuple[str, Callable[[], object], str]] = [
    # Grids
    ("lin n_points 1", lambda: LinSpacedGrid(start=0, stop=1, n_points=1), "n_points"),
    ("lin n_points float", lambda: LinSpacedGrid(start=0, stop=1, n_points=3.0), "n_points"),
    ("lin n_points bool", lambda: LinSpacedGrid(start=0, stop=1, n_points=True), "n_points"),
    ("lin start > stop", lambda: LinSpacedGrid(start=2, stop=1, n_points=3), "start must be <"),
    ("lin start == stop", lambda: LinSpacedGrid(start=1, stop=1, n_points=3), "start must be <"),
    ("lin nan start", lambda: LinSpacedGrid(start=math.nan, stop=1, n_points=3), "finite"),
    ("lin inf stop", lambda: LinSpacedGrid(start=0, stop=math.inf, n_points=3), "finite"),
    (
        "lin stop beyond float32",
        lambda: LinSpacedGrid(start=0, stop=1e39, n_points=3),
        "exceeds the range of float32",
    ),
    ("lin str start", lambda: LinSpacedGrid(start="0", stop=1, n_points=3), "real number"),
    ("lin None stop", lambda: LinSpacedGrid(start=0, stop=None, n_points=3), "real number"),
    ("log start 0", lambda: LogSpacedGrid(start=0, stop=1, n_points=3), "start"),
    ("log negative", lambda: LogSpacedGrid(start=-1, stop=1, n_points=3), "start"),
    (
        "batch negative",
        lambda: LinSpacedGrid(start=0, stop=1, n_points=3, batch_size=-1),
        "batch_size",
    ),
    (
        "batch float",
        lambda: LinSpacedGrid(start=0, stop=1, n_points=3, batch_size=2.5),
        "batch_size",
    ),
    (
        "continuous distributed",
        lambda: LinSpacedGrid(start=0, stop=1, n_points=3, distributed=True),
        "distributed",
    ),
    ("irreg one point", lambda: IrregSpacedGrid(points=[1.0]), "at least 2"),
    ("irreg empty", lambda: IrregSpacedGrid(points=[]), "at least 2"),
    ("irreg unsorted", lambda: IrregSpacedGrid(points=[0.0, 2.0, 1.0]), "increasing"),
    ("irreg duplicate", lambda: IrregSpacedGrid(points=[0.0, 1.0, 1.0]), "increasing"),
    ("irreg nan", lambda: IrregSpacedGrid(points=[0.0, math.nan]), "finite"),
    ("irreg inf", lambda: IrregSpacedGrid(points=[0.0, math.inf]), "finite"),
    ("irreg str", lambda: IrregSpacedGrid(points=["a", "b"]), "point 0"),
    ("irreg None", lambda: IrregSpacedGrid(points=[0.0, None]), "point 1"),
    ("irreg bool", lambda: IrregSpacedGrid(points=[0.0, True]), "point 1"),
    ("irreg scalar", lambda: IrregSpacedGrid(points=3.0), "sequence"),
    ("irreg string", lambda: IrregSpacedGrid(points="01"), "sequence"),
    ("discrete list", lambda: DiscreteGrid([0, 1]), "DiscreteGrid takes a class"),
    ("discrete dict", lambda: DiscreteGrid({"a": 0}), "DiscreteGrid takes a class"),
    ("discrete None", lambda: DiscreteGrid(None), "DiscreteGrid takes a class"),
    ("discrete str", lambda: DiscreteGrid("working"), "DiscreteGrid takes a class"),
    # The model statement
    ("states None", lambda: statement(states=None), "states must be a mapping"),
    ("actions list", lambda: statement(actions=[1]), "actions must be a mapping"),
    ("functions None", lambda: statement(functions=None), "functions must be a mapping"),
    ("functions list", lambda: statement(functions=[len]), "functions must be a mapping"),
    ("constraints list", lambda: statement(constraints=[len]), "constraints must be a mapping"),
    ("empty name", lambda: statement(name=""), "name must be a non-empty str"),
    ("name None", lambda: statement(name=None), "name must be a non-empty str"),
    (
        "list as a grid",
        lambda: statement(states={**PRECAUTIONARY.states, "wealth": [1.0, 2.0]}),
        "states['wealth'] is list",
    ),
    (
        "number as a function",
        lambda: statement(functions={**PRECAUTIONARY.functions, "utility": 3.0}),
        "functions['utility'] is float",
    ),
    (
        "string as a constraint",
        lambda: statement(constraints={"budget": "c <= w"}),
        "constraints['budget'] is str",
    ),
    (
        "key not an identifier",
        lambda: statement(functions={**PRECAUTIONARY.functions, "bad name": len}),
        "'bad name'",
    ),
    (
        "no utility",
        lambda: statement(
            functions={k: f for k, f in PRECAUTIONARY.functions.items() if k != "utility"}
        ),
        "utility",
    ),
    (
        "no law of motion",
        lambda: statement(
            functions={k: f for k, f in PRECAUTIONARY.functions.items() if k != "next_wealth"}
        ),
        "wealth",
    ),
    ("no periods", lambda: statement(n_periods=0), "n_periods"),
    ("negative periods", lambda: statement(n_periods=-2), "n_periods"),
    (
        "state and action share a name",
        lambda: statement(
            actions={**PRECAUTIONARY.actions, "wealth": PRECAUTIONARY.actions["consumption"]}
        ),
        "both states and actions",
    ),
    # Params
    ("params None", lambda: validate_params(model=LIFECYCLE, params=None), "must be a mapping"),
    ("params list", lambda: validate_params(model=LIFECYCLE, params=[1]), "must be a mapping"),
    ("params str", lambda: validate_params(model=LIFECYCLE, params="beta"), "must be a mapping"),
    ("param missing", lambda: validate_params(model=LIFECYCLE, params={}), "missing"),
    ("param unknown", lambda: params_with(gamma=1.0), "unexpected ['gamma']"),
    ("param nan", lambda: params_with(beta=math.nan), "['beta'] are not finite"),
    ("param inf", lambda: params_with(r=math.inf), "['r'] are not finite"),
    ("param -inf in array", lambda: params_with(disutility_of_work=[0.1, -math.inf]), "not finite"),
    ("param string", lambda: params_with(crra="2"), "crra"),
    ("param None", lambda: params_with(crra=None), "crra"),
    ("param dict", lambda: params_with(crra={"a": 1}), "crra"),
    ("param wrong shape", lambda: params_with(disutility_of_work=[0.1, 0.2, 0.3]), "shape"),
    ("param scalar for array", lambda: params_with(disutility_of_work=0.1), "shape"),
    ("param array for scalar", lambda: params_with(crra=[2.0, 3.0]), "shape"),
    ("beta zero", lambda: params_with(beta=0.0), "must be > 0"),
    ("beta negative", lambda: params_with(beta=-0.9), "must be > 0"),
    ("param complex", lambda: params_with(crra=2 + 1j), "crra"),
    ("param beyond float32", lambda: params_with(crra=1e300), "exceeds the range of float32"),
    # Solve arguments
    ("unknown method", lambda: solve(model=LIFECYCLE, params=PARAMS, method="vfi"), "method"),
    ("bad log level", lambda: solve(model=LIFECYCLE, params=PARAMS, log_level="loud"), "log"),
    (
        "memory limit str",
        lambda: solve(model=LIFECYCLE, params=PARAMS, memory_limit="lots"),
        "memory_limit",
    ),
    ("memory limit 0", lambda: solve(model=LIFECYCLE, params=PARAMS, memory_limit=0), "positive"),
    (
        "memory limit negative",
        lambda: solve(model=LIFECYCLE, params=PARAMS, memory_limit=-5),
        "positive",
    ),
    (
        "memory limit 200%",
        lambda: solve(model=LIFECYCLE, params=PARAMS, memory_limit="200%"),
        "percentage",
    ),
    (
        "memory limit below any plan",
        lambda: solve(model=LIFECYCLE, params=PARAMS, method="grid", memory_limit=100),
        "memory",
    ),
    (
        "grid search on a continuous action",
        lambda: solve(model=_continuous_action_model(), params=PARAMS, method="grid"),
        "needs points",
    ),
    # Initial conditions
    ("initial missing state", lambda: _simulate(initial(wealth=None)), "missing states"),
    ("initial unknown state", lambda: _simulate(initial(age=np.array([1, 2]))), "unknown states"),
    (
        "initial lengths differ",
        lambda: _simulate(initial(wealth=np.array([1.0, 2.0, 3.0]))),
        "wealth",
    ),
    ("initial nan wealth", lambda: _simulate(initial(wealth=np.array([1.0, math.nan]))), "wealth"),
    ("initial wealth outside", lambda: _simulate(initial(wealth=np.array([1.0, 1e6]))), "wealth"),
    ("initial code too big", lambda: _simulate(initial(income=np.array([0, 7]))), "income"),
    ("initial negative code", lambda: _simulate(initial(income=np.array([0, -1]))), "income"),
    ("initial fractional code", lambda: _simulate(initial(income=np.array([0.5, 1.0]))), "income"),
    ("initial unknown label", lambda: _simulate(initial(pref_type=np.array(["a", "b"]))), "pref"),
    ("initial not a mapping", lambda: _simulate([1, 2, 3]), "must be a mapping"),
    ("draw unknown label", lambda: drawn(lagged_retirement={"label": "asleep"}), "asleep"),
    (
        "draw probabilities not summing to one",
        lambda: drawn(income={"probabilities": [0.5, 0.1, 0.1]}),
        "income",
    ),
    ("draw unknown entry", lambda: drawn(income={"triangular": [0, 1]}), "income"),
    (
        "draw missing state",
        lambda: draw_initial_conditions(
            model=LIFECYCLE, n_subjects=4, seed=0, distribution={"wealth": {"value": 2.0}}
        ),
        "pref_type",
    ),
    (
        "draw zero subjects",
        lambda: draw_initial_conditions(
            model=LIFECYCLE, n_subjects=0, seed=0, distribution=DISTRIBUTION
        ),
        "n_subjects",
    ),
    ("draw uniform outside grid", lambda: drawn(wealth={"uniform": [0.0, 1e6]}), "wealth"),
    # Simulate arguments
    ("simulate batch negative", lambda: _simulate(initial(), subject_batch_size=-1), "batch"),
    ("simulate batch float", lambda: _simulate(initial(), subject_batch_size=2.5), "batch"),
    ("simulate start period", lambda: _simulate(initial(), start_period=9), "start_period"),
    ("simulate other params", lambda: _simulate(initial(), params=PARAMS | {"beta": 0.5}), "beta"),
    ("simulate bad log level", lambda: _simulate(initial(), log_level="chatty"), "log"),
]


def variant(**fields):
    from project.config import Variant

    return Variant(**({"name": "v"} | fields))


def variant_model(model="lifecycle", **sizes):
    from project.pipeline import build_variant_model

    return build_variant_model(model=model, sizes=sizes)


def variant_params(**params):
    from project.config import Variant
    from project.pipeline import variant_params as resolve

    return resolve(variant=Variant(name="v", params=params), model=LIFECYCLE)


def split_variant(*, model="lifecycle", processes=2, **sizes):
    """Return the specification of a variant solved in ``processes`` processes."""
    from project.pipeline import variant_specification

    small = {"n_wealth": 6, "n_consumption": 5, "n_periods": 3} if model == "lifecycle" else {}
    return variant_specification(variant(model=model, sizes=small | sizes, processes=processes))


def check(**fields):
    from project.config import RobustnessCheck

    return RobustnessCheck(**({"name": "c", "description": "d", "params": {"r": 0.02}} | fields))


def check_specification(**params):
    from project.config import VARIANTS
    from project.estimation.robustness import robustness_specification
    from project.pipeline import variant_specification

    return robustness_specification(
        check={"name": "c", "params": params},
        specification=variant_specification(VARIANTS["baseline"]),
        protected=("crra", "beta", "work_cost"),
    )


def check_settings(*, estimates):
    from project.config import ESTIMATION
    from project.estimation.robustness import robustness_settings

    return robustness_settings(
        check={"name": "c", "age_groups": None}, settings=asdict(ESTIMATION), estimates=estimates
    )


def launcher(choice, *, path=None):
    """Return the launcher ``$PROJECT_LAUNCHER=choice`` picks (``path``: PATH to search)."""
    from project.launch import LAUNCHER_ENV, chosen_launcher

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(LAUNCHER_ENV, choice)
        if path is not None:
            patch.setenv("PATH", path)
        return chosen_launcher()


def worker_input(key):
    """Return a solve worker's input ``key`` with none set (the worker run by hand)."""
    from project.launch import worker_setting

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(f"PROJECT_SOLVE_{key}", raising=False)
        return worker_setting(key)


for bad_name in ["../escape", "/abs/path", "", "a b", "1st", "a/b", ".hidden", None, "x" * 65]:
    CASES.append((f"variant name {bad_name!r}", lambda n=bad_name: variant(name=n), "safe"))
CASES += [
    ("variant model not a str", lambda: variant(model=3), "model must name"),
    ("variant model with a path", lambda: variant(model="../m"), "model must name"),
    ("variant sizes a list", lambda: variant(sizes=[1]), "sizes must be a dict"),
    ("variant params a list", lambda: variant(params=[1]), "params must be a dict"),
    ("variant params int keys", lambda: variant(params={1: 2}), "params must be a dict"),
    ("variant unknown model", lambda: variant_model("lifecycel"), "Unknown model"),
    ("variant unknown size", lambda: variant_model(n_walth=3), "Unknown sizes ['n_walth']"),
    ("variant unknown param", lambda: variant_params(gamma=1.0), "unknown params ['gamma']"),
    (
        "variant scale without shocks",
        lambda: variant_params(taste_shock_scale=0.1),
        "taste_shocks=True",
    ),
    ("variant processes zero", lambda: variant(processes=0), "processes must be a whole"),
    ("variant processes float", lambda: variant(processes=2.0), "processes must be a whole"),
    ("variant processes with regimes", lambda: split_variant(model="lifecycle_regimes"), "regimes"),
    ("variant processes no distributed state", split_variant, "no distributed state"),
    (
        "variant processes by DC-EGM",
        lambda: split_variant(distributed_types=True, n_savings=8),
        "(DC-)EGM",
    ),
    (
        "variant processes not dividing blocks",
        lambda: split_variant(distributed_types=True, processes=3),
        "2 blocks, which do not split evenly over 3 processes",
    ),
    ("robustness name unsafe", lambda: check(name="../x"), "not a safe identifier"),
    ("robustness no description", lambda: check(description=" "), "give a description"),
    ("robustness changes nothing", lambda: check(params={}), "changes nothing"),
    ("robustness params a list", lambda: check(params=[1]), "params must be a dict"),
    ("robustness ages reversed", lambda: check(age_groups=((60, 55),)), "age_min < age_max"),
    ("robustness ages floats", lambda: check(age_groups=((50.0, 55),)), "whole ages"),
    ("robustness sets an estimate", lambda: check_specification(crra=3.0), "estimates or calib"),
    ("robustness unknown param", lambda: check_specification(rho=0.9), "unknown params ['rho']"),
    (
        "robustness param shape",
        lambda: check_specification(income_growth=1.0),
        "'income_growth' has shape (75,)",
    ),
    ("robustness without estimates", lambda: check_settings(estimates={}), "rebuild"),
    ("launcher unknown", lambda: launcher("mpirun"), "PROJECT_LAUNCHER='mpirun'"),
    ("launcher srun without srun", lambda: launcher("srun", path=""), "no srun is on PATH"),
    ("solve worker by hand", lambda: worker_input("DIRECTORY"), "started by project.launch"),
]

for bad_limit, fragment in [
    ("2XB", "memory_limit"),
    ("", "memory_limit"),
    (-1.5, "positive"),
    (math.nan, "positive"),
    (math.inf, "positive"),
    (True, "memory_limit"),
    ([1], "memory_limit"),
    ("0%", "percentage"),
    ("-5%", "percentage"),
]:
    CASES.append(
        (
            f"memory limit {bad_limit!r}",
            lambda b=bad_limit: solve(model=LIFECYCLE, params=PARAMS, memory_limit=b),
            fragment,
        )
    )

CASES += [
    ("simulate seed str", lambda: _simulate(initial(), seed="a"), "seed"),
    ("simulate seed float", lambda: _simulate(initial(), seed=1.5), "seed"),
    ("simulate seed negative", lambda: _simulate(initial(), seed=-1), "seed"),
    ("simulate solution None", lambda: _simulate(initial(), solution=None), "solution"),
    (
        "draw seed str",
        lambda: draw_initial_conditions(
            model=LIFECYCLE, n_subjects=4, seed="a", distribution=DISTRIBUTION
        ),
        "seed",
    ),
    (
        "draw n_subjects float",
        lambda: draw_initial_conditions(
            model=LIFECYCLE, n_subjects=2.5, seed=0, distribution=DISTRIBUTION
        ),
        "n_subjects",
    ),
    (
        "draw distribution None",
        lambda: draw_initial_conditions(model=LIFECYCLE, n_subjects=4, seed=0, distribution=None),
        "distribution",
    ),
    ("draw entry not a mapping", lambda: drawn(income=[0.2, 0.8]), "income"),
    ("draw uniform reversed", lambda: drawn(wealth={"uniform": [5, 1]}), "wealth"),
    ("draw lognormal negative sd", lambda: drawn(wealth={"lognormal": [0.0, -1.0]}), "wealth"),
    ("draw value off grid", lambda: drawn(wealth={"value": -3.0}), "wealth"),
    ("draw label for continuous", lambda: drawn(wealth={"label": "rich"}), "wealth"),
    (
        "draw probabilities negative",
        lambda: drawn(income={"probabilities": [1.2, -0.1, -0.1]}),
        "income",
    ),
    ("draw probabilities too few", lambda: drawn(income={"probabilities": [0.5, 0.5]}), "income"),
    ("solve model None", lambda: solve(model=None, params=PARAMS), "model"),
    ("solve devices empty", lambda: solve(model=LIFECYCLE, params=PARAMS, devices=[]), "devices"),
    ("solve method None type", lambda: solve(model=LIFECYCLE, params=PARAMS, method=3), "method"),
]


def altered(model, **change):
    """Return ``model`` restated with some of its functions or constraints replaced."""
    parts = {
        "name": "outputs",
        "states": model.states,
        "actions": model.actions,
        "functions": dict(model.functions) | change.pop("functions", {}),
        "constraints": dict(model.constraints) | change.pop("constraints", {}),
        "stochastic_transitions": model.stochastic_transitions,
        "ages": model.ages,
        "param_shapes": model.param_shapes,
        "shocks": model.shocks,
        "post_decision_grid": model.post_decision_grid,
        "taste_shocks": model.taste_shocks,
    }
    return Model(**parts)


def solved_with(method="grid", **change):
    sizes = {"n_wealth": 6, "n_consumption": 5, "n_income": 3, "n_periods": 3}
    base = lifecycle.build_model(**sizes, n_savings=8 if method == "dcegm" else None)
    return solve(model=altered(base, **change), params=PARAMS, method=method)


def regimes_with(**functions):
    base = lifecycle_regimes.build_model(n_wealth=6, n_consumption=5, n_income=3, n_periods=3)
    model = RegimeModel(
        name="outputs",
        regimes={
            "working": altered(base.regimes["working"], functions=functions),
            "retired": base.regimes["retired"],
            "dead": base.terminal["dead"],
        },
        transitions={
            "working": lifecycle_regimes.working_transition,
            "retired": lifecycle_regimes.retired_transition,
        },
    )
    return solve(model=model, params=lifecycle_regimes.default_params(), method="grid")


def _utility(consumption, working, pref_type, crra, disutility_of_work):
    return consumption ** (1 - crra) / (1 - crra) - disutility_of_work[pref_type] * working


def _vector_utility(consumption, working, pref_type, crra, disutility_of_work):
    return jnp.stack([_utility(consumption, working, pref_type, crra, disutility_of_work)] * 2)


def _bool_utility(consumption, working, pref_type, crra, disutility_of_work):
    return _utility(consumption, working, pref_type, crra, disutility_of_work) > 0


def _vector_wealth(wealth, consumption, working, labor_income, pension, r):
    return jnp.stack([(1 + r) * (wealth - consumption) + working * labor_income + pension] * 2)


def _bool_wealth(wealth, consumption, working, labor_income, pension, r):
    return (1 + r) * (wealth - consumption) + working * labor_income + pension > 0


def _python_if(retirement):
    return 1 if retirement else 0


# What model functions return (solver/outputs.py): shapes and dtypes by tracing, codes of
# discrete laws of motion on a sample with the actual params.
CASES += [
    (
        "output utility vector",
        lambda: solved_with(functions={"utility": _vector_utility}),
        "'utility' returns shape (2,)",
    ),
    (
        "output utility bool",
        lambda: solved_with(functions={"utility": _bool_utility}),
        "'utility' returns shape () and dtype bool",
    ),
    (
        "output utility vector dcegm",
        lambda: solved_with("dcegm", functions={"utility": _vector_utility}),
        "'utility' returns shape (2,)",
    ),
    (
        "output constraint float",
        lambda: solved_with(
            constraints={"borrowing_constraint": lambda consumption, wealth: wealth - consumption}
        ),
        "'borrowing_constraint' returns shape () and dtype float",
    ),
    (
        "output constraint vector",
        lambda: solved_with(
            constraints={
                "borrowing_constraint": lambda consumption, wealth: jnp.stack(
                    [consumption <= wealth] * 3
                )
            }
        ),
        "'borrowing_constraint' returns shape (3,)",
    ),
    (
        "output code out of range",
        lambda: solved_with(
            functions={"next_lagged_retirement": lambda retirement: jnp.where(retirement, 7, 0)}
        ),
        "'next_lagged_retirement' returns code 7 at retirement=1",
    ),
    (
        "output code negative",
        lambda: solved_with(
            functions={"next_lagged_retirement": lambda retirement: retirement - 1}
        ),
        "'next_lagged_retirement' returns code -1 at retirement=0",
    ),
    (
        "output code float",
        lambda: solved_with(
            functions={"next_lagged_retirement": lambda retirement: retirement / 2}
        ),
        "'next_lagged_retirement' returns shape () and dtype float",
    ),
    (
        "output code python if",
        lambda: solved_with(functions={"next_lagged_retirement": _python_if}),
        "evaluating 'next_lagged_retirement'",
    ),
    (
        "output code dcegm",
        lambda: solved_with(
            "dcegm",
            functions={"next_lagged_retirement": lambda retirement: jnp.where(retirement, 7, 0)},
        ),
        "returns code 7",
    ),
    (
        "output code regimes",
        lambda: regimes_with(next_pref_type=lambda pref_type: pref_type + 1),
        "'next_pref_type' returns code 2 at pref_type=1",
    ),
    (
        "output next wealth vector",
        lambda: solved_with(functions={"next_wealth": _vector_wealth}),
        "'next_wealth' returns shape (2,)",
    ),
    (
        "output next wealth bool",
        lambda: solved_with(functions={"next_wealth": _bool_wealth}),
        "'next_wealth' returns shape () and dtype bool",
    ),
]


_PRODUCTS: dict[str, Path] = {}


def damaged(kind: str, damage: Callable[[Path], object]) -> Callable[[], object]:
    """Return a case: a fresh copy of a saved product of ``kind``, damaged, then loaded."""

    def case() -> object:
        from project.persist import load_bundle, load_solution, save_bundle, save_solution

        if not _PRODUCTS:
            root = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
            atexit.register(shutil.rmtree, root, ignore_errors=True)
            solution = _solution()
            save_solution(solution=solution, directory=root / "solution")
            result = _simulate(initial())
            save_bundle(result=result, directory=root / "simulation")
            _PRODUCTS.update(solution=root / "solution", simulation=root / "simulation")
        copy = Path(tempfile.mkdtemp(prefix="damaged-")) / kind
        shutil.copytree(_PRODUCTS[kind], copy)
        try:
            damage(copy)
            if kind == "solution":
                return load_solution(directory=copy, model=LIFECYCLE)
            return load_bundle(directory=copy, model=LIFECYCLE)
        finally:
            shutil.rmtree(copy.parent, ignore_errors=True)

    return case


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _largest(directory: Path) -> Path:
    return max((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


for kind in ("solution", "simulation"):
    CASES += [
        (
            f"{kind}: flipped array byte",
            damaged(kind, lambda d: _flip(_largest(d / "arrays"))),
            "does not match the digest",
        ),
        (
            f"{kind}: truncated metadata",
            damaged(kind, lambda d: (d / "metadata.json").write_text("{")),
            "metadata.json does not match",
        ),
        (
            f"{kind}: emptied marker",
            damaged(kind, lambda d: (d / "COMPLETE.json").write_text("")),
            "not valid JSON",
        ),
        (
            f"{kind}: marker a list",
            damaged(kind, lambda d: (d / "COMPLETE.json").write_text("[]")),
            "not the marker",
        ),
        (
            f"{kind}: no marker",
            damaged(kind, lambda d: (d / "COMPLETE.json").unlink()),
            "has no COMPLETE.json",
        ),
        (f"{kind}: no arrays", damaged(kind, lambda d: shutil.rmtree(d / "arrays")), "is missing"),
        (
            f"{kind}: stray file",
            damaged(kind, lambda d: (d / "notes.txt").write_text("x")),
            "notes.txt is not part",
        ),
        (
            f"{kind}: empty directory",
            damaged(kind, lambda d: [shutil.rmtree(d), d.mkdir()]),
            "has no COMPLETE.json",
        ),
    ]
CASES += [
    (
        "simulation: truncated table",
        damaged("simulation", lambda d: (d / "simulated_data.arrow").write_bytes(b"")),
        "simulated_data.arrow does not match",
    ),
    (
        "solution: a bundle's marker",
        damaged(
            "solution",
            lambda d: shutil.copyfile(
                _PRODUCTS["simulation"] / "COMPLETE.json", d / "COMPLETE.json"
            ),
        ),
        "not the marker of a solution",
    ),
]

_SOLUTION = {}


def _solution():
    if "solution" not in _SOLUTION:
        _SOLUTION["solution"] = solve(model=LIFECYCLE, params=PARAMS)
    return _SOLUTION["solution"]


def _continuous_action_model() -> Model:
    return Model(
        name="continuous_action",
        states=LIFECYCLE.states,
        actions=LIFECYCLE.actions | {"consumption": ContinuousAction()},
        functions=LIFECYCLE.functions,
        constraints=LIFECYCLE.constraints,
        stochastic_transitions=LIFECYCLE.stochastic_transitions,
        ages=LIFECYCLE.ages,
        param_shapes=LIFECYCLE.param_shapes,
    )


def _simulate(initial_conditions, **change):
    arguments = {
        "params": PARAMS,
        "initial_conditions": initial_conditions,
        "solution": _solution(),
        "seed": 0,
    }
    return simulate(**(arguments | change))


@pytest.mark.parametrize(("make", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_our_error_naming_the_culprit(make, fragment):
    with pytest.raises(ProjectError) as caught:
        make()
    assert fragment in str(caught.value), str(caught.value)


def test_the_table_is_large_and_its_ids_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 150


def test_the_unchanged_statement_builds():
    """The statement the cases alter is valid as given (so each case tests its one change)."""
    assert statement().name == "typed"


def test_the_code_check_follows_the_params_a_law_of_motion_depends_on():
    """Codes valid under some params and not others are checked for the params of each solve."""

    def next_lagged_retirement(retirement, age, mandatory_retirement_age):
        return jnp.where(age >= mandatory_retirement_age, 2, retirement)

    base = lifecycle.build_model(n_wealth=6, n_consumption=5, n_income=3, n_periods=3)
    model = altered(base, functions={"next_lagged_retirement": next_lagged_retirement})
    early = PARAMS | {"mandatory_retirement_age": 51.0}
    solve(model=model, params=PARAMS, method="grid")  # ages 50 to 52, all below 65
    with pytest.raises(ModelSpecificationError, match=r"returns code 2 at retirement=0, age=51"):
        solve(model=model, params=early, method="grid")
    solve(model=model, params=PARAMS, method="grid")
    solve(model=model, params=early, method="grid", log_level="off")  # checks opted out
