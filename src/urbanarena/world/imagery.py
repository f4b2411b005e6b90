"""Imagery sources: which panorama file belongs to which node, and how it is oriented.

A city's imagery description is a JSON-able dict stored in ``city.meta.imagery``
(and so in ``city.json`` of a saved city); ``None`` means a graph-only city.
:class:`ImagerySource` is its typed form::

    {
      "kind": "panorama_folder",        # the only kind so far
      "format_version": 1,
      "source": "cityseeker",            # cityseeker | streetlearn | frames | custom
      "root": "/data/HongKong_6/images", # folder holding the files
      "pattern": "{node}",               # file name per node: pattern.format(node=<node id>)
      "files": null,                     # or {node id: relative path}, overrides pattern
      "projection": "equirectangular",
      "yaw_offset_deg": 0.0,
      "licence": "...", "attribution": "...", "redistributable": false,
      "orientation_rule": "...",         # the rule below in words, for readers of city.json
      "notes": "..."
    }

Orientation rule (all sources)
------------------------------
An equirectangular panorama ``W x H`` (``W = 2H``) spans 360 degrees of
longitude left to right and 180 degrees of latitude top (up) to bottom (down).
Longitude increases to the **right**, i.e. clockwise seen from above, like a
compass bearing. The image's *centre column* is the continuous coordinate
``x = W / 2`` (pixel ``i`` covers ``[i, i + 1)``, its centre at ``i + 0.5``).
For node ``n`` the compass bearing of the centre column is::

    centre_bearing_deg(n) = wrap(heading_deg(n) + yaw_offset_deg)

(degrees clockwise from true north, in [0, 360)). A compass bearing ``b`` then
appears at continuous column ``x = W/2 + W * wrap180(b - centre_bearing_deg) / 360``
(``wrap180`` into [-180, 180)).

CitySeeker
    Their viewer (``utils/panovis.py`` of the CitySeeker release) cuts the
    view for compass bearing ``theta`` by rotating the camera by
    ``theta - HEADING`` radians-of-longitude away from the image centre,
    positive to the right, where ``HEADING = heading`` for Google Street View
    cities and ``HEADING = heading - 90`` for the Baidu cities (Beijing,
    Shanghai, Shenzhen, Chengdu), i.e. their viewer yaw is
    ``edge_azimuth - heading`` (+ 90 for Baidu). The image centre is where
    that viewer yaw is 0: ``theta = HEADING``. So the centre column faces
    ``heading`` (``yaw_offset_deg = 0``) in Google cities (Hong Kong, London,
    New York) and ``heading - 90`` (``yaw_offset_deg = -90``) in the Baidu
    cities: a Baidu panorama's centre column points 90 degrees to the left of
    its recorded heading. (Their viewer maps longitude to
    ``(lon / 2pi + 0.5) * (W - 1)``, a sub-pixel difference from ours.)
StreetLearn / Touchdown
    ``pano_yaw_angle`` (``heading_deg`` of the Touchdown importer) is the
    compass heading of the panorama's centre column (``yaw_offset_deg = 0``):
    StreetLearn's renderer (``streetlearn/engine/pano_renderer.cc``) projects
    the panorama at yaw ``bearing - pano_heading``, with positive yaw to the
    right of the image centre (``pano_projection.cc``: longitude 0 is the
    centre column ``(W - 1) / 2``). Touchdown's navigator rotates its
    *feature maps* by ``157.5 + pano_yaw_angle - heading``; that constant
    belongs to the layout of its pre-computed features, not to the images.

Licences
--------
CitySeeker and StreetLearn imagery may not be redistributed (CitySeeker:
"data for research use only"; StreetLearn: Google Street View imagery under
the StreetLearn data terms). :func:`export_images` refuses to copy such
imagery unless the caller states ``i_hold_the_rights=True``.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Mapping

from urbanarena.errors import CityFormatError, ImageryLicenceError, NoImageryError
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg
from urbanarena.world.node_ids import node_id_problem

FORMAT_VERSION = 1
KIND_PANORAMA_FOLDER = "panorama_folder"

ORIENTATION_RULE = (
    "equirectangular, longitude increasing to the right (clockwise); the compass bearing of the image "
    "centre column (x = W/2, pixel i centred at i + 0.5) is wrap(node heading_deg + yaw_offset_deg)"
)

#: CitySeeker cities whose panoramas come from Baidu (their viewer adds 90 degrees).
BAIDU_CITIES = ("beijing", "shanghai", "shenzhen", "chengdu")

CITYSEEKER_IMAGE_LICENCE = "LicenseRef-CitySeeker-research-only"
CITYSEEKER_IMAGE_ATTRIBUTION = (
    "CitySeeker street-view panoramas (CitySeeker release, data for research use only; "
    "imagery from Google Street View / Baidu Panorama)"
)
STREETLEARN_IMAGE_LICENCE = "LicenseRef-StreetLearn-terms"
STREETLEARN_IMAGE_ATTRIBUTION = (
    "StreetLearn panoramas (Mirowski et al. 2018, 'Learning to Navigate in Cities Without a Map'); "
    "imagery (c) Google Street View, available from DeepMind on request under the StreetLearn terms"
)


@dataclass(frozen=True)
class ImagerySource:
    """Typed form of ``city.meta.imagery`` (see the module docstring).

    Attributes:
        root: folder holding the panorama files (absolute path, or relative to
            ``base_dir`` given to :meth:`path_for`).
        pattern: file name per node, ``pattern.format(node=node_id)``.
        files: optional ``{node_id: relative path}`` overriding ``pattern``.
        yaw_offset_deg: added to the node's ``heading_deg`` to get the compass
            bearing of the image centre column (degrees).
        licence, attribution: of the imagery (not of the graph).
        redistributable: whether :func:`export_images` may copy the files
            without the user stating they hold the rights.
        source: ``"cityseeker"``, ``"streetlearn"``, ``"frames"`` or ``"custom"``.
    """

    root: str
    pattern: str = "{node}"
    files: Mapping[str, str] | None = None
    yaw_offset_deg: float = 0.0
    licence: str | None = None
    attribution: str | None = None
    redistributable: bool = False
    source: str = "custom"
    kind: str = KIND_PANORAMA_FOLDER
    projection: str = "equirectangular"
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------ conversion
    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict for ``city.meta.imagery``."""
        d = asdict(self)
        d["files"] = dict(self.files) if self.files is not None else None
        d["format_version"] = FORMAT_VERSION
        d["orientation_rule"] = ORIENTATION_RULE
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str | None = None) -> "ImagerySource":
        """Parse ``city.meta.imagery``.

        Raises:
            CityFormatError: unknown kind/projection/version or missing ``root``
                (``where`` names the file, e.g. the city's ``city.json``).
        """
        if not isinstance(d, Mapping):
            raise CityFormatError(where, "imagery", "imagery must be an object")
        if d.get("kind", KIND_PANORAMA_FOLDER) != KIND_PANORAMA_FOLDER:
            raise CityFormatError(where, "imagery.kind", f"unsupported imagery kind {d.get('kind')!r}")
        if d.get("projection", "equirectangular") != "equirectangular":
            raise CityFormatError(where, "imagery.projection", f"unsupported projection {d.get('projection')!r}")
        if d.get("format_version", FORMAT_VERSION) != FORMAT_VERSION:
            raise CityFormatError(where, "imagery.format_version", f"unsupported version {d.get('format_version')!r}")
        if not isinstance(d.get("root"), str) or not d["root"]:
            raise CityFormatError(where, "imagery.root", "imagery needs a 'root' folder")
        pattern = d.get("pattern", "{node}")
        if not isinstance(pattern, str) or "{node}" not in pattern:
            raise CityFormatError(where, "imagery.pattern", "pattern must contain '{node}'")
        try:
            yaw = float(d.get("yaw_offset_deg", 0.0))
        except (TypeError, ValueError) as e:
            raise CityFormatError(where, "imagery.yaw_offset_deg", "not a number") from e
        files = d.get("files")
        if files is not None and not isinstance(files, Mapping):
            raise CityFormatError(where, "imagery.files", "files must be an object {node: path}")
        return cls(
            root=d["root"],
            pattern=pattern,
            files=dict(files) if files is not None else None,
            yaw_offset_deg=yaw,
            licence=d.get("licence"),
            attribution=d.get("attribution"),
            redistributable=bool(d.get("redistributable", False)),
            source=d.get("source", "custom"),
            notes=d.get("notes", ""),
            extra=dict(d.get("extra") or {}),
        )

    # ------------------------------------------------------------------ paths
    def relative_path(self, node: str) -> str:
        """File name of ``node``'s panorama relative to ``root``."""
        if self.files is not None and node in self.files:
            return self.files[node]
        return self.pattern.format(node=node)

    def path_for(self, node: str, base_dir: str | Path | None = None) -> Path:
        """Path of ``node``'s panorama (``root`` resolved against ``base_dir`` when relative).

        Raises:
            CityFormatError: the relative path (from ``files`` or ``pattern``) is not a valid node id
                (:func:`~urbanarena.world.node_ids.node_id_problem`: empty, over-long, control characters), is
                absolute or has a ``..`` part: an image path never climbs out of the image folder (a lexical
                rule; symbolic links inside the folder are the owner's and are followed).
        """
        root = Path(self.root)
        if not root.is_absolute() and base_dir is not None:
            root = Path(base_dir) / root
        rel = self.relative_path(node)
        problem = node_id_problem(rel) if isinstance(rel, str) else f"image path must be a string, got {type(rel).__name__}"
        if problem is None:
            parts = PurePosixPath(rel.replace("\\", "/")).parts
            if rel.startswith(("/", "\\")) or PureWindowsPath(rel).drive or ".." in parts:
                problem = "it is absolute or has a '..' part"
        if problem is None:
            return root / rel
        raise CityFormatError(None, "imagery", f"node {str(node)[:80]!r}: image path {str(rel)[:80]!r} is not "
                                               f"confined to the image folder {root}: {problem}")


# ---------------------------------------------------------------- accessors
def has_imagery(city: City) -> bool:
    """Whether the city carries an imagery source."""
    return city.meta.imagery is not None


def imagery_of(city: City, need: str = "this task") -> ImagerySource:
    """The city's imagery source.

    Args:
        need: what needs images, used in the error message.
    Raises:
        NoImageryError: graph-only city (``city.meta.imagery`` is ``None``).
        CityFormatError: malformed imagery description.
    """
    if city.meta.imagery is None:
        raise NoImageryError(
            f"city {city.name!r} is graph-only (no imagery): {need} needs panorama images. "
            "Attach a panorama folder (urbanarena.world.imagery.attach_cityseeker_images / "
            "attach_streetlearn_images / attach_panorama_folder) or use a graph-only task/observation."
        )
    return ImagerySource.from_dict(city.meta.imagery, where=f"city {city.name!r} meta")


def centre_bearing_deg(city: City, node: str, source: ImagerySource | None = None) -> float:
    """Compass bearing (degrees clockwise from true north, [0, 360)) of the centre column of ``node``'s panorama.

    ``wrap(heading_deg + yaw_offset_deg)`` (module docstring).

    Raises:
        NoImageryError: graph-only city.
        CityFormatError: the node has no ``heading_deg`` (its panorama cannot be oriented).
        KeyError: unknown node.
    """
    src = source or imagery_of(city)
    heading = city.node(node).get("heading_deg")
    if heading is None:
        raise CityFormatError(None, f"node {node}", "no heading_deg: its panorama cannot be oriented")
    return wrap_deg(float(heading) + src.yaw_offset_deg)


def image_path(city: City, node: str, base_dir: str | Path | None = None) -> Path:
    """Path of ``node``'s panorama file (existence not checked). Raises :class:`NoImageryError`."""
    if node not in city:
        raise KeyError(f"unknown node {node!r}")
    return imagery_of(city).path_for(node, base_dir)


def missing_images(city: City, base_dir: str | Path | None = None) -> list[str]:
    """Nodes whose panorama file does not exist (sorted node ids)."""
    src = imagery_of(city)
    return sorted(n for n in city.graph.nodes if not src.path_for(n, base_dir).is_file())


# ----------------------------------------------------------------- attaching
def attach_imagery(city: City, source: ImagerySource) -> City:
    """Store ``source`` in ``city.meta.imagery`` (in place) and return the city.

    The graph content hash is unchanged (imagery is metadata).
    """
    city.meta.imagery = source.to_dict()
    return city


def attach_panorama_folder(
    city: City,
    folder: str | Path,
    pattern: str = "{node}",
    *,
    yaw_offset_deg: float = 0.0,
    licence: str | None = None,
    attribution: str | None = None,
    redistributable: bool = False,
    source: str = "custom",
    files: Mapping[str, str] | None = None,
    notes: str = "",
) -> City:
    """Attach any folder of equirectangular panoramas (one file per node).

    Args:
        folder: the folder (stored as an absolute path).
        pattern: file name per node, ``pattern.format(node=node_id)``; must contain ``{node}``.
        yaw_offset_deg: centre-column bearing = node ``heading_deg`` + this.
        redistributable: ``False`` unless the licence allows copying the files.
    Raises:
        FileNotFoundError: ``folder`` is not a directory.
        ValueError: ``pattern`` lacks ``{node}``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: panorama folder not found")
    if "{node}" not in pattern:
        raise ValueError(f"pattern {pattern!r} must contain '{{node}}'")
    src = ImagerySource(
        root=str(folder.resolve()),
        pattern=pattern,
        files=dict(files) if files is not None else None,
        yaw_offset_deg=float(yaw_offset_deg),
        licence=licence,
        attribution=attribution,
        redistributable=redistributable,
        source=source,
        notes=notes,
    )
    return attach_imagery(city, src)


def cityseeker_yaw_offset_deg(city_name: str) -> float:
    """``-90`` for CitySeeker's Baidu cities (Beijing, Shanghai, Shenzhen, Chengdu), else ``0``.

    ``city_name`` is matched case-insensitively after removing digits and
    separators (``"beijing1"``, ``"Shanghai_2"`` ...). See the module docstring
    for the derivation from CitySeeker's viewer.
    """
    base = re.sub(r"[^a-z]", "", city_name.lower())
    return -90.0 if base in BAIDU_CITIES else 0.0


def attach_cityseeker_images(city: City, city_dir: str | Path, city_name: str | None = None) -> City:
    """Attach a CitySeeker city directory's ``images/`` folder (one equirectangular JPEG per node file name).

    Node ids of a CitySeeker city are the panorama file names, so the pattern is
    ``"{node}"``. The yaw offset is ``-90`` degrees for the Baidu cities and 0
    otherwise (:func:`cityseeker_yaw_offset_deg`; ``city_name`` defaults to
    ``city.name``, e.g. ``"hongkong6"``). Licence: research use only, not
    redistributable.

    Raises:
        FileNotFoundError: ``<city_dir>/images`` is missing (``city_dir`` may
            also be the ``images`` folder itself).
    """
    d = Path(city_dir)
    folder = d if d.name == "images" and d.is_dir() else d / "images"
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: CitySeeker images folder not found (expected <city dir>/images)")
    name = city_name or city.name
    offset = cityseeker_yaw_offset_deg(name)
    return attach_panorama_folder(
        city, folder, "{node}",
        yaw_offset_deg=offset,
        licence=CITYSEEKER_IMAGE_LICENCE,
        attribution=CITYSEEKER_IMAGE_ATTRIBUTION,
        redistributable=False,
        source="cityseeker",
        notes=("Baidu city: centre column faces heading - 90 (CitySeeker viewer adds 90 to the yaw)"
               if offset else "Google Street View city: centre column faces the node heading"),
    )


def attach_streetlearn_images(city: City, folder: str | Path, pattern: str = "{node}.jpg") -> City:
    """Attach a Touchdown/StreetLearn panorama folder (``<panoid>.jpg``).

    The node ``heading_deg`` (= ``pano_yaw_angle``) is the centre-column
    bearing: ``yaw_offset_deg = 0`` (module docstring). Licence: StreetLearn
    terms, not redistributable.

    Raises:
        FileNotFoundError: ``folder`` is not a directory.
    """
    return attach_panorama_folder(
        city, folder, pattern,
        yaw_offset_deg=0.0,
        licence=STREETLEARN_IMAGE_LICENCE,
        attribution=STREETLEARN_IMAGE_ATTRIBUTION,
        redistributable=False,
        source="streetlearn",
        notes="pano_yaw_angle is the compass heading of the image centre column (StreetLearn convention)",
    )


# ------------------------------------------------------------------ export
@dataclass
class ExportReport:
    """Result of :func:`export_images`: files written and nodes whose file was missing."""

    out_dir: Path
    written: list[Path]
    missing: list[str]


def export_images(
    city: City,
    out_dir: str | Path,
    i_hold_the_rights: bool = False,
    base_dir: str | Path | None = None,
) -> ExportReport:
    """Copy the city's panorama files to ``out_dir`` (same relative names) with a ``LICENSE-IMAGERY.json``.

    Args:
        i_hold_the_rights: the user states they hold the rights to redistribute
            the imagery; required when the source is not redistributable.
    Returns:
        :class:`ExportReport` (missing source files are listed, not copied).
    Raises:
        NoImageryError: graph-only city.
        ImageryLicenceError: the imagery's licence forbids redistribution and
            ``i_hold_the_rights`` is false. Nothing is written.
    """
    src = imagery_of(city, need="exporting images")
    if not src.redistributable and not i_hold_the_rights:
        raise ImageryLicenceError(
            f"city {city.name!r}: imagery from {src.source!r} (licence {src.licence or 'unknown'}) may not be "
            "redistributed; refusing to export. Pass i_hold_the_rights=True (CLI: --i-hold-the-rights) only if "
            "you hold the rights to these images."
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    missing: list[str] = []
    for node in sorted(city.graph.nodes):
        p = src.path_for(node, base_dir)
        if not p.is_file():
            missing.append(node)
            continue
        dest = out / src.relative_path(node)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, dest)
        written.append(dest)
    notice = {
        "city": city.name,
        "source": src.source,
        "licence": src.licence,
        "attribution": src.attribution,
        "redistributable": src.redistributable,
        "exported_by_rights_holder_statement": bool(i_hold_the_rights),
        "orientation_rule": ORIENTATION_RULE,
        "yaw_offset_deg": src.yaw_offset_deg,
    }
    (out / "LICENSE-IMAGERY.json").write_text(json.dumps(notice, indent=2, ensure_ascii=False))
    return ExportReport(out, written, missing)
