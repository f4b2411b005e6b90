"""Weather and time of day in the scene renderer (render/scene3d/conditions.py, weather.py): names, cache keys,
determinism, fog extinction measured against Beer-Lambert, street lamps, and the observers passing it through."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest

from test_scene3d_cache import tiny_city, tiny_scene
from urbanarena.render.scene3d.conditions import CONDITIONS, VISIBILITY_M, condition_name, parse_condition
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.scene import Building, Scene, StreetObject


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


# --------------------------------------------------------------------------------- names and settings
def test_condition_names_parse_and_round_trip():
    assert parse_condition("clear") == ("clear", "day") == parse_condition("day")
    assert parse_condition("night") == ("clear", "night")
    assert parse_condition("fog") == ("fog", "day")
    assert parse_condition("Rain+Night") == parse_condition("night, rain") == ("rain", "night")
    for w, t in [("clear", "day"), ("cloudy", "day"), ("rain", "dusk"), ("fog", "night"), ("clear", "dusk")]:
        assert parse_condition(condition_name(w, t)) == (w, t)
    assert [condition_name(*parse_condition(c)) for c in CONDITIONS] == list(CONDITIONS)
    for bad in ("snow", "rain+fog", "night+dusk", "", "rain+night+fog"):
        with pytest.raises(ValueError):
            parse_condition(bad)
    with pytest.raises(ValueError):
        RenderSettings(weather="snow")
    with pytest.raises(ValueError):
        RenderSettings(time_of_day="noon")


def test_settings_keys_default_unchanged_and_conditions_distinct():
    d = RenderSettings()
    assert d.condition == "clear" and d.is_clear_day
    legacy = {k: v for k, v in asdict(d).items()
              if k not in ("weather", "time_of_day", "rain_seed", "population", "population_seed")}
    assert d.identity_dict() == legacy  # the clear day keys exactly what it keyed before conditions
    keys = {c: RenderSettings.for_condition(c).key() for c in (*CONDITIONS, "rain+night", "fog+dusk")}
    assert len(set(keys.values())) == len(keys)
    assert RenderSettings.for_condition("rain", rain_seed=1).key() != keys["rain"]
    assert RenderSettings.for_condition("night", sun=0.4).sun == 0.4


def test_panorama_cache_keys_and_folders_include_the_condition(tmp_path):
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore

    city = tiny_city()
    stores = {c: RenderedPanoramaStore(city, tiny_scene(), RenderSettings.for_condition(c), root=tmp_path, width=64)
              for c in (*CONDITIONS, "rain+night")}
    assert len({s.key for s in stores.values()}) == len(stores)
    assert len({s.dir for s in stores.values()}) == len(stores)
    assert stores["night"].dir.name.startswith("tiny-night-") and stores["rain+night"].dir.name.startswith(
        "tiny-rain_night-")
    default = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path, width=64)
    assert default.key == stores["clear"].key and default.dir.name == f"tiny-{default.key[:16]}"
    assert "weather" not in default.identity["settings"]
    assert stores["fog"].identity["settings"]["weather"] == "fog"


# --------------------------------------------------------------------------------- rendering
def pillar(bid: str, x: float, y: float, colour=(60, 60, 60)) -> Building:
    """A 1.6 m square, 3 m tall block (no windows: narrower than a window bay, lower than a shop floor)."""
    return Building(bid, [(x - 0.8, y - 0.8), (x + 0.8, y - 0.8), (x + 0.8, y + 0.8), (x - 0.8, y + 0.8)], 3.0,
                    colour=colour)


def test_fog_extinction_follows_beer_lambert(gl):
    """Two identical walls 3 m and 6 m ahead in fog: (wall - fog) shrinks by exp(-sigma * 3 m), sigma = ln 20 / MOR.

    The fog colour is measured on the sky (in dense fog the sky is all fog); the facing walls are at
    y = 3 and 6 (their centres at eye height are 3 and 6 m from the eye along the view axis)."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    # walls facing the camera (south faces at y = 3.0 and 6.0), side by side so neither hides the other
    scene = Scene("fog", (pillar("near", -1.2, 3.8), pillar("far", 1.2, 6.8)))
    r = SceneRenderer(scene, RenderSettings.for_condition("fog"))
    W, H = 640, 360
    img = r.render_view(0.0, 0.0, 0.0, 0.0, 90.0, W, H, 1.7).astype(np.float64)
    f = (W / 2) / math.tan(math.radians(45))

    def patch(x_m: float, y_m: float, z_m: float = 1.7) -> np.ndarray:
        u = (W - 1) / 2 + f * x_m / y_m
        v = (H - 1) / 2 - f * (z_m - 1.7) / y_m
        return img[int(round(v)) - 4:int(round(v)) + 5, int(round(u)) - 4:int(round(u)) + 5].reshape(-1, 3).mean(0)

    fog = img[5:25, 300:340].reshape(-1, 3).mean(0)  # sky at the top of the view
    near, far = patch(-1.2, 3.0), patch(1.2, 6.0)
    d_near, d_far = math.hypot(1.2, 3.0), math.hypot(1.2, 6.0)
    ratio = (fog - far).mean() / (fog - near).mean()
    sigma = -math.log(ratio) / (d_far - d_near)
    assert sigma == pytest.approx(math.log(20.0) / VISIBILITY_M["fog"], rel=0.06), (fog, near, far)
    r.release()


def test_same_settings_same_pixels_and_conditions_differ(gl):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    scene = tiny_scene()
    pose = (5.0, -6.0, 0.0, 5.0, 90.0, 160, 90, 1.7)
    imgs = {}
    for c in ("clear", "cloudy", "rain", "fog", "dusk", "night", "rain+night"):
        a = SceneRenderer(scene, RenderSettings.for_condition(c))
        b = SceneRenderer(scene, RenderSettings.for_condition(c))
        ia, ib = a.render_view(*pose), b.render_view(*pose)
        assert np.array_equal(ia, ib), c
        assert np.array_equal(ia, a.render_view(*pose)), c
        imgs[c] = ia
        a.release(), b.release()
    names = list(imgs)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            assert np.abs(imgs[x].astype(int) - imgs[y].astype(int)).mean() > 2.0, (x, y)
    # overall brightness: night < dusk < clear day; fog brighter (white fog) than rain
    mean = {c: imgs[c].mean() for c in imgs}
    assert mean["night"] < mean["dusk"] < mean["clear"] and mean["rain"] < mean["fog"]
    seeded = SceneRenderer(scene, RenderSettings.for_condition("rain", rain_seed=7))
    assert not np.array_equal(seeded.render_view(*pose), imgs["rain"])
    seeded.release()


def test_street_lamp_light_position_and_night_lighting(gl):
    from urbanarena.render.scene3d.renderer import SceneRenderer
    from urbanarena.render.scene3d.weather import lamp_lights, nearest_lamps

    scene = Scene("lamp", (), (), (StreetObject("l", "street_lamp", 0.0, 0.0, 90.0),))
    night = SceneRenderer(scene, RenderSettings.for_condition("night"))
    lights = lamp_lights(night.meshes)
    # head 1.15 m out along the heading (east), light centre 4.85 m up (meshes.object_mesh)
    assert lights.shape == (1, 3) and lights[0] == pytest.approx([1.15, 0.0, 4.85], abs=1e-4)
    many = np.array([[float(i), 0.0, 4.85] for i in range(100)])
    sel = nearest_lamps(many, np.array([10.2, 0.0, 1.7]), k=5)
    assert [int(p[0]) for p in sel] == [10, 11, 9, 12, 8]
    # looking down at the ground: lit under the lamp, dark 25 m away (beyond the cut-off), at night
    under = night.render_view(1.15, -4.0, 0.0, -60.0, 30.0, 64, 64, 1.7).mean()
    away = night.render_view(1.15, -29.0, 0.0, -60.0, 30.0, 64, 64, 1.7).mean()
    assert under > 4 * away and under > 60, (under, away)
    # by day the lamp is off: the same two views look alike
    day = SceneRenderer(scene, RenderSettings.for_condition("cloudy"))
    du, da = day.render_view(1.15, -4.0, 0.0, -60.0, 30.0, 64, 64, 1.7).mean(), \
        day.render_view(1.15, -29.0, 0.0, -60.0, 30.0, 64, 64, 1.7).mean()
    assert abs(du - da) < 3.0
    night.release(), day.release()


def test_default_settings_use_the_original_shaders(gl):
    from urbanarena.render.scene3d import shaders
    from urbanarena.render.scene3d.renderer import SceneRenderer

    r = SceneRenderer(tiny_scene())
    assert r.weather is None and shaders.variant(shaders.FACADE_FS, False) is shaders.FACADE_FS
    assert "#define WEATHER" in shaders.variant(shaders.FACADE_FS, True)
    r.release()


# --------------------------------------------------------------------------------- observers
def test_observers_take_the_condition(gl, tmp_path):
    from urbanarena.env.continuous.observer import SceneViewObserver
    from urbanarena.env.observers import rendered_store_for

    from generate_util import fixture_city
    from urbanarena.env.observers import panorama_observer_for

    city = fixture_city()  # a small OSM fixture (annotated)
    fog = RenderSettings.for_condition("fog")
    s_fog = rendered_store_for(city, 64, root=tmp_path, settings=fog)
    s_def = rendered_store_for(city, 64, root=tmp_path)
    assert s_fog is not s_def and s_fog.settings.condition == "fog" and s_def.settings.condition == "clear"
    assert rendered_store_for(city, 64, root=tmp_path, settings=fog) is s_fog
    obs = panorama_observer_for(city, render_root=tmp_path, render_settings=RenderSettings.for_condition("night"))
    assert obs.store.settings.condition == "night" and obs.store.dir.name.split("-")[1] == "night"
    with pytest.raises(ValueError):
        SceneViewObserver(type("C", (), {"annotations": object(), "name": "x"})(), condition="snow")
    o = SceneViewObserver(type("C", (), {"annotations": object(), "name": "x"})(), condition="rain+night",
                          settings=RenderSettings(sun=0.4))
    assert o.settings.condition == "rain+night" and o.settings.sun == 0.4
