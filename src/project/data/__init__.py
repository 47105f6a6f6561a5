"""Vendored real data (SCF, SSA-style life table) and their preparation into moment tables.

Exports are imported lazily (see ``project._lazy``): ``import project.data.vendored`` stays light.
"""

from project._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(
        ("VENDORED", "sha256_of", "verified_path", "verify_file", "vendored_path"),
        "project.data.vendored",
    ),
    **dict.fromkeys(("moment_columns", "scf_moments"), "project.data.scf"),
    **dict.fromkeys(("life_table", "survival_probabilities"), "project.data.life_tables"),
    **dict.fromkeys(
        ("moments_markdown", "prepare_data", "survival_table", "write_feather"),
        "project.data.products",
    ),
}
__all__ = [
    "VENDORED",
    "life_table",
    "moment_columns",
    "moments_markdown",
    "prepare_data",
    "scf_moments",
    "sha256_of",
    "survival_probabilities",
    "survival_table",
    "vendored_path",
    "verified_path",
    "verify_file",
    "write_feather",
]
__getattr__ = lazy_exports(__name__, _EXPORTS)
