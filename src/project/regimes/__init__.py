"""Models of several regimes (working life, retirement, death) linked by regime transitions.

``project.solve`` solves a ``RegimeModel`` (``project.dispatch`` imports ``regimes.solve``), and
the regime modules use the solver's building blocks: the solver package is imported first.
"""

import project.solver  # noqa: F401  (import order: see above)
from project.regimes.spec import RegimeModel, RegimeView, TerminalRegime

__all__ = ["RegimeModel", "RegimeView", "TerminalRegime"]
