"""A tiny name-to-function registry, in the style of verl's `core_algos` registries.

Advantage normalizers and loss aggregators are looked up by the name given in [`LitePPOConfig`], so a user can add a
new one with a decorator and select it from the config (or the CLI) without editing the trainer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable)


class Registry(Generic[F]):
    """Maps names to functions. Duplicate names are refused; unknown names raise an error listing the choices.

    Args:
        kind (`str`):
            What the registry holds, used in error messages (e.g. `"advantage_mean"`).
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, F] = {}

    def register(self, name: str, *, override: bool = False) -> Callable[[F], F]:
        """Decorator registering a function under `name`. Pass `override=True` to replace an existing entry."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}.")

        def decorator(fn: F) -> F:
            if name in self._entries and not override:
                raise ValueError(
                    f"{self.kind} {name!r} is already registered; pass override=True to replace it."
                )
            self._entries[name] = fn
            return fn

        return decorator

    def get(self, name: str) -> F:
        try:
            return self._entries[name]
        except KeyError:
            raise ValueError(f"Unknown {self.kind} {name!r}; registered: {self.names()}.") from None

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __getitem__(self, name: str) -> F:
        return self.get(name)
