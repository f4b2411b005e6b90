"""Pose graph from Panoramax sequences joined on the OpenStreetMap street network (Movie Map paradigm).

Input: :class:`~.client.Picture` records (downloaded: ``local_path`` set) and
the OSM city of the same area (:func:`urbanarena.world.importers.osm.import_city`:
its ``annotations.streets`` are the street network — polylines between
decision points, dead ends and corners — and its POIs and street objects
become the tasks' ground truth). The result is a :class:`~urbanarena.world.city.City`
whose nodes are pictures, in the OSM city's local frame, with its annotations
re-pointed to the picture nodes.

Rules, in order (every threshold is an argument of :func:`build_pose_graph`):

1. **Validation** of each picture; a bad one is *reported and skipped*, never
   fatal (:class:`BuildIssue`, also emitted as a :class:`PanoramaxInputWarning`
   naming the picture): an id that is no valid node id (``bad_id``: control or
   bidirectional-formatting characters, :mod:`urbanarena.world.node_ids`),
   position not finite or out of range (``bad_position``),
   no heading (``no_heading``: without ``view:azimuth`` the panorama cannot be
   oriented; a course guess could turn every view the wrong way), a known field
   of view below 360 degrees (``not_360``), not downloaded (``download_failed``),
   an image that is not 2:1 equirectangular (``not_equirectangular``, ``|W - 2H| > 1``
   pixel, read from the file header) or unreadable (``unreadable_image``).
2. **Sequences** (STAC collections) are ordered by capture time (then id) and
   **thinned** to ``spacing_m`` with :func:`urbanarena.world.importers.frames_graph.thin`
   (greedy: keep a picture ``>= spacing_m`` from the last kept one; the last is always kept).
3. **Snapping.** Each kept picture is projected on the nearest street within
   ``snap_radius_m`` (shapely ``STRtree.query_nearest``); among the streets no
   more than 2 m farther than the nearest, the one best aligned with the
   sequence's course there (bearing from the previous to the next kept picture)
   wins, so that pictures near a crossing stay on the street they were taken
   along. A picture with no street within the radius is reported
   (``off_street``); a sequence none of whose pictures has one is reported once
   (``sequence_far_from_street``) and skipped. The node's position is the
   snapped point (``lat``/``lon``); the picture's own position is kept
   (``gps_lat``/``gps_lon``, ``snap_distance_m``).
4. **Along a street** the pictures of all sequences are merged in order of
   their arc length ``along_m``: taken in order of snap distance (then id), a
   picture closer than ``min_separation_m`` (default ``max(0.5, spacing_m / 2)``)
   along the street to one already kept is dropped (``overlap_dropped`` in the
   report: two passes over the same stretch). Consecutive pictures are joined
   both ways when at most ``max_gap_m`` apart along the street; a longer stretch
   is a **gap** (reported with the street's name and the arc-length range, not
   bridged). A street without any picture is a gap of its whole length.
5. **Intersections.** At every street end vertex (decision points, corners,
   dead ends) the end picture of each incident street (the first or last along
   it) is a candidate when within ``junction_radius_m`` (default
   ``max(6, 1.5 * spacing_m)``) of the vertex along its street. The candidate
   nearest the vertex (then lowest id) is the **junction node**; every other
   candidate is joined to it both ways, or *merged* into it when closer than
   ``min_separation_m`` (its edges re-attached to the junction; listed in the
   junction's ``merged_pictures``). An incident street with pictures none of
   which is within the radius is a gap (``unjoined``) at that vertex.
6. **One graph.** Edges exist in both directions (``azimuth_deg``: WGS84
   geodesic azimuth, ``length_m``: geodesic length between the snapped
   positions; ``edge_kind`` ``"street"`` or ``"junction"``). Only the largest
   connected component is kept (most nodes, then the smallest node id); the
   others are reported as gaps (``disconnected``) with their pictures.
   ``walkable_headings_deg`` = the out-edge azimuths in ascending order (as the
   OSM importer).

Per node: ``heading_deg`` (the picture's ``view:azimuth``: bearing of the
image centre column, so the imagery's ``yaw_offset_deg`` is 0), ``image`` (the
cached file name), ``picture_id``, ``sequence_id``, ``captured_at``,
``licence``, ``author``, ``source_url``, ``image_url``, ``camera``,
``street_id``, ``along_m``, ``gps_lat``, ``gps_lon``, ``snap_distance_m``,
``merged_pictures``. Annotations: each POI's ``node_id`` becomes the picture
node nearest its front point (``node_distance_m`` the distance), each street
object's the node nearest the object, each street's ``node_ids`` its picture
nodes in order (possibly empty).
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import networkx as nx
import numpy as np

from urbanarena.progress import Progress, counted
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, wrap_deg
from urbanarena.world.importers.osm_join import nearest_street
from urbanarena.world.importers.panoramax.client import Picture
from urbanarena.world.node_ids import node_id_problem

SOURCE_KIND = "panoramax"
#: bump when the build result for the same pictures and OSM file changes
VERSION = "1"
DEFAULT_SNAP_RADIUS_M = 15.0
DEFAULT_MAX_GAP_M = 20.0
ASPECT_TOLERANCE_PX = 1

ISSUE_KINDS = ("bad_id", "bad_position", "no_heading", "not_360", "download_failed", "unreadable_image",
               "not_equirectangular", "off_street", "sequence_far_from_street")


class PanoramaxInputWarning(UserWarning):
    """A picture or sequence was skipped (bad input); ``issue`` is the :class:`BuildIssue` naming it."""

    def __init__(self, issue: "BuildIssue"):
        super().__init__(issue.message)
        self.issue = issue


@dataclass(frozen=True)
class BuildIssue:
    """A skipped picture or sequence: ``kind`` (one of :data:`ISSUE_KINDS`), the picture id (``None`` for a
    whole sequence), the sequence id, the pictures concerned and a message naming them."""

    kind: str
    picture: str | None
    sequence: str | None
    message: str
    pictures: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pictures"] = list(self.pictures)
        return d


@dataclass
class _Snap:
    pic: Picture
    street: int
    along_m: float
    dist_m: float
    x: float
    y: float


def _issue(issues: list[BuildIssue], kind: str, pic: Picture | None, message: str, sequence: str | None = None,
           pictures: Sequence[str] = ()) -> None:
    iss = BuildIssue(kind, pic.id if pic is not None else None,
                     pic.sequence_id if pic is not None else sequence, message, tuple(pictures))
    issues.append(iss)
    warnings.warn(PanoramaxInputWarning(iss), stacklevel=3)


def validate_picture(pic: Picture, check_image: bool = True) -> tuple[str, str] | None:
    """Why ``pic`` cannot be a pose node: ``(kind, message)`` naming it, or ``None`` when usable.

    Checks the id (a valid node id, :mod:`urbanarena.world.node_ids`), position (finite, |lat| <= 90, |lon| <= 180, not exactly (0, 0)), heading, field of view and,
    with ``check_image``, the downloaded file: readable by Pillow and 2:1 within one pixel.
    """
    problem = node_id_problem(pic.id)
    if problem is not None:
        return "bad_id", f"picture {pic.id!r} (sequence {pic.sequence_id!r}): {problem}; skipped"
    name = f"picture {pic.id} (sequence {pic.sequence_id})"
    if not (math.isfinite(pic.lat) and math.isfinite(pic.lon)) or abs(pic.lat) > 90 or abs(pic.lon) > 180 \
            or (pic.lat == 0.0 and pic.lon == 0.0):
        return "bad_position", f"{name}: position ({pic.lat}, {pic.lon}) is not a valid WGS84 fix; skipped"
    if pic.heading_deg is None or not math.isfinite(pic.heading_deg):
        return "no_heading", (f"{name}: no heading (view:azimuth): its panorama cannot be oriented; skipped")
    if pic.field_of_view_deg is not None and pic.field_of_view_deg < 360:
        return "not_360", f"{name}: field of view {pic.field_of_view_deg:g} degrees, not a 360-degree picture; skipped"
    if not check_image:
        return None
    if not pic.local_path or not Path(pic.local_path).is_file():
        return "download_failed", f"{name}: image not downloaded; skipped"
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(pic.local_path) as im:
            w, h = im.size
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as e:
        return "unreadable_image", f"{name}: unreadable image {pic.local_path}: {e}; skipped"
    if abs(w - 2 * h) > ASPECT_TOLERANCE_PX or h < 2:
        return "not_equirectangular", (f"{name}: image {w} x {h} px is not 2:1 equirectangular "
                                       f"({pic.local_path}); skipped")
    return None


def _order_key(p: Picture) -> tuple:
    return (p.captured_at or "", p.id)


def _course_xy(xy: np.ndarray, k: int) -> tuple[float, float] | None:
    n = len(xy)
    if n < 2:
        return None
    a, b = xy[max(0, k - 1)], xy[min(n - 1, k + 1)]
    d = b - a
    return (float(d[0]), float(d[1])) if float(np.hypot(*d)) > 1e-9 else None


def build_pose_graph(pictures: Iterable[Picture], osm_city: City, *, spacing_m: float = 5.0,
                     snap_radius_m: float = DEFAULT_SNAP_RADIUS_M, junction_radius_m: float | None = None,
                     max_gap_m: float = DEFAULT_MAX_GAP_M, min_separation_m: float | None = None,
                     name: str | None = None, check_images: bool = True,
                     source: dict[str, Any] | None = None) -> City:
    """Build the picture pose graph on ``osm_city``'s street network (rules in the module docstring).

    Args:
        pictures: searched (and downloaded) pictures, any order.
        osm_city: the OSM city of the area (with annotations).
        spacing_m: thinning spacing per sequence, metres (> 0).
        snap_radius_m: largest picture-to-street distance, metres.
        junction_radius_m: end pictures within this arc length of a street end vertex are joined there.
        max_gap_m: longest stretch along a street joined without imagery in between, metres.
        min_separation_m: pictures closer than this along a street are one (default ``max(0.5, spacing/2)``).
        name: city name (default the OSM city's).
        check_images: validate the downloaded files (size 2:1); off only for metadata-only builds.
        source: extra ``meta.source`` entries (instance, bbox, OSM file ...).
    Returns:
        The city, imagery not yet attached (see :func:`attach_panoramax_imagery`); the build report in
        ``meta.extra["panoramax"]`` (counts, ``issues``, ``gaps``, ``junctions``, ``overlap_dropped``,
        ``sequences``, ``licences``).
    Raises:
        CityFormatError: the OSM city has no street annotations, or no picture survives (the message
            lists the issues by kind).
        ValueError: a non-positive spacing or radius.
    """
    import shapely
    from shapely.geometry import LineString, Point

    from urbanarena.errors import CityFormatError
    from urbanarena.world.importers.frames import thin

    for label, v in (("spacing_m", spacing_m), ("snap_radius_m", snap_radius_m), ("max_gap_m", max_gap_m)):
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{label} must be > 0, got {v}")
    jr = float(junction_radius_m) if junction_radius_m is not None else max(6.0, 1.5 * spacing_m)
    sep = float(min_separation_m) if min_separation_m is not None else max(0.5, spacing_m / 2.0)
    ann = getattr(osm_city, "annotations", None)
    if ann is None or not ann.streets:
        raise CityFormatError(None, "osm", f"city {osm_city.name!r} has no street network annotations "
                              "(build it from an OSM file)")
    frame = osm_city.frame
    issues: list[BuildIssue] = []
    pics = list(pictures)
    seen: set[str] = set()
    by_seq: dict[str, list[Picture]] = defaultdict(list)
    for p in pics:
        if p.id in seen:
            continue
        seen.add(p.id)
        bad = validate_picture(p, check_image=check_images)
        if bad is not None:
            _issue(issues, bad[0], p, bad[1])
            continue
        by_seq[p.sequence_id or f"(no sequence) {p.id}"].append(p)

    lines = [LineString(s.xy) for s in ann.streets]
    tree = shapely.STRtree(lines)
    snaps: list[_Snap] = []
    seq_report = []
    for seq in sorted(by_seq):
        members = sorted(by_seq[seq], key=_order_key)
        lats = np.array([p.lat for p in members])
        lons = np.array([p.lon for p in members])
        kept = [members[k] for k in thin(lats, lons, spacing_m)]
        xs, ys = frame.to_xy(np.array([p.lat for p in kept]), np.array([p.lon for p in kept]))
        xy = np.column_stack([np.atleast_1d(xs), np.atleast_1d(ys)])
        seq_snaps = []
        off = []
        for k, p in enumerate(kept):
            pt = Point(float(xy[k, 0]), float(xy[k, 1]))
            snap = nearest_street(tree, lines, pt, snap_radius_m, _course_xy(xy, k))
            if snap is None:
                off.append(p)
                continue
            d, i = snap
            s = float(lines[i].project(pt))
            q = lines[i].interpolate(s)
            seq_snaps.append(_Snap(p, i, s, float(d), float(q.x), float(q.y)))
        if not seq_snaps:
            _issue(issues, "sequence_far_from_street", None,
                   f"sequence {seq}: none of its {len(members)} pictures ({', '.join(p.id for p in members)}) lies "
                   f"within {snap_radius_m:g} m of an OSM street; skipped", sequence=seq,
                   pictures=[p.id for p in members])
        else:
            for p in off:
                _issue(issues, "off_street", p, f"picture {p.id} (sequence {seq}): more than {snap_radius_m:g} m "
                                               "from every OSM street; skipped")
        snaps.extend(seq_snaps)
        seq_report.append({"id": seq, "pictures": len(members), "kept_after_thinning": len(kept),
                           "snapped": len(seq_snaps)})

    # ---- along streets
    per_street: dict[int, list[_Snap]] = defaultdict(list)
    for sn in snaps:
        per_street[sn.street].append(sn)
    chains: dict[int, list[_Snap]] = {}
    overlap: list[dict[str, Any]] = []
    for i, lst in per_street.items():
        kept_s: list[_Snap] = []
        for sn in sorted(lst, key=lambda t: (t.dist_m, t.pic.id)):
            clash = next((k for k in kept_s if abs(k.along_m - sn.along_m) < sep), None)
            if clash is None:
                kept_s.append(sn)
            else:
                overlap.append({"picture": sn.pic.id, "kept": clash.pic.id, "street": ann.streets[i].id,
                                "separation_m": round(abs(clash.along_m - sn.along_m), 3)})
        chains[i] = sorted(kept_s, key=lambda t: (t.along_m, t.pic.id))
    node_snap: dict[str, _Snap] = {sn.pic.id: sn for ch in chains.values() for sn in ch}
    edges: dict[tuple[str, str], str] = {}
    gaps: list[dict[str, Any]] = []

    def street_label(i: int) -> str:
        st = ann.streets[i]
        return f"{st.name or st.highway} ({st.id})"

    for i, st in enumerate(ann.streets):
        ch = chains.get(i, [])
        if not ch:
            gaps.append({"kind": "no_imagery", "street": st.id, "name": st.name, "from_m": 0.0,
                         "to_m": round(lines[i].length, 3), "length_m": round(lines[i].length, 3),
                         "message": f"street {street_label(i)}: no imagery along its {lines[i].length:.1f} m"})
            continue
        for a, b in zip(ch, ch[1:]):
            d = b.along_m - a.along_m
            if d <= max_gap_m:
                edges[(a.pic.id, b.pic.id)] = "street"
            else:
                gaps.append({"kind": "along_street", "street": st.id, "name": st.name,
                             "from_m": round(a.along_m, 3), "to_m": round(b.along_m, 3), "length_m": round(d, 3),
                             "pictures": [a.pic.id, b.pic.id],
                             "message": f"street {street_label(i)}: no imagery for {d:.1f} m between pictures "
                                        f"{a.pic.id} and {b.pic.id} (more than {max_gap_m:g} m): not joined"})

    # ---- junctions at street end vertices
    ends: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for i, st in enumerate(ann.streets):
        if st.node_ids:
            ends[st.node_ids[0]].append((i, "start"))
            ends[st.node_ids[-1]].append((i, "end"))
    rep: dict[str, str] = {}

    def find(n: str) -> str:
        while n in rep:
            n = rep[n]
        return n

    merged: dict[str, list[str]] = defaultdict(list)
    junctions = []
    for vid in sorted(ends):
        cands = []
        for i, which in ends[vid]:
            ch = chains.get(i, [])
            if not ch:
                continue
            sn = ch[0] if which == "start" else ch[-1]
            d = sn.along_m if which == "start" else lines[i].length - sn.along_m
            if d <= jr:
                cands.append((d, sn.pic.id, i))
            elif len(ends[vid]) > 1:
                gaps.append({"kind": "unjoined", "street": ann.streets[i].id, "name": ann.streets[i].name,
                             "vertex": vid, "length_m": round(d, 3), "pictures": [sn.pic.id],
                             "message": f"street {street_label(i)}: its nearest picture {sn.pic.id} is {d:.1f} m from "
                                        f"the street's end vertex (more than {jr:g} m): not joined there"})
        if len(cands) < 2:
            continue
        cands.sort()
        j = find(cands[0][1])
        members = [j]
        for d, pid, _ in cands[1:]:
            c = find(pid)
            if c == j:
                continue
            a, b = node_snap[j], node_snap[c]
            if math.hypot(a.x - b.x, a.y - b.y) < sep:
                rep[c] = j
                merged[j].append(c)
                merged[j].extend(merged.pop(c, []))
            else:
                edges[(j, c)] = edges.get((j, c), "junction")
                members.append(c)
        vx, vy = osm_city.xy(vid) if vid in osm_city else (math.nan, math.nan)
        junctions.append({"vertex": vid, "x_m": vx, "y_m": vy, "junction": j, "streets": len(ends[vid]),
                          "joined": sorted(set(members) - {j}), "merged": sorted(merged.get(j, []))})

    # ---- graph
    g = nx.DiGraph()
    for pid, sn in node_snap.items():
        if find(pid) != pid:
            continue
        p = sn.pic
        lat, lon = frame.to_latlon(sn.x, sn.y)
        g.add_node(
            pid, lat=float(lat), lon=float(lon), heading_deg=wrap_deg(float(p.heading_deg)),
            walkable_headings_raw=None, walkable_headings_deg=None,
            image=Path(p.local_path).name if p.local_path else None, picture_id=p.id, sequence_id=p.sequence_id,
            captured_at=p.captured_at, licence=p.licence, author=p.author, source_url=p.source_url,
            image_url=p.image_url, camera=p.camera, street_id=ann.streets[sn.street].id,
            along_m=round(sn.along_m, 3), gps_lat=float(p.lat), gps_lon=float(p.lon),
            snap_distance_m=round(sn.dist_m, 3), merged_pictures=sorted(merged.get(pid, [])) or None,
        )
    for (a, b), kind in edges.items():
        a, b = find(a), find(b)
        if a == b:
            continue
        for u, v in ((a, b), (b, a)):
            if g.has_edge(u, v):
                continue
            du, dv = g.nodes[u], g.nodes[v]
            az, _, dist = WGS84_GEOD.inv(du["lon"], du["lat"], dv["lon"], dv["lat"])
            g.add_edge(u, v, azimuth_deg=wrap_deg(az), length_m=float(dist), edge_kind=kind)
    comps = sorted(nx.weakly_connected_components(g), key=lambda c: (-len(c), min(c)))
    if not comps or len(comps[0]) < 2:
        kinds = defaultdict(int)
        for iss in issues:
            kinds[iss.kind] += 1
        raise CityFormatError(None, "pictures", (
            f"no connected pose graph of at least 2 pictures: {len(pics)} picture(s) searched, {len(snaps)} on "
            f"streets; skipped: {dict(sorted(kinds.items())) or 'none'}"))
    for comp in comps[1:]:
        gaps.append({"kind": "disconnected", "pictures": sorted(comp), "length_m": None,
                     "message": f"{len(comp)} picture(s) ({', '.join(sorted(comp)[:5])}"
                                f"{' ...' if len(comp) > 5 else ''}) are cut off from the main graph by gaps: dropped"})
        g.remove_nodes_from(comp)
    for n in g.nodes:
        hs = sorted(d["azimuth_deg"] for _, _, d in g.out_edges(n, data=True))
        g.nodes[n]["walkable_headings_raw"] = list(hs)
        g.nodes[n]["walkable_headings_deg"] = list(hs)

    licences: dict[str, dict[str, Any]] = {}
    for n, d in g.nodes(data=True):
        lic = d.get("licence") or "unknown"
        e = licences.setdefault(lic, {"pictures": 0, "authors": set()})
        e["pictures"] += 1
        e["authors"].add(d.get("author") or "unknown")
    lic_report = {k: {"pictures": v["pictures"], "authors": sorted(v["authors"])} for k, v in sorted(licences.items())}
    report = {
        "version": VERSION,
        "pictures_searched": len(pics),
        "pictures_used": g.number_of_nodes(),
        "spacing_m": float(spacing_m), "snap_radius_m": float(snap_radius_m), "junction_radius_m": jr,
        "max_gap_m": float(max_gap_m), "min_separation_m": sep,
        "sequences": seq_report,
        "issues": [iss.to_dict() for iss in issues],
        "gaps": gaps,
        "junctions": junctions,
        "overlap_dropped": overlap,
        "licences": lic_report,
    }
    from urbanarena.world.importers.osm import ATTRIBUTION as OSM_ATTRIBUTION, LICENCE as OSM_LICENCE

    meta = CityMeta(
        name=name or osm_city.name,
        source={"kind": SOURCE_KIND, "builder_version": VERSION, **(source or {}),
                "osm": {k: v for k, v in (osm_city.meta.source or {}).items() if k in ("files", "sha256", "bbox")},
                "description": "Panoramax 360-degree pictures snapped to the OpenStreetMap street network"},
        licence=f"street network and annotations {OSM_LICENCE}; imagery per picture ({', '.join(lic_report)})",
        attribution=f"{OSM_ATTRIBUTION}; imagery: Panoramax contributors "
                    f"({'; '.join(a for v in lic_report.values() for a in v['authors'])})",
        extra={"panoramax": report},
    )
    city = City(g, meta, frame=frame)
    city.annotations = remap_annotations(ann, city)
    return city


def remap_annotations(ann: Any, city: City) -> Any:
    """A copy of ``ann`` whose POI/object/street node references point at ``city``'s picture nodes
    (module docstring); coordinates are unchanged (same local frame). The shared step of every real-imagery
    city: :func:`urbanarena.world.importers.osm_join.remap_annotations`."""
    from urbanarena.world.importers.osm_join import remap_annotations as remap

    return remap(ann, city, label="panoramax picture nodes")


def attach_panoramax_imagery(city: City, image_dir: str | Path) -> City:
    """Attach the cached pictures (``image_dir``, one file per node: node attribute ``image``) as the city's
    imagery: ``source="panoramax"``, ``yaw_offset_deg=0`` (``heading_deg`` is the centre column's
    bearing), licence = the distinct licences, redistributable when every one is in
    :data:`urbanarena.world.importers.frames_inputs.OPEN_LICENCES`.

    Raises:
        FileNotFoundError: ``image_dir`` is not a directory.
    """
    from urbanarena.world.importers.frames import OPEN_LICENCES
    from urbanarena.world.imagery import attach_panorama_folder

    lic = sorted({d.get("licence") or "unknown" for _, d in city.graph.nodes(data=True)})
    authors = sorted({d.get("author") or "unknown" for _, d in city.graph.nodes(data=True)})
    return attach_panorama_folder(
        city, image_dir, "{node}",
        files={n: d["image"] for n, d in city.graph.nodes(data=True)},
        yaw_offset_deg=0.0,
        licence=", ".join(lic),
        attribution="Panoramax: " + "; ".join(authors),
        redistributable=all(x in OPEN_LICENCES for x in lic),
        source=SOURCE_KIND,
        notes="Panoramax pictures; node heading_deg is the picture's view:azimuth (bearing of the centre "
              "column); per-picture licence, author and source URL are node attributes (urbanarena city licences)",
    )


def licence_table(city: City) -> list[dict[str, Any]]:
    """Every imagery licence of ``city`` with its authors, picture count and pictures (``[{licence, authors,
    pictures, picture_ids, source_urls}]``, sorted by licence); nodes without one count as ``"unknown"``."""
    rows: dict[str, dict[str, Any]] = {}
    for n, d in sorted(city.graph.nodes(data=True)):
        lic = d.get("licence") or "unknown"
        r = rows.setdefault(lic, {"licence": lic, "authors": set(), "pictures": 0, "picture_ids": [],
                                  "source_urls": []})
        r["authors"].add(d.get("author") or "unknown")
        r["pictures"] += 1
        r["picture_ids"].append(d.get("picture_id") or n)
        if d.get("source_url"):
            r["source_urls"].append(d["source_url"])
    return [{**r, "authors": sorted(r["authors"])} for _, r in sorted(rows.items())]


def build_city_from_panoramax(bbox: Sequence[float], osm_path: str | Path, name: str, *,
                               client: Any = None, instance: str | None = None, spacing_m: float = 5.0,
                               max_items: int | None = None, osm_spacing_m: float = 10.0,
                               progress: Progress | None = None, **options: Any) -> City:
    """Search ``bbox`` on a Panoramax instance, download the usable pictures, import the OSM street network
    of the same bbox from ``osm_path`` and build the pose graph with the imagery attached.

    Args:
        bbox: ``(W, S, E, N)`` WGS84 degrees (the search area and the OSM crop).
        osm_path: ``.osm`` / ``.osm.pbf`` ... file covering the bbox.
        name: city name.
        client: a :class:`~.client.PanoramaxClient` (default: one for ``instance``).
        instance: instance URL when no client is given (default :data:`~.client.DEFAULT_INSTANCE`).
        spacing_m: thinning spacing, metres.
        max_items: stop the search after this many pictures (``None``: all).
        osm_spacing_m: pose spacing of the OSM import (only its annotations are used).
        progress: hears each picture downloaded (step ``download pictures``, :mod:`urbanarena.progress`).
        options: passed to :func:`build_pose_graph` (``snap_radius_m``, ``junction_radius_m``, ``max_gap_m``...).
    Returns:
        The city with imagery attached (files in the client's cache); download failures are in
        ``meta.extra["panoramax"]["download_errors"]`` and reported as ``download_failed`` issues.
    Raises:
        PanoramaxError: the search fails after retries.
        CityFormatError: a bad OSM file or bbox, or no usable picture (see :func:`build_pose_graph`).
    """
    from urbanarena.world.importers.osm import import_city as import_osm
    from urbanarena.world.importers.panoramax.client import DEFAULT_INSTANCE, PanoramaxClient, PanoramaxError

    if client is None:
        client = PanoramaxClient(instance or DEFAULT_INSTANCE)
    bb = tuple(float(v) for v in bbox)
    osm_city = import_osm(osm_path, bbox=bb, spacing_m=osm_spacing_m, name=name)
    pictures = client.search(bb, max_items=max_items)
    errors: dict[str, str] = {}
    wanted = [p for p in pictures if validate_picture(p, check_image=False) is None]  # others: reported by the build
    for p in counted(progress, "download pictures", wanted):
        try:
            client.fetch(p)
        except PanoramaxError as e:
            errors[p.id] = str(e)
    return finish_city(pictures, osm_city, osm_path, name, api=client.api, asset=client.asset, bbox=bb,
                       spacing_m=spacing_m, max_items=max_items, osm_spacing_m=osm_spacing_m, download_errors=errors,
                       downloads=asdict(client.stats), image_dir=client.cache_dir, **options)


def finish_city(pictures: Sequence[Picture], osm_city: City, osm_path: str | Path, name: str, *, api: str, asset: str,
                bbox: Sequence[float], spacing_m: float, max_items: int | None, osm_spacing_m: float,
                download_errors: dict[str, str], downloads: dict[str, int], image_dir: str | Path,
                **options: Any) -> City:
    """The pose graph of searched (and downloaded) ``pictures`` with its report and imagery: the last step of
    :func:`build_city_from_panoramax`, shared with the rebuild of a frozen suite's city from its pinned pictures
    (:mod:`.pins`), so that both write the same city.

    ``pictures`` in search order (``extra.panoramax.searched`` records their ids); ``download_errors`` and
    ``downloads`` (the client's :class:`~.client.DownloadStats` as a dict) go into the report as they are;
    ``image_dir`` holds the files (the imagery root). Raises as :func:`build_pose_graph`.
    """
    from urbanarena.hashing import file_sha256

    src = {"instance": api, "bbox": [float(v) for v in bbox], "asset": asset,
           "osm_file": str(Path(osm_path)), "osm_sha256": file_sha256(Path(osm_path))}
    city = build_pose_graph(pictures, osm_city, spacing_m=spacing_m, name=name, source=src, **options)
    rep = city.meta.extra["panoramax"]
    rep["download_errors"] = dict(download_errors)
    rep["downloads"] = dict(downloads)
    # what a rebuild needs to search and build the same city (urbanarena tasks fetch, docs/real-imagery.md)
    rep["searched"] = [p.id for p in pictures]
    rep["max_items"] = max_items
    rep["osm_spacing_m"] = float(osm_spacing_m)
    attach_panoramax_imagery(city, image_dir)
    return city

__all__ = ["BuildIssue", "build_city_from_panoramax", "finish_city", "ISSUE_KINDS", "PanoramaxInputWarning", "SOURCE_KIND", "attach_panoramax_imagery",
           "build_pose_graph", "licence_table", "remap_annotations", "validate_picture"]
