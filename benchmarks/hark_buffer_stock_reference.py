"""Write HARK's consumption function of the SolvingMicroDSOPs model as a test reference.

Run in the HARK environment (``benchmarks/setup_hark_env.sh``), from the repository root:

    /work/hark-env/bin/python benchmarks/hark_buffer_stock_reference.py

It solves HARK's ``IndShockConsumerType`` with each calibration of the published estimation
(``data/replication/profiles_<calibration>.csv``; income risk up to transition 38, as the
published code's ``T_retire = 39``) on a dense grid of 2,000 end-of-period assets, at that
calibration's published estimates (``CASES``), and writes c_t(m) at a few periods and points to
``tests/oracles/hark_buffer_stock.json``, which ``tests/test_buffer_stock.py`` compares our EGM
solution of ``project.models.buffer_stock`` with.
"""

import csv
import importlib.metadata
import json
import platform
from pathlib import Path

import numpy as np
from HARK.ConsumptionSaving.ConsIndShockModel import IndShockConsumerType

ROOT = Path(__file__).resolve().parents[1]
CASES = {"notes2026": (3.69, 0.88), "hark2019": (4.8605098948425285, 1.004880962644363)}
"""Calibration -> (rho, discount factor scale): the estimates published with each."""
PERIODS = (0, 10, 20, 30, 38, 39, 40, 50, 64)
WEALTH = (0.3, 0.6, 1.0, 1.5, 2.5, 4.0, 7.0, 12.0, 25.0)


def solved(calibration: str, *, crra: float, discount: float) -> IndShockConsumerType:
    """Return HARK's solved agent of ``calibration`` at (``crra``, ``discount``)."""
    path = ROOT / "data" / "replication" / f"profiles_{calibration}.csv"
    with path.open() as handle:
        rows = list(csv.DictReader(handle))

    def column(name: str) -> list[float]:
        return [float(row[name]) for row in rows]

    n = len(rows)
    agent = IndShockConsumerType(
        cycles=1,
        T_cycle=n,
        CRRA=crra,
        Rfree=[1.03] * n,
        DiscFac=[discount * b for b in column("discount_profile")],
        LivPrb=column("survival"),
        PermGroFac=column("income_growth"),
        PermShkStd=column("permanent_shock_sd"),
        TranShkStd=column("transitory_shock_sd"),
        PermShkCount=7,
        TranShkCount=7,
        UnempPrb=0.005,
        IncUnemp=0.0,
        UnempPrbRet=0.0,
        IncUnempRet=0.0,
        T_retire=39,
        BoroCnstArt=0.0,
        aXtraMin=0.001,
        aXtraMax=60.0,
        aXtraCount=2000,
        aXtraNestFac=3,
        aXtraExtra=[None],
        CubicBool=False,
        vFuncBool=False,
        tax_rate=0.0,
    )
    agent.add_to_time_vary("DiscFac")
    agent.update_income_process()
    agent.check_restrictions = lambda: None  # HARK 0.17.2 refuses a list of discount factors
    agent.solve()
    return agent


def main() -> None:
    """Write every case's consumption at ``PERIODS`` and ``WEALTH``."""
    wealth = np.asarray(WEALTH)
    cases = {}
    for calibration, (crra, discount) in CASES.items():
        agent = solved(calibration, crra=crra, discount=discount)
        cases[calibration] = {
            "crra": crra,
            "beta": discount,
            "consumption": {
                str(t): [round(float(c), 10) for c in agent.solution[t].cFunc(wealth)]
                for t in PERIODS
            },
        }
    reference = {
        "source": "benchmarks/hark_buffer_stock_reference.py",
        "versions": {
            "econ-ark": importlib.metadata.version("econ-ark"),
            "numpy": importlib.metadata.version("numpy"),
            "python": platform.python_version(),
        },
        "wealth": list(WEALTH),
        "cases": cases,
    }
    target = ROOT / "tests" / "oracles" / "hark_buffer_stock.json"
    target.write_text(json.dumps(reference, indent=1) + "\n")


if __name__ == "__main__":
    main()
