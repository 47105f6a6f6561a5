"""Deprecations: a public name that changes keeps working for one release, with a warning.

Every warning is a ``ProjectDeprecationWarning`` (a ``DeprecationWarning``), so a user can turn
them into errors with ``warnings.simplefilter("error", project.ProjectDeprecationWarning)``.
Its message names the old spelling, the new one, the release that removes the old one and what
to do. See CHANGELOG.md for the versioning policy and the list of deprecations.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

REMOVED_IN = "0.3.0"
"""The release that removes the shims added for the changes made during 0.1.0 development."""


class ProjectDeprecationWarning(DeprecationWarning):
    """A public name of ``project`` changed; the old one works until the release named."""


def deprecation_message(*, old: str, new: str, removed_in: str = REMOVED_IN, advice: str) -> str:
    """Return the message: old name, new name, the release that removes it, what to do."""
    return (
        f"{old} is deprecated and will be removed in project {removed_in}; use {new} instead. "
        f"{advice}"
    ).strip()


def warn_deprecated(
    *, old: str, new: str, removed_in: str = REMOVED_IN, advice: str = "", stacklevel: int = 3
) -> None:
    """Emit a ``ProjectDeprecationWarning`` pointing at the caller's caller by default."""
    warnings.warn(
        deprecation_message(old=old, new=new, removed_in=removed_in, advice=advice),
        ProjectDeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed_function(
    function: Callable[..., Any], *, old: str, new: str, removed_in: str = REMOVED_IN
) -> Callable[..., Any]:
    """Return ``function`` under its old name: it warns, then calls ``function``."""

    @functools.wraps(function)
    def old_name(*args: Any, **kwargs: Any) -> Any:
        warn_deprecated(
            old=old, new=new, removed_in=removed_in, advice=f"Rename the call to {new}."
        )
        return function(*args, **kwargs)

    return old_name


def renamed_keywords(
    renames: dict[str, str], *, where: str, removed_in: str = REMOVED_IN
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Return a decorator that accepts each old keyword (key) as its new one (value), warning."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def accepting_old(*args: Any, **kwargs: Any) -> Any:
            for old, new in renames.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    msg = f"{where} got both {old}= (deprecated) and {new}=; pass only {new}=."
                    raise TypeError(msg)
                warn_deprecated(
                    old=f"{where}({old}=...)",
                    new=f"{where}({new}=...)",
                    removed_in=removed_in,
                    advice=f"Rename the keyword {old}= to {new}=.",
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return accepting_old

    return decorate


class renamed_attribute:  # noqa: N801 (used like property)
    """A class attribute under its old name: reading it warns and returns the new attribute."""

    def __init__(self, *, new: str, removed_in: str = REMOVED_IN) -> None:
        self.new = new
        self.removed_in = removed_in
        self.old = new

    def __set_name__(self, owner: type, name: str) -> None:
        """Remember the old name and the class it lives on (for the message)."""
        self.old = f"{owner.__name__}.{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """Return the new attribute of ``instance``, warning."""
        if instance is None:
            return self
        warn_deprecated(
            old=self.old,
            new=f"{type(instance).__name__}.{self.new}",
            removed_in=self.removed_in,
            advice=f"Read .{self.new} instead.",
        )
        return getattr(instance, self.new)


class method_with_old_items:  # noqa: N801 (used like a method decorator)
    """A method that replaced a sequence attribute of the same name.

    Calling it is the new API. Indexing it, iterating over it or taking its ``len`` is the old
    one, which cannot be mistaken for a call: those read the sequence attribute ``new``, warning.
    """

    def __init__(
        self, method: Callable[..., Any], *, new: str, advice: str, removed_in: str = REMOVED_IN
    ) -> None:
        self.method = method
        self.new = new
        self.advice = advice
        self.removed_in = removed_in
        self.old = method.__name__
        functools.update_wrapper(self, method)

    @classmethod
    def replacing(
        cls, *, new: str, advice: str, removed_in: str = REMOVED_IN
    ) -> Callable[[Callable[..., Any]], method_with_old_items]:
        """Return the decorator: ``@method_with_old_items.replacing(new=..., advice=...)``."""
        return lambda method: cls(method, new=new, advice=advice, removed_in=removed_in)

    def __set_name__(self, owner: type, name: str) -> None:
        """Remember the class it lives on (for the message)."""
        self.old = f"{owner.__name__}.{name}"

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """Return the plain function on the class, a bound callable sequence on an instance."""
        if instance is None:
            return self.method
        return _BoundWithOldItems(self, instance)


class _BoundWithOldItems:
    """The bound method of ``method_with_old_items``: callable, and the old sequence, warning."""

    def __init__(self, descriptor: method_with_old_items, instance: Any) -> None:
        self._descriptor = descriptor
        self._instance = instance
        functools.update_wrapper(self, descriptor.method)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the method (the new API)."""
        return self._descriptor.method(self._instance, *args, **kwargs)

    def _old_sequence(self) -> Any:
        d = self._descriptor
        warn_deprecated(
            old=f"{d.old}[...] (indexing or iterating)",
            new=f"{d.old.rsplit('.', 1)[0]}.{d.new}",
            removed_in=d.removed_in,
            advice=d.advice,
            stacklevel=4,
        )
        return getattr(self._instance, d.new)

    def __getitem__(self, index: Any) -> Any:
        """Return the old sequence's item (the old API), warning."""
        return self._old_sequence()[index]

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the old sequence (the old API), warning."""
        return iter(self._old_sequence())

    def __len__(self) -> int:
        """Return the old sequence's length (the old API), warning."""
        return len(self._old_sequence())

    def __repr__(self) -> str:
        return f"<bound method {self._descriptor.old} of {type(self._instance).__name__}>"
