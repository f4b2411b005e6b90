"""Render styles (issue 14): ``flat`` keeps its identity, ``realistic`` is deterministic and measurably less flat,
the baked shade has the hand-computed extent, and ``--render-style`` is checked. Small hand-built scenes only."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from typer.testing import CliRunner

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Building, Poi, Road, Scene, StreetObject
from urbanarena.render.scene3d.styles import DEFAULT_RENDER_STYLE, settings_for_style

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


def small_scene() -> Scene:
    b = [Building("b1", [(-20, 10), (20, 10), (20, 25), (-20, 25)], 15.0),
         Building("b2", [(-20, -25), (10, -25), (10, -10), (-20, -10)], 12.0)]
    pois = [Poi("p1", "Kahvila Sävy", "amenity", -8, 10, "b1"), Poi("p2", "Apteekki", "shop", 2, 10, "b1")]
    objs = [StreetObject("t1", "tree", -17, 7.5), StreetObject("l1", "street_lamp", 0, 7.2),
            StreetObject("bn", "bench", -15, -7.5)]
    roads = [Road("r1", [(-100, 0), (100, 0)], 8.0, 2.5)]
    return Scene(name="styles", buildings=tuple(b), pois=tuple(pois), objects=tuple(objs), roads=tuple(roads))


def test_flat_identity_is_unchanged_and_styles_are_checked():
    flat = RenderSettings()
    assert flat.style == "flat" and flat.identity_dict()["style"] == "flat"
    assert RenderSettings(style="flat").key() == flat.key()
    real = RenderSettings(style="realistic")
    assert real.identity_dict()["style"] == "realistic" and real.key() != flat.key()
    with pytest.raises(ValueError, match="render style"):
        RenderSettings(style="photoreal")
    assert DEFAULT_RENDER_STYLE == "photo"
    # the test's home has no photo assets: the default draws realistic (test_default_style.py has the rest)
    assert settings_for_style().style == "realistic" and settings_for_style("flat").style == "flat"
    assert settings_for_style(None, flat) is flat


def test_arena_view_hash_keeps_flat_runs():
    from urbanarena.runner.arena import ArenaViewSettings

    assert "render_style" not in ArenaViewSettings(render_style="flat").as_dict()
    assert ArenaViewSettings().as_dict()["render_style"] == "realistic"   # photo's default without its assets
    assert ArenaViewSettings.from_stored({"width": 640}).render_style == "flat"  # stored before styles: flat


def test_shadow_of_a_box_has_the_hand_computed_area():
    # sun due south (azimuth 180), 45 degrees up: a 10 m tall building casts its shadow 10 m due north.
    # A 10 x 10 m footprint swept north by 10 m covers 10 x 20 m; minus the footprint: 10 x 10 = 100 m2.
    from urbanarena.render.scene3d.realistic import CONTACT_BAND_M, shade_geometry

    scene = Scene(name="box", buildings=(Building("b", [(0, 0), (10, 0), (10, 10), (0, 10)], 10.0),))
    e = math.radians(45.0)
    sun = (0.0, -math.cos(e), math.sin(e))  # towards the sun: south
    (shadow, k), (band, kb) = shade_geometry(scene, sun, 0.6)
    assert k == 0.6 and shadow.area == pytest.approx(100.0, rel=1e-6)
    minx, miny, maxx, maxy = shadow.bounds
    assert (minx, miny, maxx, maxy) == pytest.approx((0.0, 10.0, 10.0, 20.0), abs=1e-6)
    # contact band: the footprint buffered by 0.8 m (square corners rounded by 2 segments per quarter) minus it
    assert band.area == pytest.approx(4 * 10 * CONTACT_BAND_M + 4 * _quarter_polygon_area(CONTACT_BAND_M, 2),
                                      rel=1e-6)
    # no sun (night): only the contact band
    assert len(shade_geometry(scene, (0.0, 0.0, -1.0), 0.6)) == 1


def _quarter_polygon_area(r: float, segs: int) -> float:
    """Area of a quarter circle of radius r drawn as ``segs`` chords (GEOS buffer corners): segs triangles."""
    return segs * 0.5 * r * r * math.sin(math.pi / 2 / segs)


def test_shadow_factor_is_ambient_over_total_light():
    from urbanarena.render.scene3d.realistic import shadow_factor

    e = math.radians(40.0)
    light = SimpleNamespace(ambient=0.62, ambient_rgb=(1.0, 1.0, 1.0), sun=0.5, sun_rgb=(1.0, 1.0, 1.0),
                            sun_dir=(0.0, math.cos(e), math.sin(e)))
    # 0.62 / (0.62 + 0.5 sin 40 deg) = 0.62 / 0.94139 = 0.65860
    assert shadow_factor(light) == pytest.approx(0.62 / (0.62 + 0.5 * 0.6427876), rel=1e-6)


@needs_gl
def test_realistic_is_deterministic_and_less_flat():
    from urbanarena.render.realism import realism_stats
    from urbanarena.render.scene3d.renderer import SceneRenderer

    scene = small_scene()
    views = {}
    for style in ("flat", "realistic"):
        for cond in ("clear", "night"):
            a = SceneRenderer(scene, RenderSettings.for_condition(cond, style=style))
            b = SceneRenderer(scene, RenderSettings.for_condition(cond, style=style))
            va = a.render_view(0.0, -3.0, 10.0, 0.0, 90.0, 320, 180)
            vb = b.render_view(0.0, -3.0, 10.0, 0.0, 90.0, 320, 180)
            assert np.array_equal(va, vb), (style, cond)  # same scene, style, condition: same pixels
            views[style, cond] = va
            a.release()
            b.release()
    assert not np.array_equal(views["flat", "clear"], views["realistic", "clear"])
    flat, real = realism_stats(views["flat", "clear"]), realism_stats(views["realistic", "clear"])
    assert real.flat_share < flat.flat_share and real.edge_density > flat.edge_density
    assert views["realistic", "night"].mean() < 0.6 * views["realistic", "clear"].mean()


@needs_gl
def test_realistic_meshes_add_details_and_ids_cover_foliage():
    from urbanarena.render.scene3d.renderer import SceneRenderer

    scene = small_scene()
    flat = SceneRenderer(scene, RenderSettings())
    real = SceneRenderer(scene, RenderSettings(style="realistic"))
    assert flat.meshes.foliage is None and flat.meshes.shade is None
    assert real.meshes.foliage.n_triangles > 0 and real.meshes.shade.n_triangles > 0
    assert real.meshes.objects.n_triangles > flat.meshes.objects.n_triangles  # cornices, awnings, kerbs
    # the tree crown (foliage) is in the ID pass: looking at the tree from 6 m shows its feature
    k = 1 + [f for f in real.features].index(("object", "t1"))
    ids = real.render_ids(-17.0, 1.5, 0.0, 20.0, 60.0, 160, 120)
    assert (ids == k).sum() > 100
    flat.release()
    real.release()


def test_cli_refuses_an_unknown_style(tmp_path):
    from urbanarena.cli.main import app

    r = CliRunner().invoke(app, ["run", "--city", "x", "--tasks", "mini", "--agent", "oracle", "--out",
                                 str(tmp_path / "r"), "--render-style", "photoreal"])
    assert r.exit_code == 2 and "render style" in r.output
