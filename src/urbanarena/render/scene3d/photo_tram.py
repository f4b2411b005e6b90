"""The ``photo`` style's tram (issue 24, "the most obvious giveaway": the realistic style's white box with a green
band): a procedural section of Helsinki's low-floor articulated tram, drawn in place of the box meshes by
:mod:`.population_photo`. Photo style only; ``flat`` and ``realistic`` keep :mod:`.population_meshes`' boxes.

A section is built once per ``(pantograph, cab at +y, cab at -y)`` (:func:`section_mesh`) in the local frame of the
box templates: x right, y forward (the placement's heading), z up from the rail head, metres, at the reference size
:data:`LENGTH_M` x :data:`WIDTH_M` x :data:`HEIGHT_M` (the placements' 9 m x 2.4 m x 3.4 m; a placement of another
size scales it as the boxes).

* **Body**: per side one smooth grid (corner normals from the grid's central differences, so the curved skirt,
  tumblehome and roof shade smoothly): the half cross-section :data:`PROFILE` (``(x, z)`` from the underside's
  centre up the side to the roof's centre) swept along y. Each cell takes its colour and surface class from its
  profile segment (:data:`BANDS`: green skirt and lower body, white sill, the window band, a green frieze, white
  upper body and roof) and its y interval (:func:`side_intervals`: window panes between dark pillars every
  :data:`PANE_M`, and on the right side a double door of glass in dark frames, :data:`DOOR_HALF_M` either side
  of the section's middle).
* **Cab** (at each end with no kept section of the tram beyond it; :func:`cab_ends`): the same grid continues round a
  plan-view corner of radius :data:`CAB_RADIUS_M` into a front face raked back with height (:func:`front_y`: the
  windscreen leans back :data:`RAKE_M` over the window band); the window band there is one wrap-round windscreen
  in a black surround (:data:`CAB_SURROUND_SEGS`).
  A destination display (dark, amber text line) above it and two headlights below it.
* **Inner ends**: a flat cap and a dark bellows :data:`BELLOWS_M` long closing half the 0.3 m gap.
* **Running gear**: a dark bogie frame and four dark wheels (:data:`WHEEL_R_M`, metre gauge) under the middle of
  the section, their lower part showing under the skirt.
* **Roof**: a chamfered equipment box; with ``pantograph`` a single-arm pantograph whose head reaches
  :data:`PAN_TOP_M` (just under the 5.8 m contact wire of :mod:`.photo_wires`).

Surface classes are :mod:`.photo_vehicles`' (paint: clear coat, glass: dark tint reflecting the sky, tyre: the
wheels), so :func:`.photo_vehicles.finish_colours` bakes the same reflections as the cars'; the glass then takes
:func:`glass_colours` (big flat panes mirror more than a car's: at the cars' ``F0`` a tram's side read as one black
band).
"""

from __future__ import annotations

import math

import numpy as np

from urbanarena.render.scene3d import photo_vehicles as PV

#: bumped whenever the tram's geometry or colours change (part of the photo identity)
TRAM_VERSION = "photo-tram-2"
#: draw the procedural tram (``False``: the box meshes, as before)
ENABLED = True
LENGTH_M, WIDTH_M, HEIGHT_M = 9.0, 2.4, 3.4
#: half cross-section (x, z) in metres, underside centre -> skirt -> side -> roof centre
PROFILE = ((0.0, 0.30), (1.08, 0.30), (1.15, 0.34), (1.19, 0.42), (1.20, 0.55), (1.20, 0.98), (1.20, 1.05),
           (1.195, 1.10), (1.16, 2.35), (1.15, 2.45), (1.13, 2.95), (1.06, 3.15), (0.90, 3.30), (0.50, 3.38),
           (0.0, 3.40))
#: livery per profile segment (segment i runs from PROFILE[i] to PROFILE[i + 1])
BANDS = ("under", "green", "green", "green", "green", "white", "white", "window", "frieze", "white", "white",
         "roof", "roof", "roof")
GREEN = (0.02, 0.40, 0.22)
WHITE = (0.86, 0.87, 0.85)
ROOF = (0.74, 0.75, 0.75)
DARK = (0.05, 0.05, 0.055)
PILLAR = (0.06, 0.065, 0.07)
DISPLAY_TEXT = (0.95, 0.62, 0.12)
HEADLIGHT = (0.95, 0.95, 0.9)
GEAR = (0.07, 0.07, 0.075)
PAN = (0.16, 0.16, 0.17)
#: window panes between pillars (metres), pillar width
PANE_M = 1.35
PILLAR_M = 0.1
#: right-side double door: half width (metres) either side of y = 0, its frame width
DOOR_HALF_M = 0.65
DOOR_FRAME_M = 0.06
#: first and last profile segment of a door (0.42 m to 2.35 m above the rail)
DOOR_SEGS = (3, 7)
#: cab: plan corner radius, front at the bumper (y = LENGTH_M / 2), windscreen rake and roof set-back (metres)
CAB_RADIUS_M = 0.55
RAKE_M = 0.35
ROOF_BACK_M = 0.6
CAB_SIDES = 6
#: profile segments drawn black round the windscreen (the sill strip under it, the frieze over it)
CAB_SURROUND_SEGS = (6, 8)
#: where the side's straight sweep stops before a cab (the cab loft starts at front_y - radius >= this)
CAB_START_M = LENGTH_M / 2 - ROOF_BACK_M - CAB_RADIUS_M
BELLOWS_M = 0.15
WHEEL_R_M = 0.34
WHEEL_X_M = 0.5
AXLE_Y_M = 0.95
WHEEL_SIDES = 10
#: pantograph head top (metres above the rail)
PAN_TOP_M = 5.78
#: the glass (:func:`glass_colours`): Fresnel reflectance at normal incidence and the saloon seen through it
GLASS_F0 = 0.3
GLASS_TINT = (0.055, 0.06, 0.065)


def front_y(z: float) -> float:
    """The cab front's y (metres, local) at height ``z``: the bumper tucked 0.1 m at the underside, upright over
    the lower body, leaning back ``RAKE_M`` over the window band, ``ROOF_BACK_M`` at the roof."""
    e = LENGTH_M / 2
    zb, zw0, zw1, zt = 0.42, 1.10, 2.35, PROFILE[-1][1]
    if z < zb:
        return e - 0.1 * (zb - z) / (zb - PROFILE[0][1])
    if z <= zw0:
        return e
    if z <= zw1:
        return e - RAKE_M * (z - zw0) / (zw1 - zw0)
    return e - RAKE_M - (ROOF_BACK_M - RAKE_M) * ((z - zw1) / (zt - zw1)) ** 2


def side_intervals(right: bool, y0: float, y1: float) -> list[tuple[float, float, str]]:
    """``[(y_from, y_to, kind)]`` covering ``[y0, y1]`` (metres) along one side: ``pane``/``pillar`` and, on the
    right side, ``frame``/``door`` cells round y = 0 (module docstring)."""
    cuts: list[tuple[float, float, str]] = []
    if right:
        a, b, f = -DOOR_HALF_M, DOOR_HALF_M, DOOR_FRAME_M
        cuts = [(a - f, a, "frame"), (a, -f / 2, "door"), (-f / 2, f / 2, "frame"), (f / 2, b, "door"),
                (b, b + f, "frame")]
    out: list[tuple[float, float, str]] = []

    def panes(s: float, e: float) -> None:
        if e - s <= 1e-6:
            return
        n = max(1, round((e - s) / PANE_M))
        step = (e - s) / n
        for k in range(n):
            a0, a1 = s + k * step, s + (k + 1) * step
            if k > 0:
                out.append((a0, a0 + PILLAR_M / 2, "pillar"))
                a0 += PILLAR_M / 2
            if k < n - 1:
                out.append((a0, a1 - PILLAR_M / 2, "pane"))
                out.append((a1 - PILLAR_M / 2, a1, "pillar"))
            else:
                out.append((a0, a1, "pane"))

    if cuts and cuts[0][0] > y0 and cuts[-1][1] < y1:
        panes(y0, cuts[0][0])
        out.extend(cuts)
        panes(cuts[-1][1], y1)
    else:
        panes(y0, y1)
    return out


def _cell_look(seg: int, kind: str) -> tuple[tuple[float, float, float], int]:
    """Colour and surface class of a body cell (profile segment ``seg``, interval kind). A door (or its frame)
    spans the segments :data:`DOOR_SEGS` (0.42 m to 2.35 m), its step below is dark, its header the frieze."""
    band = BANDS[seg]
    if band == "under":
        return DARK, PV.OTHER
    if band == "roof":
        return ROOF, PV.PAINT
    if kind in ("door", "frame"):
        if DOOR_SEGS[0] <= seg <= DOOR_SEGS[1]:
            return (PILLAR, PV.OTHER) if kind == "frame" else (GLASS_TINT, PV.GLASS)
        if seg < DOOR_SEGS[0]:
            return DARK, PV.OTHER
        if band == "frieze":
            return PILLAR, PV.OTHER
    if band == "window":
        if kind == "pillar":
            return PILLAR, PV.OTHER
        return GLASS_TINT, PV.GLASS
    if band in ("green", "frieze"):
        return GREEN, PV.PAINT
    return WHITE, PV.PAINT


class _Acc:
    """Triangle accumulator: positions, normals, colours, surface classes (per corner)."""

    def __init__(self) -> None:
        self.p: list[np.ndarray] = []
        self.n: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.k: list[np.ndarray] = []

    def tris(self, p, n, colour, cls) -> None:
        p = np.array(p, np.float64).reshape(-1, 3, 3)
        n = np.array(n, np.float64).reshape(-1, 3, 3)
        geo = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        flip = np.einsum("ij,ij->i", geo, n.sum(axis=1)) < 0   # counter-clockwise seen from outside
        ln = np.linalg.norm(n, axis=2, keepdims=True)
        # unit normals; a corner without one (a grid row collapsed to a point) takes its face's
        face = np.where(flip[:, None], -geo, geo)
        face /= np.maximum(np.linalg.norm(face, axis=1, keepdims=True), 1e-12)
        n = np.where(ln > 1e-9, n / np.maximum(ln, 1e-12), face[:, None, :])
        p[flip] = p[flip][:, ::-1]
        n[flip] = n[flip][:, ::-1]
        self.p.append(p.reshape(-1, 3))
        self.n.append(n.reshape(-1, 3))
        m = len(p) * 3
        self.c.append(np.broadcast_to(np.asarray(colour, np.float64), (m, 3)))
        self.k.append(np.full(m, cls, np.int8))

    def quad(self, a, b, c, d, normal, colour, cls) -> None:
        nn = np.broadcast_to(np.asarray(normal, np.float64), (6, 3))
        self.tris([a, b, c, a, c, d], nn, colour, cls)

    def build(self):
        return (np.concatenate(self.p), np.concatenate(self.n), np.concatenate(self.c), np.concatenate(self.k))


def _grid_normals(G: np.ndarray, centre) -> np.ndarray:
    """Unit corner normals ``(V, U, 3)`` of a surface grid ``G`` ``(V, U, 3)``, turned away from ``centre(G)``."""
    dv = np.gradient(G, axis=0)
    du = np.gradient(G, axis=1)
    n = np.cross(du, dv)
    out = G - centre(G)
    n *= np.where(np.einsum("vui,vui->vu", n, out) < 0, -1.0, 1.0)[..., None]
    return n / np.maximum(np.linalg.norm(n, axis=2, keepdims=True), 1e-12)


def _grid(acc: _Acc, G: np.ndarray, N: np.ndarray, look) -> None:
    """Two triangles per grid cell ``(v, u)`` with ``look(v, u) -> (colour, class)``."""
    for v in range(G.shape[0] - 1):
        for u in range(G.shape[1] - 1):
            col, cls = look(v, u)
            a, b, c, d = G[v, u], G[v, u + 1], G[v + 1, u + 1], G[v + 1, u]
            na, nb, nc, nd = N[v, u], N[v, u + 1], N[v + 1, u + 1], N[v + 1, u]
            acc.tris([a, b, c, a, c, d], [na, nb, nc, na, nc, nd], col, cls)


def _axis_centre(G: np.ndarray) -> np.ndarray:
    c = np.zeros_like(G)
    c[..., 1] = np.clip(G[..., 1], -LENGTH_M / 2 + 1.5, LENGTH_M / 2 - 1.5)
    c[..., 2] = 1.8
    return c


def _body_side(acc: _Acc, sign: float, cab_front: bool, cab_back: bool) -> None:
    """One side (``sign`` +1 right, -1 left) of the body: the swept profile, cab lofts at the cab ends."""
    prof = np.asarray(PROFILE, np.float64)
    y0 = -CAB_START_M if cab_back else -LENGTH_M / 2
    y1 = CAB_START_M if cab_front else LENGTH_M / 2
    cells = side_intervals(sign > 0, y0, y1)
    ys = [cells[0][0]] + [c[1] for c in cells]
    kinds = [c[2] for c in cells]
    cols: list[np.ndarray] = []   # per column (V, 3)

    def arc(end: float) -> tuple[list[np.ndarray], list[str]]:
        out = []
        for j in range(CAB_SIDES + 1):
            t = j / CAB_SIDES * math.pi / 2
            col = []
            for x, z in prof:
                r = min(CAB_RADIUS_M, x)
                col.append((x - r + r * math.cos(t), front_y(z) - r + r * math.sin(t), z))
            out.append(np.array(col))
        out.append(np.array([(0.0, front_y(z), z) for _, z in prof]))
        for c in out:
            c[:, 1] *= end
        return out, ["cab"] * (len(out) - 1)

    straight = [np.stack([prof[:, 0], np.full(len(prof), y), prof[:, 1]], axis=1) for y in ys]
    ck: list[str] = []
    if cab_back:   # columns ordered by increasing y: centre of the front ... arc start, then the straight sweep
        a, k = arc(-1.0)
        cols += a[::-1]
        ck += k + ["cabside"]
    cols += straight
    ck += kinds
    if cab_front:
        a, k = arc(1.0)
        cols += a
        ck += ["cabside"] + k
    G = np.stack(cols, axis=1)   # (V, U, 3)
    G[..., 0] *= sign
    N = _grid_normals(G, _axis_centre)

    def look(v: int, u: int):
        kind = ck[u]
        if kind == "cab" and v in CAB_SURROUND_SEGS:   # the windscreen's black surround
            return PILLAR, PV.OTHER
        if kind in ("cab", "cabside"):
            kind = "pane"
        return _cell_look(v, kind)

    _grid(acc, G, N, look)


def _cap(acc: _Acc, y: float) -> None:
    """Flat end cap (both halves of the profile) at ``y`` and the bellows beyond it."""
    prof = np.asarray(PROFILE, np.float64)
    ring = np.concatenate([prof, prof[::-1][1:] * np.array([-1.0, 1.0])])
    n = (0.0, math.copysign(1.0, y), 0.0)
    c = (0.0, y, 1.8)
    for i in range(len(ring) - 1):
        acc.tris([c, (ring[i][0], y, ring[i][1]), (ring[i + 1][0], y, ring[i + 1][1])], [n] * 3, WHITE, PV.OTHER)
    s = math.copysign(1.0, y)
    _box(acc, (0.0, y + s * BELLOWS_M / 2, 0.45), (2.1, BELLOWS_M + 0.02, 2.6), DARK, PV.OTHER, chamfer=0.1)


def _box(acc: _Acc, at, size, colour, cls, chamfer: float = 0.0) -> None:
    """A box with chamfered top and side edges: base centre ``at`` (x, y, z), ``size`` (x, y, z) metres."""
    cx, cy, z0 = at
    sx, sy, sz = size
    c = min(chamfer, sx / 3, sz / 3)
    hx = sx / 2
    prof = [(-hx, z0), (-hx, z0 + sz - c), (-hx + c, z0 + sz), (hx - c, z0 + sz), (hx, z0 + sz - c), (hx, z0)]
    y0, y1 = cy - sy / 2, cy + sy / 2
    prof = [q for i, q in enumerate(prof) if i == 0 or q != prof[i - 1]]
    for (xa, za), (xb, zb) in zip(prof[:-1], prof[1:]):
        nrm = np.array([zb - za, 0.0, -(xb - xa)])
        nrm = -nrm / np.linalg.norm(nrm)
        acc.quad((cx + xa, y0, za), (cx + xb, y0, zb), (cx + xb, y1, zb), (cx + xa, y1, za), nrm, colour, cls)
    for y, s in ((y0, -1.0), (y1, 1.0)):
        ctr = (cx, y, z0 + sz / 2)
        ring = prof + [prof[0]]
        for (xa, za), (xb, zb) in zip(ring[:-1], ring[1:]):
            acc.tris([ctr, (cx + xa, y, za), (cx + xb, y, zb)], [(0.0, s, 0.0)] * 3, colour, cls)


def _beam(acc: _Acc, a, b, t: float, colour) -> None:
    """A square tube of side ``t`` metres from point ``a`` to ``b`` (open ends)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = (b - a) / np.linalg.norm(b - a)
    up = np.array([1.0, 0.0, 0.0]) if abs(d[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    u = np.cross(d, up)
    u /= np.linalg.norm(u)
    w = np.cross(d, u)
    corners = [(u + w), (-u + w), (-u - w), (u - w)]
    for i in range(4):
        p, q = corners[i] * t / 2, corners[(i + 1) % 4] * t / 2
        nrm = (p + q) / np.linalg.norm(p + q)
        acc.quad(a + p, a + q, b + q, b + p, nrm, colour, PV.OTHER)


def _wheel(acc: _Acc, x: float, y: float) -> None:
    """A wheel (axis along x) of radius ``WHEEL_R_M`` standing on the rail at ``(x, y)``."""
    t = 0.12
    ang = np.linspace(0.0, 2 * math.pi, WHEEL_SIDES + 1)
    for i in range(WHEEL_SIDES):
        ca, sa, cb, sb = math.cos(ang[i]), math.sin(ang[i]), math.cos(ang[i + 1]), math.sin(ang[i + 1])
        pa = (y + WHEEL_R_M * ca, WHEEL_R_M + WHEEL_R_M * sa)
        pb = (y + WHEEL_R_M * cb, WHEEL_R_M + WHEEL_R_M * sb)
        acc.quad((x - t / 2, *pa), (x + t / 2, *pa), (x + t / 2, *pb), (x - t / 2, *pb),
                 (0.0, (ca + cb) / 2, (sa + sb) / 2), PV.TYRE_RGB, PV.TYRE)
        for s in (-1.0, 1.0):
            acc.tris([(x + s * t / 2, y, WHEEL_R_M), (x + s * t / 2, *pa), (x + s * t / 2, *pb)],
                     [(s, 0.0, 0.0)] * 3, PV.TYRE_RGB, PV.TYRE)


def _pantograph(acc: _Acc) -> None:
    """Base frame, insulators, a single arm (lower arm pair, upper arm) and the pan head with horns."""
    roof = PROFILE[-1][1]
    _box(acc, (0.0, 0.0, roof), (1.0, 1.5, 0.1), GEAR, PV.OTHER, chamfer=0.03)
    for sx in (-0.4, 0.4):
        for sy in (-0.6, 0.6):
            _beam(acc, (sx, sy, roof + 0.1), (sx, sy, roof + 0.3), 0.09, ROOF)
    base = roof + 0.3
    _box(acc, (0.0, 0.0, base), (0.9, 1.4, 0.06), PAN, PV.OTHER)
    knee = (0.0, 0.75, base + 1.05)
    for sx in (-0.3, 0.3):
        _beam(acc, (sx, -0.55, base + 0.06), knee, 0.06, PAN)
    head_z = PAN_TOP_M - 0.03
    _beam(acc, knee, (0.0, -0.15, head_z - 0.1), 0.05, PAN)
    for dy in (-0.12, 0.12):
        _beam(acc, (-0.7, -0.15 + dy, head_z), (0.7, -0.15 + dy, head_z), 0.05, PAN)
        for s in (-1.0, 1.0):
            _beam(acc, (s * 0.7, -0.15 + dy, head_z), (s * 0.9, -0.15 + dy, head_z - 0.15), 0.04, PAN)
    _beam(acc, (0.0, -0.15, head_z - 0.1), (0.0, -0.15, head_z - 0.02), 0.05, PAN)


def _cab_details(acc: _Acc, end: float) -> None:
    """Destination display and headlights on the cab front at ``y = end * ...``."""
    def fy(z: float) -> float:
        return end * (front_y(z) + 0.02)

    n = (0.0, end, 0.0)
    for x0, x1, z0, z1, col in ((-0.55, 0.55, 2.5, 2.82, DARK), (-0.42, 0.42, 2.6, 2.7, DISPLAY_TEXT)):
        dz = 0.005 if col is DISPLAY_TEXT else 0.0
        acc.quad((x0, fy(z0) + end * dz, z0), (x1, fy(z0) + end * dz, z0), (x1, fy(z1) + end * dz, z1),
                 (x0, fy(z1) + end * dz, z1), n, col, PV.OTHER)
    for s in (-1.0, 1.0):
        x0, x1 = sorted((s * 0.32, s * 0.58))
        y = fy(0.8)
        acc.quad((x0, y, 0.72), (x1, y, 0.72), (x1, y, 0.84), (x0, y, 0.84), n, HEADLIGHT, PV.OTHER)


def glass_colours(pos: np.ndarray, nrm: np.ndarray, eye: np.ndarray) -> np.ndarray:
    """``(N, 3)`` float64 colours of the tram's glass corners: :func:`.photo_vehicles.finish_colours`' glass
    (Fresnel mix of :func:`.photo_vehicles.environment` over a tint) with the tram's large flat panes' stronger
    reflection :data:`GLASS_F0` over the lighter tint :data:`GLASS_TINT` (a lit saloon behind them).

    Args:
        pos: ``(N, 3)`` world positions (metres, z up); nrm: ``(N, 3)`` unit normals; eye: ``(3,)``.
    """
    v = np.asarray(pos, np.float64) - np.asarray(eye, np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    n = np.asarray(nrm, np.float64)
    vn = np.einsum("ij,ij->i", v, n)
    env = PV.environment(v - 2.0 * vn[:, None] * n)
    f = np.clip(GLASS_F0 + (1.0 - GLASS_F0) * (1.0 - np.clip(-vn, 0.0, 1.0)) ** 5, 0.0, PV.F_MAX)[:, None]
    return (1.0 - f) * np.asarray(GLASS_TINT) + f * env


_CACHE: dict = {}


def section_mesh(pantograph: bool, cab_front: bool, cab_back: bool):
    """``(positions (N, 3), normals (N, 3), colours (N, 3) 0..1, classes (N,) int8)`` of one tram section in the
    local frame (module docstring; metres at the reference size), built once per argument triple; ``N % 3 == 0``.
    Classes are :mod:`.photo_vehicles`' surface classes."""
    key = (bool(pantograph), bool(cab_front), bool(cab_back))
    got = _CACHE.get(key)
    if got is not None:
        return got
    acc = _Acc()
    for sign in (1.0, -1.0):
        _body_side(acc, sign, cab_front, cab_back)
    for end, cab in ((1.0, cab_front), (-1.0, cab_back)):
        if cab:
            _cab_details(acc, end)
        else:
            _cap(acc, end * LENGTH_M / 2)
    _box(acc, (0.0, 0.0, 0.12), (1.7, 2.8, 0.3), GEAR, PV.OTHER, chamfer=0.05)
    for sy in (-AXLE_Y_M, AXLE_Y_M):
        for sx in (-WHEEL_X_M, WHEEL_X_M):
            _wheel(acc, sx, sy)
    roof = PROFILE[-1][1]
    box_y = -2.2 if pantograph else 0.0
    _box(acc, (0.0, box_y, roof - 0.03), (1.3, 2.6, 0.33), ROOF, PV.OTHER, chamfer=0.08)
    if pantograph:
        _pantograph(acc)
    got = _CACHE[key] = tuple(a.copy() for a in acc.build())
    return got


def cab_ends(placements) -> dict[int, tuple[bool, bool]]:
    """Per tram placement index: ``(cab at its +y end, cab at its -y end)``.

    A tram's three sections share the id up to the last ``:`` and carry ``variant`` 0, 1, 2 along the track
    (:mod:`.population`): a section has a cab at each end beyond which the snapshot kept no other section of its
    tram: the end sections of a whole tram at their outer ends, the middle one at none; where the snapshot's
    radius cut the tram, the cut end too (a section alone: both ends). ``photo-tram-2``: the middle section kept
    no cab even when cut, and showed its bellows' dark cross-section as a black slab."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(placements):
        if p.kind == "tram":
            groups.setdefault(str(p.id).rsplit(":", 1)[0], []).append(i)
    out: dict[int, tuple[bool, bool]] = {}
    for idx in groups.values():
        for i in idx:
            p = placements[i]
            a = math.radians(p.heading_deg)
            f = (math.sin(a), math.cos(a))
            ahead = [(placements[j].x_m - p.x_m) * f[0] + (placements[j].y_m - p.y_m) * f[1] for j in idx if j != i]
            out[i] = (not any(d > 0.5 for d in ahead), not any(d < -0.5 for d in ahead))
    return out


__all__ = ["ENABLED", "HEIGHT_M", "LENGTH_M", "PAN_TOP_M", "TRAM_VERSION", "WIDTH_M", "cab_ends", "front_y",
           "glass_colours", "section_mesh", "side_intervals"]
