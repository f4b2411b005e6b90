"""``landmark_image`` on real photographs: the reference is another real picture of the goal (issue 26 item 3).

On a city of real pictures (``panoramax``, ``frames``, ``video``) the reference photo of a ``landmark_image``
task cannot be rendered (the renderer would draw OSM boxes, not the photographed facades). It is instead a
perspective view cut from **another real equirectangular picture** that faces the goal POI, from one of two
sources (:class:`ReferenceFinder`):

* ``tasks generate --reference-pictures DIR_OR_CSV`` (any real-imagery city): a folder of geotagged 360-degree
  pictures (EXIF GPS and ``GPSImgDirection``, as ``city from-frames`` reads them) or a CSV manifest with the
  columns of ``from-frames`` (``filename, lat, lon, heading``) plus optional ``licence`` and ``author``
  (:func:`read_reference_pictures`); pictures from another capture, date or trajectory than the city's;
* a Panoramax city: its instance's STAC API searched around each goal POI (a box of :data:`SEARCH_RADIUS_M`
  around the facade point; :class:`PanoramaxPictures`); the city's own pictures come back too and are refused
  by the rules below.

Rules (ours; every picture is checked against each goal POI, in local metres of the city frame):

1. **not a picture the agent can stand at**: not the picture of any pose node (the goal's own included) — by
   Panoramax picture id (a node's ``picture_id`` and its ``merged_pictures``) and by the file's SHA-256 — and
   at least :data:`MIN_NODE_M` (2.5 m, as rendered references) from every pose node;
2. **distance**: the camera stands :data:`DISTANCE_M` (5-40 m) from the POI's facade point;
3. **faces the front**: the angle between the facade's outward normal and the direction from the facade point
   to the camera is at most :data:`MAX_INCIDENCE_DEG` (60 degrees): the camera is in front of the storefront,
   not behind the building or along its wall;
4. **unoccluded in OSM**: the camera is outside every OSM building footprint of the city's annotations, and
   the segment from it to a point :data:`SIGHT_FRONT_M` in front of the facade point crosses no footprint
   (shapely ``STRtree``);
5. **the cut**: a :data:`REFERENCE_SIZE_PX` view with a :data:`REFERENCE_HFOV_DEG` lens, pitch 0, turned
   towards the facade point plus an offset drawn uniformly in +-:data:`YAW_JITTER_DEG` (so the storefront is
   not always centred); the POI lies within +-:data:`MAX_VIEW_OFFSET_DEG` of the view direction.

Among the pictures that pass, pictures of a capture with no pose node (another sequence/trajectory) come
first, then the one farthest from the pose nodes, then by id. A goal POI without any passing picture gets
no task (``landmark_image`` candidates rejected, counted: :meth:`ReferenceFinder.report`).

**What is not checked**: whether the storefront is *visible in the pixels* — a bus, a tree, scaffolding or a
newer building may hide it, the shop may have changed; OSM footprints are the only occluders known. Every
task records it (``extra.reference_check.visibility_in_pixels = "not checked"``), and generation refuses
``landmark_image`` on real imagery unless the user confirms the references
(``--confirm-landmark-references``; ``confirmed=True`` here) after looking at them.

Each reference records its source picture (``extra.reference_view``: ``kind`` ``real_picture``,
``picture_id``, ``source``, ``sequence_id``, ``captured_at``, ``licence``, ``author``, ``source_url``,
``sha256``, the camera position and the geometry above); local file paths stay out of the task file.
"""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
from shapely.geometry import LineString, Point
from shapely.strtree import STRtree

from urbanarena.errors import CityFormatError, UrbanArenaError
from urbanarena.world.city import City

#: camera to facade point, metres
DISTANCE_M = (5.0, 40.0)
#: largest angle between the facade's outward normal and the facade-to-camera direction, degrees
MAX_INCIDENCE_DEG = 60.0
#: the POI lies within this angle of the cut view's direction, degrees
MAX_VIEW_OFFSET_DEG = 30.0
#: the cut view's direction: bearing to the facade point plus a uniform offset in +- this, degrees
YAW_JITTER_DEG = 15.0
#: a reference picture stands at least this far from every pose node, metres
MIN_NODE_M = 2.5
#: the line of sight ends this far in front of the facade point, metres
SIGHT_FRONT_M = 0.3
REFERENCE_HFOV_DEG = 90.0
REFERENCE_SIZE_PX = (640, 480)
#: half-size of the STAC search box around a goal POI's facade point (Panoramax), metres
SEARCH_RADIUS_M = 45.0
VISIBILITY_NOTE = ("the storefront's visibility in the picture's pixels is not checked (only OSM building "
                   "footprints are known occluders); the user confirmed the references "
                   "(--confirm-landmark-references)")
CSV_EXTRA_COLUMNS = {"licence": "licence", "license": "licence", "author": "author", "artist": "author"}


class LandmarkReferencesUnconfirmed(UrbanArenaError):
    """``landmark_image`` was asked on real imagery without confirming the reference pictures."""


REFUSAL = ("landmark_image on real imagery: the reference pictures are checked for distance, angle and OSM "
           "occlusion, but not whether the storefront is visible in their pixels (people, vehicles, trees, "
           "works, a changed shop); look at them and pass --confirm-landmark-references to generate it")


@dataclass
class ReferencePicture:
    """One candidate reference picture (equirectangular, oriented).

    ``lat``/``lon`` WGS84 degrees; ``heading_deg`` the compass bearing of the picture's centre column;
    ``path`` the local file (``None`` until a Panoramax picture is fetched); ``sha256`` of the file (hex; for
    Panoramax from the STAC checksum until fetched); ``group`` the capture it belongs to (trajectory or
    sequence id)."""

    id: str
    lat: float
    lon: float
    heading_deg: float
    source: str
    licence: str | None = None
    author: str | None = None
    captured_at: str | None = None
    group: str | None = None
    source_url: str | None = None
    sha256: str | None = None
    path: str | None = None
    fetch: Callable[[], str] | None = field(default=None, repr=False)

    def record(self) -> dict[str, Any]:
        """The JSON-able provenance kept in ``extra.reference_view`` (no local path)."""
        return {"picture_id": self.id, "source": self.source, "sequence_id": self.group,
                "captured_at": self.captured_at, "licence": self.licence or "unknown",
                "author": self.author or "unknown", "source_url": self.source_url, "sha256": self.sha256,
                "picture_heading_deg": round(float(self.heading_deg), 3)}


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_reference_pictures(path: str | Path) -> list[ReferencePicture]:
    """The pictures of ``--reference-pictures``: a folder (sub-folders are trajectories) of geotagged
    equirectangular pictures, or a CSV manifest (``filename, lat, lon, heading[, trajectory, licence,
    author]``; empty cells fall back on EXIF), as ``city from-frames`` reads them.

    Returns: the pictures, ids = file paths relative to the folder / as named in the CSV.
    Raises:
        CityFormatError: naming the file (and CSV line): not found, no position, no heading, not 2:1.
    """
    from urbanarena.world.importers.frames_exif import read_frame_exif
    from urbanarena.world.importers.frames_inputs import _collect

    src = Path(path).expanduser()
    if not src.exists():
        raise CityFormatError(src, None, "reference pictures: no such folder or CSV file")
    inputs = _collect([src], None)
    extra = _csv_extra(inputs.csv_path) if inputs.csv_path is not None else {}
    out = []
    for traj, entries in inputs.trajectories.items():
        for e in entries:
            where = f"{inputs.csv_path.name} line {e.line}" if e.line is not None and inputs.csv_path else None
            ex = read_frame_exif(e.path, verify_pixels=False)
            if abs(ex.width_px - 2 * ex.height_px) > 1:
                raise CityFormatError(e.path, where, f"reference picture is {ex.width_px}x{ex.height_px}, not a 2:1 "
                                                     "equirectangular panorama")
            lat = e.lat if e.lat is not None else ex.lat
            lon = e.lon if e.lon is not None else ex.lon
            if lat is None or lon is None:
                raise CityFormatError(e.path, where, "reference picture has no position (EXIF GPS or CSV lat/lon)"
                                      + (f": {ex.gps_problem}" if ex.gps_problem else ""))
            heading = e.heading if e.heading is not None else ex.heading_deg
            if heading is None:
                raise CityFormatError(e.path, where, "reference picture has no heading (EXIF GPSImgDirection or "
                                                     "CSV heading): its views cannot be turned to the goal")
            if e.csv_path is not None:
                pid = extra.get(e.line, {}).get("filename") or e.path.name
            else:
                pid = e.path.relative_to(inputs.root).as_posix() if e.path.is_relative_to(inputs.root) \
                    else e.path.name
            meta = extra.get(e.line, {}) if e.line is not None else {}
            out.append(ReferencePicture(
                id=pid, lat=float(lat), lon=float(lon), heading_deg=float(heading) % 360.0,
                source="reference_pictures", licence=meta.get("licence") or None, author=meta.get("author") or None,
                captured_at=ex.captured_at.isoformat() if ex.captured_at else None, group=traj,
                sha256=_sha256(e.path), path=str(e.path)))
    return out


def _csv_extra(csv_path: Path) -> dict[int, dict[str, str]]:
    """Per CSV line: ``filename`` as written and the ``licence``/``author`` cells (the frames manifest reader
    ignores those columns)."""
    text = csv_path.read_bytes().decode("utf-8-sig")
    reader = csv.reader(text.splitlines())
    header: list[str] | None = None
    out: dict[int, dict[str, str]] = {}
    for row in reader:
        if not row or all(not c.strip() for c in row):
            continue
        if header is None:
            header = [c.strip().lower() for c in row]
            continue
        cells = dict(zip(header, row))
        rec = {CSV_EXTRA_COLUMNS[k]: v.strip() for k, v in cells.items() if k in CSV_EXTRA_COLUMNS}
        name = next((cells[k].strip() for k in ("filename", "file", "path") if k in cells), "")
        out[reader.line_num] = {**rec, "filename": name}
    return out


class PanoramaxPictures:
    """Reference pictures searched on a Panoramax instance's STAC API around each goal POI (module docstring).

    Args:
        client: a :class:`~urbanarena.world.importers.panoramax.client.PanoramaxClient` (default: one for the
            city's instance, ``meta.source["instance"]``).
    Raises:
        UrbanArenaError: the city records no Panoramax instance and no client is given.
    """

    def __init__(self, city: City, client: Any = None):
        from urbanarena.world.importers.panoramax.client import PanoramaxClient

        if client is None:
            src = city.meta.source or {}
            if not src.get("instance"):
                raise UrbanArenaError(f"city {city.name}: no Panoramax instance recorded (meta.source.instance)")
            root = (city.meta.imagery or {}).get("root")  # the city's picture cache: <cache dir>/<host>
            client = PanoramaxClient(src["instance"], cache_dir=Path(root).parent if root else None,
                                     asset=src.get("asset") or "hd")
        self.client = client
        self.city = city
        self.searches = 0
        self._seen: dict[str, ReferencePicture] = {}

    def __call__(self, x_m: float, y_m: float) -> list[ReferencePicture]:
        return self.near(x_m, y_m)

    def near(self, x_m: float, y_m: float) -> list[ReferencePicture]:
        """Oriented 360-degree pictures within the :data:`SEARCH_RADIUS_M` box around ``(x_m, y_m)``.

        Raises:
            PanoramaxError: the search fails after retries.
        """
        r = SEARCH_RADIUS_M
        lats, lons = self.city.frame.to_latlon(np.array([x_m - r, x_m + r]), np.array([y_m - r, y_m + r]))
        bbox = (float(min(lons)), float(min(lats)), float(max(lons)), float(max(lats)))
        pics = self.client.search(bbox)
        self.searches += 1
        out = []
        for p in pics:
            if not (math.isfinite(p.lat) and math.isfinite(p.lon)) or p.heading_deg is None:
                continue
            if p.field_of_view_deg is not None and p.field_of_view_deg < 360:
                continue
            if p.id not in self._seen:
                sha = p.checksum[4:] if p.checksum and p.checksum.lower().startswith("1220") else None
                self._seen[p.id] = ReferencePicture(
                    id=p.id, lat=float(p.lat), lon=float(p.lon), heading_deg=float(p.heading_deg) % 360.0,
                    source="panoramax", licence=p.licence, author=p.author, captured_at=p.captured_at,
                    group=p.sequence_id, source_url=p.source_url, sha256=sha,
                    fetch=lambda p=p: str(self.client.fetch(p)))
            out.append(self._seen[p.id])
        return out


class ReferenceFinder:
    """Chooses the reference picture of each ``landmark_image`` goal POI on a real-imagery city (module
    docstring). ``pictures``: a fixed list (``--reference-pictures``) and/or ``searcher`` (Panoramax: called
    per POI facade point ``(x_m, y_m) -> pictures``). ``confirmed``: the user confirmed the references
    (without it :func:`~urbanarena.tasks.generators.suite.generate_suite` refuses the family)."""

    def __init__(self, city: City, pictures: Iterable[ReferencePicture] = (), *,
                 searcher: Callable[[float, float], list[ReferencePicture]] | None = None, confirmed: bool = False):
        self.city = city
        self.pictures = list(pictures)
        self.searcher = searcher
        self.confirmed = bool(confirmed)
        self.rejections: dict[str, int] = {}
        self.with_reference: list[str] = []
        self.without_reference: list[str] = []
        self.download_errors: dict[str, str] = {}
        #: every picture :meth:`reference` returned (by id), whether or not its candidate became a task: what a
        #: frozen suite pins (:mod:`urbanarena.tasks.frozen_refs`); given these alone, a finder makes the same
        #: choices (each was the best option of its POI among all pictures, so it is among any subset holding it)
        self.chosen: dict[str, ReferencePicture] = {}
        g = city.graph
        self._node_ids = list(g.nodes)
        self._node_xy = np.array([city.xy(n) for n in self._node_ids], float).reshape(-1, 2)
        self._node_pictures = set()
        for n, d in g.nodes(data=True):
            self._node_pictures.add(str(d.get("picture_id") or n))
            self._node_pictures.update(str(m) for m in (d.get("merged_pictures") or []))
        self._node_groups = {str(d.get("sequence_id") or d.get("trajectory_id") or "") for _, d in g.nodes(data=True)}
        self._node_sha = _node_image_hashes(city)
        ann = city.annotations
        self._bldgs = [b.shape() for b in ann.buildings] if ann is not None else []
        self._bldg_tree = STRtree(np.array(self._bldgs, dtype=object)) if self._bldgs else None

    # ------------------------------------------------------------------ rules
    def check(self, poi, pic: ReferencePicture) -> dict[str, Any] | str:
        """The geometry of ``pic`` seen as a reference of ``poi`` (dict: ``x_m``, ``y_m``, ``distance_m``,
        ``incidence_deg``, ``nearest_node_m``, ``bearing_deg``), or the rule it breaks (text)."""
        if pic.id in self._node_pictures or (pic.sha256 is not None and pic.sha256 in self._node_sha):
            return "a pose node's own picture"
        x, y = (float(v) for v in self.city.frame.to_xy(pic.lat, pic.lon))
        d_node = float(np.hypot(*(self._node_xy - (x, y)).T).min()) if len(self._node_xy) else math.inf
        if d_node < MIN_NODE_M:
            return f"closer than {MIN_NODE_M:g} m to a pose node"
        if poi.facade_id is None or poi.facade_xy is None:
            return "the POI has no facade"
        f = self.city.annotations.facade(poi.facade_id)
        fx, fy = poi.facade_xy
        dist = math.hypot(x - fx, y - fy)
        if not DISTANCE_M[0] <= dist <= DISTANCE_M[1]:
            return f"not {DISTANCE_M[0]:g}-{DISTANCE_M[1]:g} m from the facade point"
        a = math.radians(f.normal_deg)
        nx_, ny_ = math.sin(a), math.cos(a)
        cos_inc = ((x - fx) * nx_ + (y - fy) * ny_) / dist
        incidence = math.degrees(math.acos(max(-1.0, min(1.0, cos_inc))))
        if incidence > MAX_INCIDENCE_DEG:
            return f"more than {MAX_INCIDENCE_DEG:g} degrees off the facade's normal"
        if self._bldg_tree is not None:
            if len(self._bldg_tree.query(Point(x, y), predicate="intersects")):
                return "inside an OSM building"
            sight = LineString([(x, y), (fx + SIGHT_FRONT_M * nx_, fy + SIGHT_FRONT_M * ny_)])
            if len(self._bldg_tree.query(sight, predicate="intersects")):
                return "the line of sight crosses an OSM building"
        bearing = math.degrees(math.atan2(fx - x, fy - y)) % 360.0
        return {"x_m": round(x, 3), "y_m": round(y, 3), "distance_m": round(dist, 3),
                "incidence_deg": round(incidence, 3), "nearest_node_m": round(d_node, 3),
                "bearing_deg": round(bearing, 3), "target_xy_m": [float(fx), float(fy)]}

    def options(self, ctx, poi) -> list[tuple[ReferencePicture, dict[str, Any]]]:
        """The pictures that pass every rule for ``poi`` with their geometry, best first (module docstring)."""
        pics = list(self.pictures)
        if self.searcher is not None:
            pics += self.searcher(*poi.facade_xy)
        seen, ok = set(), []
        for p in pics:
            if p.id in seen:
                continue
            seen.add(p.id)
            got = self.check(poi, p)
            if isinstance(got, str):
                self.rejections[got] = self.rejections.get(got, 0) + 1
                continue
            ok.append((p, got))
        ok.sort(key=lambda t: (t[0].group in self._node_groups, -t[1]["nearest_node_m"], t[0].id))
        return ok

    def reference(self, ctx, poi) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(extra.reference_view, image params)`` of the first usable option of ``poi`` (the view direction
        drawn from ``ctx.rng``), or ``None`` (the POI is counted in :attr:`without_reference`)."""
        for pic, geo in self.options(ctx, poi):
            if pic.path is None and pic.fetch is not None:
                try:
                    pic.path = pic.fetch()
                except UrbanArenaError as e:
                    self.download_errors[pic.id] = str(e)
                    continue
                pic.sha256 = _sha256(pic.path)
                if pic.sha256 in self._node_sha:
                    self.rejections["a pose node's own picture"] = self.rejections.get("a pose node's own picture", 0) + 1
                    continue
            off = float(ctx.rng.uniform(-YAW_JITTER_DEG, YAW_JITTER_DEG))
            view = {"kind": "real_picture", **pic.record(), "lat": pic.lat, "lon": pic.lon,
                    **{k: geo[k] for k in ("x_m", "y_m", "distance_m", "incidence_deg", "nearest_node_m",
                                           "target_xy_m")},
                    "yaw_deg": round((geo["bearing_deg"] + off) % 360.0, 3), "poi_offset_deg": round(-off, 3),
                    "pitch_deg": 0.0, "hfov_deg": REFERENCE_HFOV_DEG, "width": REFERENCE_SIZE_PX[0],
                    "height": REFERENCE_SIZE_PX[1]}
            self.with_reference.append(poi.id)
            self.chosen.setdefault(pic.id, pic)
            return view, {**view, "path": pic.path}
        self.without_reference.append(poi.id)
        return None

    def report(self) -> dict[str, Any]:
        """JSON-able summary for the suite report: POIs with/without a reference, rejections by rule, rules."""
        return {"pictures_given": len(self.pictures), "panoramax_searches": getattr(self.searcher, "searches", None)
                if self.searcher is not None else None,
                "pois_with_reference": sorted(set(self.with_reference)),
                "pois_without_reference": sorted(set(self.without_reference)),
                "rejections": dict(sorted(self.rejections.items())), "download_errors": dict(self.download_errors),
                "rules": rules(), "visibility_in_pixels": "not checked", "confirmed": self.confirmed}


def rules() -> dict[str, Any]:
    """The rules' numbers (module docstring), as recorded with every reference."""
    return {"distance_m": list(DISTANCE_M), "max_incidence_deg": MAX_INCIDENCE_DEG,
            "max_view_offset_deg": MAX_VIEW_OFFSET_DEG, "min_node_m": MIN_NODE_M,
            "occluders": "OSM building footprints", "hfov_deg": REFERENCE_HFOV_DEG}


def _node_image_hashes(city: City) -> set[str]:
    """SHA-256 of every pose node's picture file (empty when the city has no imagery folder)."""
    from urbanarena.world.imagery import ImagerySource

    if not city.meta.imagery:
        return set()
    try:
        src = ImagerySource.from_dict(city.meta.imagery)
    except UrbanArenaError:
        return set()
    out = set()
    for n in city.graph.nodes:
        try:
            p = src.path_for(n)
        except UrbanArenaError:
            continue
        if p.is_file():
            out.add(_sha256(p))
    return out


def cut_view(params: dict[str, Any]) -> np.ndarray:
    """The reference image: the perspective view (``width`` x ``height``, ``hfov_deg``, ``pitch_deg``) at compass
    ``yaw_deg`` cut from the picture at ``path`` whose centre column faces ``picture_heading_deg``.
    Returns RGB uint8 ``(H, W, 3)``.

    Raises:
        ImageFormatError: the file is missing, unreadable or not 2:1.
        ValueError: no ``path`` (the picture is not at hand here).
    """
    from urbanarena.render.panorama_store import load_equirect
    from urbanarena.render.views import compass_view, matching_pano_width

    if not params.get("path"):
        raise ValueError(f"reference picture {params.get('picture_id')!r}: no local file to cut the view from")
    w, h, hfov = int(params["width"]), int(params["height"]), float(params["hfov_deg"])
    pano = load_equirect(params["path"], max_width=2 * matching_pano_width(hfov, w))
    return compass_view(pano, float(params["yaw_deg"]), float(params["pitch_deg"]), hfov, w, h,
                        float(params["picture_heading_deg"]))


__all__ = ["DISTANCE_M", "LandmarkReferencesUnconfirmed", "MAX_INCIDENCE_DEG", "MAX_VIEW_OFFSET_DEG", "MIN_NODE_M",
           "PanoramaxPictures", "REFUSAL", "ReferenceFinder", "ReferencePicture", "VISIBILITY_NOTE", "cut_view",
           "read_reference_pictures", "rules"]
