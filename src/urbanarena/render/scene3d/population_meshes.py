"""Meshes of the population's people and vehicles (:mod:`.population`), from the primitives of :mod:`.meshes`.

Sizes follow each :class:`~.population.Placement` (``length_m`` along its heading, ``width_m`` across,
``height_m`` up; local metres):

* **person** (``pedestrian``, ``waiting``, ``crossing``): the proportions of the continuous mode's walking
  figures (:func:`.dynamic.figure_mesh`: legs 0.46 of the height, torso 0.34, head radius 0.063), with a shirt,
  trousers, skin and hair tone drawn from the variant, a knee-long coat for a quarter of them and a bag for a
  fifth; walkers have their legs apart in mid-stride.
* **cyclist**: two 0.68 m wheels (12-sided discs, dark tyres), a frame and handlebar, and a rider whose torso
  leans forward above the saddle (0.95 m).
* **car** (``car``, ``parked_car``): a body box over four dark wheels (0.62 m), a tapered cabin of tinted glass
  (sloped wind- and rear screens) under a roof in the body colour (a van: a tall box with a short bonnet), bumpers,
  tail-lights and headlights (in the street lamps' head colour, so they glow at dusk and night as the lamps do),
  and a dark 1 cm slab on the road under it (the contact shadow that shows between the wheels).
* **tram** section: white lower body with a green band, a window band of dark glass with white pillars,
  a white roof; the middle section carries a pantograph.

Every placement's triangles carry its feature index (``MeshData.feature``), so the ID pass can tell them apart.

Speed: each shape is built once as a **template** at reference size (:data:`REFERENCE_DIMS`), heading north, at
the origin, with a part code instead of each colour (shirt, trousers, body, glass ...); a snapshot's placements
of one template are then scaled to their sizes, turned, moved and coloured in one numpy step, so a few hundred
people cost milliseconds rather than the tenths of a second of building each from primitives.
"""

from __future__ import annotations

import numpy as np

from urbanarena.render.scene3d.mesh_primitives import MeshBuilder, MeshData, box, ellipsoid, rgb as _rgb
from urbanarena.render.scene3d.meshes import LAMP_HEAD_RGB

MESHES_VERSION = "population-meshes-2"

#: reference (length, width, height) of each template family, metres
REFERENCE_DIMS = {"person": (0.35, 0.5, 1.75), "cyclist": (1.75, 0.6, 1.75), "car": (4.4, 1.8, 1.5),
                  "van": (5.3, 2.0, 2.2), "tram": (9.0, 2.4, 3.4)}

SHIRTS = ((200, 40, 40), (40, 90, 190), (240, 200, 40), (40, 150, 70), (120, 50, 140), (230, 120, 30),
          (30, 30, 30), (235, 235, 235), (150, 150, 155), (90, 60, 40), (200, 110, 140), (70, 110, 130))
TROUSERS = ((44, 48, 64), (30, 30, 34), (90, 96, 110), (120, 100, 80), (60, 70, 100), (160, 150, 130))
SKINS = ((236, 196, 170), (214, 170, 140), (180, 130, 100), (130, 90, 64), (96, 64, 46))
HAIRS = ((30, 24, 20), (70, 48, 30), (150, 110, 60), (200, 190, 170), (120, 60, 30))
COATS = ((40, 40, 48), (110, 90, 70), (60, 70, 60), (150, 140, 120), (30, 50, 80))
GLASS = (40, 52, 64)
TYRE = (22, 22, 24)
#: headlights in the street lamps' head colour, which the lit program makes glow at dusk and night
LIGHT_FRONT = LAMP_HEAD_RGB
LIGHT_BACK = (200, 20, 20)
TRAM_WHITE = (232, 232, 226)
TRAM_GREEN = (40, 130, 70)


PARTS = ("shirt", "trousers", "skin", "hair", "coat", "bag", "frame", "helmet", "body", "glass", "tyre", "front",
         "back", "bumper", "tram_white", "tram_green", "dark", "shadow")


def _codes() -> dict:
    """Part name -> code colour (``(index + 1, 0, 0)``), read back from the template's colours."""
    return {name: (i + 1, 0, 0) for i, name in enumerate(PARTS)}


def _pick(seq, v: int, k: int):
    return seq[(v >> (3 * k)) % len(seq)]


def _person_template(mb: MeshBuilder, walking: bool, coat: bool, bag: bool, C: dict) -> None:
    """A standing or walking person 1.75 m tall at the origin facing north (module docstring)."""
    hd = 0.0
    leg_h = 0.80
    stride = 0.14 if walking else 0.0
    for a, b in ((-0.09, stride), (0.09, -stride)):
        box(mb, 0, 0, hd, a, b, 0.14, 0.16, 0.0, leg_h, C["trousers"])
    torso_h = 0.60
    if coat:
        box(mb, 0, 0, hd, 0.0, 0.0, 0.40, 0.27, leg_h - 0.35, torso_h + 0.35, C["coat"])
    else:
        box(mb, 0, 0, hd, 0.0, 0.0, 0.36, 0.24, leg_h, torso_h, C["shirt"])
    arm = C["coat"] if coat else C["shirt"]
    for a, b in ((-0.215, -stride * 0.6), (0.215, stride * 0.6)):
        box(mb, 0, 0, hd, a, b, 0.07, 0.10, leg_h + 0.05, 0.55, arm)
    if bag:
        box(mb, 0, 0, hd, 0.30, 0.0, 0.10, 0.32, leg_h - 0.10, 0.30, C["bag"])
    r = 0.11
    zc = 1.75 - r - 0.02
    ellipsoid(mb, 0, 0, zc, r, r * 1.15, C["skin"], segments=6, rings=4)
    ellipsoid(mb, 0, -0.02, zc + 0.03, r * 1.05, r * 0.95, C["hair"], segments=6, rings=2)


def _wheel(mb: MeshBuilder, b: float, zc: float, radius: float, thickness: float, colour, sides: int = 12,
           a: float = 0.0) -> None:
    """A disc in the vertical plane containing the heading (north), centred at local ``(a, b)`` (right, forward),
    ``zc`` up."""
    ang = np.linspace(0, 2 * np.pi, sides + 1)
    ring = np.stack([np.full_like(ang, a), b + radius * np.sin(ang), zc + radius * np.cos(ang)], axis=1)
    for side in (-thickness / 2, thickness / 2):
        pts = ring + np.array([side, 0.0, 0.0])
        ctr = np.array([a + side, b, zc])
        mb.add(np.stack([np.broadcast_to(ctr, pts[:-1].shape), pts[:-1], pts[1:]], axis=1), _rgb(colour))
    q = np.stack([ring[:-1] + [-thickness / 2, 0, 0], ring[1:] + [-thickness / 2, 0, 0],
                  ring[1:] + [thickness / 2, 0, 0], ring[:-1] + [thickness / 2, 0, 0]], axis=1)
    mb.add(np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]], axis=0), _rgb(colour))


def _cyclist_template(mb: MeshBuilder, C: dict) -> None:
    """A cyclist on a bicycle, rider 1.75 m (module docstring)."""
    hd = 0.0
    R = 0.34
    for b in (-0.52, 0.52):
        _wheel(mb, b, R, R, 0.05, C["tyre"])
    box(mb, 0, 0, hd, 0.0, 0.0, 0.05, 1.0, 0.55, 0.05, C["frame"])       # top tube
    box(mb, 0, 0, hd, 0.0, -0.12, 0.05, 0.05, R, 0.58, C["frame"])       # seat tube
    box(mb, 0, 0, hd, 0.0, 0.50, 0.05, 0.05, R, 0.72, C["frame"])        # fork and stem
    box(mb, 0, 0, hd, 0.0, 0.50, 0.55, 0.04, 1.02, 0.04, C["dark"])      # handlebar
    seat = 0.95
    for a, b in ((-0.1, 0.05), (0.1, -0.05)):
        box(mb, 0, 0, hd, a, b, 0.13, 0.15, 0.30, seat - 0.30, C["trousers"])
    box(mb, 0, 0, hd, 0.0, 0.12, 0.36, 0.30, seat, 0.55, C["shirt"])     # torso, leaning forward
    for a in (-0.2, 0.2):
        box(mb, 0, 0, hd, a, 0.32, 0.07, 0.36, seat + 0.25, 0.08, C["shirt"])  # arms to the bar
    r = 0.11
    ellipsoid(mb, 0, 0.22, seat + 0.55 + r + 0.04, r, r * 1.15, C["skin"], segments=8, rings=5)
    ellipsoid(mb, 0, 0.22, seat + 0.55 + r + 0.10, r * 1.15, r * 0.75, C["helmet"], segments=8, rings=3)


def _tapered_box(mb: MeshBuilder, b: float, sx_bottom: float, sx_top: float, sy_bottom: float, sy_top: float,
                 z0: float, sz: float, colour, top_shift: float = 0.0) -> None:
    """A box whose top face is smaller than its bottom (a car cabin with sloped wind- and rear screens), centred
    at local forward ``b``, the top moved ``top_shift`` m forward; heading north, at the origin."""
    def ring(sx, sy, z, db):
        return np.array([[-sx / 2, b + db - sy / 2, z], [sx / 2, b + db - sy / 2, z],
                         [sx / 2, b + db + sy / 2, z], [-sx / 2, b + db + sy / 2, z]])

    lo = ring(sx_bottom, sy_bottom, z0, 0.0)
    hi = ring(sx_top, sy_top, z0 + sz, top_shift)
    quads = [np.stack([lo[i], lo[(i + 1) % 4], hi[(i + 1) % 4], hi[i]]) for i in range(4)]
    quads.append(hi)
    q = np.stack(quads)
    mb.add(np.concatenate([q[:, [0, 1, 2]], q[:, [0, 2, 3]]], axis=0), _rgb(colour))


def _car_template(mb: MeshBuilder, van: bool, C: dict) -> None:
    """A car or van at its reference size (module docstring)."""
    hd = 0.0
    L, W, H = REFERENCE_DIMS["van" if van else "car"]
    wr = 0.31
    for a in (-W / 2 + 0.2, W / 2 - 0.2):
        for b in (-L / 2 + 0.75, L / 2 - 0.8):
            _wheel(mb, b, wr, wr, 0.22, C["tyre"], sides=10, a=a)
    z0, zb = 0.28, (0.45 if van else 0.55) * H
    box(mb, 0, 0, hd, 0.0, 0.0, W * 1.02, L * 0.98, 0.0, 0.01, C["shadow"])  # contact shadow on the road
    box(mb, 0, 0, hd, 0.0, 0.0, W, L, z0, zb - z0 + 0.2, C["body"])
    if van:
        box(mb, 0, 0, hd, 0.0, -0.35, W * 0.98, L * 0.75, zb + 0.2, H - zb - 0.25, C["body"])
        box(mb, 0, 0, hd, 0.0, L * 0.75 / 2 - 0.35 + 0.02, W * 0.9, 0.05, zb + 0.3, (H - zb) * 0.45, C["glass"])
        box(mb, 0, 0, hd, 0.0, -0.35, W * 1.002, L * 0.3, zb + 0.35, (H - zb) * 0.4, C["glass"])
    else:
        cab_l = 0.56 * L
        top_l = 0.36 * L
        _tapered_box(mb, -0.06 * L, W * 0.9, W * 0.8, cab_l, top_l, zb + 0.2, H - zb - 0.26, C["glass"],
                     top_shift=-0.05 * L)
        _tapered_box(mb, -0.11 * L, W * 0.81, W * 0.78, top_l * 1.02, top_l * 0.96, H - 0.065, 0.04, C["body"])
    for a in (-W / 2 + 0.25, W / 2 - 0.25):
        box(mb, 0, 0, hd, a, L / 2 + 0.01, 0.3, 0.04, zb - 0.05, 0.12, C["front"])
        box(mb, 0, 0, hd, a, -L / 2 - 0.01, 0.3, 0.04, zb - 0.05, 0.12, C["back"])
    for b in (L / 2, -L / 2):
        box(mb, 0, 0, hd, 0.0, b, W * 1.01, 0.12, z0, 0.2, C["bumper"])


def _tram_template(mb: MeshBuilder, pantograph: bool, C: dict) -> None:
    """One 9 m section of an articulated tram (module docstring)."""
    hd = 0.0
    L, W, H = REFERENCE_DIMS["tram"]
    box(mb, 0, 0, hd, 0.0, 0.0, W * 1.02, L, 0.0, 0.01, C["shadow"])  # contact shadow
    box(mb, 0, 0, hd, 0.0, 0.0, W, L, 0.3, 0.6, C["tram_green"])
    box(mb, 0, 0, hd, 0.0, 0.0, W, L, 0.9, 0.9, C["tram_white"])
    box(mb, 0, 0, hd, 0.0, 0.0, W * 0.99, L * 0.995, 1.8, 1.2, C["glass"])
    n = max(2, int(L // 1.6))
    for i in range(n + 1):
        box(mb, 0, 0, hd, 0.0, -L / 2 + i * L / n, W * 1.005, 0.12, 1.8, 1.2, C["tram_white"])
    box(mb, 0, 0, hd, 0.0, 0.0, W, L, 3.0, 0.35, C["tram_white"])
    box(mb, 0, 0, hd, 0.0, 0.0, W * 0.95, L * 0.98, 0.1, 0.2, C["dark"])
    if pantograph:
        box(mb, 0, 0, hd, 0.0, 0.0, 0.8, 1.6, 3.35, 0.1, C["dark"])
        box(mb, 0, 0, hd, 0.0, 0.0, 0.05, 0.05, 3.35, 0.9, C["dark"])
        box(mb, 0, 0, hd, 0.0, 0.0, 1.6, 0.08, 4.2, 0.05, C["dark"])


def _template_key(p) -> tuple:
    v = int(p.variant)
    if p.kind in ("pedestrian", "waiting", "crossing"):
        return ("person", p.kind != "waiting" and (v >> 15) % 3 != 0, (v >> 18) % 4 == 0, (v >> 21) % 5 == 0)
    if p.kind == "cyclist":
        return ("cyclist",)
    if p.kind == "tram":
        return ("tram", v == 1)
    return ("van" if v % 2 == 1 else "car",)


_TEMPLATES: dict = {}


def _template(key: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(positions (N, 3), normals (N, 3), part index per vertex (N,))`` of a template (built once)."""
    got = _TEMPLATES.get(key)
    if got is not None:
        return got
    mb = MeshBuilder()
    C = _codes()
    if key[0] == "person":
        _person_template(mb, key[1], key[2], key[3], C)
    elif key[0] == "cyclist":
        _cyclist_template(mb, C)
    elif key[0] == "tram":
        _tram_template(mb, key[1], C)
    else:
        _car_template(mb, key[0] == "van", C)
    m = mb.build()
    part = np.rint(m.colours[:, 0] * 255.0).astype(np.int64) - 1
    got = _TEMPLATES[key] = (m.positions.astype(np.float64), m.normals.astype(np.float64), part)
    return got


def _part_colours(p) -> np.ndarray:
    """``(len(PARTS), 3)`` colours (0..1) of one placement's parts."""
    v = int(p.variant)
    body = p.colour if p.kind in ("car", "parked_car") else (120, 120, 120)
    cols = {"shirt": _pick(SHIRTS, v, 0), "trousers": _pick(TROUSERS, v, 1), "skin": _pick(SKINS, v, 2),
            "hair": _pick(HAIRS, v, 3), "coat": _pick(COATS, v, 4), "bag": _pick(COATS, v, 5),
            "frame": _pick(SHIRTS, v, 5), "helmet": _pick(SHIRTS, v, 6), "body": body, "glass": GLASS,
            "tyre": TYRE, "front": LIGHT_FRONT, "back": LIGHT_BACK, "bumper": (36, 36, 38),
            "tram_white": TRAM_WHITE, "tram_green": TRAM_GREEN, "dark": (40, 40, 42), "shadow": (22, 22, 24)}
    return np.array([cols[n] for n in PARTS], dtype=np.float32) / 255.0


def placements_mesh(placements, first_feature: int = 1) -> MeshData:
    """One triangle list of all ``placements`` (templates scaled to each one's size, turned to its heading and
    moved to its position); placement ``i``'s triangles carry feature ``first_feature + i``."""
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(placements):
        groups.setdefault(_template_key(p), []).append(i)
    P, N, Cl, F = [], [], [], []
    for key in sorted(groups, key=str):
        idx = groups[key]
        pos, nrm, part = _template(key)
        L0, W0, H0 = REFERENCE_DIMS[key[0]]
        ps = [placements[i] for i in idx]
        if key[0] == "person":  # people scale uniformly with their height
            scale = np.array([[p.height_m / H0] * 3 for p in ps])
        else:
            scale = np.array([[p.width_m / W0, p.length_m / L0, p.height_m / H0] for p in ps])
        a = np.radians([p.heading_deg for p in ps])
        fwd = np.stack([np.sin(a), np.cos(a)], axis=1)     # (K, 2)
        right = np.stack([np.cos(a), -np.sin(a)], axis=1)
        loc = pos[None, :, :] * scale[:, None, :]          # (K, V, 3)
        xy = loc[..., 0:1] * right[:, None, :] + loc[..., 1:2] * fwd[:, None, :]
        xy += np.array([[p.x_m, p.y_m] for p in ps])[:, None, :]
        P.append(np.concatenate([xy, loc[..., 2:3]], axis=2).reshape(-1, 3))
        nxy = nrm[None, :, 0:1] * right[:, None, :] + nrm[None, :, 1:2] * fwd[:, None, :]
        N.append(np.concatenate([nxy, np.broadcast_to(nrm[None, :, 2:3], nxy.shape[:2] + (1,))],
                                axis=2).reshape(-1, 3))
        pal = np.stack([_part_colours(p) for p in ps])     # (K, parts, 3)
        Cl.append(pal[:, part, :].reshape(-1, 3))
        F.append(np.repeat(np.array([first_feature + i for i in idx], np.float32), len(pos)))
    if not P:
        z = np.zeros((0, 3), np.float32)
        return MeshData(z, z.copy(), z.copy(), feature=np.zeros((0,), np.float32))
    return MeshData(np.concatenate(P).astype(np.float32), np.concatenate(N).astype(np.float32),
                    np.concatenate(Cl).astype(np.float32), feature=np.concatenate(F))


__all__ = ["MESHES_VERSION", "PARTS", "REFERENCE_DIMS", "placements_mesh"]
