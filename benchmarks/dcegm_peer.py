r"""Peer side of the DC-EGM benchmark: the IJRS (2017) retirement model solved by dcegm 0.1.3.

Runs in the separate dcegm environment (``bash benchmarks/setup_dcegm_env.sh`` builds it), not
in the project's uv environment::

    /work/dcegm-env/bin/python benchmarks/dcegm_peer.py --periods 5 --n-savings 500 \\
        --repeats 20 --out /tmp/dcegm_T5.json

Model (Iskhakov, Jorgensen, Rust and Schjerning 2017, as in ``tests/oracles/ijrs_exact.py``):
periods t = 0..T-1, the last one terminal with V = log(m) for everyone; utility
log(c) - delta * working; next wealth (m - c) * (1 + r) + wage * working (the wage of a worked
period arrives at the start of the next one); no borrowing; retirement is absorbing. Choice 0 is
work, 1 is retire (dcegm's own convention in its IJRS toy model). Extreme value taste shocks of
scale ``--taste-shock-scale`` act on the work/retire choice; dcegm needs a positive scale (its
"no shocks" toy model uses 2.2204e-16).

How the model is put to dcegm:

* One state besides the period, ``lagged_choice``. Choice set {0, 1} for workers, {1} for
  retirees and {1} for everyone in the terminal period (so V_{T-1} = log m exactly; with both
  choices there and one terminal utility, the log-sum would add scale * log 2).
* Budget: m = max((1 + r) * a + wage * (1 - lagged_choice), floor). The floor (default 1e-3, as
  ``consumption_floor`` in dcegm's IJRS toy models) binds only for retirees at zero savings
  (workers get the wage): it keeps log(0) out of the value at a = 0, which dcegm stores as the
  first point of every value grid and uses in the credit-constrained region.
* Deterministic income: ``income_shock_std`` = 0 and one quadrature point.
* Savings grid (end-of-period assets): a_k = A (exp(theta x_k) - 1) / (exp(theta) - 1),
  x_k = linspace(0, 1, n), A = ``--max-savings`` (500), theta = ``--grid-curvature`` (9), i.e.
  dense near zero (a_1 = 1.1e-3 at n = 500). Linear interpolation of a log-shaped value
  function needs small *relative* spacing, for retirees down to the smallest consumption on
  their path; a plain power grid (A x^2) is more accurate for workers but loses up to 1e-2 for
  poor retirees.
* FUES jump threshold 5 (``--fues-jump-threshold``; dcegm's default is 2, its other tuning
  parameters stay at their defaults). With the default, dcegm's upper envelope breaks down for
  some grids when the taste-shock scale is 0.01: e.g. this grid at T = 20 and 2000 points gives
  a worker V off by 3.4 (a power grid A x^3 at 1000 points: 0.67); with 5 no such case was
  found for T = 5..30, 200..2000 points, exponential and power grids, scales 0.01 and 1e-6.

Timing: ``model.get_solve_func()`` wraps dcegm's ``backward_induction`` in ``jax.jit`` (the
large model-structure arrays are jit arguments, so nothing is recompiled between calls;
``model.solve`` instead re-traces every time). The first call (trace, compile and run) and
``--repeats`` warm calls with the same params are timed with ``jax.block_until_ready`` on
(value, policy, endog_grid). Model setup (state space and batches, plain Python) is timed
separately.

Evaluation at period 0 uses dcegm's own helpers on the solved model:
``choice_values_for_states`` (choice-specific values of the worker, linear interpolation on
the endogenous grid and, below its first positive point, the closed form u(m) + beta * V(a=0)
for the credit-constrained region) and ``value_for_states_and_choices`` (the retiree's only
choice). The worker's value is the log-sum scale * log(sum_d exp(v_d / scale)) computed here
from those choice values, without the Euler-gamma constant, as dcegm's own expected values are
(dcegm subtracts Euler's gamma from the Gumbel draws only when simulating).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import dcegm
import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = ROOT / "tests" / "oracles" / "ijrs_exact.py"

WORK, RETIRE = 0, 1
WEALTH_LEVELS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 400.0)
N_LINSPACE = 100


# --- model functions (dcegm reads their argument names) --------------------------------------


def utility(consumption: jax.Array, choice: int, params: dict[str, Any]) -> jax.Array:
    """Per-period utility log(c) - delta * working (choice 0 is work)."""
    return jnp.log(consumption) - (1 - choice) * params["delta"]


def marginal_utility(consumption: jax.Array, params: dict[str, Any]) -> jax.Array:
    """Marginal utility of log consumption."""
    del params
    return 1.0 / consumption


def inverse_marginal_utility(marginal_utility: jax.Array, params: dict[str, Any]) -> jax.Array:
    """Inverse of the marginal utility of log consumption."""
    del params
    return 1.0 / marginal_utility


def utility_final(wealth: jax.Array, params: dict[str, Any]) -> jax.Array:
    """Terminal period: consume everything, V = log(m), no work cost."""
    del params
    return jnp.log(wealth)


def marginal_utility_final(wealth: jax.Array, params: dict[str, Any]) -> jax.Array:
    """Marginal utility of the terminal period."""
    del params
    return 1.0 / wealth


def budget_constraint(
    lagged_choice: jax.Array, asset_end_of_previous_period: jax.Array, params: dict[str, Any]
) -> jax.Array:
    """Beginning-of-period wealth: savings plus last period's wage, at least the floor."""
    wealth = (1.0 + params["interest_rate"]) * asset_end_of_previous_period + params["wage"] * (
        1 - lagged_choice
    )
    return jnp.maximum(wealth, params["consumption_floor"])


def feasible_choices(period: int, lagged_choice: int, model_specs: dict[str, Any]) -> np.ndarray:
    """Retirement is absorbing; the terminal period has no choice (coded as retire)."""
    if lagged_choice == RETIRE or period == model_specs["n_periods"] - 1:
        return np.array([RETIRE])
    return np.array([WORK, RETIRE])


# --- set-up -------------------------------------------------------------------------------------


def savings_grid(n_savings: int, max_savings: float, curvature: float) -> np.ndarray:
    """Return the exponentially spaced end-of-period savings grid (linear for curvature 0)."""
    x = np.linspace(0.0, 1.0, n_savings)
    if curvature == 0.0:
        return max_savings * x
    return max_savings * np.expm1(curvature * x) / np.expm1(curvature)


def make_params(
    *, taste_shock_scale: float, consumption_floor: float, beta: float, delta: float, wage: float
) -> dict[str, float]:
    """Return dcegm's params dict (plain floats: jit arguments, no recompile per value)."""
    return {
        "discount_factor": beta,
        "delta": delta,
        "interest_rate": 0.0,
        "wage": wage,
        "income_shock_std": 0.0,
        "income_shock_mean": 0.0,
        "taste_shock_scale": taste_shock_scale,
        "consumption_floor": consumption_floor,
    }


def build_model(n_periods: int, grid: np.ndarray, fues_jump_threshold: int) -> Any:
    """Set up the dcegm model (its progress messages go to stderr)."""
    with contextlib.redirect_stdout(sys.stderr):
        return dcegm.setup_model(
            model_config={
                "n_periods": n_periods,
                "choices": [WORK, RETIRE],
                "continuous_states": {"assets_end_of_period": jnp.asarray(grid)},
                "n_quad_points": 1,
                "tuning_params": {"fues_jump_threshold": fues_jump_threshold},
            },
            model_specs={"n_periods": n_periods, "n_choices": 2},
            utility_functions={
                "utility": utility,
                "marginal_utility": marginal_utility,
                "inverse_marginal_utility": inverse_marginal_utility,
            },
            utility_functions_final_period={
                "utility": utility_final,
                "marginal_utility": marginal_utility_final,
            },
            budget_constraint=budget_constraint,
            state_space_functions={"state_specific_choice_set": feasible_choices},
        )


# --- timing and evaluation -----------------------------------------------------------------------


def timed_solve(solve: Any, params: dict[str, float]) -> tuple[Any, float]:
    """Call the jitted solve once, block until its arrays are ready, return (solution, s)."""
    start = time.perf_counter()
    solved = solve(params)
    jax.block_until_ready((solved.value, solved.policy, solved.endog_grid))
    return solved, time.perf_counter() - start


def logsum(choice_values: np.ndarray, scale: float) -> np.ndarray:
    """Return scale * log(sum_d exp(v_d / scale)) along the last axis (no Euler gamma)."""
    top = choice_values.max(axis=-1)
    return top + scale * np.log(np.exp((choice_values - top[..., None]) / scale).sum(axis=-1))


def period0_values(solved: Any, wealth: np.ndarray, scale: float) -> dict[str, np.ndarray]:
    """Evaluate the period-0 worker log-sum, hard max and retiree value at ``wealth``."""
    n = wealth.shape[0]
    states = {
        "period": jnp.zeros(n, dtype=int),
        "lagged_choice": jnp.full(n, WORK, dtype=int),
        "assets_begin_of_period": jnp.asarray(wealth),
    }
    choice_values = np.asarray(solved.choice_values_for_states(states))  # (n, [work, retire])
    states["lagged_choice"] = jnp.full(n, RETIRE, dtype=int)
    retiree = np.asarray(
        solved.value_for_states_and_choices(states=states, choices=jnp.full(n, RETIRE, dtype=int))
    )
    return {
        "worker": logsum(choice_values, scale),
        "worker_hard_max": choice_values.max(axis=-1),
        "retiree": retiree,
    }


def load_oracle(path: Path) -> ModuleType:
    """Import the pure-numpy IJRS oracle by file path."""
    spec = importlib.util.spec_from_file_location("ijrs_exact", path)
    if spec is None or spec.loader is None:
        msg = f"cannot import {path}"
        raise ImportError(msg)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def oracle_gap(
    oracle: ModuleType, values: dict[str, np.ndarray], wealth: np.ndarray, args: argparse.Namespace
) -> dict[str, float]:
    """Compare period-0 values with the exact no-taste-shock solution on ``wealth``.

    Relative differences are |dV| / max(|V_exact|, 1): the retiree's V crosses zero.
    """
    exact = {
        "retiree": oracle.retiree_value(
            wealth=wealth, period=0, n_periods=args.periods, beta=args.beta
        ),
    }
    exact["worker"] = oracle.worker_value(
        wealth=wealth,
        period=0,
        n_periods=args.periods,
        beta=args.beta,
        delta=args.delta,
        wage=args.wage,
    )
    exact["worker_hard_max"] = exact["worker"]
    gap: dict[str, float] = {}
    for key, reference in exact.items():
        diff = np.abs(values[key] - reference)
        gap[f"{key}_max_abs"] = float(diff.max())
        gap[f"{key}_max_rel"] = float((diff / np.maximum(np.abs(reference), 1.0)).max())
    return gap


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=5, help="T, including the terminal one")
    parser.add_argument("--n-savings", type=int, default=500, help="savings grid points")
    parser.add_argument("--repeats", type=int, default=20, help="warm calls to time")
    parser.add_argument("--taste-shock-scale", type=float, default=0.01)
    parser.add_argument("--max-savings", type=float, default=500.0)
    parser.add_argument("--grid-curvature", type=float, default=9.0, help="theta; 0 = linear")
    parser.add_argument("--consumption-floor", type=float, default=1e-3)
    parser.add_argument(
        "--fues-jump-threshold", type=int, default=5, help="dcegm tuning; its default is 2"
    )
    parser.add_argument("--beta", type=float, default=0.98)
    parser.add_argument("--delta", type=float, default=1.0)
    parser.add_argument("--wage", type=float, default=20.0)
    parser.add_argument(
        "--oracle",
        type=Path,
        default=DEFAULT_ORACLE,
        help="path of ijrs_exact.py; the comparison is skipped when the file is missing",
    )
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    grid = savings_grid(args.n_savings, args.max_savings, args.grid_curvature)
    params = make_params(
        taste_shock_scale=args.taste_shock_scale,
        consumption_floor=args.consumption_floor,
        beta=args.beta,
        delta=args.delta,
        wage=args.wage,
    )

    start = time.perf_counter()
    model = build_model(args.periods, grid, args.fues_jump_threshold)
    solve = model.get_solve_func()
    setup_s = time.perf_counter() - start

    solved, first_call_s = timed_solve(solve, params)
    warm = [timed_solve(solve, params)[1] for _ in range(args.repeats)]

    wealth = np.concatenate([WEALTH_LEVELS, np.linspace(1.0, 400.0, N_LINSPACE)])
    values = period0_values(solved, wealth, args.taste_shock_scale)

    tuning = model.model_config["tuning_params"]
    grid_description = (
        f"savings a_k = {args.max_savings:g} * (exp({args.grid_curvature:g} x_k) - 1)"
        f" / (exp({args.grid_curvature:g}) - 1), x_k = linspace(0, 1, {args.n_savings})"
        f" (a_1 = {grid[1]:.3g}; linear when the curvature is 0); wealth"
        f" m = max(a + wage * worked, {args.consumption_floor:g}) (the floor binds only for"
        " retirees at a = 0); terminal period has no choice, V = log m; FUES tuning:"
        f" fues_jump_threshold {tuning['fues_jump_thresh']} (dcegm default 2), defaults"
        f" n_total_wealth_grid {tuning['n_total_wealth_grid']},"
        f" n_constrained_points_to_add {tuning['n_constrained_points_to_add']},"
        f" n_points_to_scan {tuning['fues_n_points_to_scan']}; one income quadrature point,"
        " income_shock_std 0"
    )
    result: dict[str, Any] = {
        "periods": args.periods,
        "n_savings": args.n_savings,
        "taste_shock_scale": args.taste_shock_scale,
        "first_call_s": first_call_s,
        "warm_median_s": statistics.median(warm) if warm else None,
        "warm_min_s": min(warm) if warm else None,
        "warm_s": warm,
        "setup_s": setup_s,
        "wealth": wealth.tolist(),
        "wealth_description": (
            f"first {len(WEALTH_LEVELS)}: the levels {list(WEALTH_LEVELS)}; then"
            f" linspace(1, 400, {N_LINSPACE})"
        ),
        "worker_value": values["worker"].tolist(),
        "worker_value_hard_max": values["worker_hard_max"].tolist(),
        "retiree_value": values["retiree"].tolist(),
        "grid_description": grid_description,
        "evaluation": (
            "dcegm model_solved.choice_values_for_states (worker: both choices) and"
            " value_for_states_and_choices (retiree), period 0; worker_value is the log-sum"
            " scale * log(sum exp(v_d / scale)) without Euler's gamma; worker_value_hard_max"
            " is max_d v_d"
        ),
        "solve_function": "dcegm.setup_model(...).get_solve_func() (jax.jit of backward_induction)",
        "max_savings": args.max_savings,
        "grid_curvature": args.grid_curvature,
        "consumption_floor": args.consumption_floor,
        "fues_jump_threshold": args.fues_jump_threshold,
        "beta": args.beta,
        "delta": args.delta,
        "wage": args.wage,
        "dcegm_version": importlib.metadata.version("dcegm"),
        "jax_version": jax.__version__,
        "jaxlib_version": importlib.metadata.version("jaxlib"),
        "python_version": sys.version.split()[0],
        "device": str(jax.devices()[0]),
    }
    if args.oracle.is_file():
        tail = slice(len(WEALTH_LEVELS), None)
        result["oracle_gap_linspace"] = oracle_gap(
            load_oracle(args.oracle),
            {key: value[tail] for key, value in values.items()},
            wealth[tail],
            args,
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    summary = {
        key: result[key]
        for key in ("periods", "n_savings", "first_call_s", "warm_median_s", "warm_min_s")
    }
    print(json.dumps({**summary, **result.get("oracle_gap_linspace", {})}, indent=2))


if __name__ == "__main__":
    main()
