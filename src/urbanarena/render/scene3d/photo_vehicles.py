"""How the ``photo`` style paints its cars and vans (issue 24, tells "low-poly sports cars", "simple van model",
"CG vehicles"): a European street's colours, dark tinted glass that mirrors the sky, dark tyres, and a clear
coat whose reflection grows towards grazing angles.

Photo style only (:mod:`.population_photo` calls it; ``flat`` and ``realistic`` never do). Every choice is a hash
of the placement's ``variant`` (drawn from the city seed), so the same placement is always the same car.

* **Surface classes** (:func:`material_classes`), from the OBJ material names of the ``sweethome3d-furniture``
  vehicles: :data:`PAINT` (the body paint, :data:`PAINT_MATERIALS`), :data:`GLASS` (names with
  ``glass``, ``cristal``; not lamp glass: names with ``light``, ``faro``, ``signal``), :data:`TYRE` (``tire``,
  ``neumatic``, ``rubber``), :data:`METAL` (``chrome``, ``llanta``, ``wheel``, ``alumin``, ``mirror``),
  :data:`TEXTURED` (other materials with a texture), :data:`OTHER` for the rest. **Rims** (:func:`with_rims`,
  class :data:`RIM`): the catalogues' wheel textures baked into corner colours draw a pinwheel of light and dark
  wedges (each fan triangle's corners sample the rim's spokes and gaps); the metal or textured corners that face
  sideways low on the vehicle are drawn one dull grey instead.
* **Colours** (:func:`car_colour`): a weighted draw from :data:`CAR_COLOURS` (display sRGB 0..1, weights after
  the shares of new cars registered in Europe: white, greys, black and silver about three quarters, dark blue,
  few saturated ones); a van is white with probability :data:`VAN_WHITE` (fleet vans), else the same draw. The
  draw maps ``u = hash(variant) in [0, 1)`` to the first colour whose cumulative weight exceeds ``u``
  (:func:`pick_weighted`).
* **Finish** (:func:`finish_colours`, per corner, baked into the vertex colours once per snapshot, so it costs
  nothing per frame; the street-furniture program's lighting then multiplies it): with ``v`` the unit vector from
  the snapshot's eye (``camera_xy``, :data:`EYE_M` high) to the corner and ``n`` its unit normal, the reflected
  direction ``r = v - 2 (v . n) n`` sees :func:`environment`: the ground and facades (:data:`ENV_LOW`) below the
  horizon, the sky (:data:`ENV_SKY`) above, blended by ``smoothstep`` over :data:`HORIZON_RZ` of ``r_z``.
  Schlick's Fresnel ``F = F0 + (1 - F0)(1 - cos)^5`` with ``cos = max(-v . n, 0)``, capped at :data:`F_MAX` and times
  ``smoothstep(0, BACK_FADE, cos)`` (a corner turned away from the eye reflects nothing), mixes it in:
  paint ``(1 - F) albedo + F env`` with ``F0`` = :data:`PAINT_F0` (clear coat); glass the same over
  :data:`GLASS_TINT` (dark, the cabin behind it) with :data:`GLASS_F0`; tyres :data:`TYRE_RGB`; metal (trim)
  times :data:`METAL_K`; rims :data:`RIM_RGB`; other surfaces unchanged.
"""

from __future__ import annotations

import numpy as np

#: materials painted in the placement's car colour (the catalogues' body paint; re-exported by .photo_models)
PAINT_MATERIALS = frozenset({"firstcolor", "color-exterior", "chapa_roja", "color-beige-green", "paint_yellow"})

OTHER, PAINT, GLASS, TYRE, METAL, TEXTURED, RIM = 0, 1, 2, 3, 4, 5, 6
#: rims (:func:`with_rims`): metal or textured corners facing sideways (``|n_x|`` over ``RIM_SIDE``) below
#: ``RIM_TOP`` (fraction of the vehicle's length: a 0.65 m wheel on a 4.3 m car reaches 0.15), drawn ``RIM_RGB``
RIM_SIDE = 0.6
RIM_TOP = 0.16
RIM_RGB = (0.2, 0.2, 0.21)
#: eye height of the snapshot's camera (metres) the reflections are baked for
EYE_M = 1.7
#: (display sRGB 0..1, weight): white, black, dark grey, mid grey, silver, dark blue, blue, red, brown/beige,
#: dark green, orange
CAR_COLOURS = (
    ((0.86, 0.86, 0.84), 0.25), ((0.045, 0.045, 0.05), 0.18), ((0.28, 0.29, 0.31), 0.12),
    ((0.44, 0.45, 0.47), 0.10), ((0.64, 0.65, 0.67), 0.13), ((0.09, 0.13, 0.27), 0.07),
    ((0.22, 0.32, 0.50), 0.03), ((0.48, 0.07, 0.08), 0.06), ((0.42, 0.36, 0.29), 0.03),
    ((0.11, 0.20, 0.15), 0.02), ((0.72, 0.40, 0.10), 0.01))
#: share of vans painted white
VAN_WHITE = 0.6
VAN_WHITE_RGB = (0.88, 0.88, 0.86)
#: Fresnel reflectance at normal incidence of the clear coat and of the glass; the cap of F
PAINT_F0 = 0.05
GLASS_F0 = 0.1
F_MAX = 0.6
#: a corner whose normal turns away from the eye (a coarse level's averaged normals) reflects nothing; the
#: reflection fades in over ``cos`` from 0 to this
BACK_FADE = 0.1
#: glass colour (the dark cabin seen through tinted glass) and tyre rubber, display 0..1
GLASS_TINT = (0.035, 0.04, 0.045)
TYRE_RGB = (0.035, 0.035, 0.037)
#: what a reflection sees: below the horizon (street, facades), above it (the sky), as albedo-like values
ENV_LOW = (0.2, 0.2, 0.21)
ENV_SKY = (0.78, 0.84, 0.92)
#: the reflected direction's height ``r_z`` over which the reflection turns from ``ENV_LOW`` to ``ENV_SKY`` (the
#: horizon line that runs along a car's flank)
HORIZON_RZ = (-0.2, 0.15)
#: wheel rims and trim: their baked colour times this (dull alloy, brake dust; the textures are showroom-bright)
METAL_K = 0.55


def material_classes(materials: list[str], textured=frozenset()) -> np.ndarray:
    """``(T,)`` int8 surface class per triangle of the material names ``materials`` (module docstring);
    ``textured``: the names of the materials that have a texture."""
    table = {}
    for name in set(materials):
        low = name.lower()
        if low in PAINT_MATERIALS:
            c = PAINT
        elif any(k in low for k in ("light", "faro", "signal")):
            c = OTHER
        elif "glass" in low or "cristal" in low:
            c = GLASS
        elif any(k in low for k in ("tire", "neumatic", "rubber")):
            c = TYRE
        elif any(k in low for k in ("chrome", "llanta", "wheel", "alumin", "mirror")):
            c = METAL
        elif name in textured:
            c = TEXTURED
        else:
            c = OTHER
        table[name] = c
    return np.array([table[m] for m in materials], np.int8).reshape(-1)


def with_rims(pos: np.ndarray, nrm: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """``(N,)`` int8 ``classes`` with the rim corners set to :data:`RIM` (module docstring). ``pos``, ``nrm``:
    ``(N, 3)`` a vehicle model's corners in its local frame (x right, unit length, z up from 0)."""
    out = np.asarray(classes, np.int8).copy()
    rim = (((out == METAL) | (out == TEXTURED)) & (np.abs(nrm[:, 0]) > RIM_SIDE) & (pos[:, 2] < RIM_TOP))
    out[rim] = RIM
    return out


def pick_weighted(u: float, weights) -> int:
    """Index of the first entry whose cumulative (normalised) weight exceeds ``u`` in ``[0, 1)``."""
    w = np.asarray(weights, np.float64)
    cum = np.cumsum(w / w.sum())
    return int(min(np.searchsorted(cum, u, side="right"), len(w) - 1))


def car_colour(variant: int, van: bool = False) -> np.ndarray:
    """``(3,)`` float32 display colour 0..1 of the vehicle ``variant`` (module docstring)."""
    from urbanarena.render.scene3d.people_look import unit

    if van and unit(variant, "van-white") < VAN_WHITE:
        return np.asarray(VAN_WHITE_RGB, np.float32)
    k = pick_weighted(unit(variant, "car-paint"), [w for _, w in CAR_COLOURS])
    return np.asarray(CAR_COLOURS[k][0], np.float32)


def _smoothstep(e0: float, e1: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - e0) / (e1 - e0), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def environment(r: np.ndarray) -> np.ndarray:
    """``(N, 3)`` what reflected unit directions ``r`` ``(N, 3)`` (z up) see (module docstring)."""
    s = _smoothstep(HORIZON_RZ[0], HORIZON_RZ[1], r[:, 2])[:, None]
    return np.asarray(ENV_LOW) * (1.0 - s) + np.asarray(ENV_SKY) * s


def fresnel(cos_i: np.ndarray, f0: float) -> np.ndarray:
    """Schlick's ``F0 + (1 - F0)(1 - cos)^5`` capped at :data:`F_MAX`; ``cos_i`` clipped to ``[0, 1]``."""
    c = np.clip(cos_i, 0.0, 1.0)
    return np.minimum(f0 + (1.0 - f0) * (1.0 - c) ** 5, F_MAX)


def finish_colours(pos: np.ndarray, nrm: np.ndarray, col: np.ndarray, classes: np.ndarray,
                   eye: np.ndarray) -> np.ndarray:
    """``(N, 3)`` float32 colours of a vehicle's corners after its finish (module docstring).

    Args:
        pos: ``(N, 3)`` world positions (metres, z up); nrm: ``(N, 3)`` unit world normals; col: ``(N, 3)``
            colours 0..1 (paint already applied); classes: ``(N,)`` surface classes; eye: ``(3,)`` the eye.
    """
    out = np.asarray(col, np.float64).copy()
    cls = np.asarray(classes)
    sel = (cls == PAINT) | (cls == GLASS)
    if sel.any():
        v = pos[sel] - eye
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
        n = nrm[sel].astype(np.float64)
        vn = np.einsum("ij,ij->i", v, n)
        r = v - 2.0 * vn[:, None] * n
        env = environment(r)
        glass = cls[sel] == GLASS
        f = np.where(glass, fresnel(-vn, GLASS_F0), fresnel(-vn, PAINT_F0))
        f = (f * _smoothstep(0.0, BACK_FADE, -vn))[:, None]   # corners turned away (decimation): no reflection
        base = np.where(glass[:, None], np.asarray(GLASS_TINT), out[sel])
        out[sel] = (1.0 - f) * base + f * env
    out[cls == TYRE] = TYRE_RGB
    out[cls == METAL] *= METAL_K
    out[cls == RIM] = RIM_RGB
    return np.clip(out, 0.0, 1.0).astype(np.float32)


__all__ = ["CAR_COLOURS", "GLASS", "METAL", "OTHER", "PAINT", "RIM", "TEXTURED", "TYRE", "car_colour", "environment",
           "finish_colours", "fresnel", "material_classes", "pick_weighted", "with_rims"]
