# ruff: noqa: RUF001, RUF002 (the paper's Greek letters)
r"""The paper's notation for the tables: parameter symbols, variant, method and type names.

Tables print no code identifiers: a parameter is its description and symbol (``crra``:
"Relative risk aversion γ", as ``$\gamma$`` in LaTeX and ``$gamma$`` in Typst), a variant its
display name (``benefit_cut``: "Benefit cut"), a method its name (``dcegm``: "DC-EGM").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from project import style
from project.analysis.table_cells import MINUS, Symbol, latex_escape, typst_escape


@dataclass(frozen=True)
class Notation:
    """A parameter's description and its symbol in Unicode, LaTeX math and Typst math."""

    description: str
    text: str = ""
    latex: str = ""
    typst: str = ""


PARAMETERS: dict[str, Notation] = {
    "crra": Notation("Relative risk aversion", "γ", r"\gamma", "gamma"),
    "beta": Notation("Discount factor", "β", r"\beta", "beta"),
    "work_cost": Notation("Cost of working (share of consumption)", "κ", r"\kappa", "kappa"),
    "interest_factor": Notation("Interest factor", "R", "R", "R"),
    "replacement": Notation("Replacement rate", "π", r"\pi", "pi"),
    "benefit_scale": Notation("Share of scheduled benefits paid", "φ", r"\phi", "phi"),
    "claiming_factor": Notation("Claiming factor", "f_a", "f_a", "f_a"),
    "income_growth": Notation("Permanent income growth", "G_t", "G_t", "G_t"),
    "permanent_nodes": Notation("Permanent shock", "ψ", r"\psi", "psi"),
    "transitory_nodes": Notation("Transitory shock", "θ", r"\theta", "theta"),
    "unemployment_risk": Notation("Unemployment probability (working)", "p_t", "p_t", "p_t"),
    "bequest_weight": Notation("Bequest weight", "ω", r"\omega", "omega"),
    "bequest_shift": Notation("Bequest shift", "ζ", r"\zeta", "zeta"),
    "taste_shock_scale": Notation(
        "Taste-shock scale", "σ_ε", r"\sigma_\varepsilon", "sigma_epsilon"
    ),
    "survival_probabilities": Notation("One-year survival", "s_t", "s_t", "s_t"),
    "disutility_of_work": Notation("Disutility of work", "δ_τ", r"\delta_\tau", "delta_tau"),
    "r": Notation("Interest rate", "r", "r", "r"),
    "wage": Notation("Wage level", "ω", r"\omega", "omega"),
    "pension": Notation("Pension", "p", "p", "p"),
    "income_rho": Notation("Income persistence", "ρ", r"\rho", "rho"),
    "income_sigma": Notation("Income shock s.d.", "σ_z", r"\sigma_z", "sigma_z"),
    "mandatory_retirement_age": Notation("Mandatory retirement age"),
    "mortality_intercept": Notation("Mortality intercept"),
    "mortality_slope": Notation("Mortality slope"),
}
"""The model's parameters in the paper's notation, in the order the parameter table shows."""


_AGES = re.compile(r"_(\d+)_(\d+)$")


def age_label(moment: str) -> str:
    """Return "51-55" for the moment ``log_wealth_income_51_55``."""
    match = _AGES.search(moment)
    return f"{match.group(1)}-{match.group(2)}" if match else moment


VARIANT_NAMES = {"baseline": "the baseline", "benefit_cut": "the benefit cut"}
"""The variants as a sentence names them (other variants go by their own name)."""


def variant_name(name: str) -> str:
    """Return a variant's printed name ("benefit_cut" -> "Benefit cut"), as the figures do."""
    return style.variant_label(name)


def type_name(label: object) -> str:
    """Return a preference type's printed name ("work_loving" -> "Work-loving", 1 -> "Type 1")."""
    if isinstance(label, Integral):
        return f"Type {label}"
    return style.type_label(str(label))


def parameter_label(name: str) -> Symbol:
    """Return a parameter's description followed by its symbol, in every format's markup."""
    notation = PARAMETERS.get(name) or Notation(_capitalised(name))
    return described(notation.description, notation=notation)


def printed_decimals(name: str) -> int:
    """Return how many decimals an estimate of param ``name`` prints with (beta: 4, else 3)."""
    return 4 if name == "beta" else 3


def error_decimals(name: str) -> int:
    """Return how many decimals a standard error of param ``name`` prints with (beta: 5).

    One more than the estimate's for beta, whose standard errors are a few 1e-4: at 4 decimals
    0.00046 and 0.00052 would print alike.
    """
    return printed_decimals(name) + (1 if name == "beta" else 0)


def described(text: str, *, notation: Notation) -> Symbol:
    """Return ``text`` followed by ``notation``'s symbol (if it has one), per format."""
    if not notation.text:
        return Symbol(text=text, latex=latex_escape(text), typst=typst_escape(text))
    return Symbol(
        text=f"{text} {notation.text}",
        latex=f"{latex_escape(text)} ${notation.latex}$",
        typst=f"{typst_escape(text)} ${notation.typst}$",
    )


def plain_parameter(name: str) -> str:
    """Return a parameter in running text: its one-letter symbol ("β") or its description."""
    notation = PARAMETERS.get(name) or Notation(_capitalised(name))
    if len(notation.text) == 1:
        return notation.text
    return notation.description[:1].lower() + notation.description[1:]


def with_plain_parameters(text: str) -> str:
    """Return ``text`` with the parameters' code names ("beta") replaced by ``plain_parameter``."""
    names = sorted(PARAMETERS, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")
    return pattern.sub(lambda match: plain_parameter(match.group(1)), text)


def _capitalised(name: str) -> str:
    text = str(name).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


SMALLEST_SE = "< 0.01 %"
"""How a standard error below 0.01 percentage points prints (not as "0.00 %")."""


def number(value: float, *, decimals: int) -> str:
    """Return ``value`` with ``decimals`` decimals and a true minus sign (U+2212); no "−0"."""
    text = f"{float(value):.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return text.replace("-", MINUS)


AT_BOUND = "at a bound"
"""Printed instead of the standard error of an estimate at a bound of its search interval."""
P_FLOOR = 0.001
"""p-values below this print as "< 0.001"."""


def p_value(value: float) -> str:
    """Return a p-value as printed: three decimals, or "< 0.001"."""
    return f"< {P_FLOOR:g}" if value < P_FLOOR else number(value, decimals=3)


def p_relation(printed: str) -> str:
    """Return "p" + this as running text needs it: "= 0.154", or "< 0.001" as it is."""
    return printed if printed.startswith("<") else f"= {printed}"


def percent(value: float, *, decimals: int = 1) -> str:
    """Return the share ``value`` as a percentage ("12.5 %")."""
    return f"{number(100 * float(value), decimals=decimals)} %"


def joined(items: Sequence[str]) -> str:
    """Return "a, b and c"."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def symbol(name: str) -> str:
    """Return a param's symbol in running text ("γ" for ``crra``); its name when it has none."""
    notation = PARAMETERS.get(name)
    return notation.text if notation is not None and notation.text else name


def log10(value: float) -> str:
    """Return a log10 error as printed: two decimals, true minus sign."""
    return number(value, decimals=2)


def significant(value: float, *, digits: int = 3) -> str:
    """Return a positive ``value`` with ``digits`` significant digits, without exponent."""
    if value <= 0 or not math.isfinite(value):
        return number(value, decimals=digits - 1)
    decimals = max(0, digits - 1 - math.floor(math.log10(value)))
    return number(value, decimals=decimals)


def scientific(value: float, *, digits: int = 1) -> Symbol:
    """Return ``value`` as "a.b x 10^e" in each format's markup (true minus signs)."""
    if value == 0 or not np.isfinite(value):
        text = f"{value:g}"
        return Symbol(text=text, latex=text, typst=text)
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    power = int(exponent)
    return Symbol(
        text=f"{mantissa.replace('-', MINUS)} \u00d7 10{_superscript(power)}",
        latex=rf"${mantissa} \times 10^{{{power}}}$",
        typst=f"${mantissa} times 10^({power})$",
    )


SUPERSCRIPTS = str.maketrans(
    "0123456789", "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def _superscript(power: int) -> str:
    """Return ``power`` in Unicode superscripts ("\u207b\u00b2" for -2)."""
    return ("\u207b" if power < 0 else "") + str(abs(power)).translate(SUPERSCRIPTS)
