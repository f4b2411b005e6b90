"""The goal-share check of landmark reference photos (render/scene3d/goal_share.py; reference scheme 4) on a
hand-built scene: a shop sign on a wall, seen squarely, and a box (or a person, or a tram) in front of it that
hides a fraction worked out from the pinhole geometry; the condition mix; the generator's use of the hook; and
freeze's refusal of unchecked scheme-4 references."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.scene import Building, Poi, Scene

W, H = 640, 480
EYE = 1.7
WALL_Y = 20.0  # the shop's wall: y = 20 m, facing south (towards the camera at the origin)


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


SHOP = Building("shop", [(-15, WALL_Y), (15, WALL_Y), (15, WALL_Y + 10), (-15, WALL_Y + 10)], 12.0)
POI = Poi("p1", "Sound Center", "shop", 0.0, WALL_Y, building_id="shop", facing_hint_deg=180.0)
VIEW = {"x_m": 0.0, "y_m": 0.0, "eye_height_m": EYE, "yaw_deg": 0.0, "pitch_deg": 0.0, "hfov_deg": 90.0,
        "width": W, "height": H}


def renderer_of(*extra_buildings):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    return SceneRenderer(Scene("toy", buildings=(SHOP, *extra_buildings), pois=(POI,)))


def placement(r):
    return next(s for s in r.meshes.placements if s.poi_id == "p1")


def hidden_fraction(x_lo: float, x_hi: float, y_face: float, x_edge: float, y_occ: float) -> float:
    """Share of a face spanning ``x_lo..x_hi`` at depth ``y_face`` (seen squarely from the origin) hidden by
    an occluder whose silhouette's right edge stands at ``x_edge``, depth ``y_occ``: the rays through the
    edge meet the face at ``x = x_edge * y_face / y_occ`` (similar triangles); everything left of it is
    hidden."""
    cut = x_edge * y_face / y_occ
    return min(1.0, max(0.0, (cut - x_lo) / (x_hi - x_lo)))


def test_unoccluded_sign_and_storefront_show_fully(gl):
    from urbanarena.render.scene3d.goal_share import measure_goal_share, passes

    r = renderer_of()
    got = measure_goal_share(r, "p1", VIEW)
    s = placement(r)
    assert s.building_id == "shop" and abs(s.left[1] - WALL_Y) < 0.5  # on the wall, just in front of it
    # the projected sign area by hand: width * height * f^2 / depth^2, f = 320 px (640 px, 90 degrees)
    depth = s.left[1]
    area = s.width_m * s.height_m * 320.0 ** 2 / depth ** 2
    assert got["sign"]["area_px"] == pytest.approx(area, rel=1e-3)
    assert got["sign"]["share"] >= 0.97 and got["storefront"]["share"] >= 0.97
    assert passes(got)
    r.release()


@pytest.mark.parametrize("x_edge", [-0.15, 0.0, 0.2])
def test_a_box_in_front_hides_the_geometric_fraction(gl, x_edge):
    """A tall box 10 m from the camera (front face y = 10 m, right edge at ``x_edge``) hides the left part of
    the sign and of the storefront: the shares equal 1 minus the fractions by similar triangles."""
    from urbanarena.render.scene3d.goal_share import STOREFRONT_MARGIN_M, measure_goal_share

    free = placement(renderer_of())
    box = Building("box", [(-12, 10.0), (x_edge, 10.0), (x_edge, 10.5), (-12, 10.5)], 15.0)
    r = renderer_of(box)
    s = placement(r)
    assert (s.left, s.right, s.z_top_m) == (free.left, free.right, free.z_top_m)  # the box moves no sign
    got = measure_goal_share(r, "p1", VIEW)
    x_lo, x_hi = sorted((s.left[0], s.right[0]))
    y_face = s.left[1]
    want_sign = 1.0 - hidden_fraction(x_lo, x_hi, y_face, x_edge, 10.0)
    want_front = 1.0 - hidden_fraction(x_lo - STOREFRONT_MARGIN_M, x_hi + STOREFRONT_MARGIN_M, y_face, x_edge, 10.0)
    assert 0.05 < want_sign < 0.95  # the box really cuts the sign
    assert got["sign"]["share"] == pytest.approx(want_sign, abs=0.03)
    assert got["storefront"]["share"] == pytest.approx(want_front, abs=0.03)
    assert got["occluders_px"].get("building", 0) > 0
    r.release()


def person_in_front(kind: str, x_m: float, y_m: float, length_m: float, width_m: float, height_m: float):
    from urbanarena.render.scene3d.population import Placement, Snapshot
    from urbanarena.render.scene3d.population_draw import PopulationObjects

    p = Placement("x1", kind, x_m, y_m, 90.0, length_m, width_m, height_m, (90, 60, 40), "road:r1")
    return PopulationObjects(Snapshot("ref", 0.0, 0.0, (p,)))


def test_a_tram_in_front_hides_the_goal_and_is_refused(gl):
    """A 30 m tram 8 m from the camera, 3.5 m tall, covers the storefront's whole width from the ground up to
    3.5 m: the check refuses the camera, and the occluding pixels are the population's."""
    from urbanarena.render.scene3d.goal_share import measure_goal_share, passes
    from urbanarena.render.scene3d.population_draw import release_population

    r = renderer_of()
    tram = person_in_front("tram", 0.0, 8.0, 30.0, 2.6, 3.5)
    got = measure_goal_share(r, "p1", VIEW, dynamic=tram)
    s = placement(r)
    # rays over the tram's roof (3.5 m at the front face, y = 8 - 1.3 m) reach the wall at
    # z = EYE + (3.5 - EYE) * y_face / 6.7: the storefront below that is hidden
    y_face = s.left[1]
    z_seen = EYE + (3.5 - EYE) * y_face / (8.0 - 1.3)
    want_front = max(0.0, (s.z_top_m - z_seen) / s.z_top_m)
    assert got["storefront"]["share"] == pytest.approx(want_front, abs=0.05)
    assert got["storefront"]["share"] < 0.6 and not passes(got)
    assert got["occluders_px"]["population"] > 0.5 * got["storefront"]["in_frame_px"]
    release_population(r, tram)
    # a pedestrian beside the line of sight hides nothing: passes
    walker = person_in_front("pedestrian", 6.0, 5.0, 0.5, 0.5, 1.75)
    assert passes(measure_goal_share(r, "p1", VIEW, dynamic=walker))
    release_population(r, walker)
    r.release()


def test_condition_mix_frequencies():
    """20 000 seeded draws land on the stated mix (each within 4 binomial standard deviations) and include the
    episodes' clear day; the draw is one uniform number per photo (reproducible from the seed)."""
    from urbanarena.tasks.generators.landmark import REFERENCE_CONDITIONS, draw_condition

    assert sum(REFERENCE_CONDITIONS.values()) == pytest.approx(1.0)
    assert REFERENCE_CONDITIONS["clear"] == 0.4
    rng = np.random.default_rng(7)
    n = 20000
    draws = [draw_condition(rng) for _ in range(n)]
    for name, p in REFERENCE_CONDITIONS.items():
        k = draws.count(name)
        assert abs(k - n * p) <= 4 * math.sqrt(n * p * (1 - p)), (name, k)
    # the same as thresholding the uniform numbers by hand
    u = np.random.default_rng(7).random(n)
    cum = np.cumsum(list(REFERENCE_CONDITIONS.values()))
    by_hand = [list(REFERENCE_CONDITIONS)[int(np.sum(x >= cum))] for x in u]
    assert draws == by_hand


def fake_renderer(city, view):
    return np.zeros((int(view["height"]), int(view["width"]), 3), np.uint8)


def test_generator_refuses_hidden_cameras_and_replaces_pois():
    """With a goal-share hook that calls the first camera of every POI hidden, every reference is the second
    camera and records its check; a hook that hides all cameras leaves no task and counts the POIs replaced."""
    from generate_util import fixture_city
    from urbanarena.tasks.generators import generate_suite

    city = fixture_city()
    seen: dict[str, list[dict]] = {}

    def hook(c, view, poi_id):
        views = seen.setdefault(poi_id, [])
        views.append(view)
        ok = len(views) >= 2
        return {"measure": "test", "passed": ok, "sign": {"share": 1.0 if ok else 0.1},
                "storefront": {"share": 1.0 if ok else 0.0}}

    res = generate_suite(city, per_family=3, seed=0, kinds=("landmark_image",), reference_renderer=fake_renderer,
                         reference_goal_share=hook)
    tasks = res.task_file.tasks
    assert len(tasks) == 3
    for t in tasks:
        rc = t.extra["reference_check"]
        assert rc["option"] == 1 and rc["goal_share"]["passed"] is True
        assert t.extra["reference_view"] == seen[t.extra["poi_id"]][1]
        assert t.extra["reference_view"]["scheme"] == 4
    res2 = generate_suite(city, per_family=3, seed=0, kinds=("landmark_image",), reference_renderer=fake_renderer,
                          reference_goal_share=lambda c, v, p: {"passed": False})
    fam = res2.report["families"]["landmark_image"]
    assert res2.task_file.tasks == []
    hidden = {r: n for r, n in fam["verification_failures"].items() if "goal is hidden" in r}
    assert sum(hidden.values()) >= 1


def test_freeze_refuses_scheme4_references_without_a_passing_check():
    from urbanarena.tasks.frozen import unchecked_references
    from urbanarena.tasks.schema import Task

    def task(tid, view, check=None):
        extra = {"task_kind": "landmark_image", "reference_view": view}
        if check is not None:
            extra["reference_check"] = check
        return Task.model_construct(task_id=tid, extra=extra)

    ts = [task("a", {"scheme": 3}), task("b", {}), task("c", {"scheme": 4}),
          task("d", {"scheme": 4}, {"goal_share": {"passed": False}}),
          task("e", {"scheme": 4}, {"goal_share": {"passed": True}})]
    assert unchecked_references(ts) == ["c", "d"]  # old schemes (v1..v4's) are not asked
