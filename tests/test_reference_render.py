"""``landmark_image`` reference photos rendered by the 3D renderer (``render/scene3d/reference.py``).

On the hand-written generator fixture (``tests/data/osm_generate_fixture.osm``): the generated
tasks' reference images are written beside the task file and are exactly the renders of their
``extra.reference_view``; each viewpoint is off the pose graph (>= 1 m from every pose node) with
another sun and condition than the panoramas (and the render shows the difference); the goal POI's
sign is in the picture (its face, projected with the pinhole model, lies in frame, and those pixels
change when the POI is removed from the scene); and no stored view matches it: the best normalised
correlation against perspective cuts (same yaw, pitch, field of view and size) from the panoramas
of the three nearest pose nodes stays far below 1 (the self-correlation), while the same cut
against a direct render at its own node correlates at > 0.95, so the comparison itself is sound.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from generate_util import fixture_city
from urbanarena.render.scene3d.context import gl_unavailable_reason

NCC_CROP_ROWS = 30  # the attribution stamp at the bottom of a reference photo is left out of the correlation


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


@pytest.fixture(scope="module")
def suite(gl, tmp_path_factory):
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.cli.tasks_cmd import reference_renderer_for
    from urbanarena.tasks.generators import generate_suite, save_suite

    city = fixture_city()
    hook = reference_renderer_for(city)
    assert hook is not None
    res = generate_suite(city, per_family=6, seed=0, kinds=("landmark_image",), solver=ArenaOracleSolver(city),
                         reference_renderer=hook)
    out = save_suite(res, tmp_path_factory.mktemp("refsuite") / "suite.json")
    return city, res, out


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Zero-mean normalised cross-correlation of two equal-size RGB images (all channels)."""
    x = a[:-NCC_CROP_ROWS].astype(np.float64).ravel()
    y = b[:-NCC_CROP_ROWS].astype(np.float64).ravel()
    x -= x.mean()
    y -= y.mean()
    return float(x @ y / math.sqrt((x @ x) * (y @ y)))


def test_reference_images_on_disk_are_the_renders(suite):
    from urbanarena.render.scene3d.cache import read_png
    from urbanarena.render.scene3d.reference import render_reference

    city, res, out = suite
    tasks = res.task_file.tasks
    assert res.report["families"]["landmark_image"]["unavailable"] is None
    assert len(tasks) == 6
    for t in tasks:
        v = t.extra["reference_view"]
        (rel,) = t.extra["reference_images"]
        p = out.parent / rel
        assert p.is_file()
        img = read_png(p)
        assert img.shape == (v["height"], v["width"], 3) == (480, 640, 3)
        assert np.array_equal(img, render_reference(city, v))


def test_viewpoint_is_off_the_graph_with_other_height_or_light(suite):
    from urbanarena.render.scene3d.reference import render_reference
    from urbanarena.render.scene3d.renderer import DEFAULT_EYE_HEIGHT_M, RenderSettings

    city, res, _ = suite
    pano = RenderSettings()
    xy = np.array([city.xy(n) for n in city.graph.nodes])
    for t in res.task_file.tasks:
        v = t.extra["reference_view"]
        d_min = float(np.min(np.hypot(xy[:, 0] - v["x_m"], xy[:, 1] - v["y_m"])))
        assert d_min >= 1.0, (t.task_id, d_min)
        light = v["lighting"]
        other_light = (light["sun_azimuth_deg"], light["sun_elevation_deg"]) != (pano.sun_azimuth_deg,
                                                                                 pano.sun_elevation_deg)
        assert other_light and v["condition"] != pano.condition  # another time of day / weather (generator v2)
        # and the render honours them: the same camera with the panoramas' height, sun and condition differs
        plain = dict(v, eye_height_m=DEFAULT_EYE_HEIGHT_M,
                     lighting={"sun_azimuth_deg": pano.sun_azimuth_deg, "sun_elevation_deg": pano.sun_elevation_deg})
        del plain["condition"]
        diff = np.abs(render_reference(city, v).astype(int) - render_reference(city, plain).astype(int)).mean()
        assert diff > 2.0, (t.task_id, diff)


def _quad_area(uv: np.ndarray) -> float:
    x, y = uv[:, 0], uv[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


def test_the_goal_sign_is_in_the_picture(suite):
    import cv2

    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.layout import layout_signs
    from urbanarena.render.scene3d.reference import ReferenceRenderer, render_reference
    from urbanarena.render.views import Camera

    city, res, _ = suite
    scene = scene_from_city(city)
    signs = {s.poi_id: s for s in layout_signs(scene)}
    checked = set()
    for t in res.task_file.tasks:
        v, poi_id = t.extra["reference_view"], t.extra["poi_id"]
        s = signs[poi_id]
        cam = Camera(v["yaw_deg"], v["pitch_deg"], v["hfov_deg"], v["width"], v["height"])
        eye = np.array([v["x_m"], v["y_m"], v["eye_height_m"]])
        corners = np.array([[*s.left, s.z_bottom_m], [*s.right, s.z_bottom_m], [*s.right, s.z_top_m],
                            [*s.left, s.z_top_m]])
        uv, front = cam.project(corners - eye)
        assert front.all()
        cu, cv_ = uv.mean(axis=0)
        assert 0 <= cu < v["width"] and 0 <= cv_ < v["height"], (t.task_id, cu, cv_)
        # the sign face's pixels change when the POI is taken out of the scene
        if poi_id in checked:
            continue
        checked.add(poi_id)
        # (in the clear day: the photo's dusk or rain leaves some signs unlit and dark, but the camera and
        # what occludes the sign are the same)
        day = {k: x for k, x in v.items() if k not in ("condition", "lighting")}
        without = dataclasses.replace(scene, pois=tuple(p for p in scene.pois if p.id != poi_id))
        other = ReferenceRenderer(without)
        try:
            alt = other.render(day)
        finally:
            other.release()
        changed = (np.abs(render_reference(city, day).astype(int) - alt.astype(int)).max(axis=2) > 40)
        quad = np.zeros(changed.shape, np.uint8)
        cv2.fillConvexPoly(quad, np.round(uv).astype(np.int32), 1)
        inside = quad.astype(bool)
        assert _quad_area(uv) > 50  # small by design (generator v2: wide lens, across the street), not a speck
        assert changed[inside].mean() > 0.5, (t.task_id, changed[inside].mean())
        assert changed[~inside].sum() < 0.5 * inside.sum()  # what changed is that sign, not the whole view
    assert len(checked) >= 3


def test_no_pixel_match_against_stored_views(suite):
    from urbanarena.env.observers import rendered_store_for
    from urbanarena.render.scene3d.reference import render_reference
    from urbanarena.render.views import node_view

    city, res, _ = suite
    store = rendered_store_for(city)
    nodes = list(city.graph.nodes)
    xy = np.array([city.xy(n) for n in nodes])
    for t in res.task_file.tasks:
        v = t.extra["reference_view"]
        ref = render_reference(city, v)
        assert ncc(ref, ref) == pytest.approx(1.0)
        near = [nodes[i] for i in np.argsort(np.hypot(xy[:, 0] - v["x_m"], xy[:, 1] - v["y_m"]))[:3]]
        cuts = [node_view(store, n, v["yaw_deg"], v["pitch_deg"], v["hfov_deg"], v["width"], v["height"])
                for n in near]
        best = max(ncc(ref, c) for c in cuts)
        assert best < 0.8, (t.task_id, best)
        # control: the cut matches a direct render at its own node (the comparison can find a match)
        x0, y0, _ = store.poses[near[0]]
        direct = store.renderer.render_view(x0, y0, v["yaw_deg"], v["pitch_deg"], v["hfov_deg"], v["width"],
                                            v["height"], eye_height_m=store.eye_height_m)
        assert ncc(direct, cuts[0]) > 0.95


def test_hook_returns_none_when_the_city_cannot_be_rendered(monkeypatch):
    from arena_util import straight_street
    from urbanarena.cli.tasks_cmd import reference_renderer_for
    from urbanarena.tasks.generators import generate_suite
    import urbanarena.render.scene3d.context as ctx

    assert reference_renderer_for(straight_street()) is None  # graph-only: nothing to render
    monkeypatch.setattr(ctx, "gl_unavailable_reason", lambda: "no EGL (test)")
    city = fixture_city()
    assert reference_renderer_for(city) is None
    res = generate_suite(city, per_family=3, seed=0, kinds=("landmark_image",),
                         reference_renderer=reference_renderer_for(city))
    assert "no reference-photo renderer" in res.report["families"]["landmark_image"]["unavailable"]
    assert res.task_file.tasks == []


def test_bad_reference_views_are_refused(gl):
    from urbanarena.render.scene3d.reference import render_reference

    city = fixture_city()
    good = {"x_m": 0.0, "y_m": 0.0, "eye_height_m": 1.2, "yaw_deg": 0.0, "pitch_deg": 0.0, "hfov_deg": 70.0,
            "width": 64, "height": 48, "lighting": {"sun_azimuth_deg": 110.0, "sun_elevation_deg": 18.0}}
    assert render_reference(city, good).shape == (48, 64, 3)
    for bad, msg in [({"x_m": None}, "'x_m' must be a finite number"), ({"width": 0}, "positive integers"),
                     ({"eye_height_m": 0.0}, "eye_height_m must be positive"),
                     ({"lighting": {"sun_elevation_deg": 120.0}}, r"sun_elevation_deg must be in \[-90, 90\]")]:
        with pytest.raises(ValueError, match=msg):
            render_reference(city, {**good, **bad})
    with pytest.raises(ValueError, match="missing 'yaw_deg'"):
        render_reference(city, {k: x for k, x in good.items() if k != "yaw_deg"})


def test_a_reference_with_a_camera_is_the_unstamped_render_through_that_camera(suite):
    """``reference_view.camera``: the photo is the render without the attribution stamp, through the named
    camera (its draws keyed by the view); views without the field are unchanged (the stamp stays)."""
    import json

    from urbanarena.render.camera_model import get_camera
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.reference import ReferenceRenderer, render_reference

    city, res, _ = suite
    v = dict(res.task_file.tasks[0].extra["reference_view"])
    stamped = render_reference(city, v)
    bare = ReferenceRenderer(scene_from_city(city), attribution=False).render(v)
    assert not np.array_equal(stamped, bare)  # the stamp is there without a camera
    with_cam = {**v, "camera": "phone"}
    got = render_reference(city, with_cam)
    want = get_camera("phone").apply(bare, json.dumps(with_cam, sort_keys=True, default=str))
    assert np.array_equal(got, want)
    with pytest.raises(ValueError, match="unknown camera"):
        render_reference(city, {**v, "camera": "nope"})


def test_first_person_views_through_the_style_camera(gl):
    """SceneViewObserver: clean keeps the stamp; consumer360 is the unstamped render through the camera."""
    from urbanarena.env.continuous.observer import SceneViewObserver
    from urbanarena.env.continuous.state import ContinuousPose
    from urbanarena.render.camera_model import get_camera

    city = fixture_city()
    n = sorted(city.graph.nodes)[0]
    x, y = city.frame.to_xy(city.node(n)["lat"], city.node(n)["lon"])
    pose = ContinuousPose(x_m=float(x), y_m=float(y), yaw_deg=45.0, pitch_deg=0.0, lat=city.node(n)["lat"],
                          lon=city.node(n)["lon"])
    clean = SceneViewObserver(city, width=320, height=180)
    bare = SceneViewObserver(city, width=320, height=180, attribution=False)
    cam = SceneViewObserver(city, width=320, height=180, camera="consumer360")
    a, b, c = clean(city, pose), bare(city, pose), cam(city, pose)
    assert not np.array_equal(a, b) and not cam.attribution
    assert np.array_equal(c, cam(city, pose))
    key = f"{city.content_hash}||{pose.x_m:.3f}|{pose.y_m:.3f}|{pose.yaw_deg:.3f}|{pose.pitch_deg:.3f}|90|320x180"
    assert np.array_equal(c, get_camera("consumer360").apply(b, key))
