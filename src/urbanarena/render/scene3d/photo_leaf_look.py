"""How the ``photo`` style's leaves look (issue 24, tells "glossy sprite-like plants", "flat plant sprites", "CG
foliage"): a grade of the leaf photos made once when the atlas is built, and the sunlight that shines through a
leaf, added in the tree program (:mod:`.trees_photo`; the photo trees, hedges, bushes, tufts and verges all draw
with it). Flat and realistic styles never use any of it.

* **Leaf grade** (:func:`grade_leaf_cell`, applied to the leaf cells of :func:`.trees_photo.build_atlas`): the
  twig photos are clean studio cut-outs, brighter and greener than street foliage. Per cell, over its opaque
  texels (alpha >= 0.5) with Rec. 709 luminance ``L`` and the cell's mean luminance ``m``: the colour is pulled
  towards its grey by :data:`DESATURATE` (``rgb' = L + (1 - DESATURATE)(rgb - L)``) and then scaled by
  ``(L / m) ** CONTRAST`` (clipped to 0..1): the leaf's shaded parts and veins darker, its lit parts brighter --
  deeper dark between leaves with no runtime cost. Transparent texels are left alone.
* **Translucency** (:data:`TRANSLUCENCY_GLSL`, :func:`translucency`): a leaf seen against the sun glows
  yellow-green. The light added is ``albedo * texel * TRANS_RGB * sun_rgb * sun * TRANSLUCENCY * t`` with
  ``t = max(-v . s, 0) ** 2 * (0.35 + 0.65 max(-n . s, 0))`` (``v`` the unit direction from the leaf to the eye,
  ``s`` the unit direction to the sun, ``n`` the card's normal): strongest looking straight into the sun at a
  leaf whose back faces it, nothing with the sun behind the viewer. Leaves have no specular term (the program's
  light is ambient plus Lambert, :data:`.realistic_shaders.TONE`).
"""

from __future__ import annotations

import numpy as np

#: bumped whenever the grade or the translucency change pixels (in :data:`.trees_photo.TREES_VERSION`)
LEAF_LOOK_VERSION = "leaf-look-1"
#: share of a leaf texel's chroma taken away
DESATURATE = 0.22
#: exponent of the per-texel luminance contrast (0: none)
CONTRAST = 0.55
#: strength and colour of the light through a sunlit leaf
TRANSLUCENCY = 0.55
TRANS_RGB = (1.0, 1.08, 0.55)
_LUMA = np.array([0.2126, 0.7152, 0.0722])


def grade_leaf_cell(cell: np.ndarray) -> np.ndarray:
    """``cell`` (H, W, 4) float RGBA in 0..1, graded (module docstring): a new array; the texels with alpha
    under 0.5, and a cell without an opaque texel or with a black mean, are returned unchanged."""
    out = np.array(cell, np.float64, copy=True)
    solid = out[..., 3] >= 0.5
    if not solid.any():
        return out
    rgb = out[..., :3]
    lum = rgb @ _LUMA
    m = float(lum[solid].mean())
    if m <= 1e-6:
        return out
    grey = lum[..., None]
    g = grey + (1.0 - DESATURATE) * (rgb - grey)
    g = g * (np.maximum(lum, 1e-6) / m)[..., None] ** CONTRAST
    out[..., :3] = np.where(solid[..., None], np.clip(g, 0.0, 1.0), rgb)
    return out


def translucency(to_eye: np.ndarray, sun_dir: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """The numpy twin of :data:`TRANSLUCENCY_GLSL`'s weight ``t`` (module docstring): unit vectors ``(..., 3)``
    in, ``(...)`` weights in 0..1 out (not yet times :data:`TRANSLUCENCY`)."""
    v, s, n = (np.asarray(a, np.float64) for a in (to_eye, sun_dir, normal))
    through = np.maximum(-np.sum(v * s, -1), 0.0)
    back = np.maximum(-np.sum(n * s, -1), 0.0)
    return through * through * (0.35 + 0.65 * back)


#: GLSL of the translucency: ``leaf_glow(world, n)`` -> the weight times :data:`TRANSLUCENCY` and :data:`TRANS_RGB`
#: times the sun (needs the weather variant's ``eye`` and :data:`.realistic_shaders.TONE`'s sun uniforms)
TRANSLUCENCY_GLSL = """
vec3 leaf_glow(vec3 p, vec3 n) {
    vec3 v = normalize(eye - p);
    float through = max(-dot(v, sun_dir), 0.0);
    float back = max(-dot(n, sun_dir), 0.0);
    return vec3(TRANS_R, TRANS_G, TRANS_B) * sun_rgb * (sun * TRANS_K * through * through * (0.35 + 0.65 * back));
}
""".replace("TRANS_R", f"{TRANS_RGB[0]:.4f}").replace("TRANS_G", f"{TRANS_RGB[1]:.4f}") \
   .replace("TRANS_B", f"{TRANS_RGB[2]:.4f}").replace("TRANS_K", f"{TRANSLUCENCY:.4f}")

__all__ = ["CONTRAST", "DESATURATE", "LEAF_LOOK_VERSION", "TRANSLUCENCY", "TRANSLUCENCY_GLSL", "TRANS_RGB",
           "grade_leaf_cell", "translucency"]
