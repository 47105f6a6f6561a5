"""Write ``solvingmicrodsops_profiles.csv``: the published buffer-stock estimation's age profiles.

Run in an environment holding econ-ark (HARK) 0.17.2 (``benchmarks/setup_hark_env.sh``):

    /work/hark-env/bin/python data/replication/make_profiles.py

The profiles are those of the structural estimation in Carroll's "Solution Methods for
Microeconomic Dynamic Stochastic Optimization Problems" (SolvingMicroDSOPs; the notes of
2026-03-11, Table 11, whose code is ``Calibration/EstimationParameters.py`` of
llorracc/SolvingMicroDSOPs at 03884752): ages 25 to 89, one row per year t, each entry the
transition from age 25 + t to 26 + t.

- ``income_growth``, ``permanent_shock_sd``, ``transitory_shock_sd``: HARK's
  ``parse_income_spec(age_min=25, age_max=90, **CGM_income["HS"] with age_ret=65,
  SabelhausSong=True)``: the Cocco, Gomes and Maenhout (2005) high-school age profile with
  replacement rate 0.6821, and the Sabelhaus and Song (2010) shock variances by age.
- ``survival``: HARK's ``parse_ssa_life_table(female=False, age_min=25, age_max=90,
  cohort=1960)``: US Social Security Administration cohort life table, men born in 1960.
- ``discount_profile``: the age-varying discount factors the code lists as "lifted from Cagetti
  (2003)" (``DiscFac_timevary``), which the estimated factor multiplies.
"""

import csv
import sys
from pathlib import Path

from HARK.Calibration.Income.IncomeTools import CGM_income, parse_income_spec
from HARK.Calibration.life_tables.us_ssa.SSATools import parse_ssa_life_table

AGE_MIN, AGE_MAX, RETIREMENT_AGE = 25, 90, 65
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


def main(target: Path) -> None:
    """Write the profiles to ``target``."""
    spec = dict(CGM_income["HS"]) | {"age_ret": RETIREMENT_AGE}
    income = parse_income_spec(age_min=AGE_MIN, age_max=AGE_MAX, **spec, SabelhausSong=True)
    survival = parse_ssa_life_table(female=False, age_min=AGE_MIN, age_max=AGE_MAX, cohort=1960)
    n = AGE_MAX - AGE_MIN
    columns = {
        "income_growth": income["PermGroFac"],
        "permanent_shock_sd": income["PermShkStd"],
        "transitory_shock_sd": income["TranShkStd"],
        "survival": survival,
        "discount_profile": CAGETTI,
    }
    for name, values in columns.items():
        if len(values) != n:
            sys.exit(f"{name}: {len(values)} entries, expected {n}")
    with target.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["period", "age", *columns])
        for t in range(n):
            row = [f"{float(values[t]):.10g}" for values in columns.values()]
            writer.writerow([t, AGE_MIN + t, *row])


if __name__ == "__main__":
    main(Path(__file__).with_name("solvingmicrodsops_profiles.csv"))
