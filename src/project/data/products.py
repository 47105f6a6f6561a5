"""The data preparation's products: SCF moments and survival probabilities in ``bld/data/``.

``prepare_data`` checks the vendored files' checksums, builds both tables and writes each file
atomically (``project.persist.atomic.atomic_file``): ``scf_moments.arrow`` and
``survival.arrow`` (feather, with the provenance of the data settings in their schema metadata,
``project.provenance``) and ``scf_moments.md`` (the moments as a Markdown table). Numbers in
the Markdown file have fixed formats, so equal inputs give byte-identical files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from project.data.life_tables import survival_probabilities
from project.data.scf import MOMENT_SOURCES, scf_moments
from project.data.vendored import VENDORED, display_path, verified_path
from project.errors import DataError
from project.persist.atomic import atomic_file, write_bytes_atomically
from project.provenance import product_provenance, write_arrow

PRODUCT_KEYS = ("moments", "moments_markdown", "survival")
"""Keys of ``prepare_data``'s ``products``: the two feather tables and the Markdown copy."""
SETTINGS_KEYS = ("education", "year", "female_share", "survival_ages")
MOMENT_LABELS = {
    "log_wealth_to_income": "log(wealth / permanent income)",
    "log_permanent_income": "log permanent income",
    "log_wealth": "log wealth",
}

logger = logging.getLogger(__name__)


def prepare_data(
    *,
    settings: Mapping[str, Any],
    products: Mapping[str, Path],
    provenance: Mapping[str, str] | None = None,
) -> None:
    """Write the SCF moments and the survival probabilities chosen by ``settings``.

    ``settings`` holds the fields of ``project.config.DataSettings``; ``products`` maps
    ``PRODUCT_KEYS`` to paths. ``provenance`` goes to the tables' schema metadata; by default
    ``product_provenance`` of ``settings``.
    """
    missing = [k for k in SETTINGS_KEYS if k not in settings]
    absent = [k for k in PRODUCT_KEYS if k not in products]
    if missing or absent:
        msg = (
            f"prepare_data needs the settings {list(SETTINGS_KEYS)} and the products "
            f"{list(PRODUCT_KEYS)}; missing: {missing + absent}. See DATA in "
            "src/project/config.py and task_prepare_data in tasks.py."
        )
        raise DataError(msg)
    scf_path = verified_path("scf_wealth_income_stats")
    moments = scf_moments(path=scf_path, education=settings["education"], year=settings["year"])
    first, last = settings["survival_ages"]
    survival = survival_table(
        path=verified_path("us_life_table"),
        ages=range(int(first), int(last) + 1),
        female_share=settings["female_share"],
    )
    if provenance is None:
        provenance = product_provenance(config=dict(settings))
    write_feather(frame=moments, path=products["moments"], provenance=provenance)
    write_feather(frame=survival, path=products["survival"], provenance=provenance)
    markdown = moments_markdown(
        moments=moments,
        education=settings["education"],
        year=settings["year"],
        source=display_path(scf_path),
    )
    write_bytes_atomically(Path(products["moments_markdown"]), markdown.encode())
    logger.info(
        "Wrote %d SCF age groups and survival at ages %d to %d to %s.",
        len(moments),
        first,
        last,
        display_path(Path(products["moments"]).parent),
    )


def survival_table(*, path: Path, ages: range, female_share: float) -> pd.DataFrame:
    """Return ``age`` and ``survival_probability`` (to the next age) for ``ages``."""
    probabilities = survival_probabilities(path=path, ages=ages, female_share=female_share)
    return pd.DataFrame(
        {"age": np.asarray(ages, dtype=np.int64), "survival_probability": probabilities}
    )


def write_feather(
    *, frame: pd.DataFrame, path: Path, provenance: Mapping[str, str] | None = None
) -> None:
    """Write ``frame`` (its index dropped) as feather, never leaving a partial file.

    ``provenance`` goes to the schema metadata (default: ``product_provenance()``, no config).
    """
    if provenance is None:
        provenance = product_provenance()
    with atomic_file(Path(path)) as temporary:
        write_arrow(frame=frame.reset_index(drop=True), path=temporary, provenance=provenance)


def moments_markdown(*, moments: pd.DataFrame, education: str, year: str | int, source: str) -> str:
    """Return the moments as a Markdown document: a short header and one table."""
    lines = [
        f"# SCF moments by age group (Educ = {education}, YEAR = {year})",
        "",
        f"From `{source}` (sha256 {VENDORED['scf_wealth_income_stats'][1][:12]}...); see "
        "data/README.md. Ages a-b are a to b inclusive. N: SCF records (five implicates per "
        "household). Var(mean) = sd^2 / (N / 5), one observation per household (simple random "
        "sampling; SCF design effects ignored).",
        "",
    ]
    header = ["Ages", "N", "Weighted count"]
    for name in MOMENT_SOURCES:
        label = MOMENT_LABELS[name]
        header += [f"Mean {label}", f"SD {label}", f"Var(mean) {label}"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
    for row in moments.itertuples(index=False):
        cells = [f"{row.age_min + 1}-{row.age_max}", f"{row.n_obs:d}", f"{row.weighted_count:,.0f}"]
        for name in MOMENT_SOURCES:
            cells += [
                f"{getattr(row, f'mean_{name}'):.4f}",
                f"{getattr(row, f'sd_{name}'):.4f}",
                f"{getattr(row, f'variance_of_mean_{name}'):.3e}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
