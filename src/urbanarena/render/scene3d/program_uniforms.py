"""The constant uniforms of a :class:`~.renderer.SceneRenderer`'s programs, set once after they are built.

:func:`set_settings_uniforms` sets what :class:`~.render_settings.RenderSettings` fixes (sun, ambient, horizon,
haze, storey heights, the sign atlas); :func:`set_style_uniforms` what the style adds once the weather pass
(:class:`~.weather.WeatherPass`) has its lighting: the realistic exposure and clouds
(:func:`.realistic_shaders.style_uniforms`) and, in the photo style, the HDRI's spherical-harmonic ambient and
colours (:mod:`.photo_sky`) and the facades' sky map (:mod:`.photo_facades`). Uniforms a program does not use are
optimised away by the GL and skipped here.
"""

from __future__ import annotations

import numpy as np


def set_settings_uniforms(r) -> None:
    """Set the settings' uniforms in every lit program of renderer ``r`` and the facade, sign and sky programs'
    own (colours in 0-1, ``inv_fog2`` in 1/m^2, heights in metres)."""
    s = r.settings
    sun = tuple(float(v) for v in s.sun_dir)
    hz = tuple(c / 255.0 for c in s.horizon_rgb)
    for prog in r._lit_programs:
        for name, value in (("sun_dir", sun), ("ambient", s.ambient), ("sun", s.sun), ("horizon", hz),
                            ("inv_fog2", 1.0 / (s.fog_m * s.fog_m))):
            if name in prog:  # unused uniforms are optimised away
                prog[name].value = value
    for prog, name, value in ((r.prog_facade, "floor_h", s.floor_h_m),
                              (r.prog_facade, "ground_h", s.ground_h_m),
                              (r.prog_sign, "sign_ambient", s.sign_ambient), (r.prog_sign, "atlas", 0),
                              (r.prog_sky, "horizon", hz),
                              (r.prog_sky, "zenith", tuple(c / 255.0 for c in s.zenith_rgb))):
        if name in prog:
            prog[name].value = value


def set_style_uniforms(r) -> None:
    """Set the realistic and photo styles' uniforms of renderer ``r`` (after its weather pass exists); the flat
    style has none."""
    if r.settings.is_realistic:
        from urbanarena.render.scene3d.realistic_shaders import style_uniforms

        for prog in (*r._lit_programs, r.prog_sky):
            for name, value in style_uniforms(r.settings, r.weather.lighting).items():
                if name in prog:
                    prog[name].value = value
    if r._photo_air is not None and "horizon" in r.prog_sky_draw:
        r.prog_sky_draw["horizon"].value = tuple(float(c) for c in r.weather.lighting.horizon)
    if r._photo_sky is not None:   # photo: the SH ambient (.photo_sky) in every lit program
        ps = r._photo_sky
        sh = np.ascontiguousarray(ps.sh, dtype="f4").tobytes()
        for prog in r._lit_programs:
            if "sh_c" in prog:
                prog["sh_c"].write(sh[: 12 * prog["sh_c"].array_length])   # unused tail optimised away
            if "sh_amb" in prog:
                prog["sh_amb"].value = float(ps.amb_up)
            for name, value in (("horizon", ps.horizon), ("zenith", ps.zenith)):   # the map's own colours
                if value is not None and name in prog:
                    prog[name].value = value
        if ps.horizon is not None and "horizon" in r.prog_sky_draw:
            r.prog_sky_draw["horizon"].value = ps.horizon
    if r._facade_sky:   # photo facades: the sky map's uniforms
        from urbanarena.render.scene3d.photo_facades import set_sky_uniforms

        set_sky_uniforms(r.prog_facade, r._photo_sky)
