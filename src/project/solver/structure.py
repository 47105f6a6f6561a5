"""Prove from its jaxpr that a law of motion has the savings form ``a·(w - c) + b``.

The structure kernels need ``next_w`` to depend on the continuous state ``w`` and the continuous
action ``c`` only through ``w - c``, and affinely: ``a`` and ``b`` may depend on anything else
(discrete states and actions, params, age, realised outcomes). This module traces the composed
law of motion once and walks its jaxpr, tracking each value as either *free* of (w, c) or as an
affine form ``p_w·w + p_c·c + free``, where the coefficients ``p_w`` and ``p_c`` are polynomials
in the jaxpr's free values (a free value is a symbol; literals are exact rationals). Anything
else that touches w or c (a product of two dependent values, a ``log``, a ``where`` whose
branches differ in slope, a cast to an integer, ...) ends the proof with a reason. The proof is
exact and conservative: free values are identified by the expression that computes them (so
``(1 + r) * w - (1 + r) * c`` is recognised), but a slope computed in two different ways that
happen to be equal, e.g. ``(1 + r) * w - (r + 1) * c``, is not, and the solve falls back to the
general kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core

# A monomial is a sorted tuple of (symbol, power); a polynomial maps monomials to coefficients.
Monomial = tuple[tuple[str, int], ...]
Poly = dict[Monomial, Fraction]

_PASS_THROUGH = frozenset(
    {"broadcast_in_dim", "reshape", "squeeze", "expand_dims", "copy", "copy_p", "reduce_precision"}
)
_CALLS = frozenset(
    {"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat"}
)


@dataclass(frozen=True)
class Affine:
    """A value ``w_coefficient·w + c_coefficient·c + (something free of w and c)``."""

    w_coefficient: Poly
    c_coefficient: Poly


@dataclass(frozen=True)
class SavingsProof:
    """The outcome of the analysis: the savings form with its slope, or why it does not hold."""

    holds: bool
    unit_slope: bool
    reason: str


class _NotAffineError(Exception):
    """Raised inside the walk when a value stops being affine in (w, c)."""


def prove_savings_form(
    function: Callable[..., Any],
    *,
    arguments: Mapping[str, jax.ShapeDtypeStruct],
    state: str,
    action: str,
) -> SavingsProof:
    """Return whether ``function(**arguments)`` equals ``a·(state - action) + b`` exactly.

    ``unit_slope`` is true when ``a`` is the literal 1 for every parameter value (``w - c + b``).
    """
    names = list(arguments)
    for name in (state, action):
        if name not in names:
            return SavingsProof(holds=False, unit_slope=False, reason=f"it does not use {name!r}")
    closed = jax.make_jaxpr(lambda *values: function(**dict(zip(names, values, strict=True))))(
        *arguments.values()
    )
    forms: dict[Any, Affine | None] = dict.fromkeys(closed.jaxpr.invars)
    forms[closed.jaxpr.invars[names.index(state)]] = Affine({(): Fraction(1)}, {})
    forms[closed.jaxpr.invars[names.index(action)]] = Affine({}, {(): Fraction(1)})
    symbols: dict[Any, str] = {
        v: f"argument:{n}" for v, n in zip(closed.jaxpr.invars, names, strict=True)
    }
    try:
        (result,) = _walk(closed.jaxpr, forms, symbols)
    except _NotAffineError as error:
        return SavingsProof(holds=False, unit_slope=False, reason=str(error))
    if result is None or not result.w_coefficient:
        return SavingsProof(
            holds=False, unit_slope=False, reason=f"it does not depend on {state!r}"
        )
    if _add(result.w_coefficient, result.c_coefficient, sign=1):
        return SavingsProof(
            holds=False,
            unit_slope=False,
            reason=f"{state!r} and {action!r} do not enter only through {state} - {action}",
        )
    unit = result.w_coefficient == {(): Fraction(1)}
    return SavingsProof(holds=True, unit_slope=unit, reason="")


def _walk(jaxpr: core.Jaxpr, forms: dict[Any, Affine | None], symbols: dict[Any, str]) -> list:
    for eqn in jaxpr.eqns:
        inputs = [_form(v, forms) for v in eqn.invars]
        if all(f is None for f in inputs):
            for out in eqn.outvars:
                forms[out] = None
            _name_free_outputs(eqn, symbols)
            continue
        outputs = _transfer(eqn, inputs, symbols)
        for out, form in zip(eqn.outvars, outputs, strict=True):
            forms[out] = form
    return [_form(v, forms) for v in jaxpr.outvars]


def _transfer(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> list:
    """Return the output forms of one equation with at least one input depending on (w, c)."""
    name = eqn.primitive.name
    if name in _PASS_THROUGH or _is_float_cast(eqn):
        return [inputs[0]]
    if name in _CALLS:
        inner = _inner_jaxpr(eqn)
        return _walk(inner, dict(zip(inner.invars, inputs, strict=True)), symbols)
    rule = _RULES.get(name)
    if rule is None:
        msg = (
            "it casts a value that depends on (w, c) to a non-float type"
            if name == "convert_element_type"
            else f"it applies {name!r} to a value that depends on (w, c)"
        )
        raise _NotAffineError(msg)
    return [rule(eqn, inputs, symbols)]


def _negate(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> Affine:
    del eqn, symbols
    return _scale(inputs[0], Fraction(-1))


def _sum(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> Affine:
    del symbols
    left, right = inputs
    sign = -1 if eqn.primitive.name == "sub" else 1
    if left is None:
        return _scale(right, Fraction(sign))
    if right is None:
        return left
    return Affine(
        _add(left.w_coefficient, right.w_coefficient, sign=sign),
        _add(left.c_coefficient, right.c_coefficient, sign=sign),
    )


def _product(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> Affine:
    left, right = inputs
    if left is not None and right is not None:
        msg = "it multiplies two values that both depend on (w, c)"
        raise _NotAffineError(msg)
    dependent, factor = (left, eqn.invars[1]) if right is None else (right, eqn.invars[0])
    return _times(dependent, factor, symbols, power=1)


def _quotient(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> Affine:
    numerator, denominator = inputs
    if denominator is not None:
        msg = "it divides by a value that depends on (w, c)"
        raise _NotAffineError(msg)
    return _times(numerator, eqn.invars[1], symbols, power=-1)


def _select(eqn: Any, inputs: list[Affine | None], symbols: dict[Any, str]) -> Affine:
    del eqn, symbols
    if inputs[0] is not None:
        msg = "it chooses between branches by a condition on (w, c)"
        raise _NotAffineError(msg)
    branches = inputs[1:]
    if any(b is None for b in branches) or any(b != branches[0] for b in branches):
        msg = "its branches (jnp.where) differ in how they depend on (w, c)"
        raise _NotAffineError(msg)
    return branches[0]


_RULES = {
    "neg": _negate,
    "add": _sum,
    "add_any": _sum,
    "sub": _sum,
    "mul": _product,
    "div": _quotient,
    "select_n": _select,
}


def _form(variable: Any, forms: dict[Any, Affine | None]) -> Affine | None:
    if isinstance(variable, core.Literal):
        return None
    return forms[variable]


def _is_float_cast(eqn: Any) -> bool:
    if eqn.primitive.name != "convert_element_type":
        return False
    return bool(jnp.issubdtype(eqn.params["new_dtype"], jnp.floating))


def _inner_jaxpr(eqn: Any) -> core.Jaxpr:
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        if inner is not None:
            return inner.jaxpr if isinstance(inner, core.ClosedJaxpr) else inner
    msg = f"it calls {eqn.primitive.name!r}, whose body cannot be read"
    raise _NotAffineError(msg)


def _name_free_outputs(eqn: Any, symbols: dict[Any, str]) -> None:
    """Name a free equation's outputs by what computes them, so equal expressions share a name.

    ``(1 + r)`` written twice is two equations with the same name, hence one symbol; a reshape
    or a float cast keeps its input's name (the same value).
    """
    inputs = [_symbol(v, symbols) for v in eqn.invars]
    if eqn.primitive.name in _PASS_THROUGH or _is_float_cast(eqn):
        symbols[eqn.outvars[0]] = inputs[0]
        return
    params = sorted((k, repr(v)) for k, v in eqn.params.items())
    for index, out in enumerate(eqn.outvars):
        symbols[out] = f"{eqn.primitive.name}{params}({', '.join(inputs)})[{index}]"


def _symbol(variable: Any, symbols: dict[Any, str]) -> str:
    if isinstance(variable, core.Literal):
        return f"literal:{np.asarray(variable.val).tolist()!r}"
    return symbols.get(variable, f"unnamed:{id(variable)}")


def _times(form: Affine, factor: Any, symbols: dict[Any, str], *, power: int) -> Affine:
    if isinstance(factor, core.Literal):
        value = Fraction(float(np.asarray(factor.val)))
        if value == 0:
            return Affine({}, {})
        return _scale(form, value if power == 1 else 1 / value)
    symbol = _symbol(factor, symbols)
    return Affine(
        _monomial_times(form.w_coefficient, symbol, power),
        _monomial_times(form.c_coefficient, symbol, power),
    )


def _scale(form: Affine, factor: Fraction) -> Affine:
    return Affine(
        {m: c * factor for m, c in form.w_coefficient.items()},
        {m: c * factor for m, c in form.c_coefficient.items()},
    )


def _add(left: Poly, right: Poly, *, sign: int) -> Poly:
    total = dict(left)
    for monomial, coefficient in right.items():
        total[monomial] = total.get(monomial, Fraction(0)) + sign * coefficient
    return {m: c for m, c in total.items() if c != 0}


def _monomial_times(poly: Poly, symbol: str, power: int) -> Poly:
    result: Poly = {}
    for monomial, coefficient in poly.items():
        powers = dict(monomial)
        powers[symbol] = powers.get(symbol, 0) + power
        key = tuple(sorted((s, p) for s, p in powers.items() if p != 0))
        result[key] = result.get(key, Fraction(0)) + coefficient
    return {m: c for m, c in result.items() if c != 0}
