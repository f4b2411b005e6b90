"""Photographic assets from the public package registries, pinned (issue 24 item 1).

:mod:`.registry` pins the packages and the files taken from each (with licences); :mod:`.fetch` downloads,
verifies and extracts them into ``<urbanarena home>/assets/`` with a licence manifest, or reports the
fallback to the procedural ``realistic`` style; :mod:`.archive` reads ``.deb``, tarball and zip members.
"""

from urbanarena.render.assets.fetch import (FALLBACK_STYLE, AssetsStatus, FetchReport, ensure_assets,
                                            fetch_package, licence_rows, licence_summary, package_status)
from urbanarena.render.assets.registry import PACKAGES, AssetPackage, FileGroup, package_by_name

__all__ = ["AssetPackage", "AssetsStatus", "FALLBACK_STYLE", "FetchReport", "FileGroup", "PACKAGES",
           "ensure_assets", "fetch_package", "licence_rows", "licence_summary", "package_by_name",
           "package_status"]
