"""Where urbanarena keeps built and imported cities.

The cache root is ``$URBANARENA_HOME`` when set, else the platform user cache
directory (``platformdirs.user_cache_dir("urbanarena")``, e.g.
``~/.cache/urbanarena`` on Linux).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def home() -> Path:
    """Root of urbanarena's cache (created on demand)."""
    env = os.environ.get("URBANARENA_HOME")
    root = Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("urbanarena"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def cities_dir() -> Path:
    """Directory of saved cities by name: ``<home>/cities/<name>/``."""
    d = home() / "cities"
    d.mkdir(parents=True, exist_ok=True)
    return d


def imports_dir() -> Path:
    """Directory of imported cities keyed by source hash: ``<home>/imports/<kind>-<hash>/``."""
    d = home() / "imports"
    d.mkdir(parents=True, exist_ok=True)
    return d


def assets_dir() -> Path:
    """Directory of the photographic asset packages and their licence manifest: ``<home>/assets/``
    (:mod:`urbanarena.render.assets`)."""
    d = home() / "assets"
    d.mkdir(parents=True, exist_ok=True)
    return d
