"""Models of several regimes (working life, retirement, death) linked by regime transitions."""

from project.regimes.spec import RegimeModel, RegimeView, TerminalRegime

__all__ = ["RegimeModel", "RegimeView", "TerminalRegime"]
