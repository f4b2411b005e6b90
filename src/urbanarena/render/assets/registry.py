"""The pinned registry of photographic asset packages (issue 24 item 1).

Each :class:`AssetPackage` names one package file on a public package registry (Debian's archive, npm or PyPI)
by exact version, byte size and sha256, and lists the :class:`FileGroup` s taken out of it, each with its own
licence and authors. Nothing else in the package is kept. The fetcher (:mod:`urbanarena.render.assets.fetch`)
downloads exactly that file, refuses any other bytes and writes a licence manifest of what it extracted.

Paths in a group are ``fnmatch`` patterns over the package's member paths: a ``.deb``'s data archive without
the leading ``./`` (``usr/share/...``), an npm tarball's paths (``package/...``), a PyPI wheel's (a zip:
``skimage/data/...``). A group with ``archive`` set
selects inside that zip member of the package instead (Sweet Home 3D's ``.sh3f`` catalogues are zip files).
``files`` is the exact number of files the group yields from the pinned package: a different count means the
registry entry and the package disagree, and the fetch is refused.

Licence of rendered images (what the project redistributes is pictures drawn with these files, never the files):
CC0 asks nothing; CC-BY-3.0 asks that the author be credited where the images are shared (the manifest carries
the credit lines); MIT asks that its notice go with copies of the files (the manifest and the package's LICENSE,
extracted, carry it). GPL-2+ textures (flightgear-data-base, surveyed, not pinned) are left out: whether an
image rendered from GPL textures is a derivative work that must itself be shared under the GPL is an open
question, and the project's images are shared under CC-BY terms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DEBIAN_ARCHIVE = "https://deb.debian.org/debian/"
NPM_REGISTRY = "https://registry.npmjs.org/"
PYPI_FILES = "https://files.pythonhosted.org/packages/"


@dataclass(frozen=True)
class FileGroup:
    """Files taken from a package under one licence.

    Attributes:
        name: short id of the group (``people``, ``hdri`` ...), unique within the package.
        members: ``fnmatch`` patterns over member paths (of the package, or of ``archive`` when set).
        dest: folder under the package's cache folder the files go to.
        strip: prefix removed from a matched path before it is placed under ``dest`` (when it starts with it).
        licence: SPDX-style licence id of these files (``CC0-1.0``, ``CC-BY-3.0`` ...).
        authors: who to credit.
        source: where the licence is stated (a file of the package, a URL).
        files: exact number of files the group yields from the pinned package.
        archive: path of a zip member of the package to select from (``None``: the package itself).
    """

    name: str
    members: tuple[str, ...]
    dest: str
    licence: str
    authors: str
    source: str
    files: int
    strip: str = ""
    archive: str | None = None


@dataclass(frozen=True)
class AssetPackage:
    """One pinned package file.

    Attributes:
        name: package name on its registry (``sweethome3d-furniture``, ``@dgreenheck/ez-tree``).
        registry: ``debian`` (fetched with ``apt-get download`` when present), ``npm`` (``npm pack``) or ``pypi``
            (``pip download`` of the one wheel file named by ``url``: a wheel is a zip).
        version: exact version (Debian's with its epoch).
        url: the package file's URL on the registry (used when the client is absent or fails).
        sha256: hex sha256 of the package file.
        size_bytes: size of the package file in bytes (also the download's size limit).
        groups: what is extracted, with licences.
        note: one line on what the package gives the renderer.
    """

    name: str
    registry: str
    version: str
    url: str
    sha256: str
    size_bytes: int
    groups: tuple[FileGroup, ...] = field(default_factory=tuple)
    note: str = ""

    @property
    def key(self) -> str:
        """Folder name of the package in the cache: ``<name>-<version>`` made path-safe (``@``, ``/``, ``:``
        replaced)."""
        safe = self.name.lstrip("@").replace("/", "-")
        return f"{safe}-{self.version}".replace(":", "_")

    @property
    def spec(self) -> str:
        """What its client is asked for: ``name=version`` (apt), ``name@version`` (npm), ``name==version`` (pip)."""
        if self.registry == "pypi":
            return f"{self.name}=={self.version}"
        return f"{self.name}={self.version}" if self.registry == "debian" else f"{self.name}@{self.version}"


_SH3F = "usr/share/sweethome3d/furniture/"
_SH3D_COPYRIGHT = "usr/share/doc/sweethome3d-furniture/copyright"


def _models(prefix: str, folders: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{prefix}/{f}/*" for f in folders) + ("LICENSE.TXT", "PluginFurnitureCatalog.properties")


SWEETHOME3D_FURNITURE = AssetPackage(
    name="sweethome3d-furniture", registry="debian", version="1.8-1",
    url=DEBIAN_ARCHIVE + "pool/main/s/sweethome3d-furniture/sweethome3d-furniture_1.8-1_all.deb",
    sha256="3ccb90c63f9525e887a767b9cd5c8b6933b8b6b2973a615a5359ee68a2118668", size_bytes=119_782_356,
    note="posed, textured people; cars, vans, buses, bicycles; benches, bins, hydrants (OBJ + MTL + JPEG; "
         "sizes in cm in each catalogue's PluginFurnitureCatalog.properties)",
    groups=(
        FileGroup("people", ("reallusion/*", "LICENSE.TXT", "PluginFurnitureCatalog.properties"),
                  dest="people", strip="reallusion/", archive=_SH3F + "Reallusion.sh3f",
                  licence="CC-BY-3.0-US", authors="Reallusion (http://www.reallusion.com)",
                  source=_SH3D_COPYRIGHT + "; Reallusion.sh3f LICENSE.TXT", files=190),
        FileGroup("vehicles", _models("scopia", ("seat_leon", "peugeot-308", "renault-scenic", "suv", "chevrolet",
                                                 "van", "smart-car", "cityBus", "bicycle", "scooter2")),
                  dest="scopia", strip="scopia/", archive=_SH3F + "Scopia.sh3f",
                  licence="CC-BY-3.0", authors="Scopia Visual Interfaces Systems, s.l. (http://www.scopia.es)",
                  source=_SH3D_COPYRIGHT + "; Scopia.sh3f LICENSE.TXT", files=34),
        FileGroup("street", _models("katorlegaz", ("VW-new-beetle", "concept-sedan-01v2", "fire-hydrant",
                                                   "park-trashcan", "concrete-bench")),
                  dest="katorlegaz", strip="katorlegaz/", archive=_SH3F + "KatorLegaz.sh3f",
                  licence="CC-BY-3.0-US", authors="Andrew Kator & Jennifer Legaz",
                  source=_SH3D_COPYRIGHT + "; KatorLegaz.sh3f LICENSE.TXT", files=12),
        FileGroup("bench", _models("blendswap-cc-0", ("bench",)), dest="blendswap-cc0", strip="blendswap-cc-0/",
                  archive=_SH3F + "BlendSwap-CC-0.sh3f", licence="CC0-1.0",
                  authors="Ulanbek (BlendSwap); catalogue by Emmanuel Puybaret, eTeks",
                  source=_SH3D_COPYRIGHT + "; BlendSwap-CC-0.sh3f LICENSE.TXT", files=6),
        FileGroup("copyright", (_SH3D_COPYRIGHT,), dest="", strip="usr/share/doc/sweethome3d-furniture/",
                  licence="CC-BY-3.0", authors="Gabriele Giacone, Markus Koschany (Debian packaging)",
                  source=_SH3D_COPYRIGHT, files=1),
    ),
)

BLENDER_DATA = AssetPackage(
    name="blender-data", registry="debian", version="3.4.1+dfsg-2",
    url=DEBIAN_ARCHIVE + "pool/main/b/blender/blender-data_3.4.1%2bdfsg-2_all.deb",
    sha256="5ceaf56a49ba3ded95c751d739aeec3d19e7fad76fba5cb70666986af9303b0e", size_bytes=31_389_128,
    note="equirectangular HDR environment maps (OpenEXR, 1024x512) of a city, a courtyard, sunrise, sunset, night",
    groups=(
        FileGroup("hdri", tuple(f"usr/share/blender/datafiles/studiolights/world/{n}" for n in (
                      "city.exr", "courtyard.exr", "forest.exr", "night.exr", "sunrise.exr", "sunset.exr",
                      "license.txt")),
                  dest="hdri", strip="usr/share/blender/datafiles/studiolights/world/", licence="CC0-1.0",
                  authors="Greg Zaal (HDRI Haven, now Poly Haven)",
                  source="usr/share/blender/datafiles/studiolights/world/license.txt", files=7),
    ),
)

EZ_TREE = AssetPackage(
    name="@dgreenheck/ez-tree", registry="npm", version="1.1.0",
    url=NPM_REGISTRY + "@dgreenheck/ez-tree/-/ez-tree-1.1.0.tgz",
    sha256="4147b49d22b01f09c9d7f3c3c34f788ad37841103a758da25e399af3cbce2f98", size_bytes=19_478_340,
    note="photo leaf cut-outs (PNG with alpha) and bark colour/normal/roughness/AO maps; tree presets (JSON)",
    groups=(
        FileGroup("leaves", ("package/src/lib/assets/leaves/*.png", "package/LICENSE"), dest="",
                  strip="package/src/lib/assets/", licence="MIT", authors="Daniel Greenheck",
                  source="package/LICENSE", files=5),
        FileGroup("bark", ("package/src/lib/assets/bark/*",), dest="", strip="package/src/lib/assets/",
                  licence="MIT", authors="Daniel Greenheck; originals CC0 from texturecan.com and polyhaven.com "
                  "(bark/README.md)", source="package/LICENSE; package/src/lib/assets/bark/README.md", files=17),
        FileGroup("presets", ("package/src/lib/presets/*.json",), dest="presets", strip="package/src/lib/presets/",
                  licence="MIT", authors="Daniel Greenheck", source="package/LICENSE", files=16),
    ),
)

_SKI_DATA = "skimage/data/"
_SKI_SOURCE = ("skimage/data/_fetchers.py (docstrings of brick(), grass(), gravel()); "
               "scikit_image-0.26.0.dist-info/LICENSE.txt")

SCIKIT_IMAGE = AssetPackage(
    name="scikit-image", registry="pypi", version="0.26.0",
    url=PYPI_FILES + "a5/2a/e71c1a7d90e70da67b88ccc609bd6ae54798d5847369b15d3a8052232f9d/"
                     "scikit_image-0.26.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
    sha256="74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af", size_bytes=13_711_217,
    note="photographed material samples, greyscale 512x512 PNG: a brick wall, gravel, grass (the photo style's "
         "wall and ground materials); only these and their licence notes are kept, not the library",
    groups=(
        FileGroup("materials", tuple(_SKI_DATA + n for n in ("brick.png", "gravel.png")), dest="materials",
                  strip=_SKI_DATA, licence="CC0-1.0",
                  authors="CC0Textures (now ambientCG), Bricks25 and Gravel04; crop, perspective and greyscale by "
                          "the scikit-image team", source=_SKI_SOURCE, files=2),
        FileGroup("grass", (_SKI_DATA + "grass.png",), dest="materials", strip=_SKI_DATA, licence="CC0-1.0",
                  authors="linolafett (DeviantArt, Grass-01); crop and greyscale by the scikit-image team",
                  source=_SKI_SOURCE, files=1),
        FileGroup("notice", (_SKI_DATA + "_fetchers.py", "scikit_image-0.26.0.dist-info/LICENSE.txt"), dest="",
                  strip="", licence="BSD-3-Clause", authors="the scikit-image team",
                  source="scikit_image-0.26.0.dist-info/LICENSE.txt", files=2),
    ),
)

#: every pinned package, in fetch order
PACKAGES: tuple[AssetPackage, ...] = (BLENDER_DATA, EZ_TREE, SWEETHOME3D_FURNITURE, SCIKIT_IMAGE)


def package_by_name(name: str) -> AssetPackage:
    """The pinned package called ``name``; ``KeyError`` listing the known names otherwise."""
    for p in PACKAGES:
        if p.name == name:
            return p
    raise KeyError(f"no pinned asset package {name!r} (known: {', '.join(p.name for p in PACKAGES)})")


__all__ = ["AssetPackage", "BLENDER_DATA", "EZ_TREE", "FileGroup", "PACKAGES", "SCIKIT_IMAGE",
           "SWEETHOME3D_FURNITURE", "package_by_name"]
