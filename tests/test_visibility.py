"""The ID pass (render/scene3d/visibility.py) on tiny hand-built scenes.

Pixel areas are worked by hand from the pinhole model of render/views.py: a 640-px-wide, 90-degree
view has focal length f = 320 px, and pixel (u, v) sees the ray ((u - 319.5) / f, -(v - 179.5) / f, 1)
in camera axes (right, up, forward).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.scene import Building, Poi, Road, Scene, StreetObject

W, H, F = 640, 360, 320.0
EYE = 1.7


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


def vis_of(scene: Scene):
    from urbanarena.render.scene3d.visibility import VisibilityPass

    return VisibilityPass(scene)


# a vending machine 10 m north of the origin, its front (1.0 m wide, 1.85 m tall) facing south
VM = StreetObject("vm", "vending_machine", 0.0, 10.0, heading_deg=180.0)


def centres_inside(lo: float, hi: float, n: int) -> int:
    """How many pixel centres ``c = (i - (n-1)/2) / F`` (i = 0..n-1) satisfy ``lo < c < hi``."""
    c = (np.arange(n) - (n - 1) / 2) / F
    return int(np.count_nonzero((c > lo) & (c < hi)))


def test_object_in_front_covers_its_projected_area(gl):
    """Seen squarely from 10 m, the machine's silhouette is its front face (the sides and the top
    project inside it): 1.0 m x 1.85 m at D = 10 - 0.375 m, i.e. f^2 * 1.85 / D^2 = 2045 px."""
    vis = vis_of(Scene("one", objects=(VM,)))
    counts = vis.pixel_counts(0.0, 0.0, EYE, yaw_deg=0.0, pitch_deg=0.0, hfov_deg=90.0, width=W, height=H)
    n = counts[("object", "vm")]
    D = 10.0 - 0.375
    analytic = F * F * 1.0 * 1.85 / D ** 2
    assert analytic == pytest.approx(2045.0, abs=1.0)
    assert abs(n - analytic) / analytic < 0.05, (n, analytic)
    # the exact count of pixel centres inside the projected rectangle (x in +-0.5/D, y from -EYE/D to 0.15/D)
    exact = centres_inside(-0.5 / D, 0.5 / D, W) * centres_inside(-(1.85 - EYE) / D, EYE / D, H)
    assert abs(n - exact) <= 3, (n, exact)
    assert set(counts) == {("object", "vm")}


def test_projected_area_of_a_building_wall_and_its_position(gl):
    """A 4 m x 6 m wall 20 m ahead: f^2 * 24 / 400 = 6144 px, centred horizontally, bottom 1.7 m below the eye."""
    b = Building("wall", [(-2, 20), (2, 20), (2, 23), (-2, 23)], 6.0)
    vis = vis_of(Scene("wall", buildings=(b,)))
    mask = vis.mask(("building", "wall"), 0.0, 0.0, EYE, 0.0, 0.0, 90.0, W, H)
    n = int(mask.sum())
    assert abs(n - F * F * 24 / 400) / 6144 < 0.02, n
    rows, cols = np.nonzero(mask)
    assert (cols.min() + cols.max()) / 2 == pytest.approx((W - 1) / 2, abs=1.0)
    # bottom edge at v = 179.5 + f * 1.7 / 20 = 206.7, top at 179.5 - f * 4.3 / 20 = 110.7
    assert rows.max() == pytest.approx(179.5 + F * EYE / 20, abs=1.0)
    assert rows.min() == pytest.approx(179.5 - F * (6.0 - EYE) / 20, abs=1.0)


def test_object_hidden_behind_a_building_counts_zero(gl):
    wall = Building("wall", [(-5, 4), (5, 4), (5, 6), (-5, 6)], 8.0)
    hidden = vis_of(Scene("hidden", buildings=(wall,), objects=(VM,)))
    c = hidden.pixel_counts(0.0, 0.0, EYE, 0.0)
    assert ("object", "vm") not in c
    assert c[("building", "wall")] > 10000
    # the same pose without the wall sees it (positive control)
    assert vis_of(Scene("open", objects=(VM,))).pixel_counts(0.0, 0.0, EYE, 0.0)[("object", "vm")] > 1000


def test_object_behind_the_camera_counts_zero(gl):
    vis = vis_of(Scene("one", objects=(VM,)))
    assert ("object", "vm") not in vis.pixel_counts(0.0, 0.0, EYE, yaw_deg=180.0)
    assert vis.pixel_counts(0.0, 0.0, EYE, yaw_deg=0.0)[("object", "vm")] > 1000
    # turned 60 degrees away, the 90-degree view (half-width 45) no longer holds it
    assert ("object", "vm") not in vis.pixel_counts(0.0, 0.0, EYE, yaw_deg=60.0)
    assert vis.pixels_towards(("object", "vm"), 0.0, 0.0, EYE) == vis.pixel_counts(0.0, 0.0, EYE, 0.0)[("object", "vm")]


def street_scene(objects) -> Scene:
    b = [Building("b1", [(-20, 12), (20, 12), (20, 25), (-20, 25)], 15.0),
         Building("b2", [(-20, -25), (10, -25), (10, -12), (-20, -12)], 12.0)]
    pois = [Poi("p1", "Kahvila", "amenity", -5, 12, "b1"), Poi("p2", "Apteekki", "shop", 5, -12, "b2")]
    roads = [Road("r1", [(-100, 0), (100, 0)], 8.0, 2.5)]
    return Scene("street", tuple(b), tuple(pois), tuple(objects), tuple(roads))


OBJECTS = (StreetObject("t1", "tree", -6, 7.0), StreetObject("l1", "street_lamp", 3, 6.5),
           StreetObject("bn", "bench", 8, 7.5, 180.0), VM, StreetObject("ts", "traffic_sign", -3, -6.5, label="stop"))


@pytest.mark.parametrize("oid", ["t1", "l1", "bn", "vm", "ts"])
def test_id_image_agrees_with_the_rendered_silhouette(gl, oid):
    """Where the ID pass shows the object is exactly where the normal render changes when the object
    is taken out of the scene."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    full = street_scene(OBJECTS)
    without = street_scene(tuple(o for o in OBJECTS if o.id != oid))
    vis = vis_of(full)
    o = next(o for o in OBJECTS if o.id == oid)
    for x, y, back in ((-12.0, 0.0, 1.0), (10.0, -2.0, -1.0)):
        yaw = math.degrees(math.atan2(o.x_m - x, o.y_m - y)) % 360
        args = (x, y, yaw, 0.0, 90.0, W, H, EYE)
        a = vis.renderer.render_view(*args)
        b = SceneRenderer(without).render_view(*args)
        changed = np.any(a != b, axis=2)
        mask = vis.mask(("object", oid), x, y, EYE, yaw, 0.0, 90.0, W, H)
        assert mask.sum() > 50
        assert np.array_equal(mask, changed), (oid, int(mask.sum()), int(changed.sum()), int((mask ^ changed).sum()))


def test_features_are_keyed_by_kind_and_id(gl):
    """A POI on a building outline shares the building's OSM id: the key keeps them apart."""
    b = Building("w1", [(-10, 12), (10, 12), (10, 20), (-10, 20)], 10.0)
    scene = Scene("dup", buildings=(b,), pois=(Poi("w1", "Kirjakauppa", "shop", 0, 12, "w1"),),
                  roads=(Road("r", [(-50, 0), (50, 0)], 8.0),))
    vis = vis_of(scene)
    assert vis.features == [("building", "w1"), ("poi", "w1")]
    by = vis.counts_by_kind(0.0, 2.0, EYE, 0.0)
    assert by["building"]["w1"] > 10000 and by["poi"]["w1"] > 100 and by["object"] == {}
    # the sign hides part of the wall: the two features' pixels do not overlap
    ids = vis.index_image(0.0, 2.0, EYE, 0.0)
    assert set(np.unique(ids)) == {0, vis.index_of(("building", "w1")), vis.index_of(("poi", "w1"))}
