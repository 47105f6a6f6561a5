"""The names a model's statement reserves or gives a meaning: arguments, parameters, inverses."""

RESERVED_ARGUMENTS = ("age", "period")
DISCOUNT_FACTOR = "beta"
INVERSE_MARGINAL_UTILITY = "inverse_marginal_utility"
INVERSE_UTILITY = "inverse_utility"
CLOSED_FORM_INVERSES = {
    INVERSE_MARGINAL_UTILITY: "marginal_utility",
    INVERSE_UTILITY: "utility_level",
}
"""The closed-form inverses a model may give EGM, each with the name of its argument."""


def transition_target(state: str) -> str:
    """Return the dags name of a stochastic state's probability function."""
    return f"transition_probs_of_{state}"
