"""What determines a rendered pixel: the renderer version and :func:`render_identity` (scene hash, settings, width,
font, GL driver, OpenCV, poses; part of every panorama cache key)."""

from __future__ import annotations

import hashlib

import cv2

from urbanarena.render.scene3d.context import gl_info
from urbanarena.render.scene3d.fonts import sign_font
from urbanarena.render.scene3d.render_settings import RenderSettings
from urbanarena.render.scene3d.scene import Scene

#: Bumped whenever a change alters rendered pixels (part of every cache key).
RENDERER_VERSION = "scene3d-1"


def render_identity(scene: Scene, settings: RenderSettings, width: int | None = None,
                    eye_height_m: float | None = None, poses: str = "") -> dict:
    """Everything that determines rendered pixels: renderer version, scene content hash, settings,
    panorama width and eye height (when fixed), the sign font's SHA-256, the OpenGL driver
    (``GL_RENDERER``/``GL_VERSION``), the OpenCV version (remap) and a hash of node poses.
    Creates the GL context if needed (to name the driver)."""
    font = sign_font()
    return {
        "renderer_version": RENDERER_VERSION,
        "scene": scene.name,
        "scene_hash": scene.content_hash(),
        "settings": settings.identity_dict(),
        "width": None if width is None else int(width),
        "eye_height_m": None if eye_height_m is None else float(eye_height_m),
        "font": {"family": font.family, "sha256": font.sha256, "licence": font.licence},
        "gl": gl_info(),
        "opencv": cv2.__version__,
        "poses_hash": poses,
        "attribution": scene.attribution,
        **({"realistic": realistic_identity(), "sign_families": _sign_families()} if settings.is_realistic else {}),
        **({"population": _population_identity()} if settings.population != "none" else {}),
        **({"photo": _photo_identity()} if settings.style == "photo" else {}),
    }


def _photo_identity() -> dict:
    from urbanarena.render.assets import package_by_name
    from urbanarena.render.scene3d.photo_models import MODELS_VERSION
    from urbanarena.render.scene3d.population_photo import PACKAGE, photo_models

    pkg = package_by_name(PACKAGE)
    models = photo_models(quiet=True)
    from urbanarena.render.scene3d import trees_photo as TP

    trees_pkg = package_by_name(TP.PACKAGE)
    kit = TP.photo_trees(quiet=True)
    from urbanarena.render.scene3d import photo_materials as PM
    from urbanarena.render.scene3d import photo_sky

    mat_pkg = package_by_name(PM.PACKAGE)
    mats = PM.photo_materials(quiet=True)
    from urbanarena.render.scene3d import photo_clutter as PC
    from urbanarena.render.scene3d import photo_facades, photo_occlusion
    from urbanarena.render.scene3d import photo_greenery as PG

    from urbanarena.render.scene3d import photo_building_detail, photo_tram, photo_wires
    from urbanarena.render.scene3d.photo_atmosphere import (GROUND_CHUNK_TRIS, GROUND_DETAIL_M, HAZE_VERSION,
                                                            SKYLINE_CULL_BACK)
    from urbanarena.render.scene3d.photo_kerbside import KERBSIDE_VERSION
    from urbanarena.render.scene3d.photo_paint import PAINT_VERSION

    return {"tram": photo_tram.TRAM_VERSION if photo_tram.ENABLED else None, "haze": HAZE_VERSION,
            "paint": PAINT_VERSION, "kerbside": KERBSIDE_VERSION,
            "buildings": photo_building_detail.DETAIL_VERSION if photo_building_detail.ENABLED else None,
            "wires": photo_wires.WIRES_VERSION if photo_wires.ENABLED else None,
            "greenery": (PG.GREENERY_VERSION + ("" if PG.VERGES else "/no-verges")) if PG.ENABLED else None,
            "ground_detail_m": sorted(GROUND_DETAIL_M.items()),
            "ground_chunk_tris": GROUND_CHUNK_TRIS, "skyline_cull_back": SKYLINE_CULL_BACK,
            "clutter": PC.CLUTTER_VERSION if PC.ENABLED else None,
            "models": MODELS_VERSION, "sky": photo_sky.identity(), "package": pkg.name, "version": pkg.version,
            "sha256": pkg.sha256, "facades": photo_facades.source_identity(),
            **({"occlusion": photo_occlusion.source_identity()} if photo_occlusion.ENABLED else {}),
            "catalogue": None if models is None else models.identity,
            "trees": {"version": TP.TREES_VERSION, "package": trees_pkg.name, "package_version": trees_pkg.version,
                      "sha256": trees_pkg.sha256, "kit": None if kit is None else kit.identity},
            "materials": {"version": PM.MATERIALS_VERSION, "package": mat_pkg.name,
                          "package_version": mat_pkg.version, "sha256": mat_pkg.sha256,
                          "kit": None if mats is None else mats.identity, "glsl": PM.source_identity(),
                          "wear": PM.PW.WEAR_VERSION if PM.PW.ENABLED else None}}


def _population_identity() -> dict:
    from urbanarena.render.scene3d.population import population_identity

    return population_identity()


def _sign_families() -> dict:
    from urbanarena.render.scene3d.signage import SIGNAGE_VERSION, family_identity

    return {"version": SIGNAGE_VERSION, **family_identity()}


def realistic_identity() -> str:
    """Version of the realistic style's code: :data:`.realistic_shaders.REALISTIC_VERSION` plus the SHA-256 (12 hex)
    of its GLSL sources, so a shader change never reuses cached realistic panoramas."""
    from urbanarena.render.scene3d import realistic_shaders as RS

    src = "".join(RS.program_sources(n, 48)[0] + RS.program_sources(n, 48)[1]
                  for n in ("facade", "ground", "sky", "sky_tex", "foliage", "shade", "sign"))
    from urbanarena.render.scene3d.sun_shadow import DEPTH_FS, DEPTH_VS, SHADOW_MAP_PX

    src += DEPTH_VS + DEPTH_FS + str(SHADOW_MAP_PX)
    return f"{RS.REALISTIC_VERSION}-{hashlib.sha256(src.encode()).hexdigest()[:12]}"


__all__ = ["RENDERER_VERSION", "realistic_identity", "render_identity"]
