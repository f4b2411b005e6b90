"""What a published set of ``photo``-style images owes to the pinned asset packages (issue 24 item 1).

Images drawn in the ``photo`` style contain pixels of third-party files (HDRI skies, people, vehicles, leaves,
photographed materials). Wherever such images leave the machine -- a frozen suite's manifest, a dataset card --
the packages they came from and every licence with its authors travel with them. :func:`asset_credits` builds
that block from the cache's per-package manifests (what was actually extracted and drawn from), never from the
pins alone, so a file that is in the cache is credited and nothing is credited that is not there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urbanarena.render.assets.fetch import group_rows, manifest_rows, read_manifest
from urbanarena.render.assets import registry
from urbanarena.render.assets.registry import AssetPackage


def asset_credits(root: str | Path | None = None, packages: tuple[AssetPackage, ...] | None = None, *,
                  with_files: bool = False) -> dict[str, Any] | None:
    """The credits block of the installed photographic assets, or ``None`` when none is installed.

    Args:
        root: the assets folder (default ``<urbanarena home>/assets``).
        packages: the pinned packages to report (default :data:`~.registry.PACKAGES`).
        with_files: also list every kept file (``file_rows``: file, package, version, licence, authors,
            sha256; :func:`~.fetch.licence_rows`) of those packages.

    Returns:
        ``{"packages": [{package, version, registry, sha256, files}], "licences": [{package, version, licence,
        authors, files}], "files": N}``: ``packages`` lists each installed pinned package with the sha256 of the
        package file it was extracted from and how many files were kept; ``licences`` groups the kept files by
        package, licence and authors (counts sum to ``files``); both sorted for a stable manifest.
    """
    pins, rows = [], []
    for pkg in packages if packages is not None else registry.PACKAGES:
        man = read_manifest(pkg, root)
        if man is not None:
            pins.append({"package": pkg.name, "version": pkg.version, "registry": pkg.registry,
                         "sha256": pkg.sha256, "files": len(man["files"])})
            rows += manifest_rows(pkg.key, man)
    if not pins:
        return None
    licences = sorted(group_rows(rows), key=lambda g: (g["package"], g["version"], g["licence"], g["authors"]))
    out = {"packages": sorted(pins, key=lambda p: p["package"]), "licences": licences, "files": len(rows)}
    return {**out, "file_rows": sorted(rows, key=lambda x: x["file"])} if with_files else out


def credit_lines(credits: dict[str, Any]) -> list[str]:
    """One Markdown bullet per (package, licence, authors) group of :func:`asset_credits`' block, for cards."""
    return [f"- `{g['package']}` {g['version']}: {g['licence']}, by {g['authors']} ({g['files']} file"
            f"{'s' if g['files'] != 1 else ''})" for g in credits["licences"]]


__all__ = ["asset_credits", "credit_lines"]
