"""The photo style's textures on a :class:`~.renderer.SceneRenderer` (split out of :mod:`.renderer`): the HDRI sky
(:mod:`.photo_sky`), the photographed materials (:mod:`.photo_materials`) and the tree atlas (:mod:`.trees_photo`).
Each function takes the renderer as ``self`` (its context, ``_keep``, ``_mgl`` and programs), uploads the texture
(kept until the renderer's release), sets the programs' uniforms and returns the texture."""

from __future__ import annotations

import numpy as np


def hdri_texture(self, sky):
    """The photo sky's map (:mod:`.photo_sky`: float RGB, upper hemisphere) as a mipmapped texture on the sky
    unit, wrapping in longitude; sets the sky program's map uniforms."""
    from urbanarena.render.scene3d.photo_sky import SKY_UNIT

    h, w = sky.texture.shape[:2]
    tex = self._keep(self.ctx.texture((w, h), 3, np.ascontiguousarray(sky.texture, dtype="f4").tobytes(),
                                      dtype="f4"))
    tex.build_mipmaps()
    tex.filter = (self._mgl.LINEAR_MIPMAP_LINEAR, self._mgl.LINEAR)
    tex.repeat_x, tex.repeat_y = True, False
    for name, value in (("sky_tex", SKY_UNIT), ("hdri_rot", float(sky.rot_rad)), ("hdri_gain", float(sky.gain)),
                        ("cloud_cover", float(sky.cloud_cover)), ("cloud_lit", sky.cloud_lit),
                        ("cloud_base", sky.cloud_base), ("cloud_sun", sky.sun_dir)):
        if name in self.prog_sky_draw:    # (the compiler drops the cloud uniforms it can prove unused)
            self.prog_sky_draw[name].value = value
    return tex


def material_texture(self, kit):
    """The photo materials' array (:mod:`.photo_materials`): one ``R8`` texture array, mipmapped,
    repeating, its unit and contrast gains set in every program that samples it."""
    from urbanarena.render.scene3d.photo_materials import MATERIAL_UNIT

    n, h, w = kit.layers.shape
    tex = self._keep(self.ctx.texture_array((w, h, n), 1, np.ascontiguousarray(kit.layers).tobytes(),
                                            alignment=1))
    tex.build_mipmaps()
    tex.filter = (self._mgl.LINEAR_MIPMAP_LINEAR, self._mgl.LINEAR)
    tex.repeat_x = tex.repeat_y = True
    for prog in self._lit_programs:
        if "photo_mat" in prog:
            prog["photo_mat"].value = MATERIAL_UNIT
        if "photo_gain" in prog:   # contrast kept with distance (photo_materials.gain_fit); the driver
            u = prog["photo_gain"]     # keeps the array up to the last layer a program samples
            u.write(np.ascontiguousarray(kit.gain_lines[:u.array_length], "f4").tobytes())
    return tex


def tree_texture(self, kit):
    """The photo trees' atlas (:mod:`.trees_photo`) as a texture with its coverage-preserving mip levels."""
    from urbanarena.render.scene3d.trees_photo import TREE_UNIT

    h, w = kit.atlas.shape[:2]
    tex = self._keep(self.ctx.texture((w, h), 4, np.ascontiguousarray(kit.atlas).tobytes(), alignment=1))
    tex.build_mipmaps(0, len(kit.mips) - 1)
    for level, img in enumerate(kit.mips[1:], 1):
        tex.write(np.ascontiguousarray(img).tobytes(), level=level, alignment=1)
    tex.filter = (self._mgl.LINEAR_MIPMAP_LINEAR, self._mgl.LINEAR)
    tex.repeat_x, tex.repeat_y = False, True
    self._tree_unit = TREE_UNIT
    self.prog_foliage["tree_tex"].value = TREE_UNIT
    return tex


__all__ = ["hdri_texture", "material_texture", "tree_texture"]
