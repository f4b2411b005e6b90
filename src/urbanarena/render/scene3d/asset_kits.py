"""Loading a photo-style kit (models, trees, materials) from its pinned asset package once per process.

Each photo-style module (:mod:`.population_photo`, :mod:`.trees_photo`, :mod:`.photo_materials`) keeps its own
cache and lock and calls :func:`load_kit_once`; the rules are the same for all: never fetch; the kit is built once
per asset root; when the package is missing or damaged the caller gets ``None`` and one line goes to stderr, said
once per process by the first caller that is not ``quiet``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

FETCH_HINT = " (run: urbanarena assets fetch)"


def load_kit_once(loaded: dict, lock: threading.Lock, package: str, load: Callable[[Path], Any],
                  errors: tuple[type[BaseException], ...], missing: Callable[[str], str],
                  broken: Callable[[str], str], quiet: bool = False) -> Any | None:
    """The kit ``load(<asset root>/<package key>)`` of the installed, whole ``package`` (cached in ``loaded`` per
    asset root, under ``lock``), else ``None``.

    ``missing(status message)`` words the line when the package is not installed or not whole, ``broken(first
    line of the error)`` when ``load`` raises one of ``errors``; :data:`FETCH_HINT` is appended. The line is
    printed once per process, by the first call without ``quiet``. Other exceptions propagate."""
    from urbanarena import paths
    from urbanarena.render.assets import ensure_assets, package_by_name

    root = paths.assets_dir()
    with lock:
        if str(root) in loaded:
            got, message = loaded[str(root)]
            if got is None and message and not quiet:  # said once per process, by the first caller that may
                print(message, file=sys.stderr)
                loaded[str(root)] = (None, "")
            return got
        pkg = package_by_name(package)
        status = ensure_assets([pkg], root=root, fetch=False)
        got, message = None, ""
        if status.available:
            try:
                got = load(root / pkg.key)
            except errors as e:
                message = broken(str(e).splitlines()[0])
        else:
            message = missing(status.message)
        if message:
            message += FETCH_HINT
            if not quiet:
                print(message, file=sys.stderr)
                message = ""
        loaded[str(root)] = (got, message)
        return got


__all__ = ["FETCH_HINT", "load_kit_once"]
