"""The ``photo`` style's people and vehicles drawn with their own textures (issue 24, "stiff, low-detail people",
"toy-like cars"): faces, clothing patterns, grilles, lights and number plates that baking the textures into
corner colours (:mod:`.photo_models`) averaged away.

* **Texture array** (:func:`layer_pixels`, :func:`model_texture_array`): every texture image of the catalogue's
  models (:attr:`.population_photo.PhotoModels.textures`) resized (Pillow, Lanczos) to
  :data:`TEX_SIZE` x :data:`TEX_SIZE` texels as one layer of a GL 2D texture array, rows flipped so that a
  layer's texel row grows with OBJ's ``v`` (the UVs go to the shader unchanged), repeating, trilinear with
  mipmaps (a person 30 m away covers a few dozen pixels). Ours: one array for all models (one program, one
  binding); 256 texels square because a person's body texture then has about two texels per pixel of a
  person 3 m away in a 640-pixel 90-degree view; 64 layers take 22 MB with their mipmaps.
* **Albedo** (:func:`textured_albedo`): the corner colours stay the baked ones (after the clothes' recolouring,
  the car's paint and finish); each corner also carries the texture sample that was baked into it
  (:attr:`.photo_models.Model.texel`), and the fragment's albedo is the interpolated colour times the texture
  at its UV over the interpolated baked sample (at least :data:`MIN_TEXEL`, the quotient at most
  :data:`MAX_GAIN`). Where nothing was varied that is ``Kd`` times the texture; where a garment was recoloured,
  the colour carries the new hue and the texture its folds and pattern. Drawn with the plain program (no
  texture), the same mesh gives the baked look exactly.
* **Levels** (:data:`TEXTURED_LEVELS`): the nearest levels of detail are textured (to
  :data:`.population_photo.LOD_FROM_M`'s second distance); the far ones keep their baked colours (layer -1).
* **Program** (:func:`program_sources`): the lit street-furniture program (:data:`.shaders.PLAIN_VS`,
  ``PLAIN_FS``) with per-vertex ``in_uvl`` (u, v, layer) and ``in_texel`` and the albedo as above (layer < 0:
  the colour alone), so the condition's light, lamps, wet darkening and haze apply as
  before. Only the photo style builds it; :func:`sample_layers` is its numpy twin at mip level 0.
"""

from __future__ import annotations

import hashlib
import numpy as np

from urbanarena.render.scene3d import shaders

#: side of a texture array layer, texels
TEX_SIZE = 256
#: levels of detail (nearest first) drawn with their textures; coarser ones keep the baked colours
TEXTURED_LEVELS = 2
#: texture unit the model textures are bound to (others: signs 0, sky 1, shadow 2, trees 3, materials 6)
MODEL_TEX_UNIT = 5
#: the baked sample a corner colour is divided by is at least this (a black texel would blow the quotient up)
MIN_TEXEL = 0.03
#: the quotient of a corner colour over its baked sample is at most this
MAX_GAIN = 8.0


def layer_pixels(paths, size: int = TEX_SIZE) -> np.ndarray:
    """``(L, size, size, 4)`` uint8 layers of the texture array of the images ``paths`` (module docstring: RGB,
    alpha 255, resized with Lanczos, row ``r`` holding OBJ ``v = (r + 0.5) / size``).

    Raises:
        OSError: an unreadable image (Pillow's error, naming the file)."""
    from PIL import Image

    out = np.full((len(paths), size, size, 4), 255, np.uint8)
    for k, p in enumerate(paths):
        with Image.open(p) as im:
            rgb = im.convert("RGB").resize((size, size), Image.Resampling.LANCZOS)
        out[k, :, :, :3] = np.asarray(rgb, np.uint8)[::-1]
    return out


def sample_layers(layers: np.ndarray, uvl: np.ndarray) -> np.ndarray:
    """Numpy twin of the program's lookup at mip level 0: bilinear, repeating samples ``(N, 3)`` (0..1) of
    ``layers`` ``(L, S, S, 4)`` uint8 (:func:`layer_pixels`) at ``uvl`` ``(N, 3)`` (u, v, layer; the layer
    rounded to the nearest integer as GL does); 1 where the layer is negative."""
    L, S = layers.shape[0], layers.shape[1]
    uvl = np.asarray(uvl, np.float64)
    layer = np.clip(np.floor(uvl[:, 2] + 0.5).astype(np.int64), 0, max(L - 1, 0))
    x = uvl[:, 0] * S - 0.5
    y = uvl[:, 1] * S - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    x0i, y0i = x0.astype(np.int64) % S, y0.astype(np.int64) % S
    x1i, y1i = (x0i + 1) % S, (y0i + 1) % S
    t = layers[..., :3].astype(np.float64) / 255.0
    out = ((t[layer, y0i, x0i] * (1 - fx) + t[layer, y0i, x1i] * fx) * (1 - fy)
           + (t[layer, y1i, x0i] * (1 - fx) + t[layer, y1i, x1i] * fx) * fy)
    return np.where(uvl[:, 2:3] < 0, 1.0, out)


def textured_albedo(colours: np.ndarray, sample: np.ndarray, texel: np.ndarray) -> np.ndarray:
    """Numpy twin of the program's albedo (module docstring): ``colours * min(sample / max(texel, MIN_TEXEL),
    MAX_GAIN)``, all ``(N, 3)``; ``sample`` the texture at the fragment, ``texel`` the sample baked into
    ``colours`` (interpolated like them)."""
    return colours * np.minimum(sample / np.maximum(texel, MIN_TEXEL), MAX_GAIN)


def model_texture_array(ctx, paths, size: int = TEX_SIZE):
    """A moderngl texture array of :func:`layer_pixels` (mipmapped, trilinear, repeating); ``None`` without
    paths."""
    import moderngl

    if not paths:
        return None
    px = layer_pixels(paths, size)
    tex = ctx.texture_array((size, size, len(paths)), 4, np.ascontiguousarray(px).tobytes())
    tex.repeat_x = tex.repeat_y = True
    tex.build_mipmaps()
    tex.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
    return tex


_VS_SWAPS = (("in vec3 in_colour;\n",
              "in vec3 in_colour;\nin vec3 in_uvl;\nin vec3 in_texel;\nout vec3 v_uvl;\nout vec3 v_texel;\n"),
             ("void main() {\n", "void main() {\n    v_uvl = in_uvl;\n    v_texel = in_texel;\n"))
_FS_SWAPS = (("out vec4 f_colour;\n",
              "out vec4 f_colour;\nin vec3 v_uvl;\nin vec3 v_texel;\nuniform sampler2DArray model_tex;\n"
              "vec3 model_texel() {\n    if (v_uvl.z < -0.5) return vec3(1.0);\n"
              "    return min(texture(model_tex, v_uvl).rgb / max(v_texel, vec3(MIN_TEXEL)), vec3(MAX_GAIN));\n}\n"),
             ("vec3 c = v_albedo * (1.0 - 0.2 * wet)", "vec3 c = v_albedo * model_texel() * (1.0 - 0.2 * wet)"),
             ("f_colour = vec4(clamp(mix(horizon, v_colour, v_fog), 0.0, 1.0), 1.0);",
              "f_colour = vec4(clamp(mix(horizon, v_colour * model_texel(), v_fog), 0.0, 1.0), 1.0);"))


def _swapped(src: str, swaps) -> str:
    for old, new in swaps:
        if src.count(old) != 1:
            raise RuntimeError(f"photo model textures: {old.strip()[:40]!r} not found once (shaders changed?)")
        src = src.replace(old, new)
    return src


def _consts(src: str) -> str:
    return src.replace("MIN_TEXEL", f"{MIN_TEXEL:.6f}").replace("MAX_GAIN", f"{MAX_GAIN:.6f}")


def program_sources() -> tuple[str, str]:
    """``(vertex, fragment)`` sources of the textured people's and vehicles' program (module docstring), before
    :func:`.shaders.variant` and the photo style's patches (as ``PLAIN_VS``/``PLAIN_FS``).

    Raises:
        RuntimeError: the plain program's text to extend is missing (shaders edited without this module)."""
    return _swapped(shaders.PLAIN_VS, _VS_SWAPS), _consts(_swapped(shaders.PLAIN_FS, _FS_SWAPS))


def source_identity() -> str:
    """sha256 (12 hex) of the program's sources and the texture parameters (part of the photo identity)."""
    vs, fs = program_sources()
    text = vs + fs + repr((TEX_SIZE, TEXTURED_LEVELS, MIN_TEXEL, MAX_GAIN))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def texture_paths_bytes(paths) -> int:
    """Bytes of the texture array of ``paths`` with its mipmaps (RGBA8; for reports)."""
    return int(len(list(paths)) * TEX_SIZE * TEX_SIZE * 4 * 4 / 3)


__all__ = ["MAX_GAIN", "MIN_TEXEL", "MODEL_TEX_UNIT", "TEXTURED_LEVELS", "TEX_SIZE", "layer_pixels",
           "model_texture_array", "program_sources", "sample_layers", "source_identity", "texture_paths_bytes",
           "textured_albedo"]
