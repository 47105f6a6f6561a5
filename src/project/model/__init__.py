"""Model specification: states, actions and plain functions composed by argument name."""

from project.model.params import validate_params
from project.model.spec import Model

__all__ = ["Model", "validate_params"]
