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

from urbanarena.render.assets.fetch import licence_rows, read_manifest
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
    pins = []
    for pkg in packages if packages is not None else registry.PACKAGES:
        man = read_manifest(pkg, root)
        if man is not None:
            pins.append({"package": pkg.name, "version": pkg.version, "registry": pkg.registry,
                         "sha256": pkg.sha256, "files": len(man["files"])})
    if not pins:
        return None
    wanted = {(p["package"], p["version"]) for p in pins}
    rows = [r for r in licence_rows(root) if (r["package"], r["version"]) in wanted]
    groups: dict[tuple[str, str, str, str], int] = {}
    for row in rows:
        k = (row["package"], row["version"], row["licence"], row["authors"])
        groups[k] = groups.get(k, 0) + 1
    licences = [{"package": p, "version": v, "licence": lic, "authors": a, "files": n}
                for (p, v, lic, a), n in sorted(groups.items())]
    out = {"packages": sorted(pins, key=lambda p: p["package"]), "licences": licences,
           "files": sum(g["files"] for g in licences)}
    return {**out, "file_rows": rows} if with_files else out


def credit_lines(credits: dict[str, Any]) -> list[str]:
    """One Markdown bullet per (package, licence, authors) group of :func:`asset_credits`' block, for cards."""
    return [f"- `{g['package']}` {g['version']}: {g['licence']}, by {g['authors']} ({g['files']} file"
            f"{'s' if g['files'] != 1 else ''})" for g in credits["licences"]]


__all__ = ["asset_credits", "credit_lines"]
