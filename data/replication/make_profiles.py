"""Write the published buffer-stock estimation's age profiles, one file per calibration.

Run in an environment holding econ-ark (HARK) 0.17.2 (``benchmarks/setup_hark_env.sh``):

    /work/hark-env/bin/python data/replication/make_profiles.py

Both calibrations are those of the structural estimation in Carroll's "Solution Methods for
Microeconomic Dynamic Stochastic Optimization Problems" (SolvingMicroDSOPs), on ages 25 to 89,
one row per year t, each entry the transition from age 25 + t to 26 + t. In both, the
discount-factor profile (``discount_profile``, which the estimated factor multiplies) is the
list the code gives as "lifted from Cagetti (2003)" (``DiscFac_timevary``).

``profiles_hark2019.csv``: the estimation as HARK distributed it as an example (econ-ark/HARK
at 66d1ecd9, 2019-11-26, ``examples/SolvingMicroDSOPs/Calibration/EstimationParameters.py``,
Apache-2.0), whose data file is vendored beside it (``SCFdata.csv``): income growth 2.5 % a
year to 49, 1 % to 63, a drop to 0.7 at 64 to 65 and none after (the profile the notes credit
to Carroll 1997); shocks of standard deviation 0.1 to transition 38, none after; survival one
to 65, then Cagetti's five-year blocks (the lists are copied from that file).

``profiles_notes2026.csv``: the notes of 2026-03-11 (Table 11; ``Calibration/
EstimationParameters.py`` of llorracc/SolvingMicroDSOPs at 03884752): HARK's
``parse_income_spec(age_min=25, age_max=90, **CGM_income["HS"] with age_ret=65,
SabelhausSong=True)``, the Cocco, Gomes and Maenhout (2005) high-school profile with
replacement rate 0.6821 and the Sabelhaus and Song (2010) shock variances by age, and
``parse_ssa_life_table(female=False, age_min=25, age_max=90, cohort=1960)``, the Social
Security Administration's cohort life table of men born in 1960.
"""

import csv
import sys
from pathlib import Path

from HARK.Calibration.Income.IncomeTools import CGM_income, parse_income_spec
from HARK.Calibration.life_tables.us_ssa.SSATools import parse_ssa_life_table

AGE_MIN, AGE_MAX, RETIREMENT_AGE = 25, 90, 65
N = AGE_MAX - AGE_MIN
CAGETTI = [
    1.064914,
    1.057997,
    1.051422,
    1.045179,
    1.039259,
    1.033653,
    1.028352,
    1.023348,
    1.018632,
    1.014198,
    1.010037,
    1.006143,
    1.002509,
    0.9991282,
    0.9959943,
    0.9931012,
    0.9904431,
    0.9880143,
    0.9858095,
    0.9838233,
    0.9820506,
    0.9804866,
    0.9791264,
    0.9779656,
    0.9769995,
    0.9762239,
    0.9756346,
    0.9752274,
    0.9749984,
    0.9749437,
    0.9750595,
    0.9753422,
    0.9757881,
    0.9763936,
    0.9771553,
    0.9780698,
    0.9791338,
    0.9803439,
    0.981697,
    0.8287214,
] + [0.9902111] * 25
HARK2019 = {
    "income_growth": [1.025] * 25 + [1.01] * 14 + [0.7] + [1.0] * 25,
    "permanent_shock_sd": [0.1] * 39 + [0.0] * 26,
    "transitory_shock_sd": [0.1] * 39 + [0.0] * 26,
    "survival": [1.0] * 40
    + [0.98438596] * 5
    + [0.97567062] * 5
    + [0.96207901] * 5
    + [0.93721595] * 5
    + [0.63095734] * 5,
    "discount_profile": CAGETTI,
}


def notes2026() -> dict[str, list[float]]:
    """Return the 2026 notes' profiles, computed by HARK's own calibration functions."""
    spec = dict(CGM_income["HS"]) | {"age_ret": RETIREMENT_AGE}
    income = parse_income_spec(age_min=AGE_MIN, age_max=AGE_MAX, **spec, SabelhausSong=True)
    return {
        "income_growth": income["PermGroFac"],
        "permanent_shock_sd": income["PermShkStd"],
        "transitory_shock_sd": income["TranShkStd"],
        "survival": parse_ssa_life_table(
            female=False, age_min=AGE_MIN, age_max=AGE_MAX, cohort=1960
        ),
        "discount_profile": CAGETTI,
    }


def write(columns: dict[str, list[float]], target: Path) -> None:
    """Write ``columns`` (one entry per transition) to ``target``."""
    for name, values in columns.items():
        if len(values) != N:
            sys.exit(f"{name}: {len(values)} entries, expected {N}")
    with target.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["period", "age", *columns])
        for t in range(N):
            row = [f"{float(values[t]):.10g}" for values in columns.values()]
            writer.writerow([t, AGE_MIN + t, *row])


if __name__ == "__main__":
    here = Path(__file__).parent
    write(HARK2019, here / "profiles_hark2019.csv")
    write(notes2026(), here / "profiles_notes2026.csv")
