"""Every number of the paper's text, formatted, and the sentences that depend on results.

``paper_numbers`` turns the build's products into the nested mapping that
``task_paper_numbers`` writes to ``<bld>/paper/numbers.json`` and ``paper/paper.typ`` reads
(``#n.est.baseline.crra``). Values are strings exactly as printed (negative numbers with a true
minus sign), so a test can find each one in the PDF. A sentence whose direction depends on the
results ("raises"/"lowers") is generated here, never typed in the paper.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from project.analysis.calibration_text import calibration_targets_sentence
from project.analysis.estimation import (
    age_label,
    correlation_sentence,
    j_inflation_sentence,
    misfit_sentence,
    step_sentence,
)
from project.analysis.extended import extended_estimates, extended_numbers, extended_sentence
from project.analysis.notation import (
    AT_BOUND,
    joined,
    number,
    p_relation,
    p_value,
    percent,
    printed_decimals,
    symbol,
    variant_name,
)
from project.analysis.replication import replication_numbers, replication_sentence
from project.analysis.robustness import Welfare, read_welfare, robustness_estimates_sentence
from project.analysis.tables import (
    ALL_TYPES,
    MEAN_RETIREMENT_AGE,
    MEAN_WEALTH,
    RETIREMENT_AGE,
    SHARE_WHO_RETIRE,
    SHARE_YEARS_RETIRED,
    STATISTIC,
    printed_statistic,
    probe_age,
    retirement_age_table,
    summary_statistics,
    wealth_at_age_row,
)
from project.analysis.welfare_text import (
    monte_carlo_sentence,
    precise_types_sentence,
    welfare_sentence,
)
from project.calibration import load_calibration
from project.data.replication import read_profiles
from project.data.scf import IMPLICATES, WAVES
from project.errors import ConfigurationError
from project.estimation.inference import CONFIDENCE
from project.estimation.inputs import largest_simulation_share
from project.estimation.products import SavedEstimation, load_estimation
from project.estimation.variant import halton_points
from project.persist.atomic import write_bytes_atomically
from project.persist.bundle import load_table
from project.persist.manifest import read_json_object
from project.pipeline import read_specification, solution_method
from project.provenance import product_provenance
from project.style import method_name

RERUN = "Run pytask to rebuild it."
RETIREMENT_AGE_DECIMALS = 1
VARIANT_NAMES = {
    "baseline": "the baseline",
    "low_pension": "the low-pension variant",
    "baseline_grid": "the baseline solved by grid search",
    "from_25": "the model from age 25",
}


def model_numbers(
    *, specifications: Mapping[str, Mapping[str, Any]], female_share: float
) -> dict[str, str]:
    """Return the model's facts the text states (baseline's sizes and params, the cut)."""
    baseline, cut = specifications["baseline"], specifications["low_pension"]
    params, sizes = baseline["params"], baseline["sizes"]
    start = int(sizes.get("start_age", 50))
    n_periods = int(sizes["n_periods"])
    return {
        "start_age": str(start),
        "end_age": str(start + n_periods - 1),
        "n_periods": str(n_periods),
        "mandatory_age": number(params["mandatory_retirement_age"], decimals=0),
        "pension": number(params["pension"], decimals=2),
        "pension_cut": number(cut["params"]["pension"], decimals=2),
        "taste_scale": number(params["taste_shock_scale"], decimals=2),
        "n_income": str(int(sizes.get("n_income", 5))),
        "n_savings": str(int(sizes["n_savings"])),
        "n_wealth": str(int(sizes["n_wealth"])),
        "n_consumption": str(int(sizes["n_consumption"])),
        "female_share": percent(female_share, decimals=0),
    }


def estimation_numbers(estimates: Mapping[str, SavedEstimation]) -> dict[str, Any]:
    """Return each variant's estimates, standard errors and J-test, and the moments' ages."""
    numbers: dict[str, Any] = {"confidence": percent(CONFIDENCE, decimals=0)}
    sentences = []
    for variant, saved in estimates.items():
        own: dict[str, str] = {}
        for row in saved.estimates.itertuples(index=False):
            decimals = printed_decimals(row.param)
            own[row.param] = number(row.estimate, decimals=decimals)
            own[f"{row.param}_se"] = (
                AT_BOUND if row.at_bound else number(row.std_error, decimals=decimals)
            )
        summary = saved.summary
        own["j"] = number(summary["j_statistic"], decimals=2)
        own["j_p"] = p_value(summary["j_p_value"])
        own["j_dof"] = str(int(summary["j_dof"]))
        numbers[variant] = own
        sentences.append(_estimation_sentence(variant, own, saved))
    first = next(iter(estimates.values()))
    ages = [age_label(m) for m in first.moments["moment"]]
    numbers["ages"] = f"{ages[0]} to {ages[-1]}".replace("-", "\u2013")
    settings = first.summary["settings"]
    numbers["n_subjects"] = f"{int(settings['n_subjects']):,}"
    numbers["simulation_share"] = percent(largest_simulation_share(first.moments))
    numbers["step_sentence"] = step_sentence(first)
    numbers["misfit_sentence"] = misfit_sentence(first)
    numbers["correlation_sentence"] = correlation_sentence(first)
    numbers["j_inflation_sentence"] = j_inflation_sentence(first)
    numbers["start"] = joined(
        [f"{symbol(name)} = {float(settings['start'][name]):g}" for name in settings["estimated"]]
    )
    numbers["n_households"] = f"{round(float(first.moments['n_data'].sum())):,}"
    numbers["n_starts"] = str(int(settings["n_starts"]))
    numbers["multistart"] = int(settings["n_starts"]) > 1
    numbers["n_halton"] = str(halton_points(int(settings["n_starts"])))
    numbers["bounds"] = joined(
        [
            f"{symbol(row.param)} in [{row.lower_bound:g}, {row.upper_bound:g}]"
            for row in first.estimates.itertuples(index=False)
        ]
    )
    return {"numbers": numbers, "sentence": " ".join(sentences)}


def _estimation_sentence(variant: str, own: Mapping[str, str], saved: SavedEstimation) -> str:
    estimated = ", ".join(
        f"{symbol(p)} = {own[p]} "
        + (f"({AT_BOUND})" if own[f"{p}_se"] == AT_BOUND else f"(s.e. {own[f'{p}_se']})")
        for p in saved.estimates["param"]
    )
    rejects = saved.summary["j_p_value"] < 1 - CONFIDENCE
    verdict = "rejects" if rejects else "does not reject"
    sentence = (
        f"For {VARIANT_NAMES.get(variant, variant)}, {estimated}; the J-test {verdict} the "
        f"over-identifying restrictions at the {percent(1 - CONFIDENCE, decimals=0)} level "
        f"(J = {own['j']} with {own['j_dof']} degree{'' if own['j_dof'] == '1' else 's'} of "
        f"freedom, p {p_relation(own['j_p'])})."
    )
    at_bound = saved.summary.get("params_at_bound", [])
    if at_bound:
        names = " and ".join(symbol(p) for p in at_bound)
        sentence += (
            f" The estimate of {names} lies at a bound of its search interval, where no "
            "standard error or interval is valid; the table reports none."
        )
    return sentence


def retirement_ages(
    *, panels: Mapping[str, pd.DataFrame], weights: Mapping[str, pd.DataFrame]
) -> dict[str, dict[str, float]]:
    """Return each variant's mean retirement age by type, as its table prints them (weighted)."""
    table = retirement_age_table(panels=panels, weights=weights)
    ages: dict[str, dict[str, float]] = {}
    for variant in panels:
        rows = table[(table["Variant"] == variant_name(variant)) & (table["Type"] != ALL_TYPES)]
        ages[variant] = dict(zip(rows["Type"], rows[RETIREMENT_AGE].astype(float), strict=True))
    return ages


def printed_wealth_at_probe(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame],
    specifications: Mapping[str, Mapping[str, Any]],
) -> tuple[float, dict[str, float]]:
    """Return the probe age and each variant's mean wealth there, as the summary table prints it."""
    age = probe_age(specifications)
    if age is None:
        msg = (
            f"Variants {sorted(specifications)} do not all state one mandatory retirement age "
            "in their model.json params, so the paper has no common age at which to compare "
            "their wealth. Give the counterfactual the status quo's retirement age."
        )
        raise ConfigurationError(msg)
    table = summary_statistics(
        panels=panels, weights=weights, specifications=specifications
    ).set_index(STATISTIC)
    row = wealth_at_age_row(age)
    return age, {v: float(printed_statistic(row, table.loc[row, variant_name(v)])) for v in panels}


def results_numbers(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame],
    specifications: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Return retirement ages by type and variant, and the cut's effect on wealth."""
    ages = retirement_ages(panels=panels, weights=weights)
    numbers: dict[str, Any] = {
        v: {t: number(a, decimals=RETIREMENT_AGE_DECIMALS) for t, a in by_type.items()}
        for v, by_type in ages.items()
    }
    results = (
        "In the baseline, "
        + joined([f"{t.lower()} households retire at {a}" for t, a in numbers["baseline"].items()])
        + " on average."
    )
    pair = ("baseline", "low_pension")
    probe, wealth = printed_wealth_at_probe(
        panels={v: panels[v] for v in pair},
        weights={v: weights[v] for v in pair if v in weights},
        specifications={v: specifications[v] for v in pair},
    )
    change = wealth["low_pension"] / wealth["baseline"] - 1
    numbers["wealth_change"] = percent(abs(change))
    numbers["probe_age"] = number(probe, decimals=0)
    direction = "raises" if change > 0 else "lowers"
    moves = []
    for pref_type, before in ages["baseline"].items():
        old, new = numbers["baseline"][pref_type], numbers["low_pension"][pref_type]
        shift = ages["low_pension"][pref_type] - before
        if old == new:
            moves.append(f"{pref_type.lower()} households keep retiring at {old} on average")
            continue
        verb = "postpone" if shift > 0 else "advance"
        moves.append(
            f"{pref_type.lower()} households {verb} retirement on average (from {old} to {new})"
        )
    counterfactual = (
        f"The cut {direction} mean wealth at age {numbers['probe_age']} by "
        f"{numbers['wealth_change']} (the table of simulated outcomes by variant), and "
        + joined(moves)
        + "."
    )
    return {"numbers": numbers, "results": results, "counterfactual": counterfactual}


def calibration_numbers(summaries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Return the smallest effective-sample share and the largest weight ratio of all variants.

    Printed as bounds ("at least", "no weight above"): the share rounded down, the ratio up.
    """
    ess = [float(s["weights"]["effective_sample_share"]) for s in summaries.values()]
    ratio = [float(s["weights"]["max_weight_ratio"]) for s in summaries.values()]
    return {
        "ess_min": percent(math.floor(1000 * min(ess)) / 1000),
        "max_weight": number(math.ceil(100 * max(ratio)) / 100, decimals=2),
    }


def method_sentence(methods: Mapping[str, str], *, sizes: Mapping[str, Any]) -> str:
    """Return which method solved which variant (read from the saved solutions) and the check."""
    by_method: dict[str, list[str]] = {}
    for variant, method in methods.items():
        if variant == "baseline_grid":  # the cross-check: its own sentence below
            continue
        by_method.setdefault(method_name(method), []).append(VARIANT_NAMES.get(variant, variant))
    parts = [f"{joined(names)} by {method}" for method, names in by_method.items()]
    sentence = "The build solved " + "; ".join(parts) + "."
    if "baseline_grid" in methods:
        check = method_name(methods["baseline_grid"])
        sentence += (
            f" As a cross-check, it also solved the baseline by {check} over "
            f"{sizes['n_consumption']} consumption points at each of {sizes['n_wealth']} wealth "
            "points (the variant \u201cBaseline (grid search)\u201d)."
        )
    return sentence


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
    weights: Mapping[str, pd.DataFrame],
    welfare: Mapping[str, Any],
    validation: Mapping[str, Any],
    provenance: Mapping[str, str],
    female_share: float,
) -> dict[str, Any]:
    """Return the nested mapping of every number and result sentence of the paper."""
    model = model_numbers(specifications=specifications, female_share=female_share)
    model["n_subjects"] = f"{panels['baseline']['subject_id'].nunique():,}"
    estimation = estimation_numbers(estimates)
    results = results_numbers(
        panels=panels,
        weights=weights,
        specifications=specifications,
    )
    welfare_text = welfare_sentence(welfare)
    return {
        "model": model,
        "data": {
            "first_wave": str(WAVES[0]),
            "last_wave": str(WAVES[-1]),
            "n_waves": str(len(WAVES)),
            "implicates": str(IMPLICATES),
        },
        "est": estimation["numbers"],
        "calibration": calibration_numbers(calibration_summaries),
        "results": results["numbers"],
        "welfare": dict(welfare["numbers"]),
        "validation": dict(validation["numbers"]),
        "provenance": provenance_numbers(provenance),
        "replication": replication_numbers(replication, profiles=replication_profiles),
        "extended": next((extended_numbers(e) for e in extended_estimates(estimates).values()), {}),
        "text": {
            "abstract_result": welfare_text["abstract"],
            "calibration_targets": calibration_targets_sentence(
                calibration_tables["baseline"], whose="The baseline\u2019s weights"
            ),
            "method": method_sentence(methods, sizes=specifications["baseline"]["sizes"]),
            "validation": validation["sentence"],
            "estimation": estimation["sentence"],
            "results": results["results"],
            "counterfactual": results["counterfactual"],
            "welfare": welfare_text["sentence"]
            + precise_types_sentence(
                welfare,
                retirement_ages={v: results["numbers"][v] for v in ("baseline", "low_pension")},
                mandatory_age=model["mandatory_age"],
            ),
            "robustness": robustness_sentence(panels=panels, weights=weights, validation=validation)
            + monte_carlo_sentence(welfare),
            "robustness_estimates": robustness_estimates_sentence(
                baseline=estimates[next(iter(estimates))],
                checks=robustness,
                specs=robustness_specs,
                welfare=robustness_welfare,
            ),
            "replication": replication_sentence(replication),
            "extended": " ".join(
                extended_sentence(e) for e in extended_estimates(estimates).values()
            ),
        },
    }


def robustness_sentence(
    *,
    panels: Mapping[str, pd.DataFrame],
    weights: Mapping[str, pd.DataFrame],
    validation: Mapping[str, Any],
) -> str:
    """Return the robustness paragraph: DC-EGM against grid search, and the grid's resolution.

    Every number is one the summary statistics table prints for the two baselines (weighted
    statistics of the living), so a reader finds them there.
    """
    if "baseline_grid" not in panels:
        return str(validation.get("robustness", ""))
    pair = ("baseline", "baseline_grid")
    table = summary_statistics(
        panels={v: panels[v] for v in pair}, weights={v: weights[v] for v in pair if v in weights}
    ).set_index(STATISTIC)
    printed = {
        row: [printed_statistic(row, table.loc[row, variant_name(v)]) for v in pair]
        for row in (SHARE_YEARS_RETIRED, SHARE_WHO_RETIRE, MEAN_RETIREMENT_AGE, MEAN_WEALTH)
    }
    wealth = printed.pop(MEAN_WEALTH)
    base, grid = (float(value) for value in wealth)
    parts = [
        f"a {row.lower()} of {new} " + ("under both" if new == old else f"(DC-EGM: {old})")
        for row, (old, new) in printed.items()
    ]
    direction = "higher" if grid > base else "lower"
    parts.append(
        f"a mean wealth {percent(abs(grid / base - 1))} {direction} ({wealth[1]} against "
        f"{wealth[0]})"
    )
    return (
        "In the table of simulated outcomes by variant, solving the baseline by grid search "
        f"instead of DC-EGM gives {joined(parts)}. " + str(validation.get("robustness", ""))
    )


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
    female_share: float,
    path: Path,
) -> Path:
    """Read the products (each verified by its loader) and write the paper's numbers to ``path``."""
    specifications = {v: read_specification(p) for v, p in specification_files.items()}
    calibrations = {v: load_calibration(d) for v, d in calibration_directories.items()}
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
        weights={v: c.weights for v, c in calibrations.items()},
        welfare=read_json_object(
            results["welfare"], kind="welfare", hint=RERUN, required=("numbers",)
        ),
        validation=read_json_object(
            results["validation"], kind="validation", hint=RERUN, required=("numbers",)
        ),
        provenance=product_provenance(config=specifications),
        female_share=female_share,
    )
    text = json.dumps(numbers, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_bytes_atomically(Path(path), text.encode())
    return Path(path)
