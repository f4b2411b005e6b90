"""Synthetic inputs of the benchmarks, built here so that ``urbanarena bench`` needs no data.

* :func:`synthetic_panorama` — an equirectangular RGB image with sky, ground and
  facades of random colour and height (deterministic per seed): a panorama
  whose JPEG size and view content are closer to a photograph than noise or a
  flat colour;
* :func:`street_city` — a straight north-running street of ``n_nodes`` pose
  nodes 10 m apart with one panorama file per node (the imagery the sweep's
  arena episodes look at);
* :func:`street_grid_records` — the node and edge records of a street grid
  (``k`` x ``k`` intersections, blocks of ``segments`` 10 m segments, pose
  nodes every 10 m, two-way streets), written as a saved city by
  :func:`save_grid_city`: ``k = 230`` gives 1,000,960 nodes (the synthetic
  city-scale graph; 2,106,800 directed edges), ``k = 40`` 29,680 nodes (Touchdown's scale: 29,641);
* :func:`render_district` — a 6 x 6 block district for the 3D renderer
  (buildings with shop signs, roads, crossings, trees, lamps), with pose nodes
  every 10 m along its streets (moved here from ``benchmarks/bench_render.py``).
"""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

#: WGS84 origin of the synthetic cities (central Helsinki; any origin works)
ORIGIN_LAT, ORIGIN_LON = 60.17, 24.94
#: metres between consecutive pose nodes along a synthetic street
NODE_SPACING_M = 10.0


def synthetic_panorama(width: int = 2048, height: int = 1024, seed: int = 0) -> np.ndarray:
    """An equirectangular RGB uint8 panorama ``(height, width, 3)`` (see the module docstring).

    Raises: ``ValueError`` unless ``width == 2 * height`` and ``height >= 8``.
    """
    if width != 2 * height or height < 8:
        raise ValueError(f"panorama must be 2:1 and at least 16x8 px, got {width}x{height}")
    rng = np.random.default_rng(seed)
    rows = np.arange(height, dtype=np.float32)[:, None]
    img = np.empty((height, width, 3), np.float32)
    horizon = height // 2
    sky = np.clip(rows[:horizon] / horizon, 0, 1)
    img[:horizon] = np.stack([110 + 90 * sky, 150 + 70 * sky, 220 + 20 * sky], -1)
    img[horizon:] = np.array([95.0, 95.0, 100.0], np.float32)
    x = 0
    while x < width:  # facades: random width, height and colour, windows as darker bands
        w = int(rng.integers(width // 40, width // 12))
        top = horizon - int(rng.integers(height // 10, height // 3))
        colour = rng.integers(60, 230, 3).astype(np.float32)
        img[top:horizon, x:x + w] = colour
        for wy in range(top + 6, horizon - 6, 14):
            img[wy:wy + 6, x + 4:x + w - 4] = colour * 0.45
        x += w
    img += rng.normal(0.0, 6.0, img.shape).astype(np.float32)  # sensor-like grain
    return np.clip(img, 0, 255).astype(np.uint8)


def _frame():
    from urbanarena.world.geo import LocalFrame

    return LocalFrame(ORIGIN_LAT, ORIGIN_LON)


def street_city(root: str | Path, n_nodes: int = 16, pano_width: int = 2048, name: str = "bench-street"):
    """A straight street with panoramas: nodes ``n00`` (0, 0) .. ``n{n-1}`` (0, 10 (n-1)) m, two-way edges.

    Writes one JPEG panorama per node (:func:`synthetic_panorama`, seed = node index) under
    ``root/panos`` and attaches the folder as the city's imagery (node heading 0: the panorama
    centre faces north, along the street). Returns the :class:`~urbanarena.world.city.City`.
    """
    from PIL import Image

    from urbanarena.world.city import City, CityMeta
    from urbanarena.world.imagery import attach_panorama_folder

    frame = _frame()
    g = nx.DiGraph()
    for i in range(n_nodes):
        lat, lon = frame.to_latlon(0.0, NODE_SPACING_M * i)
        g.add_node(f"n{i:02d}", lat=float(lat), lon=float(lon), heading_deg=0.0, walkable_headings_raw=None,
                   walkable_headings_deg=None)
    for i in range(n_nodes - 1):
        g.add_edge(f"n{i:02d}", f"n{i + 1:02d}", azimuth_deg=0.0, length_m=NODE_SPACING_M)
        g.add_edge(f"n{i + 1:02d}", f"n{i:02d}", azimuth_deg=180.0, length_m=NODE_SPACING_M)
    city = City(g, CityMeta(name=name, licence="CC0-1.0", source={"kind": "synthetic"}), frame=frame)
    folder = Path(root) / "panos"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_nodes):
        Image.fromarray(synthetic_panorama(pano_width, pano_width // 2, seed=i)).save(
            folder / f"n{i:02d}.jpg", quality=90)
    return attach_panorama_folder(city, folder, "{node}.jpg", licence="CC0-1.0", redistributable=True,
                                  source="synthetic")


def street_grid_size(k: int, segments: int = 10) -> tuple[int, int]:
    """``(nodes, directed edges)`` of :func:`street_grid_records` for ``k`` x ``k`` intersections.

    Each of the ``2 k`` streets has ``L = (k - 1) segments + 1`` nodes; the ``k^2`` intersections are
    shared, so nodes = ``2 k L - k^2``; every street has ``L - 1`` two-way segments, so directed
    edges = ``2 * 2 k (L - 1)``.
    """
    L = (k - 1) * segments + 1
    return 2 * k * L - k * k, 4 * k * (L - 1)


def street_grid_records(k: int, segments: int = 10) -> dict[str, list[dict[str, Any]]]:
    """Saved-city records (:meth:`~urbanarena.world.city.City.to_records` layout) of a street grid.

    Streets run east-west (``y = 100 j`` m) and north-south (``x = 100 i`` m) for ``segments = 10``;
    pose nodes every :data:`NODE_SPACING_M` along them; node ids ``"x,y"`` in 10 m units; edges both
    ways with ``azimuth_deg`` 0/90/180/270 and ``length_m`` 10. Sizes: :func:`street_grid_size`.

    Raises: ``ValueError`` for ``k < 2`` or ``segments < 1``.
    """
    if k < 2 or segments < 1:
        raise ValueError(f"street grid needs k >= 2 and segments >= 1, got k={k}, segments={segments}")
    frame = _frame()
    L = (k - 1) * segments + 1
    along = np.arange(L)
    lines = np.arange(k) * segments
    # every node (a, b) in 10 m units: on a horizontal street (b in lines) or a vertical one (a in lines)
    horiz = np.stack(np.meshgrid(along, lines, indexing="xy"), -1).reshape(-1, 2)  # (a, b) with b on a line
    vert = np.stack(np.meshgrid(lines, along, indexing="xy"), -1).reshape(-1, 2)
    vert = vert[vert[:, 1] % segments != 0]  # intersections already in horiz
    ab = np.concatenate([horiz, vert])
    lat, lon = frame.to_latlon(ab[:, 0] * NODE_SPACING_M, ab[:, 1] * NODE_SPACING_M)
    ids = [f"{a},{b}" for a, b in ab.tolist()]
    # keys in sorted order, so compact JSON of the records is already the content-hash text
    nodes = [{"heading_deg": None, "id": i, "lat": la, "lon": lo, "walkable_headings_deg": None,
              "walkable_headings_raw": None}
             for i, la, lo in zip(ids, np.round(lat, 9).tolist(), np.round(lon, 9).tolist())]
    edges = []
    for b in lines.tolist():  # east-west streets
        for a in range(L - 1):
            u, v = f"{a},{b}", f"{a + 1},{b}"
            edges.append({"azimuth_deg": 90.0, "length_m": NODE_SPACING_M, "source": u, "target": v})
            edges.append({"azimuth_deg": 270.0, "length_m": NODE_SPACING_M, "source": v, "target": u})
    for a in lines.tolist():  # north-south streets
        for b in range(L - 1):
            u, v = f"{a},{b}", f"{a},{b + 1}"
            edges.append({"azimuth_deg": 0.0, "length_m": NODE_SPACING_M, "source": u, "target": v})
            edges.append({"azimuth_deg": 180.0, "length_m": NODE_SPACING_M, "source": v, "target": u})
    # edges grouped by source in node order (stable): the order a loaded City's records have, so the saved
    # file, its reload and the content hash agree
    index = {n: i for i, n in enumerate(ids)}
    edges.sort(key=lambda e: index[e["source"]])
    return {"edges": edges, "nodes": nodes}


def grid_city(root: str | Path, k: int = 3, segments: int = 3, pano_width: int = 2048, n_panoramas: int = 4,
              name: str = "bench-grid-imagery"):
    """A small :func:`street_grid_records` city with imagery: ``k`` x ``k`` intersections, junctions
    with branch arrows. ``n_panoramas`` distinct panoramas (JPEG under ``root/panos``) are assigned to
    the nodes in turn; node heading 0 (panorama centre north). Returns the City."""
    from PIL import Image

    from urbanarena.world.city import City, CityMeta
    from urbanarena.world.imagery import attach_panorama_folder

    rec = street_grid_records(k, segments)
    g = nx.DiGraph()
    for r in rec["nodes"]:
        g.add_node(r["id"], **{**{k2: v for k2, v in r.items() if k2 != "id"}, "heading_deg": 0.0})
    for e in rec["edges"]:
        g.add_edge(e["source"], e["target"], azimuth_deg=e["azimuth_deg"], length_m=e["length_m"])
    city = City(g, CityMeta(name=name, licence="CC0-1.0", source={"kind": "synthetic"}), frame=_frame())
    folder = Path(root) / "panos"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_panoramas):
        Image.fromarray(synthetic_panorama(pano_width, pano_width // 2, seed=100 + i)).save(
            folder / f"p{i}.jpg", quality=90)
    files = {n: f"p{i % n_panoramas}.jpg" for i, n in enumerate(g.nodes)}
    return attach_panorama_folder(city, folder, files=files, licence="CC0-1.0", redistributable=True,
                                  source="synthetic")


def save_grid_city(directory: str | Path, k: int, segments: int = 10, name: str = "bench-grid") -> Path:
    """Write :func:`street_grid_records` as a saved city (``docs/city-format.md``) without building a
    :class:`~urbanarena.world.city.City` first (so writing a 1,000,000-node city stays cheap).

    ``content_hash`` in ``city.json`` is computed as :attr:`City.content_hash` defines it (sha256 of the
    records as compact JSON with sorted keys), so ``load_city(directory)`` verifies. Returns the directory.
    """
    import hashlib

    from urbanarena.world.city_io import FORMAT_ID, FORMAT_VERSION, GRAPH_FILE, META_FILE

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    records = street_grid_records(k, segments)
    # the records' keys are already sorted at every level, so this text is also the content-hash text
    blob = json.dumps(records, separators=(",", ":"), allow_nan=False).encode()
    n_nodes, n_edges = len(records["nodes"]), len(records["edges"])
    del records
    content_hash = hashlib.sha256(blob).hexdigest()
    with gzip.open(d / GRAPH_FILE, "wb", compresslevel=1) as f:
        f.write(blob)
    del blob
    meta = {"format": FORMAT_ID, "format_version": FORMAT_VERSION, "name": name, "content_hash": content_hash,
            "origin": {"lat": ORIGIN_LAT, "lon": ORIGIN_LON}, "frame": "aeqd (x east, y north, metres)",
            "counts": {"nodes": n_nodes, "edges": n_edges},
            "source": {"kind": "synthetic", "street_grid": {"k": k, "segments": segments}},
            "licence": "CC0-1.0", "attribution": None, "imagery": None, "extra": {}}
    (d / META_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return d


def render_district(n: int = 6):
    """An ``n`` x ``n`` (default 6 x 6) grid of 80 m blocks for the 3D renderer; returns ``(city, scene)``.

    Perimeter buildings (40 x 16 m, 12-21 m tall) with two named shops each, 8 m roads with 2.5 m
    sidewalks, crossings at every intersection, trees / lamps / signs / benches every 15 m on both
    sides; pose nodes every 10 m along the road centrelines (about the density of central Helsinki).
    """
    from urbanarena.render.scene3d.scene import (
        OSM_ATTRIBUTION, Building, Crosswalk, Poi, Road, Scene, StreetObject,
    )
    from urbanarena.world.city import City, CityMeta

    block, street = 80.0, 14.0
    pitch = block + street
    buildings, pois, objects, roads, cws = [], [], [], [], []
    words = ["Kahvila", "Apteekki", "Kirja", "Ravintola", "Kukka", "Optikko", "Parturi", "Leipomo", "Sushi", "Pizzeria"]
    k = 0
    for i in range(n):
        for j in range(n):
            x0, y0 = i * pitch, j * pitch
            for side in range(4):
                for part in range(2):
                    if side in (0, 1):
                        bx = x0 + part * 40.0
                        by = y0 if side == 0 else y0 + block - 16.0
                        fp = [(bx, by), (bx + 40, by), (bx + 40, by + 16), (bx, by + 16)]
                        fx, fy, hint = bx + 20, by if side == 0 else by + 16, 180.0 if side == 0 else 0.0
                    else:
                        bx = x0 if side == 2 else x0 + block - 16.0
                        by = y0 + 16 + part * 24.0
                        fp = [(bx, by), (bx + 16, by), (bx + 16, by + 24), (bx, by + 24)]
                        fx, fy, hint = (bx, by + 12, 270.0) if side == 2 else (bx + 16, by + 12, 90.0)
                    bid = f"b{i}_{j}_{side}_{part}"
                    buildings.append(Building(bid, fp, 12.0 + 3.0 * ((i + j + side) % 4)))
                    for q in range(2):
                        off = (q - 0.5) * 12.0
                        px, py = (fx + off, fy) if side in (0, 1) else (fx, fy + off / 2)
                        pois.append(Poi(f"p{k}", f"{words[k % len(words)]} {k}", "shop", px, py, bid, hint))
                        k += 1
    for i in range(n + 1):
        c = i * pitch - street / 2
        roads.append(Road(f"rx{i}", [(c, -street), (c, n * pitch)], 8.0, 2.5))
        roads.append(Road(f"ry{i}", [(-street, c), (n * pitch, c)], 8.0, 2.5))
        for j in range(n + 1):
            cws.append(Crosswalk(f"c{i}_{j}", c, j * pitch - street / 2 + 7.0, 0.0, 8.0))
    m = 0
    for r in roads:
        (ax, ay), (bx, by) = r.centreline
        length = math.hypot(bx - ax, by - ay)
        ux, uy = (bx - ax) / length, (by - ay) / length
        for t in range(5, int(length), 15):
            for s in (-1, 1):
                x, y = ax + ux * t + s * uy * 5.5, ay + uy * t - s * ux * 5.5
                kind = ("tree", "street_lamp", "traffic_sign", "bench", "tree")[m % 5]
                objects.append(StreetObject(f"o{m}", kind, x, y))
                m += 1
    scene = Scene("synthetic-grid", tuple(buildings), tuple(pois), tuple(objects), tuple(roads), tuple(cws),
                  attribution=OSM_ATTRIBUTION)
    frame = _frame()
    g = nx.DiGraph()
    for r in roads:
        (ax, ay), (bx, by) = r.centreline
        length = math.hypot(bx - ax, by - ay)
        for t in range(0, int(length) + 1, 10):
            x, y = ax + (bx - ax) * t / length, ay + (by - ay) * t / length
            lat, lon = frame.to_latlon(x, y)
            g.add_node(f"{r.id}_{t}", lat=float(lat), lon=float(lon), x_m=x, y_m=y, heading_deg=0.0,
                       walkable_headings_raw=None, walkable_headings_deg=None)
    return City(g, CityMeta(name="synthetic-grid", attribution=OSM_ATTRIBUTION), frame=frame), scene


def cpu_count() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
