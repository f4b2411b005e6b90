"""Signal and sign poles moved from the carriageway to the kerb (``photo`` style; issue 24).

OpenStreetMap maps a junction's ``highway=traffic_signals`` (and many ``traffic_sign`` and ``bus_stop`` nodes) as
a node *on* the road's centreline, so the realistic style stands the pole in the middle of the lane: in the
default city 131 of 135 signals and 223 of 1,573 signs. Real poles stand on the kerb. The photo style moves
each such object (:data:`KINDS`) whose position lies inside a carriageway (a ``road`` of the scene, within
``width_m / 2`` of its centreline) to that road's kerb, :data:`KERB_OUT_M` beyond the half-width, along the
centreline's normal at the nearest point, on the side the node already lies (the right-hand side of the way's
direction when it lies within :data:`CENTRE_M` of the centreline; traffic keeps to the right in the cities we
build). The objects' triangles (``meshes.objects``, found by their feature index) are shifted by that offset,
so the ID pass sees them where they are drawn. Street lamps are not moved (their light at night is placed by
the scene's position). Ours, not measured.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

#: bumped when the moves change pixels (the photo style's render identity)
KERBSIDE_VERSION = "photo-kerbside-1"
KINDS = frozenset({"traffic_signals", "traffic_sign", "bus_stop"})
KERB_OUT_M = 0.5
CENTRE_M = 0.3
#: a node farther than this from every road centreline is left alone (m)
SEARCH_M = 20.0


def kerb_moves(scene) -> dict[str, tuple[float, float]]:
    """``{object id: (dx_m, dy_m)}`` of the objects of :data:`KINDS` that stand inside a carriageway of
    ``scene`` (module docstring); objects elsewhere are not in it."""
    from shapely.geometry import LineString, Point
    from shapely.strtree import STRtree

    from urbanarena.render.scene3d.photo_placement import line_normal_at

    roads = [r for r in scene.roads if r.kind == "road"]
    if not roads:
        return {}
    lines = [LineString(r.centreline) for r in roads]
    tree = STRtree(lines)
    moves = {}
    for o in scene.objects:
        if o.kind not in KINDS:
            continue
        p = Point(o.x_m, o.y_m)
        near = [int(i) for i in tree.query(p.buffer(SEARCH_M))]
        inside = [i for i in near if lines[i].distance(p) < roads[i].width_m / 2]
        if not inside:
            continue
        i = min(inside, key=lambda j: lines[j].distance(p))
        c, left = line_normal_at(lines[i], p)
        side = float(np.dot([o.x_m - c[0], o.y_m - c[1]], left))
        sign = -1.0 if abs(side) < CENTRE_M else float(np.sign(side))   # on the centre: the right-hand kerb
        target = c + sign * (roads[i].width_m / 2 + KERB_OUT_M) * left
        moves[o.id] = (float(target[0] - o.x_m), float(target[1] - o.y_m))
    return moves


def with_kerbside(meshes, scene):
    """``meshes`` with the objects of :func:`kerb_moves` shifted in ``objects`` (a new mesh; the input's
    arrays untouched)."""
    moves = kerb_moves(scene)
    obj = meshes.objects
    if not moves or obj.feature is None or not obj.n_triangles:
        return meshes
    index = {fid: k for k, (kind, fid) in enumerate(meshes.features, 1) if kind == "object"}
    shift = np.zeros((len(meshes.features) + 1, 3), np.float32)
    for oid, (dx, dy) in moves.items():
        k = index.get(oid)
        if k is not None:
            shift[k, :2] = (dx, dy)
    f = obj.feature.astype(np.int64)
    f = np.where((f >= 0) & (f < len(shift)), f, 0)
    return replace(meshes, objects=replace(obj, positions=obj.positions + shift[f]))
