"""The savings-form proof: exact, conservative, and it says why a law is rejected."""

import jax
import jax.numpy as jnp
import pytest

from project.solver.structure import prove_savings_form

F = jax.ShapeDtypeStruct((), jnp.float32)
CODE = jax.ShapeDtypeStruct((), jnp.int32)
ARGUMENTS = {"wealth": F, "consumption": F, "r": F, "y": F, "kind": CODE}


def proof(law):
    return prove_savings_form(law, arguments=ARGUMENTS, state="wealth", action="consumption")


def law(body):
    """Return a law of motion over all ARGUMENTS (unused ones are ignored)."""

    def function(wealth, consumption, r, y, kind):
        del kind
        return body(wealth, consumption, r, y)

    return function


@pytest.mark.parametrize(
    ("body", "unit"),
    [
        (lambda w, c, r, y: w - c + y, True),
        (lambda w, c, r, y: y + (w - c), True),
        (lambda w, c, r, y: -(c - w) + y, True),
        (lambda w, c, r, y: (1 + r) * (w - c) + y, False),
        (lambda w, c, r, y: (1 + r) * w - (1 + r) * c, False),
        (lambda w, c, r, y: (w - c) / (1 + r) + jnp.exp(y), False),
        (lambda w, c, r, y: 2.0 * (w - c) * 0.5 + y, True),
        (lambda w, c, r, y: jnp.where(y > 0, w - c + y, w - c), True),
        (lambda w, c, r, y: (w - c).astype(jnp.float32) + jnp.sqrt(y), True),
        (lambda w, c, r, y: jax.jit(lambda a, b: a - b)(w, c) * (1 + r), False),
    ],
)
def test_savings_forms_are_proved_with_their_slope(body, unit):
    result = proof(law(body))
    assert result.holds, result.reason
    assert result.unit_slope == unit


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (lambda w, c, r, y: w - c**1.01 + y, "applies 'pow'"),
        (lambda w, c, r, y: (1 + r) * w - c, "do not enter only through wealth - consumption"),
        (lambda w, c, r, y: (1 + r) * w - (r + 1) * c, "do not enter only through"),
        (lambda w, c, r, y: (w - c) * (w - c), "multiplies two values that both depend"),
        (lambda w, c, r, y: y / (w - c), "divides by a value that depends"),
        (lambda w, c, r, y: jnp.where(w > c, w - c, 0.0), "applies 'gt'"),
        (lambda w, c, r, y: jnp.where(y > 0, 2 * (w - c), w - c), "branches (jnp.where) differ"),
        (lambda w, c, r, y: jnp.floor(w - c), "applies 'floor'"),
        (lambda w, c, r, y: (w - c).astype(jnp.int32) * 1.0, "non-float type"),
        (lambda w, c, r, y: y + 0.0 * r, "does not depend on 'wealth'"),
    ],
)
def test_other_laws_are_rejected_with_the_reason(body, reason):
    result = proof(law(body))
    assert not result.holds
    assert reason in result.reason


def test_a_law_without_wealth_among_its_arguments_is_rejected():
    result = prove_savings_form(
        lambda consumption, y: y - consumption,
        arguments={"consumption": F, "y": F},
        state="wealth",
        action="consumption",
    )
    assert not result.holds
    assert "does not use 'wealth'" in result.reason
