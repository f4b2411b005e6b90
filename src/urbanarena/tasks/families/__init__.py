"""Task families, discovered automatically: adding a family is adding one module
here that defines a :class:`~urbanarena.tasks.families.base.TaskFamily`
subclass with a ``name``.
"""

from __future__ import annotations

import importlib
import pkgutil

from urbanarena.tasks.families.base import TaskFamily, Trajectory

_REGISTRY: dict[str, TaskFamily] | None = None


def families() -> dict[str, TaskFamily]:
    """All registered families by name (instances)."""
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, TaskFamily] = {}
        for mod in pkgutil.iter_modules(__path__):
            if mod.name == "base":
                continue
            m = importlib.import_module(f"{__name__}.{mod.name}")
            for obj in vars(m).values():
                if isinstance(obj, type) and issubclass(obj, TaskFamily) and obj is not TaskFamily and getattr(obj, "name", None):
                    reg[obj.name] = obj()
        _REGISTRY = reg
    return _REGISTRY


def get_family(name: str) -> TaskFamily:
    """Family by name; raises ``KeyError`` with the known names."""
    reg = families()
    if name not in reg:
        raise KeyError(f"unknown task family {name!r}; known: {', '.join(sorted(reg))}")
    return reg[name]


__all__ = ["TaskFamily", "Trajectory", "families", "get_family"]
