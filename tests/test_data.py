"""Vendored real data: checksums, values read back against the raw files, refused bad inputs."""

import csv
import hashlib
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import project
from project.config import DATA
from project.data import (
    VENDORED,
    life_table,
    moment_columns,
    prepare_data,
    scf_moments,
    survival_probabilities,
    verified_path,
    verify_file,
)
from project.data import vendored as vendored_module
from project.errors import DataError, ProjectError

ROOT = Path(__file__).resolve().parents[1]
SCF_FILE = ROOT / "data" / "scf" / "WealthIncomeStats.csv"
LIFE_TABLE_FILE = ROOT / "data" / "life_tables" / "USactuarial.txt"
EXPECTED_SHA256 = {
    "scf/WealthIncomeStats.csv": "8015ca2e88d5c9e7b8a84acdcadab6f65d57621bfa9219e155fd4b50b82d75ef",
    "scf/SCFwealthDataReduced.txt": (
        "a3f8bbb43d787cc1516122684a942117b65113d4298986a1f7617427742a802d"
    ),
    "life_tables/USactuarial.txt": (
        "807aa92d0f2cb71a9240a31ae35a34b4033ef0f7382d6dd1940b1162e91a7309"
    ),
    "replication/SCFdata.csv": ("8a1935cb2e9c32259cb959754cb7d6946d37eecb5b85b02d107011bd8800df76"),
    "replication/profiles_hark2019.csv": (
        "7285ef70d2a996a4180ba32a1e271c34a2447ba813e09dfbcc5f7c51fe31c5c6"
    ),
    "replication/profiles_notes2026.csv": (
        "cc8ede53a4c8772b002ee9505533d4f996a2e91217bc6b9a08d33039df67a4fe"
    ),
}
"""Computed from the files inside the econ-ark 0.17.2 wheel (and matching its RECORD), the
econ-ark/HARK repository at 66d1ecd9 (``SCFdata.csv``) and ``make_profiles.py``'s output."""
LINE_OF_50_55 = 672
"""The file's line of the All/All (50,55] row (line 1 is the header)."""


# --- raw parsers, independent of project.data ----------------------------------------------


def _raw_scf_rows():
    with SCF_FILE.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _raw_life_table():
    table = {}
    for line in LIFE_TABLE_FILE.read_text().splitlines():
        fields = line.split("\t")
        table[int(fields[0])] = (float(fields[1]), float(fields[4]))
    return table


def _write_scf_copy(tmp_path, *, edit=None, drop=None, name="stats.csv"):
    """Write a copy of the SCF table to ``tmp_path``, edited by ``edit(rows)`` or less ``drop``."""
    rows = _raw_scf_rows()
    if edit is not None:
        edit(rows)
    fields = [f for f in rows[0] if f != drop]
    path = tmp_path / name
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _set_cell(*, age_group, column, value, education="All", year="All"):
    def edit(rows):
        for row in rows:
            if (row["Educ"], row["YEAR"], row["Age_grp"]) == (education, year, age_group):
                row[column] = value
                return
        raise AssertionError(age_group)

    return edit


def _write_life_table_copy(tmp_path, *, line_number, new_line):
    lines = LIFE_TABLE_FILE.read_text().splitlines()
    lines[line_number - 1] = new_line
    path = tmp_path / "life.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


# --- provenance --------------------------------------------------------------------------------


@pytest.mark.parametrize("relative", sorted(EXPECTED_SHA256))
def test_shipped_files_have_the_recorded_checksums(relative):
    path = ROOT / "data" / relative
    assert hashlib.sha256(path.read_bytes()).hexdigest() == EXPECTED_SHA256[relative]
    recorded = {rel: sha for rel, sha in VENDORED.values()}
    assert recorded[relative] == EXPECTED_SHA256[relative]


@pytest.mark.parametrize("name", sorted(VENDORED))
def test_verified_path_returns_the_shipped_file(name):
    assert verified_path(name) == ROOT / "data" / VENDORED[name][0]


def test_licence_of_econ_ark_is_shipped():
    text = (ROOT / "data" / "LICENSE-econ-ark.txt").read_text()
    assert "Apache License" in text
    assert "Version 2.0, January 2004" in text


def test_data_error_is_exported_and_a_value_error():
    assert project.DataError is DataError
    assert issubclass(DataError, ProjectError)
    assert issubclass(DataError, ValueError)


# --- SCF moments -------------------------------------------------------------------------------


def test_known_row_read_back():
    moments = scf_moments(path=SCF_FILE)
    row = moments.set_index("age_min").loc[50]
    assert row["age_max"] == 55
    assert row["n_obs"] == 24712
    assert row["mean_log_wealth_to_income"] == pytest.approx(0.7417, abs=1e-4)


def test_all_rows_match_the_raw_csv():
    raw = [r for r in _raw_scf_rows() if r["Educ"] == "All" and r["YEAR"] == "All"]
    raw = [r for r in raw if r["Age_grp"] != "All"]
    moments = scf_moments(path=SCF_FILE, education="All", year="All")
    assert list(moments.columns) == moment_columns()
    assert len(moments) == len(raw) == 16
    pairs = {"log_wealth_to_income": "lnNrmWealth", "log_permanent_income": "lnPermIncome"}
    pairs["log_wealth"] = "lnWealth"
    for row, expected in zip(moments.itertuples(index=False), raw, strict=True):
        low, high = expected["Age_grp"].strip("(]").split(",")
        assert (row.age_min, row.age_max) == (int(low), int(high))
        assert row.n_obs == int(expected["obs"])
        assert row.weighted_count == float(expected["w.obs"])
        for name, prefix in pairs.items():
            sd = float(expected[f"{prefix}.sd"])
            assert getattr(row, f"mean_{name}") == float(expected[f"{prefix}.mean"])
            assert getattr(row, f"sd_{name}") == sd
            assert getattr(row, f"variance_of_mean_{name}") == pytest.approx(
                sd**2 / (int(expected["obs"]) / 5), rel=1e-14
            )


def test_variance_of_mean_is_sd_squared_over_the_households(tmp_path):
    """400 records are 80 households (five implicates each)."""

    def edit(rows):
        for row in rows:
            if (row["Educ"], row["YEAR"], row["Age_grp"]) == ("All", "All", "(60,65]"):
                row.update({"obs": "400", "lnNrmWealth.sd": "2.0", "lnPermIncome.sd": "0.5"})

    moments = scf_moments(path=_write_scf_copy(tmp_path, edit=edit)).set_index("age_min")
    assert moments.loc[60, "n_households"] == 80
    assert moments.loc[60, "variance_of_mean_log_wealth_to_income"] == pytest.approx(0.05)
    assert moments.loc[60, "variance_of_mean_log_permanent_income"] == pytest.approx(0.003125)


def test_education_and_year_select_rows():
    moments = scf_moments(path=SCF_FILE, education="College", year=2019)
    raw = next(
        r
        for r in _raw_scf_rows()
        if (r["Educ"], r["YEAR"], r["Age_grp"]) == ("College", "2019", "(50,55]")
    )
    row = moments.set_index("age_min").loc[50]
    assert row["n_obs"] == int(raw["obs"])
    assert row["mean_log_wealth"] == float(raw["lnWealth.mean"])


def test_groups_without_observations_are_left_out():
    # College, 1995, (15,20] is all NA in the file.
    moments = scf_moments(path=SCF_FILE, education="College", year="1995")
    assert moments["age_min"].tolist() == list(range(20, 95, 5))


# --- life table --------------------------------------------------------------------------------


def test_life_table_is_tidy():
    table = life_table(path=LIFE_TABLE_FILE)
    assert list(table.columns) == [
        "age",
        "q_male",
        "l_male",
        "e_male",
        "q_female",
        "l_female",
        "e_female",
    ]
    assert table["age"].tolist() == list(range(120))
    assert table.loc[0, "l_male"] == 100_000
    assert table.loc[65, "e_female"] == 20.19


def test_survival_probabilities_against_raw_text():
    ages = np.arange(50, 101)
    survival = survival_probabilities(path=LIFE_TABLE_FILE, ages=ages)
    assert survival.shape == (51,)
    assert ((survival > 0) & (survival <= 1)).all()
    assert (np.diff(survival[ages >= 60]) < 0).all()
    raw = _raw_life_table()
    for age in (50, 65, 80, 100):
        q_male, q_female = raw[age]
        assert survival[age - 50] == pytest.approx(1 - (q_male + q_female) / 2, rel=1e-12)


@pytest.mark.parametrize(("share", "column"), [(0.0, 0), (1.0, 1)])
def test_female_share_picks_a_sex(share, column):
    survival = survival_probabilities(path=LIFE_TABLE_FILE, ages=[70], female_share=share)
    assert survival[0] == pytest.approx(1 - _raw_life_table()[70][column], rel=1e-12)


# --- pipeline products -------------------------------------------------------------------------


def test_prepare_data_is_deterministic(tmp_path):
    settings = {"education": "All", "year": "All", "female_share": 0.5, "survival_ages": [50, 100]}
    contents = []
    for run in ("a", "b"):
        products = {
            "moments": tmp_path / run / "scf_moments.arrow",
            "moments_markdown": tmp_path / run / "scf_moments.md",
            "survival": tmp_path / run / "survival.arrow",
        }
        prepare_data(settings=settings, products=products)
        contents.append({k: p.read_bytes() for k, p in products.items()})
    assert contents[0] == contents[1]
    survival = pd.read_feather(tmp_path / "a" / "survival.arrow")
    assert survival["age"].tolist() == list(range(50, 101))
    moments = pd.read_feather(tmp_path / "a" / "scf_moments.arrow")
    assert list(moments.columns) == moment_columns()
    assert "| 51-55 | 24712 |" in (tmp_path / "a" / "scf_moments.md").read_text()


def test_config_uses_the_high_school_rows_of_all_waves():
    """The model's income profile and replacement rate are high-school households'."""
    from project.models.lifecycle_normalised import SOURCES

    assert (DATA.education, DATA.year, DATA.female_share) == ("HS", "All", 0.5)
    assert "high school" in SOURCES["income_growth"] and "high school" in SOURCES["replacement"]


# --- bad inputs --------------------------------------------------------------------------------


def test_missing_file_is_refused(tmp_path):
    missing = tmp_path / "WealthIncomeStats.csv"
    with pytest.raises(DataError, match=r"WealthIncomeStats\.csv is missing.*git"):
        verify_file(path=missing, expected_sha256="0" * 64)
    with pytest.raises(DataError, match="is missing"):
        scf_moments(path=missing)
    with pytest.raises(DataError, match="is missing"):
        life_table(path=tmp_path / "USactuarial.txt")


def test_missing_vendored_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(vendored_module, "DATA_DIR", tmp_path)
    with pytest.raises(DataError, match=r"USactuarial\.txt is missing.*git checkout"):
        verified_path("us_life_table")


def test_altered_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "life_tables").mkdir()
    copy = tmp_path / "life_tables" / "USactuarial.txt"
    shutil.copyfile(LIFE_TABLE_FILE, copy)
    copy.write_bytes(copy.read_bytes().replace(b"0.006990", b"0.006991", 1))
    monkeypatch.setattr(vendored_module, "DATA_DIR", tmp_path)
    with pytest.raises(DataError, match=r"USactuarial\.txt was altered.*SHA-256.*restore"):
        verified_path("us_life_table")


def test_unknown_vendored_name_is_refused():
    with pytest.raises(DataError, match="known are"):
        verified_path("psid")


def test_missing_column_is_refused(tmp_path):
    path = _write_scf_copy(tmp_path, drop="lnNrmWealth.sd")
    with pytest.raises(DataError, match=r"stats\.csv lacks the columns \['lnNrmWealth\.sd'\]"):
        scf_moments(path=path)


def test_non_numeric_cell_is_refused(tmp_path):
    path = _write_scf_copy(tmp_path, edit=_set_cell(age_group="(50,55]", column="obs", value="x"))
    with pytest.raises(DataError, match=rf"column 'obs', line {LINE_OF_50_55}: 'x' is no number"):
        scf_moments(path=path)


def test_unknown_education_is_refused():
    with pytest.raises(DataError, match=r"education='PhD'.*\['All', 'College', 'HS', 'NoHS'\]"):
        scf_moments(path=SCF_FILE, education="PhD")


def test_unknown_year_is_refused():
    with pytest.raises(DataError, match=r"year='2020'.*known values are \['1995', '1998'"):
        scf_moments(path=SCF_FILE, year=2020)


@pytest.mark.parametrize("value", ["0", "-0.5"])
def test_non_positive_sd_is_refused(tmp_path, value):
    edit = _set_cell(age_group="(50,55]", column="lnWealth.sd", value=value)
    path = _write_scf_copy(tmp_path, edit=edit)
    with pytest.raises(DataError, match=rf"line {LINE_OF_50_55}.*'lnWealth\.sd' must be positive"):
        scf_moments(path=path)


@pytest.mark.parametrize("value", ["1", "2.5"])
def test_too_few_or_fractional_obs_are_refused(tmp_path, value):
    path = _write_scf_copy(tmp_path, edit=_set_cell(age_group="(50,55]", column="obs", value=value))
    with pytest.raises(DataError, match=r"Age_grp=\(50,55\)?.*'obs' must be an integer >= 2"):
        scf_moments(path=path)


@pytest.mark.parametrize("value", ["NA", "inf"])
def test_missing_or_infinite_value_in_a_selected_row_is_refused(tmp_path, value):
    edit = _set_cell(age_group="(50,55]", column="lnPermIncome.mean", value=value)
    path = _write_scf_copy(tmp_path, edit=edit)
    with pytest.raises(DataError, match=r"'lnPermIncome\.mean' is .*not a finite number"):
        scf_moments(path=path)


def test_malformed_age_group_is_refused(tmp_path):
    edit = _set_cell(age_group="(50,55]", column="Age_grp", value="50-55")
    path = _write_scf_copy(tmp_path, edit=edit)
    with pytest.raises(DataError, match=r"age group '50-55' is not of the form"):
        scf_moments(path=path)


def test_age_outside_the_life_table_is_refused():
    with pytest.raises(DataError, match=r"Ages \[120, 130\] are not in the life table.*0 to 119"):
        survival_probabilities(path=LIFE_TABLE_FILE, ages=[50, 120, 130])


def test_fractional_age_is_refused():
    with pytest.raises(DataError, match="ages must be integers"):
        survival_probabilities(path=LIFE_TABLE_FILE, ages=[50.5])


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan, "half"])
def test_female_share_outside_unit_interval_is_refused(share):
    with pytest.raises(DataError, match=r"female_share must be a number in \[0, 1\]"):
        survival_probabilities(path=LIFE_TABLE_FILE, ages=[60], female_share=share)


@pytest.mark.parametrize(
    ("new_line", "message"),
    [
        (
            "60\t 1.2\t 85,000\t 20.0\t 0.01\t 90,000\t 23.0",
            r"q_male is outside \[0, 1\] at ages \[60\]",
        ),
        ("60\t 0.01\t 99,999\t 20.0\t 0.01\t 90,000\t 23.0", r"l_male .* rises at ages \[60\]"),
        ("60\t 0.01\t 85,000\t 20.0", r"line 61: expected 7 fields"),
        ("60\t 0.01\t 85,000\t 20.0\t abc\t 90,000\t 23.0", r"line 61, column 'q_female': 'abc'"),
    ],
)
def test_malformed_life_table_is_refused(tmp_path, new_line, message):
    path = _write_life_table_copy(tmp_path, line_number=61, new_line=new_line)
    with pytest.raises(DataError, match=message):
        survival_probabilities(path=path, ages=[60])


def test_prepare_data_refuses_missing_settings(tmp_path):
    with pytest.raises(DataError, match=r"missing: \['female_share'"):
        prepare_data(
            settings={"education": "All", "year": "All", "survival_ages": [50, 100]},
            products={k: tmp_path / k for k in ("moments", "moments_markdown", "survival")},
        )


def test_the_recorded_waves_are_the_tables_years():
    from project.data.scf import WAVES

    with verified_path("scf_wealth_income_stats").open(newline="") as handle:
        years = {row["YEAR"] for row in csv.DictReader(handle)}
    assert years - {"All"} == {str(wave) for wave in WAVES}
    assert list(WAVES) == sorted(WAVES)
