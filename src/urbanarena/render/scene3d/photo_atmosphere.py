"""The ``photo`` style's horizon, aerial perspective and rain (issue 24, items 3 "light and atmosphere").

Photo style only: ``flat`` and ``realistic`` never reach this module, so their pixels stay as they were.

* **Skyline** (:func:`skyline_mesh`): beyond the city's content the view used to run over bare ground to the
  painted sky. The photo style draws a ring of seeded, low-poly blocks there -- one block per
  :data:`CELL_M` cell of the band from :data:`RING_IN_M` to :data:`RING_OUT_M` outside the scene's bounds
  (clipped to the ground plane), :data:`GAP_SHARE` of the cells left empty, footprints 55-85 % of the cell,
  heights of Helsinki's inner-city blocks (14-26 m; :data:`TOWER_SHARE` towers of 32-48 m), facade tones from a
  small palette washed 30 % towards grey, dark roofs, and storey bands of dark windows on the walls that face
  the city in the first :data:`WINDOW_DEPTH_M`. Drawn with the lit street-furniture program (sun, sky light,
  haze), after the city, frustum-culled per tile; not in the ID pass (to it they are background, like the sky).
  Beyond it (``photo-haze-2``) a far band of plain blocks and tree masses (:func:`far_blocks`, to :data:`FAR_OUT_M`)
  and flat ground out past the far plane (:func:`far_ground`), so the clearer air shows no end of the city.
* **Aerial perspective** (:func:`haze_keep`, GLSL :data:`PHOTO_FOG_AT` replacing the realistic ``fog_at``):
  a haze whose density falls off with height, ``beta(z) = beta0 exp(-z / HAZE_H_M)``, ``beta0``
  :data:`CLEAR_HAZE_BETA_PER_M` under a clear sky, :data:`HAZE_BETA_PER_M` otherwise (:func:`haze_beta_per_m`). A point at
  distance ``d`` seen from the eye keeps ``exp(-(sigma + HAZE_BETA_PER_M m) d)`` of its colour, where ``m`` is
  the mean of ``exp(-z / H)`` along the ray (``H (exp(-z0 / H) - exp(-z1 / H)) / (z1 - z0)``; ``exp(-z0 / H)``
  for a level ray) and ``sigma`` the condition's Beer-Lambert extinction (:mod:`.conditions`); the rest is the
  horizon colour. The sky (:func:`sky_haze_keep`) keeps ``exp(-HAZE_BETA_PER_M H / sin e)`` at elevation ``e``
  (the same haze integrated from the ground to infinity), so it fades to the horizon colour at the horizon,
  where the farthest blocks fade to it too: no line where a painted sky meets bare ground.
* **Rain** (:func:`rain_contrast`, GLSL :data:`PHOTO_WET_OLD` -> :data:`PHOTO_WET_NEW`): no streaks drawn
  over the view. Wet ground instead: hard ground (asphalt, paving, setts, track bed) a further 0.35 darker in
  puddles, which lie where a two-octave value noise of the ground position (seeded by position, so the same
  everywhere and every run) exceeds :data:`PUDDLE_LEVEL`, fading out between :data:`PUDDLE_FADE_M`; the sky
  it reflects is the sky's gradient at the mirrored elevation, in the share ``0.06 + 0.5 F`` on the wet
  surface and ``0.12 + 0.7 F`` in puddles (``F`` the Schlick-Fresnel term of water; ours). The image
  loses contrast towards the grey horizon colour (:data:`RAIN_CONTRAST`), as rain-hazed photos do.

Constants are ours (chosen by eye against the shared street photos), not measured.
"""

from __future__ import annotations

import math

import numpy as np

#: haze extinction at the ground (1/m) of the hazy weathers (cloudy, rain, fog: a meteorological optical range
#: ``ln 20 / beta`` of 2.5 km, on top of the condition's own extinction); the sky's haze always uses it
HAZE_BETA_PER_M = 1.2e-3
#: haze extinction at the ground (1/m) under a clear sky (day, dusk, night): an optical range of
#: :data:`CLEAR_VISIBILITY_M` (a real clear day's 15-30 km; before ``photo-haze-2`` it was the 2.5 km above)
CLEAR_VISIBILITY_M = 20000.0
CLEAR_HAZE_BETA_PER_M = math.log(20.0) / CLEAR_VISIBILITY_M
#: version of the haze and the skyline (part of the photo render identity)
HAZE_VERSION = "photo-haze-2"
#: scale height of the haze (m)
HAZE_H_M = 100.0
#: rain: the image keeps this share of its contrast about the horizon colour
RAIN_CONTRAST = 0.82
#: puddle threshold of the ground noise (0..1; higher = fewer puddles)
PUDDLE_LEVEL = 0.6
#: puddles fade out between these distances from the eye (m; farther, their noise would only speckle)
PUDDLE_FADE_M = (25.0, 70.0)

#: skyline ring: cell size, the band outside the scene's bounds (m), cells left empty, towers
CELL_M = 50.0
RING_IN_M, RING_OUT_M = 40.0, 300.0
GAP_SHARE, TOWER_SHARE = 0.12, 0.05
#: far skyline band (``photo-haze-2``): from RING_OUT_M to FAR_OUT_M outside the scene's bounds, cells of
#: FAR_CELL_M, each a block (FAR_BLOCK_SHARE), a tree mass (FAR_TREE_SHARE) or empty; footprints 60-90 % of the cell;
#: only the walls an eye inside the scene's bounds can face are drawn (:func:`seen_walls`)
FAR_OUT_M, FAR_CELL_M = 1100.0, 125.0
FAR_BLOCK_SHARE, FAR_TREE_SHARE = 0.55, 0.35
FAR_TREE_RGB = (72, 88, 58)
#: the ground continues to this far outside the scene's bounds (beyond the draw distance of a street view)
FAR_GROUND_M = 4000.0
FAR_GROUND_RGB = (96, 100, 84)
#: windows are drawn on the city-facing walls of blocks within this distance of the ring's inner edge (m)
WINDOW_DEPTH_M = 120.0
STOREY_M, WINDOW_W_M, WINDOW_H_M, WINDOW_PITCH_M = 3.2, 1.3, 1.6, 3.4
#: facade tones of Helsinki's inner-city blocks (ochre, cream, pale grey, brick, pale yellow, off-white, sage)
FACADE_TONES = ((196, 160, 104), (214, 204, 180), (170, 170, 168), (150, 84, 64), (220, 200, 140),
                (225, 222, 214), (150, 160, 150))
ROOF_RGB, WINDOW_RGB = (78, 76, 78), (46, 50, 56)
SKYLINE_SEED = 0x5C71
#: the renderer applies this module to the photo style while true (tests switch it off to compare the
#: population's pixels with the realistic style's)
ENABLED = True
#: thin ground detail drawn only this near (metres, by ground material of .realistic_shaders.GROUND_MATERIALS):
#: kerb bands (5, 0.125 m wide) and rail heads and grooves (7, 0.07 and 0.04 m) are under a third of a pixel
#: of a 640-pixel 90-degree view (or a 2048-pixel panorama) beyond it; part of the photo render identity.
#: White paint (4: stripes and dashes) too, with GROUND_CHUNK_TRIS 16: about 1 ms a frame (docs/renderer.md "Speed,
#: second round"; turned on when helsinki-arena7-v5 was redrawn for the photo changes of 2026-12-07)
GROUND_DETAIL_M = {4: 120.0, 5: 120.0, 7: 120.0}
#: triangles per chunk of the photo ground's :class:`.tiles.OrderedChunks` (frustum and draw-distance tests per
#: chunk); part of the photo render identity (with a draw distance it decides which far detail is drawn)
GROUND_CHUNK_TRIS = 16
#: draw the skyline ring with back faces culled (closed boxes, windows wound outward): about 3 ms a frame less
#: vertex work; a far back wall that showed through a seam no longer does (3 pixels in 20 views). On since
#: helsinki-arena7-v5 was redrawn for the photo changes of 2026-12-07. Part of the photo render identity
SKYLINE_CULL_BACK = True


def ground_detail_distances(runs) -> list[float | None]:
    """Per ground run ``(first, count, material)`` (:func:`.realistic_shaders.ground_material_runs`) its draw
    distance in metres (:data:`GROUND_DETAIL_M`), ``None`` for no limit."""
    return [GROUND_DETAIL_M.get(int(k)) for _, _, k in runs]


def ground_chunks(vertex_runs, runs, positions):
    """The photo ground's :class:`.tiles.OrderedChunks`: ``vertex_runs`` ``[(vertex array, first, count)]`` of the
    ground ``runs`` ``[(first, count, material)]`` over ``positions`` ``(N, 3)`` in chunks of
    :data:`GROUND_CHUNK_TRIS` triangles, kerbs and rails limited to :data:`GROUND_DETAIL_M`."""
    from urbanarena.render.scene3d.tiles import OrderedChunks

    return OrderedChunks(vertex_runs, positions, chunk_tris=GROUND_CHUNK_TRIS,
                         max_dist_m=ground_detail_distances(runs))


def ground_box(scene) -> tuple[float, float, float, float]:
    """``(x0, y0, x1, y1)`` metres: the rectangle the ground layers cover whole (:func:`.meshes.ground_mesh`: the
    scene's ``ground_extent``, else its bounds grown by 500 m)."""
    if scene.ground_extent is not None:
        return tuple(float(v) for v in scene.ground_extent)
    x0, y0, x1, y1 = scene.bounds()
    return x0 - 500.0, y0 - 500.0, x1 + 500.0, y1 + 500.0


def sky_rows(eye, yaw_deg: float, pitch_deg: float, hfov_deg: float, width: int, height: int, box,
             far_m: float) -> int:
    """How many image rows from the top the sky must be shaded in: the rows below see only the ground (or what
    stands on it), so the sky drawn there would be painted over by the ground layers.

    A row is ground-only when, even at its outer columns (the rays nearest the horizon in a level-roll camera),
    its rays point down steeply enough to meet ``z = 0`` within ``d``: ``tan(depression) >= 1.5 h / d + tan
    0.5 deg``, ``h`` the eye's height, ``d`` the eye's distance to the nearest side of the ground ``box``
    (:func:`ground_box`), at most ``0.9 far_m``. The answer is the first row from which every row down is
    ground-only, plus 2 rows; ``height`` (shade everywhere) when the eye is not over the box.
    """
    from urbanarena.render.views import Camera

    x, y, h = (float(v) for v in eye)
    x0, y0, x1, y1 = box
    d = min(x - x0, x1 - x, y - y0, y1 - y, 0.9 * far_m)
    if d <= 0.0 or h <= 0.0:
        return int(height)
    right, up, fwd = Camera(yaw_deg, pitch_deg, hfov_deg, width, height).basis()
    f = (width / 2.0) / math.tan(math.radians(hfov_deg) / 2.0)
    yv = (np.arange(height) - (height - 1) / 2.0) / f            # image rows, down positive
    tx = ((width - 1) / 2.0) / f                                  # the outer columns
    z = -yv * up[2] + fwd[2]                                      # world z of each row's ray (right is level)
    horiz = np.sqrt(np.maximum(tx * tx + yv * yv + 1.0 - z * z, 1e-12))   # its horizontal length at the edges
    ground = (z < 0.0) & (-z / horiz >= 1.5 * h / d + math.tan(math.radians(0.5)))
    bad = np.flatnonzero(~ground)
    first = 0 if not len(bad) else int(bad[-1]) + 1
    return int(min(height, first + 2))


def haze_beta_per_m(weather: str) -> float:
    """The ground haze extinction (1/m) of a weather: :data:`CLEAR_HAZE_BETA_PER_M` for ``clear`` (any time of
    day), else :data:`HAZE_BETA_PER_M`."""
    return CLEAR_HAZE_BETA_PER_M if weather == "clear" else HAZE_BETA_PER_M


def haze_keep(dist_m, eye_z_m: float, point_z_m, sigma_per_m: float = 0.0, beta_per_m: float = HAZE_BETA_PER_M):
    """Share of a point's colour that the photo haze keeps (module docstring; the GLSL twin is
    :func:`photo_fog_at`). ``dist_m``, ``point_z_m``: scalars or arrays (metres); ``beta_per_m`` the ground
    extinction (:func:`haze_beta_per_m`); returns the same shape."""
    d = np.asarray(dist_m, np.float64)
    z1 = np.asarray(point_z_m, np.float64)
    dz = z1 - eye_z_m
    level = math.exp(-eye_z_m / HAZE_H_M)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(np.abs(dz) > 0.01,
                        HAZE_H_M * (level - np.exp(-z1 / HAZE_H_M)) / np.where(dz == 0, 1.0, dz), level)
    return np.exp(-(sigma_per_m + beta_per_m * mean) * d)


def sky_haze_keep(elevation_deg):
    """Share of the sky's colour kept at ``elevation_deg`` (scalar or array; 0 at and below the horizon)."""
    s = np.sin(np.radians(np.asarray(elevation_deg, np.float64)))
    with np.errstate(divide="ignore"):
        return np.where(s > 1e-4, np.exp(-HAZE_BETA_PER_M * HAZE_H_M / np.maximum(s, 1e-4)), 0.0)


def rain_contrast(img: np.ndarray, horizon_rgb) -> np.ndarray:
    """``img`` ``(H, W, 3)`` uint8 pulled towards the horizon colour (``horizon_rgb``: 0..1 floats):
    ``g + RAIN_CONTRAST (v - g)`` per channel with ``g = 255 horizon``, rounded and clipped (deterministic)."""
    g = np.asarray(horizon_rgb, np.float32) * np.float32(255.0)
    out = g + np.float32(RAIN_CONTRAST) * (img.astype(np.float32) - g)
    np.rint(out, out=out)
    np.clip(out, 0, 255, out=out)
    return out.astype(np.uint8)


# ---------------------------------------------------------------------------------------------------- skyline
def _box(x0, y0, x1, y1, h):
    """Walls (4 x 2 triangles, outward winding) and the roof (2) of an axis-aligned box, ``(10, 3, 3)``."""
    c = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    tris = []
    for i in range(4):
        (ax, ay), (bx, by) = c[i], c[(i + 1) % 4]
        tris += [[(ax, ay, 0), (bx, by, 0), (bx, by, h)], [(ax, ay, 0), (bx, by, h), (ax, ay, h)]]
    tris += [[(x0, y0, h), (x1, y0, h), (x1, y1, h)], [(x0, y0, h), (x1, y1, h), (x0, y1, h)]]
    return np.array(tris, np.float64)


def skyline_blocks(scene, seed: int = SKYLINE_SEED) -> list[tuple[float, float, float, float, float, int]]:
    """The ring's blocks ``(x0, y0, x1, y1, height_m, tone)`` (local metres; ``tone`` indexes
    :data:`FACADE_TONES`) around ``scene`` (module docstring); the same scene and seed give the same list."""
    bx0, by0, bx1, by1 = scene.bounds()
    ox0, oy0, ox1, oy1 = bx0 - RING_OUT_M, by0 - RING_OUT_M, bx1 + RING_OUT_M, by1 + RING_OUT_M
    if scene.ground_extent is not None:
        gx0, gy0, gx1, gy1 = scene.ground_extent
        ox0, oy0, ox1, oy1 = max(ox0, gx0), max(oy0, gy0), min(ox1, gx1), min(oy1, gy1)
    ix0, iy0, ix1, iy1 = bx0 - RING_IN_M, by0 - RING_IN_M, bx1 + RING_IN_M, by1 + RING_IN_M
    nx, ny = int((ox1 - ox0) // CELL_M), int((oy1 - oy0) // CELL_M)
    rng = np.random.default_rng([SKYLINE_SEED, int(seed) & 0xFFFFFFFF, max(nx, 0), max(ny, 0)])
    out = []
    for j in range(max(ny, 0)):
        for i in range(max(nx, 0)):
            u = rng.random(8)   # drawn for every cell, so a cell's block does not depend on the others
            cx0, cy0 = ox0 + i * CELL_M, oy0 + j * CELL_M
            cx1, cy1 = cx0 + CELL_M, cy0 + CELL_M
            if cx1 > ix0 and cx0 < ix1 and cy1 > iy0 and cy0 < iy1:
                continue                                    # the cell touches the city (or the margin)
            if u[0] < GAP_SHARE:
                continue
            w, d = CELL_M * (0.55 + 0.3 * u[1]), CELL_M * (0.55 + 0.3 * u[2])
            x0 = cx0 + (CELL_M - w) * u[3]
            y0 = cy0 + (CELL_M - d) * u[4]
            h = 32.0 + 16.0 * u[5] if u[6] < TOWER_SHARE else 14.0 + 12.0 * u[5]
            out.append((x0, y0, x0 + w, y0 + d, h, int(u[7] * len(FACADE_TONES)) % len(FACADE_TONES)))
    return out


def _outer(scene) -> tuple[float, float, float, float]:
    """The near ring's outer rectangle (bounds grown by :data:`RING_OUT_M`, clipped to ``ground_extent``)."""
    bx0, by0, bx1, by1 = scene.bounds()
    ox0, oy0, ox1, oy1 = bx0 - RING_OUT_M, by0 - RING_OUT_M, bx1 + RING_OUT_M, by1 + RING_OUT_M
    if scene.ground_extent is not None:
        gx0, gy0, gx1, gy1 = scene.ground_extent
        ox0, oy0, ox1, oy1 = max(ox0, gx0), max(oy0, gy0), min(ox1, gx1), min(oy1, gy1)
    return ox0, oy0, ox1, oy1


def far_blocks(scene, seed: int = SKYLINE_SEED) -> list[tuple[float, float, float, float, float, int]]:
    """The far band's blocks and tree masses ``(x0, y0, x1, y1, height_m, tone)`` (local metres; ``tone`` indexes
    :data:`FACADE_TONES`, -1 for a tree mass): one per :data:`FAR_CELL_M` cell of the square band from the near
    ring's outer rectangle (:func:`_outer`) to the bounds grown by :data:`FAR_OUT_M`, cells touching that rectangle
    skipped. A cell holds a block (:data:`FAR_BLOCK_SHARE`; 12-24 m, towers 30-45 m as in the near ring), a tree
    mass (:data:`FAR_TREE_SHARE`; 9-17 m) or nothing; footprints 60-90 % of the cell. Seeded like
    :func:`skyline_blocks`."""
    bx0, by0, bx1, by1 = scene.bounds()
    ix0, iy0, ix1, iy1 = _outer(scene)
    fx0, fy0 = bx0 - FAR_OUT_M, by0 - FAR_OUT_M
    nx = int((bx1 - bx0 + 2 * FAR_OUT_M) // FAR_CELL_M)
    ny = int((by1 - by0 + 2 * FAR_OUT_M) // FAR_CELL_M)
    rng = np.random.default_rng([SKYLINE_SEED, int(seed) & 0xFFFFFFFF, nx, ny, 2])
    out = []
    for j in range(ny):
        for i in range(nx):
            u = rng.random(7)   # drawn for every cell, so a cell's content does not depend on the others
            cx0, cy0 = fx0 + i * FAR_CELL_M, fy0 + j * FAR_CELL_M
            if cx0 + FAR_CELL_M > ix0 and cx0 < ix1 and cy0 + FAR_CELL_M > iy0 and cy0 < iy1:
                continue
            if u[0] >= FAR_BLOCK_SHARE + FAR_TREE_SHARE:
                continue
            w, d = FAR_CELL_M * (0.6 + 0.3 * u[1]), FAR_CELL_M * (0.6 + 0.3 * u[2])
            x0, y0 = cx0 + (FAR_CELL_M - w) * u[3], cy0 + (FAR_CELL_M - d) * u[4]
            if u[0] < FAR_BLOCK_SHARE:
                h = 30.0 + 15.0 * u[5] if u[6] < TOWER_SHARE else 12.0 + 12.0 * u[5]
                tone = int(u[6] * len(FACADE_TONES)) % len(FACADE_TONES)
            else:
                h, tone = 9.0 + 8.0 * u[5], -1
            out.append((x0, y0, x0 + w, y0 + d, h, tone))
    return out


def seen_walls(x0, y0, x1, y1, bounds) -> list[int]:
    """Which walls of :func:`_box` ``(x0, y0, x1, y1)`` (0: the ``y0`` side, 1: ``x1``, 2: ``y1``, 3: ``x0``) some
    eye inside ``bounds`` ``(bx0, by0, bx1, by1)`` sees from in front: a wall facing ``-y`` only if some eye has
    ``y < y0`` (``by0 < y0``), and so on; the others face away from every eye in the scene."""
    bx0, by0, bx1, by1 = bounds
    return [k for k, seen in enumerate((by0 < y0, x1 < bx1, y1 < by1, bx0 < x0)) if seen]


def far_ground(scene) -> np.ndarray:
    """Triangles ``(8, 3, 3)`` (wound upward) of the ground beyond :func:`ground_box`: four rectangles out to the
    bounds grown by :data:`FAR_GROUND_M`, so the ground runs on to the horizon."""
    gx0, gy0, gx1, gy1 = ground_box(scene)
    bx0, by0, bx1, by1 = scene.bounds()
    ex0, ey0, ex1, ey1 = bx0 - FAR_GROUND_M, by0 - FAR_GROUND_M, bx1 + FAR_GROUND_M, by1 + FAR_GROUND_M
    rects = [(ex0, ey0, ex1, gy0), (ex0, gy1, ex1, ey1), (ex0, gy0, gx0, gy1), (gx1, gy0, ex1, gy1)]
    tris = []
    for x0, y0, x1, y1 in rects:
        tris += [[(x0, y0, 0), (x1, y0, 0), (x1, y1, 0)], [(x0, y0, 0), (x1, y1, 0), (x0, y1, 0)]]
    return np.array(tris, np.float64)


def skyline_mesh(scene, seed: int = SKYLINE_SEED):
    """:class:`~.mesh_primitives.MeshData` of :func:`skyline_blocks` (colours 0..1, feature 0), or an empty mesh."""
    from urbanarena.render.scene3d.mesh_primitives import MeshBuilder

    mb = MeshBuilder()
    bx0, by0, bx1, by1 = scene.bounds()
    cx, cy = (bx0 + bx1) / 2, (by0 + by1) / 2
    grey = np.array([0.62, 0.62, 0.62])
    for x0, y0, x1, y1, h, tone in skyline_blocks(scene, seed):
        wall = 0.7 * np.array(FACADE_TONES[tone]) / 255.0 + 0.3 * grey
        tris = _box(x0, y0, x1, y1, h)
        mb.add(tris[:8], wall)
        mb.add(tris[8:], np.array(ROOF_RGB) / 255.0)
        gap = max(bx0 - RING_IN_M - x1, x0 - bx1 - RING_IN_M, by0 - RING_IN_M - y1, y0 - by1 - RING_IN_M)
        if gap < WINDOW_DEPTH_M:
            win = _windows(x0, y0, x1, y1, h, cx, cy)
            if len(win):   # lit with the normals they had when wound the other way (the pixels kept)
                nrm = np.cross(win[:, 2] - win[:, 0], win[:, 1] - win[:, 0])
                nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
                mb.add(win, np.array(WINDOW_RGB) / 255.0, normals=np.repeat(nrm[:, None, :], 3, axis=1))
    if FAR_OUT_M > RING_OUT_M:   # photo-haze-2: the far band and the ground to the horizon
        bounds = (bx0, by0, bx1, by1)
        for x0, y0, x1, y1, h, tone in far_blocks(scene, seed):
            tris = _box(x0, y0, x1, y1, h)
            walls = tris[[t for k in seen_walls(x0, y0, x1, y1, bounds) for t in (2 * k, 2 * k + 1)]]
            if tone < 0:
                mb.add(np.concatenate([walls, tris[8:]]), np.array(FAR_TREE_RGB) / 255.0)
            else:
                mb.add(walls, 0.7 * np.array(FACADE_TONES[tone]) / 255.0 + 0.3 * grey)
                mb.add(tris[8:], np.array(ROOF_RGB) / 255.0)
        mb.add(far_ground(scene), np.array(FAR_GROUND_RGB) / 255.0)
    return mb.build()


def _windows(x0, y0, x1, y1, h, cx, cy) -> np.ndarray:
    """Window quads (0.05 m in front) on the walls of a box that face the point ``(cx, cy)``, ``(T, 3, 3)``,
    wound counter-clockwise seen from outside (as :func:`_box`'s walls), so back-face culling keeps them."""
    walls = []   # (start, direction along the wall, outward normal, length)
    if cy < y0:
        walls.append(((x1, y0), (-1, 0), (0, -1), x1 - x0))
    if cy > y1:
        walls.append(((x0, y1), (1, 0), (0, 1), x1 - x0))
    if cx < x0:
        walls.append(((x0, y0), (0, 1), (-1, 0), y1 - y0))
    if cx > x1:
        walls.append(((x1, y1), (0, -1), (1, 0), y1 - y0))
    tris = []
    storeys = int((h - 1.0) // STOREY_M)
    for (sx, sy), (dx, dy), (nx, ny), length in walls:
        cols = int(length // WINDOW_PITCH_M)
        margin = (length - cols * WINDOW_PITCH_M) / 2 + (WINDOW_PITCH_M - WINDOW_W_M) / 2
        for k in range(1, storeys):
            z0 = k * STOREY_M + 0.9
            z1 = z0 + WINDOW_H_M
            for c in range(cols):
                a = margin + c * WINDOW_PITCH_M
                b = a + WINDOW_W_M
                p = [(sx + dx * t + nx * 0.05, sy + dy * t + ny * 0.05) for t in (a, b)]
                q = [(p[0][0], p[0][1], z0), (p[1][0], p[1][1], z0), (p[1][0], p[1][1], z1), (p[0][0], p[0][1], z1)]
                tris += [[q[0], q[2], q[1]], [q[0], q[3], q[2]]]   # outward winding, as the walls'
    return np.array(tris, np.float64).reshape(-1, 3, 3)


# ------------------------------------------------------------------------------------------------ GLSL patches
#: the realistic ``fog_at`` (:data:`.shaders.LIGHT_FS`) that the photo programs replace
REALISTIC_FOG_AT = """float fog_at(vec3 p) {
    vec3 d = p - eye;
    float dd = dot(d, d);
    return exp(-sigma * sqrt(dd)) / (1.0 + dd * inv_fog2);
}"""

def photo_fog_at(beta_per_m: float = HAZE_BETA_PER_M) -> str:
    """The photo style's aerial perspective with ground extinction ``beta_per_m`` (GLSL; twin of :func:`haze_keep`)."""
    return f"""float fog_at(vec3 p) {{
    vec3 d = p - eye;
    float level = exp(-eye.z / {HAZE_H_M:.1f});
    float m = abs(d.z) > 0.01 ? {HAZE_H_M:.1f} * (level - exp(-p.z / {HAZE_H_M:.1f})) / d.z : level;
    return exp(-(sigma + {beta_per_m:.6e} * m) * length(d));
}}"""


#: the hazy weathers' aerial perspective
PHOTO_FOG_AT = photo_fog_at(HAZE_BETA_PER_M)

#: the realistic sky lookup's last line and its photo replacement (haze towards the horizon, twin of
#: :func:`sky_haze_keep`)
SKY_OLD = "    f_colour = vec4(texture(sky_tex, uv).rgb, 1.0);\n"
SKY_NEW = (f"    float s = d.z;\n"
           f"    float keep = s > 1e-4 ? exp(-{HAZE_BETA_PER_M * HAZE_H_M:.6e} / max(s, 1e-4)) : 0.0;\n"
           f"    f_colour = vec4(mix(horizon, texture(sky_tex, uv).rgb, keep), 1.0);\n")

#: the realistic ground's wet term and the photo style's wet ground with puddles
PHOTO_WET_OLD = """    vec3 c = a * (1.0 - 0.45 * wet) * (light_at(n) + lamp_light(v_world, n));
    vec3 v = normalize(eye - v_world);
    float fr = 0.02 + 0.98 * pow(1.0 - max(v.z, 0.0), 5.0);
    c = mix(c, mix(horizon, zenith, 0.25), wet * fr * 0.8);
"""
PHOTO_WET_NEW = f"""    bool hard = is(v_albedo, vec3(72.0, 74.0, 78.0)) || is(v_albedo, vec3(168.0, 165.0, 158.0))
        || is(v_albedo, vec3(132.0, 128.0, 118.0)) || is(v_albedo, vec3(120.0, 118.0, 112.0));
    float pn = 0.7 * vnoise(v_world.xy * 0.35, 91u) + 0.3 * vnoise(v_world.xy * 1.7, 92u);
    float pud = hard ? wet * smoothstep({PUDDLE_LEVEL:.3f}, {PUDDLE_LEVEL + 0.05:.3f}, pn) : 0.0;
    pud *= 1.0 - smoothstep({PUDDLE_FADE_M[0]:.1f}, {PUDDLE_FADE_M[1]:.1f}, length(v_world - eye));  // no speckle far off
    vec3 c = a * (1.0 - 0.45 * wet) * (1.0 - 0.35 * pud) * (light_at(n) + lamp_light(v_world, n));
    vec3 v = normalize(eye - v_world);
    float vz = max(v.z, 0.0);
    float fr = 0.02 + 0.98 * pow(1.0 - vz, 5.0);
    vec3 skyr = mix(horizon, zenith, vz * (2.0 - vz));   // the sky's gradient at the mirrored elevation
    c = mix(c, skyr, wet * mix(0.06 + 0.5 * fr, 0.12 + 0.7 * fr, pud));
"""


def _swap(src: str, old: str, new: str, what: str) -> str:
    if old not in src:
        raise RuntimeError(f"photo style: the {what} source to replace was not found (shaders changed?)")
    return src.replace(old, new)


def patch_source(src: str, program: str = "", beta_per_m: float = HAZE_BETA_PER_M) -> str:
    """A realistic program's fragment source made photo: ``fog_at`` replaced where the source has it (every lit
    program; ground extinction ``beta_per_m``, :func:`haze_beta_per_m`), the wet ground in ``ground``, the sky
    haze in ``sky_tex``.

    Raises:
        RuntimeError: the realistic text to replace is missing (the shaders were edited without this module)."""
    if "float fog_at(vec3 p)" in src:
        src = _swap(src, REALISTIC_FOG_AT, photo_fog_at(beta_per_m), "fog_at")
    if program == "ground":
        src = _swap(src, PHOTO_WET_OLD, PHOTO_WET_NEW, "wet ground")
    if program == "sky_tex":
        src = _swap(src, SKY_OLD, SKY_NEW, "sky lookup")
        src = _swap(src, "uniform sampler2D sky_tex;\n", "uniform sampler2D sky_tex;\nuniform vec3 horizon;\n",
                    "sky uniforms")
    return src


__all__ = ["CLEAR_HAZE_BETA_PER_M", "HAZE_BETA_PER_M", "HAZE_H_M", "RAIN_CONTRAST", "far_blocks", "far_ground",
           "haze_beta_per_m", "haze_keep", "patch_source", "photo_fog_at", "rain_contrast", "seen_walls",
           "skyline_blocks", "skyline_mesh", "sky_haze_keep"]
