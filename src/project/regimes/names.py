"""The name under which each regime's transition to the next regime enters its functions."""

REGIME_TRANSITION = "regime_transition"
