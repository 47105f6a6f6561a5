r"""Peer side of the EGM benchmark: a buffer-stock model solved by HARK's IndShockConsumerType.

Runs in the separate HARK environment (``bash benchmarks/setup_hark_env.sh`` builds it), not in
the project's uv environment::

    /work/hark-env/bin/python benchmarks/hark_peer.py --periods 20 --a-count 200 \
        --repeats 20 --sweep 0.05,20,2000 --out /tmp/hark.json

Model (``benchmarks/compare_hark.py`` states the same one with our API): a finite life of
``--periods`` decision periods and a terminal period that consumes everything; cash on hand m,
consumption c <= m (``BoroCnstArt = 0``), m' = R (m - c) + theta with R = 1.03; theta is HARK's
transitory income shock: mean-one lognormal, s.d. of log 0.1, 7 equiprobable points, and
unemployment with probability 0.05 paying 0.3 (the employed points scaled so the mean stays
one); no permanent shocks (``PermShkStd = 0``, ``PermGroFac = 1``: HARK's normalised model is
then the level model), no mortality; CRRA 2, beta 0.96. Savings grid: HARK's own
(``aXtraMin`` 0.001, ``aXtraMax`` 20, ``aXtraNestFac`` 3, ``--a-count`` points), consumption
interpolated linearly (``CubicBool = False``) and no value function (``vFuncBool = False``,
HARK's defaults; so HARK computes less than we do, who also store V).

Timing: ``agent.solve()`` (the whole backward induction, every period's consumption function
built) in this fresh process: the first call (numba's compiles included), then ``--repeats``
warm calls. Output: the timings, the income distribution's atoms and probabilities (ours uses
exactly these), every period's consumption on the sweep and the versions.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
from HARK.ConsumptionSaving.ConsIndShockModel import IndShockConsumerType

PARAMS = {
    "CRRA": 2.0,
    "DiscFac": 0.96,
    "Rfree": 1.03,
    "TranShkStd": 0.1,
    "TranShkCount": 7,
    "UnempPrb": 0.05,
    "IncUnemp": 0.3,
    "aXtraMin": 0.001,
    "aXtraMax": 20.0,
    "aXtraNestFac": 3,
}


def build_agent(*, periods: int, a_count: int) -> IndShockConsumerType:
    """Return the agent with the module docstring's model and ``a_count`` savings points."""
    every = [1.0] * periods
    return IndShockConsumerType(
        cycles=1,
        T_cycle=periods,
        CRRA=PARAMS["CRRA"],
        DiscFac=PARAMS["DiscFac"],
        Rfree=[PARAMS["Rfree"]] * periods,
        LivPrb=every,
        PermGroFac=every,
        PermShkStd=[0.0] * periods,
        PermShkCount=1,
        TranShkStd=[PARAMS["TranShkStd"]] * periods,
        TranShkCount=PARAMS["TranShkCount"],
        UnempPrb=PARAMS["UnempPrb"],
        IncUnemp=PARAMS["IncUnemp"],
        UnempPrbRet=0.0,
        IncUnempRet=0.0,
        T_retire=0,
        BoroCnstArt=0.0,
        aXtraMin=PARAMS["aXtraMin"],
        aXtraMax=PARAMS["aXtraMax"],
        aXtraCount=a_count,
        aXtraNestFac=PARAMS["aXtraNestFac"],
        aXtraExtra=None,
        vFuncBool=False,
        CubicBool=False,
        verbose=0,
    )


def run(*, periods: int, a_count: int, repeats: int, sweep: np.ndarray) -> dict[str, Any]:
    """Solve, time and evaluate; return the JSON-ready result."""
    started = time.perf_counter()
    agent = build_agent(periods=periods, a_count=a_count)
    agent.solve()
    first = time.perf_counter() - started
    warm = []
    for _ in range(repeats):
        started = time.perf_counter()
        agent.solve()
        warm.append(time.perf_counter() - started)
    shocks = agent.IncShkDstn[0]
    if not np.allclose(shocks.atoms[0], 1.0):
        msg = f"expected no permanent shock, got atoms {shocks.atoms[0]}"
        raise SystemExit(msg)
    consumption = [agent.solution[t].cFunc(sweep).tolist() for t in range(periods)]
    return {
        "first_call_s": first,
        "warm_median_s": statistics.median(warm),
        "warm_min_s": min(warm),
        "income_nodes": shocks.atoms[1].tolist(),
        "income_weights": shocks.pmv.tolist(),
        "consumption": consumption,
        "python_version": platform.python_version(),
        "hark_version": importlib.metadata.version("econ-ark"),
        "numpy_version": importlib.metadata.version("numpy"),
        "numba_version": importlib.metadata.version("numba"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, required=True)
    parser.add_argument("--a-count", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--sweep", default="0.05,20,2000", help="start,stop,count of m")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    low, high, count = args.sweep.split(",")
    sweep = np.linspace(float(low), float(high), int(count))
    result = run(periods=args.periods, a_count=args.a_count, repeats=args.repeats, sweep=sweep)
    args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
