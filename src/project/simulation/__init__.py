"""Forward simulation of solved models, chunked over subjects."""

from project.simulation.forward import simulate
from project.simulation.initial import draw_initial_conditions, validate_initial_conditions
from project.simulation.result import SimulationResult

__all__ = ["SimulationResult", "draw_initial_conditions", "simulate", "validate_initial_conditions"]
