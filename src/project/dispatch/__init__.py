"""The public ``solve``, on top of the methods: it chooses one and hands the model to it."""

from project.dispatch.solve import METHODS, choose_method, solve

__all__ = ["METHODS", "choose_method", "solve"]
