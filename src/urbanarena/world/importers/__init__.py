"""City importers, discovered automatically.

Adding an importer is adding one module here that defines ``KIND`` (the
``KIND`` of ``--city KIND:PATH``), ``import_city(path: Path) -> City`` and
``source_files(path: Path) -> list[Path]`` (the files whose content identifies
the import, hashed for the import cache). An importer may keep its parts in modules of its own here
(``osm_tags``, ``frames_exif``, ``cityseeker_read`` ...): modules without ``import_city`` are not importers.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

_REGISTRY: dict[str, ModuleType] | None = None


def importers() -> dict[str, ModuleType]:
    """Importer modules by ``KIND``."""
    global _REGISTRY
    if _REGISTRY is None:
        reg = {}
        for mod in pkgutil.iter_modules(__path__):
            m = importlib.import_module(f"{__name__}.{mod.name}")
            kind = getattr(m, "KIND", None)
            if kind and callable(getattr(m, "import_city", None)):
                reg[kind] = m
        _REGISTRY = reg
    return _REGISTRY


def get_importer(kind: str) -> ModuleType:
    reg = importers()
    if kind not in reg:
        raise KeyError(f"unknown city importer {kind!r}; known: {', '.join(sorted(reg))}")
    return reg[kind]
