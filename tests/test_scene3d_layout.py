"""Sign layout and scene description (pure geometry + Pillow; no OpenGL needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from shapely.geometry import Point, Polygon

from urbanarena.render.scene3d.fonts import SignStyle, cap_ratio, render_sign_image, sign_font, uncovered_characters
from urbanarena.render.scene3d.layout import SignLayout, building_walls, layout_signs
from urbanarena.render.scene3d.palette import contrast_ratio, facade_colour, sign_colours
from urbanarena.render.scene3d.scene import Building, Poi, Road, Scene, StreetObject
from urbanarena.world.geo import angle_diff_deg


def box_building(bid, x0, y0, x1, y1, h=12.0, clockwise=False):
    pts = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    return Building(bid, pts[::-1] if clockwise else pts, h)


def rects_overlap(a, b) -> bool:
    """Do two signs on the same wall overlap (as rectangles in the wall plane)?"""
    # signs share a wall: compare intervals along the wall direction, and heights
    d = np.subtract(a.right, a.left) / a.width_m
    ta = sorted([0.0, a.width_m])
    tb0 = float(np.dot(np.subtract(b.left, a.left), d))
    tb = sorted([tb0, tb0 + b.width_m])
    horiz = ta[0] < tb[1] - 1e-9 and tb[0] < ta[1] - 1e-9
    vert = a.z_bottom_m < b.z_top_m - 1e-9 and b.z_bottom_m < a.z_top_m - 1e-9
    return horiz and vert


# ----------------------------------------------------------------- walls
@pytest.mark.parametrize("clockwise", [False, True])
def test_wall_normals_point_outside_whatever_the_ring_orientation(clockwise):
    b = box_building("b", 0, 0, 20, 10, clockwise=clockwise)
    poly = Polygon(b.footprint)
    walls = building_walls(b)
    assert len(walls) == 4
    facings = sorted(round(w.facing_deg) % 360 for w in walls)
    assert facings == [0, 90, 180, 270]
    for w in walls:
        mx, my = w.point_at(w.length_m / 2, 0.1)
        assert not poly.contains(Point(mx, my)), "the normal must point out of the building"
        ix, iy = w.point_at(w.length_m / 2, -0.1)
        assert poly.contains(Point(ix, iy))


def test_pack_row_hand_worked_least_squares():
    # two 2 m signs wanting centres 5.0 and 5.5 m with a 0.4 m gap: the constraint
    # x2 = x1 + 2.4 binds; minimise (x1 + 1 - 5)^2 + (x1 + 2.4 + 1 - 5.5)^2 -> x1 = 3.05
    lefts = SignLayout.pack_row([5.0, 5.5], [2.0, 2.0], 0.0, 10.0, 0.4)
    assert lefts == pytest.approx([3.05, 5.45])
    # pushed against the wall end: wanted centres beyond the end are clipped inside
    lefts = SignLayout.pack_row([9.8, 9.9], [2.0, 2.0], 0.0, 10.0, 0.4)
    assert lefts == pytest.approx([5.6, 8.0])
    assert SignLayout.pack_row([1, 2, 3], [4, 4, 4], 0.0, 10.0, 0.5) is None  # 13 m > 10 m


# ---------------------------------------------------------------- facades
def street_scene(pois, extra_buildings=(), roads=None):
    b = box_building("shop", -15, 5, 15, 20, h=15.0)
    roads = roads if roads is not None else (Road("r", [(-60, 0), (60, 0)], 7.0, 2.0),)
    return Scene("t", (b, *extra_buildings), tuple(pois), (), roads)


def test_sign_goes_on_the_street_facing_facade_nearest_the_poi_and_faces_the_street():
    # POI point inside the building, nearer the north (back) wall, but the road runs south
    scene = street_scene([Poi("p", "Kahvila Sävy", "amenity", 2.0, 17.0)])
    (s,) = layout_signs(scene)
    assert s.building_id == "shop"
    assert s.facing_deg == pytest.approx(180.0)          # faces the road (south)
    assert s.left[1] == pytest.approx(5.0 - 0.12)        # on the south wall, 0.12 m proud of it
    assert not s.freestanding and not s.squeezed
    # centred on the POI's projection onto the wall
    assert (s.left[0] + s.right[0]) / 2 == pytest.approx(2.0, abs=1e-6)
    # text runs left to right for a viewer facing the sign (looking north): west -> east
    assert s.left[0] < s.right[0]


def test_party_wall_is_not_street_facing():
    # a neighbour shares the west wall of "shop"; the POI sits right next to that wall
    neighbour = box_building("nb", -35, 5, -15, 20, h=15.0)
    scene = street_scene([Poi("p", "Apteekki", "shop", -14.5, 12.0)], extra_buildings=(neighbour,))
    (s,) = layout_signs(scene)
    assert s.building_id == "shop"
    assert s.facing_deg == pytest.approx(180.0)


def test_importer_facade_hint_wins():
    # POI exactly on the east wall, importer says that facade (normal 90) is its storefront
    scene = street_scene([Poi("p", "Kirjakauppa", "shop", 15.0, 12.0, facing_hint_deg=90.0)])
    (s,) = layout_signs(scene)
    assert s.facing_deg == pytest.approx(90.0)
    assert s.left[0] == pytest.approx(15.12)


def test_several_pois_on_one_facade_get_separate_non_overlapping_signs_in_order():
    names = ["Kahvila Sävy", "Apteekki", "Asian Wok And Grill Phở Việt", "R-kioski", "Kukkakauppa Ruusu"]
    xs = [-6.0, -5.0, -4.0, 3.0, 3.5]  # crowded: desired centres far closer than sign widths
    pois = [Poi(f"p{i}", n, "shop", x, 8.0) for i, (n, x) in enumerate(zip(names, xs))]
    signs = layout_signs(street_scene(pois))
    assert [s.poi_id for s in signs] == [p.id for p in pois]
    assert len({s.wall_index for s in signs}) == 1
    for i in range(len(signs)):
        for j in range(i + 1, len(signs)):
            assert not rects_overlap(signs[i], signs[j]), (signs[i].name, signs[j].name)
    # order along the wall follows the POIs (west to east) within each row
    for row in {s.row for s in signs}:
        r = [s for s in signs if s.row == row]
        assert [s.left[0] for s in r] == sorted(s.left[0] for s in r)
    # every sign stays on the wall (x in [-15, 15]) and below the roof
    for s in signs:
        assert -15.0 <= min(s.left[0], s.right[0]) and max(s.left[0], s.right[0]) <= 15.0
        assert 2.0 <= s.z_bottom_m < s.z_top_m <= 15.0


def test_realistic_letter_heights_and_a_crowded_small_facade_still_does_not_overlap():
    kiosk = box_building("kiosk", -3, 5, 3, 9, h=7.0)
    pois = [Poi(f"k{i}", f"Liike numero {i}", "shop", -2 + i * 0.5, 7.0, "kiosk") for i in range(8)]
    scene = Scene("t", (kiosk,), tuple(pois), (), (Road("r", [(-50, 0), (50, 0)], 7.0),))
    signs = layout_signs(scene)
    for i in range(len(signs)):
        for j in range(i + 1, len(signs)):
            if signs[i].wall_index == signs[j].wall_index:
                assert not rects_overlap(signs[i], signs[j])
    assert max(s.z_top_m for s in signs) <= 7.0 + 1e-9
    # default storefront lettering is 0.35 m, never a billboard
    big = layout_signs(street_scene([Poi("p", "Zara", "shop", 0.0, 10.0)]))[0]
    assert big.cap_height_m == pytest.approx(0.35)
    assert big.height_m < 1.0


def test_poi_without_building_gets_a_freestanding_sign_facing_the_nearest_road():
    scene = Scene("t", (), (Poi("k", "Kioski", "shop", 5.0, 10.0),), (),
                  (Road("r", [(-50, 0), (50, 0)], 7.0),))
    (s,) = layout_signs(scene)
    assert s.freestanding and s.building_id is None
    assert s.facing_deg == pytest.approx(180.0)
    x, y, yaw = s.viewpoint(10.0)
    assert (x, y) == pytest.approx((5.0, 0.0), abs=1e-9)
    assert angle_diff_deg(yaw, 0.0) == pytest.approx(0.0, abs=1e-9)


def test_viewpoint_geometry():
    (s,) = layout_signs(street_scene([Poi("p", "Apteekki", "shop", 0.0, 10.0)]))
    cx, cy, _ = s.centre
    x, y, yaw = s.viewpoint(20.0, 45.0)
    assert math.hypot(x - cx, y - cy) == pytest.approx(20.0)
    # 45 degrees to the sign's right as seen facing it (viewer looks north; right = east)
    assert x - cx == pytest.approx(20.0 * math.sin(math.radians(45)))
    assert angle_diff_deg(yaw, 315.0) == pytest.approx(0.0, abs=1e-9)  # looking back north-west at the sign


# ------------------------------------------------------------------ fonts
def test_sign_font_is_the_documented_one_and_covers_the_district_scripts():
    info = sign_font()
    assert info.path.is_file() and len(info.sha256) == 64
    # Finnish, Swedish, Sami, German, French, Vietnamese letters and the copyright sign
    assert uncovered_characters(["ÄÖÅäöåŠšŽžÉéÜüßơệĐđ©", "Asian Wok And Grill Phở Việt"]) == set()
    # the check can fail: CJK and Thai are not in Noto Sans
    assert uncovered_characters(["寿司", "ไทย"]) == set("寿司ไทย")


def test_rendered_cap_height_matches_the_request():
    style = SignStyle((255, 255, 255), (0, 0, 0))
    img = render_sign_image(["HHHH"], 60.0, style)
    dark = (img.mean(axis=2) < 128)
    dark[:, :8] = dark[:, -8:] = False  # the border
    dark[:8, :] = dark[-8:, :] = False
    rows = np.flatnonzero(dark.any(axis=1))
    assert rows[-1] - rows[0] + 1 == pytest.approx(60, abs=2)
    assert 0.6 < cap_ratio() < 0.8


def test_colours_are_deterministic_and_sign_text_contrasts():
    assert facade_colour("way/1") == facade_colour("way/1")
    assert len({facade_colour(f"way/{i}") for i in range(40)}) > 10
    for i in range(50):
        bg, fg = sign_colours(f"node/{i}")
        assert contrast_ratio(bg, fg) >= 4.5  # WCAG AA for text


# ------------------------------------------------------------------ scene
def test_scene_hash_is_content_based_and_round_trips():
    s1 = street_scene([Poi("p", "Apteekki", "shop", 0.0, 10.0)])
    s2 = Scene.from_dict(s1.to_dict())
    assert s2 == s1 and s2.content_hash() == s1.content_hash()
    s3 = street_scene([Poi("p", "Apteekki", "shop", 0.0, 10.5)])
    assert s3.content_hash() != s1.content_hash()


def test_scene_validation():
    with pytest.raises(ValueError):
        Building("b", [(0, 0), (1, 0)], 10.0)
    with pytest.raises(ValueError):
        Building("b", [(0, 0), (1, 0), (0, 1)], 0.0)
    with pytest.raises(ValueError):
        Poi("p", "  ", "shop", 0.0, 0.0)
    with pytest.raises(ValueError):
        Scene("t", objects=(StreetObject("a", "tree", 0, 0), StreetObject("a", "bench", 1, 1)))
    with pytest.raises(ValueError):
        Road("r", [(0, 0), (1, 0)], 5.0, kind="motorway")


def test_a_full_facade_passes_signs_to_the_next_street_facing_facade():
    # corner building: a 2.5 m east wall (where the importer put all six shops) and a 30 m south wall,
    # streets to the south and east
    b = Building("corner", [(0, 5), (30, 5), (30, 7.5), (0, 7.5)], 6.0)
    pois = [Poi(f"s{i}", f"Kauppa numero {i}", "shop", 30.0, 6.0, "corner", facing_hint_deg=90.0) for i in range(6)]
    roads = (Road("r1", [(-20, 0), (60, 0)], 7.0), Road("r2", [(36, -20), (36, 40)], 7.0))
    signs = layout_signs(Scene("t", (b,), tuple(pois), (), roads))
    facings = sorted(round(s.facing_deg) for s in signs)
    assert 90 in facings and 180 in facings  # some stay east, the rest move to the south facade
    assert not any(s.squeezed for s in signs)
    assert min(s.cap_height_m for s in signs) >= 0.2
    for i in range(len(signs)):
        for j in range(i + 1, len(signs)):
            if signs[i].wall_index == signs[j].wall_index:
                assert not rects_overlap(signs[i], signs[j])
