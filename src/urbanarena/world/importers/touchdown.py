"""Touchdown / StreetLearn street-view graph importer (``--city touchdown:DIR``).

Source format (Chen et al. 2019, "Touchdown", CVPR; repository
``lil-lab/touchdown``, ``graph/``; the same files ship with map2seq's VLN code):

``nodes.txt`` (or ``nodes.txt.gz``), one panorama per line::

    panoid,pano_yaw_angle,lat,lng

* ``panoid``: StreetLearn panorama id (string, no commas).
* ``pano_yaw_angle``: compass heading of the panorama, degrees (integers in
  the release). Touchdown's reference navigator rotates a panorama feature map
  by ``157.5 + pano_yaw_angle - heading`` so that its centre faces ``heading``.
* ``lat``, ``lng``: WGS84 degrees.

``links.txt`` (or ``links.txt.gz``), one directed link per line::

    start_panoid,heading,end_panoid

* ``heading``: integer degrees clockwise from true north, the direction the
  navigator faces to move along the link. The reference navigator keys a
  node's neighbours by this integer (``neighbors[int(heading)] = end_node``),
  so it is kept exactly as given.

``DIR`` may hold the two files directly or in a ``graph/`` sub-folder (the
layout of the Touchdown repository).

City produced (see :mod:`urbanarena.world.city`):

* node ``heading_deg`` = ``pano_yaw_angle`` wrapped into [0, 360); raw value in
  ``pano_yaw_angle``; ``walkable_headings_raw`` = the node's outgoing link
  headings (ints) **in links-file order** (the reference navigator iterates
  ``neighbors`` in insertion order and breaks ties by it; a node attribute
  keeps that order whatever order edges are stored in); ``walkable_headings_deg``
  = the same as floats.
* edge ``azimuth_deg`` = the link heading as given (what the navigator uses),
  ``link_heading`` = the same as ``int``, ``length_m`` = WGS84 geodesic
  distance between the two panoramas (pyproj ``Geod.inv``, vectorised),
  ``geodesic_azimuth_deg`` = geodesic forward azimuth in [0, 360).

Graph facts (``meta.extra["facts"]``; computed with numpy/scipy): counts,
weak/strong components, out-degree histogram, nodes with fewer than two
outgoing links (never entered under ``touchdown-v1``), non-reciprocal and
zero-length links, link-length summary, and how far link headings are from
the geodesic azimuth (zero-length links excluded). The release: 29,641 nodes,
61,319 links, one component; 214 nodes with a single outgoing link.

Validation: every malformed record raises :class:`~urbanarena.errors.CityFormatError`
naming the file and the line: wrong column count, empty panoid or one holding a
control or bidirectional-formatting character (:mod:`urbanarena.world.node_ids`), non-numeric,
NaN/infinite or out-of-range lat ([-90, 90]), lng ([-180, 180]) or yaw
([-360, 360], then wrapped), non-integer or out-of-range
([0, 360)) link heading, duplicate panoid, link to or from an unknown panoid,
self-link, duplicate link (same start and end, or same start and heading —
the reference navigator would silently overwrite the earlier one), a panorama
without any link, empty file, truncated gzip stream, non-UTF-8 text, missing
file. Blank lines are skipped.

Licence: the Touchdown dataset (graph included) is CC BY 4.0.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from pathlib import Path
from typing import Iterator

import networkx as nx
import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from urbanarena.errors import CityFormatError, DataFormatError
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import WGS84_GEOD, LocalFrame, wrap_deg
from urbanarena.world.node_ids import check_node_id

KIND = "touchdown"
NL = b"\n"

LICENCE = "CC-BY-4.0"
ATTRIBUTION = (
    "Touchdown street-view graph (c) 2018 Howard Chen, Alane Suhr, Dipendra Misra, Noah Snavely, "
    "Yoav Artzi: 'Touchdown: Natural Language Navigation and Spatial Reasoning in Visual Street "
    "Environments', CVPR 2019 (github.com/lil-lab/touchdown), licensed CC BY 4.0 "
    "(creativecommons.org/licenses/by/4.0/); panoramas from Google StreetLearn (Mirowski et al. 2018)."
)


def _find(path: Path, stem: str) -> Path:
    """The ``<stem>.txt`` or ``<stem>.txt.gz`` file in ``path`` or ``path/graph``."""
    for d in (path, path / "graph"):
        plain, gz = d / f"{stem}.txt", d / f"{stem}.txt.gz"
        if plain.is_file() and gz.is_file():
            raise CityFormatError(d, None, f"both {plain.name} and {gz.name} present; keep one")
        if plain.is_file():
            return plain
        if gz.is_file():
            return gz
    raise CityFormatError(path, None, f"{stem}.txt or {stem}.txt.gz not found (also looked in graph/)")


def source_files(path: str | Path) -> list[Path]:
    """The node and link files of a Touchdown graph directory (hashed for the import cache).

    Raises:
        CityFormatError: a file is missing (or present both plain and gzipped).
    """
    p = Path(path)
    if not p.is_dir():
        raise CityFormatError(p, None, "not a directory (expected one holding nodes.txt[.gz] and links.txt[.gz])")
    return [_find(p, "nodes"), _find(p, "links")]


def read_text_lines(path: Path, error: type[DataFormatError] = CityFormatError) -> list[str]:
    """All lines of a plain or gzipped (``*.gz``) UTF-8 text file.

    A gzip stream is decompressed with :mod:`zlib` so that a truncated file
    can be reported at the first line it cuts (or loses); concatenated gzip
    members are read in turn.

    Raises:
        ``error`` (a :class:`DataFormatError` subclass): missing/unreadable
        file; corrupt gzip data (``line 1`` if the header is bad, else the
        line where decompression failed); truncated gzip stream (the first
        incomplete line); non-UTF-8 text (the line of the bad byte).
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise error(path, None, "file not found") from e
    except OSError as e:
        raise error(path, None, f"cannot read file: {e}") from e
    if path.name.endswith(".gz"):
        chunks: list[bytes] = []
        rest = raw
        while True:
            d = zlib.decompressobj(wbits=31)
            try:
                chunks.append(d.decompress(rest))
            except zlib.error as e:
                done = b"".join(chunks)
                raise error(path, f"line {done.count(NL) + 1}", f"corrupt gzip data: {e}") from e
            if not d.eof:
                done = b"".join(chunks) + d.flush()
                raise error(
                    path, f"line {done.count(NL) + 1}",
                    f"truncated gzip stream: the file ends after {len(done)} decompressed bytes",
                )
            rest = d.unused_data.lstrip(b"\0")
            if not rest:
                break
        raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(path, f"line {raw.count(NL, 0, e.start) + 1}", f"not UTF-8 text: {e.reason}") from None
    return text.splitlines()


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` for each non-blank line (1-based numbers)."""
    for n, line in enumerate(read_text_lines(path), 1):
        s = line.strip()
        if s:
            yield n, [x.strip() for x in s.split(",")]


def _number(path: Path, lineno: int, name: str, text: str, lo: float, hi: float) -> float:
    try:
        v = float(text)
    except ValueError:
        raise CityFormatError(path, f"line {lineno}", f"{name} {text!r} is not a number") from None
    if not math.isfinite(v):
        raise CityFormatError(path, f"line {lineno}", f"{name} {text!r} is not finite")
    if not lo <= v <= hi:
        raise CityFormatError(path, f"line {lineno}", f"{name} {v} outside [{lo}, {hi}]")
    return v


def import_city(path: str | Path) -> City:
    """Import a Touchdown/StreetLearn graph directory as a :class:`City`.

    Args:
        path: directory holding ``nodes.txt[.gz]`` and ``links.txt[.gz]`` (or a
            ``graph/`` sub-folder with them).
    Returns:
        City named ``"touchdown"``; node/edge attributes as in the module
        docstring; ``meta.extra["facts"]`` holds graph facts (counts,
        components, out-degree histogram, nodes with < 2 outgoing links,
        non-reciprocal links, link lengths and link-heading vs geodesic-azimuth
        differences).
    Raises:
        CityFormatError: any malformed input (file and line named).
    """
    p = Path(path)
    nodes_path, links_path = source_files(p)

    # ------------------------------------------------------------ nodes
    ids: list[str] = []
    index: dict[str, int] = {}
    node_line: list[int] = []
    yaw: list[float] = []
    lats: list[float] = []
    lons: list[float] = []
    for n, f in _lines(nodes_path):
        if len(f) != 4:
            raise CityFormatError(nodes_path, f"line {n}", f"expected 4 columns panoid,pano_yaw_angle,lat,lng, got {len(f)}")
        pid = f[0]
        if not pid:
            raise CityFormatError(nodes_path, f"line {n}", "empty panoid")
        check_node_id(pid, nodes_path, f"line {n}")
        if pid in index:
            raise CityFormatError(nodes_path, f"line {n}", f"duplicate panoid {pid!r} (first on line {node_line[index[pid]]})")
        y = _number(nodes_path, n, "pano_yaw_angle", f[1], -360.0, 360.0)
        la = _number(nodes_path, n, "lat", f[2], -90.0, 90.0)
        lo = _number(nodes_path, n, "lng", f[3], -180.0, 180.0)
        index[pid] = len(ids)
        ids.append(pid)
        node_line.append(n)
        yaw.append(y)
        lats.append(la)
        lons.append(lo)
    if not ids:
        raise CityFormatError(nodes_path, "line 1", "empty file: no nodes")

    # ------------------------------------------------------------ links
    src: list[int] = []
    dst: list[int] = []
    heads: list[int] = []
    by_pair: dict[tuple[int, int], int] = {}
    by_heading: dict[tuple[int, int], int] = {}
    for n, f in _lines(links_path):
        if len(f) != 3:
            raise CityFormatError(links_path, f"line {n}", f"expected 3 columns start_panoid,heading,end_panoid, got {len(f)}")
        a, h_txt, b = f
        ia = index.get(a)
        if ia is None:
            raise CityFormatError(links_path, f"line {n}", f"unknown start panoid {a!r} (not in {nodes_path.name})")
        ib = index.get(b)
        if ib is None:
            raise CityFormatError(links_path, f"line {n}", f"unknown end panoid {b!r} (not in {nodes_path.name})")
        try:
            h = int(h_txt)
        except ValueError:
            raise CityFormatError(links_path, f"line {n}", f"heading {h_txt!r} is not an integer") from None
        if not 0 <= h < 360:
            raise CityFormatError(links_path, f"line {n}", f"heading {h} outside [0, 360)")
        if ia == ib:
            raise CityFormatError(links_path, f"line {n}", f"self-link on {a!r}")
        prev = by_pair.get((ia, ib))
        if prev is not None:
            raise CityFormatError(links_path, f"line {n}", f"duplicate link {a!r} -> {b!r} (first on line {prev})")
        prev = by_heading.get((ia, h))
        if prev is not None:
            raise CityFormatError(
                links_path, f"line {n}", f"duplicate heading {h} out of {a!r} (first on line {prev}); the navigator keys links by heading"
            )
        by_pair[(ia, ib)] = n
        by_heading[(ia, h)] = n
        src.append(ia)
        dst.append(ib)
        heads.append(h)
    if not src:
        raise CityFormatError(links_path, "line 1", "empty file: no links")

    src_a = np.asarray(src, dtype=np.int64)
    dst_a = np.asarray(dst, dtype=np.int64)
    linked = np.zeros(len(ids), dtype=bool)
    linked[src_a] = True
    linked[dst_a] = True
    if not linked.all():
        i = int(np.flatnonzero(~linked)[0])
        raise CityFormatError(nodes_path, f"line {node_line[i]}", f"panorama {ids[i]!r} has no link in {links_path.name}")

    # ------------------------------------------------------------ geometry (vectorised)
    lat_a = np.asarray(lats)
    lon_a = np.asarray(lons)
    fwd_az, _, dist = WGS84_GEOD.inv(lon_a[src_a], lat_a[src_a], lon_a[dst_a], lat_a[dst_a])
    geo_az = np.mod(fwd_az, 360.0)
    geo_az[geo_az >= 360.0] = 0.0
    frame = LocalFrame.centred_on(lat_a, lon_a)
    xs, ys = frame.to_xy(lat_a, lon_a)

    # ------------------------------------------------------------ graph
    out_headings: list[list[int]] = [[] for _ in ids]
    for ia, h in zip(src, heads):
        out_headings[ia].append(h)
    g = nx.DiGraph()
    g.add_nodes_from(
        (
            pid,
            {
                "lat": lats[i],
                "lon": lons[i],
                "x_m": float(xs[i]),
                "y_m": float(ys[i]),
                "heading_deg": wrap_deg(yaw[i]),
                "pano_yaw_angle": int(yaw[i]) if float(yaw[i]).is_integer() else yaw[i],
                "walkable_headings_raw": out_headings[i],
                "walkable_headings_deg": [float(h) for h in out_headings[i]],
            },
        )
        for i, pid in enumerate(ids)
    )
    dist_l = dist.tolist()
    geo_l = geo_az.tolist()
    g.add_edges_from(
        (
            ids[ia],
            ids[ib],
            {"azimuth_deg": float(h), "link_heading": h, "length_m": d, "geodesic_azimuth_deg": ga},
        )
        for ia, ib, h, d, ga in zip(src, dst, heads, dist_l, geo_l)
    )

    # ------------------------------------------------------------ facts
    outdeg = np.bincount(src_a, minlength=len(ids))
    pairs = set(zip(src, dst))
    non_reciprocal = sum(1 for a, b in pairs if (b, a) not in pairs)
    adj = coo_matrix((np.ones(len(src)), (src_a, dst_a)), shape=(len(ids), len(ids))).tocsr()
    weak, _ = connected_components(adj, directed=True, connection="weak")
    strong, _ = connected_components(adj, directed=True, connection="strong")
    d_az = np.abs(np.asarray(heads, dtype=float) - geo_az)
    d_az = np.minimum(d_az, 360.0 - d_az)[dist > 0.0]
    facts = {
        "nodes": len(ids),
        "links": len(src),
        "components": int(weak),
        "strong_components": int(strong),
        "out_degree_histogram": {str(k): int(v) for k, v in sorted(Counter(outdeg.tolist()).items())},
        "nodes_fewer_than_2_out_links": int((outdeg < 2).sum()),
        "nodes_without_out_links": int((outdeg == 0).sum()),
        "non_reciprocal_links": int(non_reciprocal),
        "zero_length_links": int((dist == 0.0).sum()),
        "link_length_m": {
            "min": float(dist.min()),
            "median": float(np.median(dist)),
            "max": float(dist.max()),
            "total": float(dist.sum()),
        },
        # zero-length links have no defined geodesic azimuth (pyproj gives 180)
        "link_heading_vs_geodesic_azimuth_deg": {
            "median": float(np.median(d_az)),
            "p95": float(np.percentile(d_az, 95)),
            "max": float(d_az.max()),
        },
        "bbox": [float(lon_a.min()), float(lat_a.min()), float(lon_a.max()), float(lat_a.max())],
    }
    meta = CityMeta(
        name="touchdown",
        source={
            "kind": KIND,
            "files": [nodes_path.name, links_path.name],
            "dataset": "Touchdown (Chen et al. 2019) / StreetLearn Manhattan graph",
        },
        licence=LICENCE,
        attribution=ATTRIBUTION,
        imagery=None,
        extra={"facts": facts},
    )
    return City(g, meta, frame=frame)
