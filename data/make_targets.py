"""Write the synthetic calibration targets from the pipeline's own simulated panels.

Run after a build of the profile whose targets it writes (see ``data/README.md``):

    uv run python data/make_targets.py               # data/targets.csv from bld/
    PROJECT_PROFILE=smoke uv run python data/make_targets.py  # targets_smoke.csv, bld/smoke/

Each variant's values are its own panel's aggregates under the synthetic truth
(``project.calibration.synthetic``), rounded to four significant digits: attainable by
construction, and not data. The targets are statistics of the living: total cash on hand
(``wealth``, in units of the row's permanent income, of the pension after the claim) and
consumption by age bin, the working and retired subject-years, and (held out) the claims at 62.
"""

from __future__ import annotations

import pandas as pd

from project.calibration.synthetic import synthetic_targets
from project.config import BLD, CALIBRATION, PROFILE, VARIANTS
from project.persist.bundle import load_table

FITTED, HELD_OUT = 0.01, 0.02
"""The relative tolerance of a fitted and of a held-out target."""


def template() -> pd.DataFrame:
    """Return the targets' rows (values to be filled), the default or the smoke profile's."""
    rows = []

    def add(name, kind, column, label, low, high, *, held_out=False):  # noqa: ANN001, ANN202
        tolerance = HELD_OUT if held_out else FITTED
        rows.append((name, kind, column, label, low, high, tolerance, held_out))

    if PROFILE == "default":
        for low in (25, 35, 45, 55, 65, 75):
            add(f"wealth_{low}_{low + 9}", "sum", "wealth", "", low, low + 10)
        add("working_25_29", "count", "regime", "working", 25, 30)
        for low, high in ((63, 67), (67, 75), (75, 85)):
            add(f"retirees_{low}_{high - 1}", "count", "regime", "retired", low, high)
        for low in (30, 50, 70):
            add(
                f"consumption_{low}_{low + 4}",
                "sum",
                "consumption",
                "",
                low,
                low + 5,
                held_out=True,
            )
        add("claims_62", "count", "claim", "claim", 62, 63, held_out=True)
    else:
        for low, high in ((55, 60), (60, 65), (65, 70)):
            add(f"wealth_{low}_{high - 1}", "sum", "wealth", "", low, high)
        add("working_55_59", "count", "regime", "working", 55, 60)
        add("retirees_63_69", "count", "regime", "retired", 63, 70)
        add("consumption_60_64", "sum", "consumption", "", 60, 65, held_out=True)
    columns = ["name", "kind", "column", "label", "age_min", "age_max", "tolerance", "held_out"]
    return pd.DataFrame(rows, columns=columns).assign(value=0.0, normalization=1, floor="")


def main() -> None:
    """Write the targets of every variant of this profile to its targets file."""
    rows = template()
    tables = []
    for variant in VARIANTS:
        panel = load_table(BLD / variant / "simulation")
        found = synthetic_targets(
            panel=panel, template=rows.assign(variant=variant), variant=variant
        )
        tables.append(found.assign(variant=variant))
    order = ["name", "kind", "column", "label", "age_min", "age_max", "value", "tolerance"]
    order += ["normalization", "held_out", "floor", "variant"]
    pd.concat(tables, ignore_index=True)[order].to_csv(CALIBRATION["targets"], index=False)


if __name__ == "__main__":
    main()
