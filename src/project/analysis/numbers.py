"""Every number of the paper's text, formatted, and the sentences that depend on results.

``paper_numbers`` turns the build's products into the nested mapping that
``task_paper_numbers`` writes to ``<bld>/paper/numbers.json`` and ``paper/paper.typ`` reads
(``#n.est.baseline.crra``). Values are strings exactly as printed (negative numbers with a true
minus sign), so a test can find each one in the PDF. A sentence whose direction depends on the
results ("raises"/"lowers") is generated here, never typed in the paper; a number a sentence
shares with a table is read from that table's own function (``summary_statistics``), so the
two cannot disagree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.calibration_text import calibration_targets_sentence
from project.analysis.estimation_numbers import estimation_numbers
from project.analysis.model_numbers import (
    calibration_numbers,
    calibration_sentence,
    setup_numbers,
)
from project.analysis.notation import (
    VARIANT_NAMES,
    joined,
    number,
    percent,
    variant_name,
)
from project.analysis.panel_statistics import living_levels
from project.analysis.replication import replication_numbers, replication_sentence
from project.analysis.robustness import (
    LAMBDA_DECIMALS,
    Welfare,
    read_welfare,
    robustness_estimates_sentence,
)
from project.analysis.tables import (
    CLAIM_BINS,
    CONSUMPTION_CHANGE,
    MEAN_CLAIM_AGE,
    MEAN_CONSUMPTION,
    MEAN_WEALTH_AT_PROBE,
    MEDIAN_RATIO,
    RATIO_AGES,
    SHARE_AT_EARLIEST,
    STATISTIC,
    claiming_table,
    printed_statistic,
    summary_statistics,
)
from project.analysis.welfare_text import monte_carlo_sentence, welfare_sentence
from project.calibration import load_calibration
from project.data.replication import read_profiles
from project.data.scf import IMPLICATES, WAVES
from project.estimation.inference import CONFIDENCE
from project.estimation.products import SavedEstimation, load_estimation
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.persist.manifest import read_json_object
from project.pipeline import solution_method
from project.provenance import product_provenance
from project.style import method_name
from project.up_to_date import read_specification

RERUN = "Run pytask to rebuild it."
BASE, CUT = "baseline", "benefit_cut"


def results_numbers(
    *, panels: Mapping[str, pd.DataFrame], moment_ages: tuple[int, int] = (26, 60)
) -> dict[str, Any]:
    """Return the outcomes the text states, as the summary tables print them, and sentences.

    ``moment_ages``: the first and last age the estimation's moments cover (for the share of
    simulated years without assets there).
    """
    pair = {v: panels[v] for v in (BASE, CUT)}
    table = summary_statistics(panels=pair).set_index(STATISTIC)
    claiming = claiming_table(panels=pair).set_index("Variant")

    def printed(row: str, variant: str) -> str:
        return printed_statistic(row, float(table.loc[row, variant_name(variant)]))

    late = [f"{low}" for low, _ in CLAIM_BINS if low >= LATE_CLAIM]
    numbers: dict[str, Any] = {
        variant: {
            "share_earliest": percent(float(printed(SHARE_AT_EARLIEST, variant))),
            "claim_age": printed(MEAN_CLAIM_AGE, variant),
            "wealth_probe": printed(MEAN_WEALTH_AT_PROBE, variant),
            "consumption_change": number(float(printed(CONSUMPTION_CHANGE, variant)), decimals=3),
            "consumption": printed(MEAN_CONSUMPTION, variant),
            "late_claims": percent(
                sum(float(f"{claiming.loc[variant_name(variant), a]:.3f}") for a in late)
            ),
            **{
                f"ratio_{age:.0f}": printed(MEDIAN_RATIO.format(age=age), variant)
                for age in RATIO_AGES
            },
        }
        for variant in (BASE, CUT)
    }
    base, cut = numbers[BASE], numbers[CUT]
    change = float(cut["wealth_probe"]) / float(base["wealth_probe"]) - 1
    numbers["wealth_change"] = percent(abs(change))
    numbers["late_claim_age"] = str(LATE_CLAIM)
    numbers["zero_assets"] = percent(zero_asset_share(panels[BASE], ages=moment_ages))
    drop = float(printed(CONSUMPTION_CHANGE, BASE))
    young, old = (f"{age:.0f}" for age in RATIO_AGES)
    results = (
        f"At the estimates, {base['share_earliest']} of the workers who may claim at the "
        f"earliest age do so, and the mean claiming age is {base['claim_age']}. The median "
        f"household holds {base[f'ratio_{young}']} times its permanent income at {young} and "
        f"{base[f'ratio_{old}']} times at {old}, and its consumption "
        f"{'falls' if drop < 0 else 'rises'} on average from its last working year to its "
        f"first retired year, when the cost of working ends (a mean log change of "
        f"{base['consumption_change']})."
    )
    counterfactual = (
        f"The cut {'raises' if change > 0 else 'lowers'} mean wealth at the last age before "
        f"the earliest claim by {numbers['wealth_change']} (from {base['wealth_probe']} to "
        f"{cut['wealth_probe']} times permanent income at 25), moves the mean claiming age "
        f"from {base['claim_age']} to {cut['claim_age']}, the share of workers claiming at "
        f"the earliest age from {base['share_earliest']} to {cut['share_earliest']} and the "
        f"share of claims made at {LATE_CLAIM} or later from {base['late_claims']} to "
        f"{cut['late_claims']}: households work longer. Mean consumption over the life cycle "
        f"moves from {base['consumption']} to {cut['consumption']} times permanent income at 25."
    )
    return {"numbers": numbers, "results": results, "counterfactual": counterfactual}


LATE_CLAIM = 68
"""The text reports the share of claims made at this claiming age or later (delayed credits)."""


def zero_asset_share(panel: pd.DataFrame, *, ages: tuple[int, int]) -> float:
    """Return the share of the living subject-years at ``ages`` (first, last) without assets.

    The moment is a mean of logs of positive ratios: such years count in no moment, as the SCF
    drops households without positive net worth.
    """
    frame = living_levels(panel)
    low, high = ages
    ages = frame["age"].between(low, high)
    return float((frame.loc[ages, "assets_ratio"] <= 0).mean())


def lambda_range(welfare: Welfare | None) -> dict[str, str]:
    """Return the smallest and largest λ of the robustness checks, as their table prints them."""
    if welfare is None or not welfare.checks:
        return {}
    values = [100 * v for v in welfare.checks.values()]
    low, high = (number(v, decimals=LAMBDA_DECIMALS) for v in (min(values), max(values)))
    return {"lambda_low": f"{low} %", "lambda_high": f"{high} %"}


def range_sentence(welfare: Welfare | None) -> str:
    """Return how far the robustness checks move λ, as the robustness table prints it."""
    if welfare is None or not welfare.checks:
        return ""
    values = [100 * v for v in welfare.checks.values()]
    low, high = (number(v, decimals=LAMBDA_DECIMALS) for v in (min(values), max(values)))
    sentence = f" At the estimates of our robustness checks it lies between {low} % and {high} %"
    if welfare.bounds is not None:
        width = 100 * (welfare.bounds[1] - welfare.bounds[0])
        wider = max(values) - min(values) > width
        level = percent(CONFIDENCE, decimals=0)
        sentence += f", a {'wider' if wider else 'narrower'} range than its {level} interval"
    return sentence + "."


def reweighting_numbers(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Return the smallest effective-sample share and the largest weight ratio of all variants.

    Printed as bounds ("at least", "no weight above"): the share rounded down, the ratio up.
    """
    ess = [float(s["weights"]["effective_sample_share"]) for s in summaries.values()]
    ratio = [float(s["weights"]["max_weight_ratio"]) for s in summaries.values()]
    return {
        "ess_min": percent(math.floor(1000 * min(ess)) / 1000),
        "max_weight": number(math.ceil(100 * max(ratio)) / 100, decimals=2),
    }


def method_sentence(methods: Mapping[str, str]) -> str:
    """Return which method solved which variant (read from the saved solutions)."""
    by_method: dict[str, list[str]] = {}
    for variant, method in methods.items():
        by_method.setdefault(method_name(method), []).append(VARIANT_NAMES.get(variant, variant))
    parts = [f"{joined(names)} by {method}" for method, names in by_method.items()]
    return "The build solved " + "; ".join(parts) + "."


def provenance_numbers(provenance: Mapping[str, str]) -> dict[str, Any]:
    """Return the build's commit, dirty flag, date and versions, and the PDF's keywords."""
    versions = json.loads(provenance["versions"])
    commit = provenance["commit"]
    dirty = {"true": "with uncommitted changes", "false": "clean"}.get(
        provenance["dirty"], "no git checkout"
    )
    return {
        "commit": commit[:12] if commit != "unknown" else commit,
        "dirty": dirty,
        "build_date": provenance["build_date"],
        "python": provenance["python"],
        **{name.replace("-", "_"): versions.get(name, "absent") for name in versions},
        "keywords": [f"{k}={v}" for k, v in sorted(provenance.items()) if k != "versions"]
        + [f"{k}={v}" for k, v in sorted(versions.items())],
    }


DATA_NUMBERS = {
    "first_wave": str(WAVES[0]),
    "last_wave": str(WAVES[-1]),
    "n_waves": str(len(WAVES)),
    "implicates": str(IMPLICATES),
}
"""The SCF's waves and implicates, as the paper states them."""


def paper_numbers(
    *,
    specifications: Mapping[str, Mapping[str, Any]],
    methods: Mapping[str, str],
    estimates: Mapping[str, SavedEstimation],
    robustness: Mapping[str, SavedEstimation],
    robustness_specs: Mapping[str, Mapping[str, Any]],
    robustness_welfare: Welfare | None,
    replication: SavedEstimation,
    replication_profiles: pd.DataFrame,
    calibration_summaries: Mapping[str, Mapping[str, Any]],
    calibration_tables: Mapping[str, pd.DataFrame],
    panels: Mapping[str, pd.DataFrame],
    welfare: Mapping[str, Any],
    validation: Mapping[str, Any],
    provenance: Mapping[str, str],
    initial_distribution: Mapping[str, Any],
    female_share: float,
) -> dict[str, Any]:
    """Return the nested mapping of every number and result sentence of the paper."""
    model = setup_numbers(
        specification=specifications[BASE],
        counterfactual=specifications[CUT],
        initial_distribution=initial_distribution,
        female_share=female_share,
    )
    model["n_subjects"] = f"{panels[BASE]['subject_id'].nunique():,}"
    estimation = estimation_numbers(estimates)
    status_quo = estimates[next(iter(estimates))]
    groups = status_quo.summary["settings"]["age_groups"]
    results = results_numbers(
        panels=panels,
        moment_ages=(min(lo for lo, _ in groups) + 1, max(hi for _, hi in groups)),
    )
    return {
        "model": model,
        "data": dict(DATA_NUMBERS),
        "est": estimation["numbers"],
        "kappa": calibration_numbers(status_quo),
        "calibration": reweighting_numbers(calibration_summaries),
        "results": results["numbers"],
        "welfare": dict(welfare["numbers"]) | lambda_range(robustness_welfare),
        "validation": dict(validation["numbers"]),
        "provenance": provenance_numbers(provenance),
        "replication": replication_numbers(replication, profiles=replication_profiles),
        "text": _sentences(
            status_quo=status_quo,
            estimation=estimation,
            results=results,
            welfare=welfare,
            validation=validation,
            methods=methods,
            calibration_table=calibration_tables[BASE],
            robustness=robustness,
            robustness_specs=robustness_specs,
            robustness_welfare=robustness_welfare,
            replication=replication,
        ),
    }


def _sentences(
    *,
    status_quo: SavedEstimation,
    estimation: Mapping[str, Any],
    results: Mapping[str, Any],
    welfare: Mapping[str, Any],
    validation: Mapping[str, Any],
    methods: Mapping[str, str],
    calibration_table: pd.DataFrame,
    robustness: Mapping[str, SavedEstimation],
    robustness_specs: Mapping[str, Mapping[str, Any]],
    robustness_welfare: Welfare | None,
    replication: SavedEstimation,
) -> dict[str, str]:
    """Return the paper's result sentences, each from the numbers its table shows."""
    welfare_text = welfare_sentence(welfare)
    return {
        "abstract_result": welfare_text["abstract"] + range_sentence(robustness_welfare),
        "calibration_targets": calibration_targets_sentence(
            calibration_table, whose="The baseline\u2019s weights"
        ),
        "method": method_sentence(methods),
        "validation": validation["sentence"],
        "estimation": estimation["sentence"],
        "kappa": calibration_sentence(status_quo),
        "results": results["results"],
        "counterfactual": results["counterfactual"],
        "welfare": welfare_text["sentence"] + " " + monte_carlo_sentence(welfare),
        "robustness_estimates": robustness_estimates_sentence(
            baseline=status_quo,
            checks=robustness,
            specs=robustness_specs,
            welfare=robustness_welfare,
        ),
        "replication": replication_sentence(replication),
    }


def write_paper_numbers(
    *,
    specification_files: Mapping[str, Path],
    solution_directories: Mapping[str, Path],
    estimation_directories: Mapping[str, Path],
    robustness_directories: Mapping[str, Path],
    robustness_specs: Mapping[str, Mapping[str, Any]],
    replication_directory: Path,
    replication_profiles: Path,
    calibration_directories: Mapping[str, Path],
    bundle_directories: Mapping[str, Path],
    results: Mapping[str, Path],
    initial_distribution: Mapping[str, Any],
    female_share: float,
    path: Path,
) -> Path:
    """Read the products (each verified by its loader) and write the paper's numbers to ``path``."""
    specifications = {v: read_specification(p) for v, p in specification_files.items()}
    calibrations = {v: load_calibration(d) for v, d in calibration_directories.items()}
    welfare = read_json_object(
        results["welfare"], kind="welfare", hint=RERUN, required=("numbers", "values")
    )
    numbers = paper_numbers(
        specifications=specifications,
        methods={v: solution_method(directory=d) for v, d in solution_directories.items()},
        estimates={v: load_estimation(d) for v, d in estimation_directories.items()},
        robustness={c: load_estimation(d) for c, d in robustness_directories.items()},
        robustness_specs=robustness_specs,
        robustness_welfare=read_welfare(results) if robustness_directories else None,
        replication=load_estimation(replication_directory),
        replication_profiles=read_profiles(replication_profiles),
        calibration_summaries={v: c.summary for v, c in calibrations.items()},
        calibration_tables={v: c.table for v, c in calibrations.items()},
        panels={v: load_table(d) for v, d in bundle_directories.items()},
        welfare=welfare,
        validation=read_json_object(
            results["validation"], kind="validation", hint=RERUN, required=("numbers",)
        ),
        provenance=product_provenance(config=specifications),
        initial_distribution=initial_distribution,
        female_share=female_share,
    )
    text = json.dumps(numbers, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    return Path(path)
