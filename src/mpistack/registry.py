"""Extension points: one registry per kind of plug-in (approaches, launchers, container engines, recipe
building blocks, input formats). A plug-in is one module that registers itself with a decorator and its
capabilities as data:

    @APPROACHES.register("hybrid", needs_image=True, host_launcher=True)
    class Hybrid(Approach): ...

Each registry knows the package whose modules register into it and imports that package on first use,
so that early stages (the spec) can check names against a registry without importing later stages.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    plugin: T
    capabilities: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:
        try:
            return self.capabilities[key]
        except KeyError:
            raise AttributeError(f"{self.name}: no capability {key!r}") from None


class Registry(Generic[T]):
    def __init__(self, kind: str, package: str):
        self.kind = kind  # "approach", "launcher", ...: used in error messages
        self.package = package  # imported on first lookup: its modules register themselves
        self._entries: dict[str, Entry[T]] = {}
        self._loaded = False

    def register(self, name: str, **capabilities: Any) -> Callable[[T], T]:
        def decorate(plugin: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._entries[name] = Entry(name, plugin, capabilities)
            return plugin
        return decorate

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            importlib.import_module(self.package)

    def names(self) -> list[str]:
        self._load()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        self._load()
        return iter(list(self._entries.values()))

    def get(self, name: str) -> Entry[T]:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}: expected one of {', '.join(self._entries)}") from None

    def check(self, name: str) -> str:
        """`name` if registered, else a ValueError that lists the known names (for spec validators)."""
        if name not in self:
            raise ValueError(f"unknown {self.kind}: expected one of {', '.join(self._entries)}")
        return name


APPROACHES: Registry = Registry("approach", "mpistack.approaches")
LAUNCHERS: Registry = Registry("launcher", "mpistack.launchers")
ENGINES: Registry = Registry("container engine", "mpistack.engines")
BLOCKS: Registry = Registry("building block", "mpistack.recipes.blocks")
FORMATS: Registry = Registry("input format", "mpistack.parsers")
DOCTOR_RULES: Registry = Registry("doctor rule", "mpistack.doctor.rules")
