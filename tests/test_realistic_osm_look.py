"""The realistic style's look from OSM tags (issue 14, items left over): materials, colours, storeys, roof
shapes, balconies, tram tracks, land-use planting, cast shadows on walls, two-faced blade signs and
see-through window lettering. Hand-built scenes and a hand-written OSM file; expected values worked by hand
or computed by a second implementation (the GPU for the facade hash)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from shapely.geometry import Point, Polygon

from urbanarena.render.scene3d import building_look as B
from urbanarena.render.scene3d import realistic as R
from urbanarena.render.scene3d.city_scene import building_look
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.meshes import build_scene_meshes
from urbanarena.render.scene3d.scene import Building, LandArea, RailLine, Road, Scene

needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
TINY = Path(__file__).parent / "data" / "osm_build_tiny.osm"


def test_building_look_normalises_tags_and_drops_unreadable_values():
    look = building_look({"building": "apartments", "building:material": "Sandstone", "building:colour": "#b4c9b3",
                          "roof:shape": "gambrel", "roof:levels": "1", "roof:colour": "dark red"})
    assert look == {"material": "stone", "tagged_colour": (180, 201, 179), "roof_shape": "gabled",
                    "roof_colour": None, "roof_height_m": pytest.approx(2.8), "kind": "apartments"}
    look = building_look({"building": "yes", "building:colour": "brown", "roof:shape": "9.0", "roof:height": "5 m",
                          "building:material": "adobe"})
    assert look["tagged_colour"] == (165, 42, 42) and look["roof_shape"] is None and look["material"] is None
    assert look["roof_height_m"] == pytest.approx(5.0) and look["kind"] is None


def test_scene_keeps_its_hash_without_the_new_fields_and_round_trips_with_them():
    plain = Scene(name="s", buildings=(Building("b", [(0, 0), (10, 0), (10, 10)], 9.0),))
    d = plain.to_dict()
    assert "rails" not in d and "land_areas" not in d and "material" not in d["buildings"][0]
    full = Scene(name="s", buildings=(Building("b", [(0, 0), (10, 0), (10, 10)], 9.0, material="brick",
                                               tagged_colour=(10, 20, 30), roof_shape="hipped"),),
                 rails=(RailLine("t", [(0, -3), (10, -3)]),), land_areas=(LandArea("g", [(0, -5), (5, -5), (5, -9)]),))
    back = Scene.from_dict(full.to_dict())
    assert back == full and back.content_hash() == full.content_hash() != plain.content_hash()
    assert back.bounds() == plain.bounds()  # drawn-only content leaves the flat ground's extent alone
    with pytest.raises(ValueError, match="kind"):
        LandArea("x", [(0, 0), (1, 0), (1, 1)], kind="lava")


def _decode(shop: np.ndarray) -> dict[str, np.ndarray]:
    v = shop.astype(np.int64)
    return {"shop": v & 1, "seed": (v >> 1) & 32767, "mat": (v >> 16) & 7, "tagged": (v >> 19) & 1,
            "storey": (v >> 20) & 15}


def test_facade_attribute_packs_material_colour_and_storeys():
    # b1: brick, colour tagged, 5 levels in 18 m: storeys (18 - 3.6) / 4 = 3.6 m -> code round(1.0 / 0.12) + 1 = 9
    b1 = Building("b1", [(0, 10), (20, 10), (20, 20), (0, 20)], 18.0, levels=5, material="brick",
                  tagged_colour=(200, 100, 50))
    b2 = Building("b2", [(0, -20), (20, -20), (20, -10), (0, -10)], 12.0)
    scene = Scene(name="pack", buildings=(b1, b2), roads=(Road("r", [(-50, 0), (50, 0)], 8.0, 2.0),))
    flat = build_scene_meshes(scene, style="flat")
    real = build_scene_meshes(scene, style="realistic")
    fb, rb = real.facades, flat.facades
    assert np.array_equal(fb.positions, rb.positions)  # same walls, only the attributes differ
    got = _decode(fb.shop)
    old = rb.shop.astype(np.int64)
    assert np.array_equal(got["shop"], old & 1) and np.array_equal(got["seed"], (old >> 1) >> 5)
    is1 = fb.feature == 1  # b1 is feature 1, b2 feature 2
    assert set(got["mat"][is1]) == {1} and set(got["mat"][~is1]) == {0}
    assert set(got["tagged"][is1]) == {1} and set(got["tagged"][~is1]) == {0}
    assert set(got["storey"][is1]) == {9} and set(got["storey"][~is1]) == {0}
    assert np.allclose(fb.colours[is1], np.array([200, 100, 50]) / 255.0)
    assert np.array_equal(fb.colours[~is1], rb.colours[~is1])
    assert np.array_equal(flat.facades.shop, build_scene_meshes(scene, style="flat").facades.shop)
    assert B.storey_code(None) == 0 and B.storey_code(2.6) == 1 and B.storey_code(9.0) == 15


def test_python_hash_matches_the_shader_and_window_columns_hand_worked():
    # rhash(0, 0, 0) = 0: every product is 0 and the mixing keeps 0
    assert B.rhash(0, 0, 0) == 0
    # rhash(1, 0, 0): h = 1597334677; h ^= h >> 15; h *= 2246822519; ... (mod 2**32), worked step by step
    h = 1597334677
    h ^= h >> 15
    h = h * 2246822519 % 2**32
    h ^= h >> 13
    h = h * 3266489917 % 2**32
    h ^= h >> 16
    assert B.rhash(1, 0, 0) == h
    width, cols = B.window_columns(12345, 20.0)
    bh = B.rhash(12345 >> 4, 7, 1)
    spacing = max(width + 0.9 + 0.9 * ((bh >> 8) & 255) / 255.0, 2.2)
    n = math.floor(19.4 / spacing)
    assert len(cols) == n and cols[0] == pytest.approx((20.0 - n * spacing) / 2 + spacing / 2, abs=1e-5)
    assert B.window_columns(12345, 1.0)[1] == []


@needs_gl
def test_python_hash_agrees_with_the_gpu():
    from urbanarena.render.scene3d.context import current, gl_context
    from urbanarena.render.scene3d.realistic_shaders import HASH

    ctx = gl_context()
    fs = "#version 330\nout vec4 f;\n" + HASH + """
void main() {
    uint h = rhash(uvec3(uint(gl_FragCoord.x) * 977u, 7u, 1u));
    f = vec4(float(h & 255u), float((h >> 8u) & 255u), float((h >> 24u) & 255u), 255.0) / 255.0;
}"""
    vs = "#version 330\nin vec2 p;\nvoid main() { gl_Position = vec4(p, 0.0, 1.0); }"
    with current(ctx):
        prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
        quad = ctx.buffer(np.array([-1, -1, 1, -1, 1, 1, -1, -1, 1, 1, -1, 1], "f4").tobytes())
        vao = ctx.vertex_array(prog, [(quad, "2f", "p")])
        fbo = ctx.framebuffer([ctx.renderbuffer((64, 1), 4)])
        fbo.use()
        vao.render()
        px = np.frombuffer(fbo.read(components=3), np.uint8).reshape(64, 3)
        for o in (fbo, vao, quad, prog):
            o.release()
    want = np.array([[(h := B.rhash(x * 977, 7, 1)) & 255, (h >> 8) & 255, (h >> 24) & 255] for x in range(64)])
    assert np.array_equal(px, want)


def test_roof_geometry_hand_worked():
    # 10 x 6 m box, 9 m tall, gabled: eaves grown 0.3 m -> 10.6 x 6.6; ridge along x at y = 3,
    # 9 + tan(32 deg) * 3.3 m high; 4 slope triangles, 2 gable ends
    b = Building("g", [(0, 0), (10, 0), (10, 6), (0, 6)], 9.0, roof_shape="gabled")
    slopes, gables = B.roof_geometry(b)
    top = 9.0 + math.tan(math.radians(32.0)) * 3.3
    assert slopes.shape == (4, 3, 3) and gables.shape == (2, 3, 3)
    ridge = slopes.reshape(-1, 3)[np.isclose(slopes.reshape(-1, 3)[:, 2], top)]
    assert len(ridge) and np.allclose(ridge[:, 1], 3.0) and set(np.round(ridge[:, 0], 6)) == {-0.3, 10.3}
    # hipped: hips at 45 degrees in plan, so the ridge is 10.6 - 6.6 = 4.0 m long; six faces' triangles
    slopes, gables = B.roof_geometry(Building("h", b.footprint, 9.0, roof_shape="hipped"))
    xs = slopes.reshape(-1, 3)[slopes.reshape(-1, 3)[:, 2] > 9.5][:, 0]
    assert xs.max() - xs.min() == pytest.approx(4.0) and len(gables) == 0 and len(slopes) == 6
    slopes, _ = B.roof_geometry(Building("p", [(0, 0), (8, 0), (8, 8), (0, 8)], 6.0, roof_shape="pyramidal",
                                         roof_height_m=2.0))
    apex = slopes.reshape(-1, 3)[np.argmax(slopes.reshape(-1, 3)[:, 2])]
    assert len(slopes) == 4 and np.allclose(apex, [4.0, 4.0, 8.0])
    # an L-shaped footprint (area / rectangle = 0.75 < 0.8), a dome and tall untagged buildings stay flat
    ell = [(0, 0), (10, 0), (10, 5), (5, 5), (5, 10), (0, 10)]
    assert B.roof_geometry(Building("l", ell, 9.0, roof_shape="hipped")) is None
    assert B.roof_geometry(Building("d", b.footprint, 9.0, roof_shape="dome")) is None
    assert B.roof_shape_of(Building("t", b.footprint, 30.0)) == "flat"


def test_seeded_roof_shares_on_many_low_buildings():
    sq = [(0, 0), (8, 0), (8, 8), (0, 8)]
    shapes = [B.roof_shape_of(Building(f"b{i}", sq, 9.0)) for i in range(2000)]
    for shape, share in B.ROOF_SHARES:
        assert shapes.count(shape) / 2000 == pytest.approx(share, abs=0.035)


def test_balconies_follow_the_window_columns_and_storeys():
    b = Building("res", [(0, 0), (24, 0), (24, 10), (0, 10)], 16.4, levels=5, kind="apartments")
    assert B.has_balconies(b) == (B.stable_unit("res", "balconies") < B.BALCONY_SHARE)
    bid = next(f"res{i}" for i in range(100)
               if B.has_balconies(Building(f"res{i}", b.footprint, 16.4, levels=5, kind="apartments")))
    b = Building(bid, b.footprint, 16.4, levels=5, kind="apartments")
    assert not B.has_balconies(Building(bid, b.footprint, 16.4, levels=5, kind="office"))
    from urbanarena.render.scene3d.meshes import MeshBuilder

    mb = MeshBuilder()
    n = B.balconies(mb, Scene(name="b", buildings=(b,)), {bid: 1}, 3.2, 3.6)
    # storeys (16.4 - 3.6) / 4 = 3.2 m; rows k = 1.. while 3.6 + (k + 1) 3.2 <= 15.9: k = 1, 2 -> slabs at 6.8, 10.0 m
    mesh = mb.build()
    tops = sorted({round(float(z), 3) for z in mesh.positions[:, 2]})
    assert {6.8, 10.0} <= set(tops) and max(tops) == pytest.approx(10.95)
    # south wall (y = 0, 24 m): the balcony centres are every other window column of that wall
    from urbanarena.render.scene3d.layout import building_walls

    per_wall = 0
    for w in building_walls(b):
        if w.length_m >= 8.0:
            _, cols = B.window_columns(B.wall_seed(bid, w.index), w.length_m)
            per_wall += len([c for i, c in enumerate(cols) if i % 2 == B.stable_index(bid, 2, "balcony-parity")])
    assert n == 2 * per_wall and n > 0


def test_tram_and_land_layers_hand_worked():
    scene = Scene(name="t", roads=(Road("r", [(-50, 0), (50, 0)], 8.0, 0.0),),
                  rails=(RailLine("tr", [(-40, 1.5), (40, 1.5)]),),
                  land_areas=(LandArea("g", [(-10, -2), (10, -2), (10, -20), (-10, -20)], kind="park"),))
    layers = R.street_layers(scene)
    colours = [c for _, c in layers]
    assert colours[0] == R.PARK_RGB
    land = layers[0][0]
    assert land.area == pytest.approx(20 * 16)  # the square minus the carriageway (y > -4)
    bed, grooves, heads = (g for g, c in layers if c in (R.TRACK_BED_RGB, R.GROOVE_RGB, R.RAIL_RGB))
    assert bed.area == pytest.approx(80 * R.TRACK_BED_M)
    assert heads.area == pytest.approx(2 * 80 * R.RAIL_HEAD_M, rel=1e-3)
    assert heads.contains(Point(0, 1.5 + R.GAUGE_M / 2)) and heads.contains(Point(0, 1.5 - R.GAUGE_M / 2))
    assert not heads.contains(Point(0, 1.5))
    inner = 1.5 + R.GAUGE_M / 2 - (R.RAIL_HEAD_M + R.GROOVE_M) / 2
    assert grooves.contains(Point(0, inner)) and grooves.area == pytest.approx(2 * 80 * R.GROOVE_M, rel=1e-3)
    dashes = [g for g, c in layers if c == R.STRIPE_RGB]
    assert all(d.intersection(bed).area < 1e-9 for d in dashes)  # no centre line on the track bed


def _tiny_with_tram_and_grass(tmp_path: Path) -> Path:
    text = TINY.read_text()
    extra = """
  <node id="501" version="1" lat="60.1699820" lon="24.9400000"/>
  <node id="502" version="1" lat="60.1699820" lon="24.9405404"/>
  <node id="601" version="1" lat="60.1699282" lon="24.9400000"/>
  <node id="602" version="1" lat="60.1699282" lon="24.9405404"/>
  <node id="603" version="1" lat="60.1698743" lon="24.9405404"/>
  <node id="604" version="1" lat="60.1698743" lon="24.9400000"/>
  <way id="1201" version="1"><nd ref="501"/><nd ref="502"/><tag k="railway" v="tram"/></way>
  <way id="1301" version="1"><nd ref="601"/><nd ref="602"/><nd ref="603"/><nd ref="604"/><nd ref="601"/>
    <tag k="landuse" v="grass"/></way>
</osm>"""
    text = text.replace("</osm>", extra).replace(
        '<tag k="building:levels" v="2"/>',
        '<tag k="building:levels" v="2"/><tag k="building:material" v="brick"/><tag k="roof:shape" v="hipped"/>')
    p = tmp_path / "tiny_tram.osm"
    p.write_text(text)
    return p


def test_osm_import_keeps_tram_tracks_and_grass_without_touching_the_graph(tmp_path):
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.world.annotations import Annotations
    from urbanarena.world.importers.osm import import_city

    base = import_city(TINY)
    city = import_city(_tiny_with_tram_and_grass(tmp_path))
    assert city.content_hash == base.content_hash  # drawn-only data: same graph, same suites
    ann = city.annotations
    assert len(ann.rail_lines) == 1 and ann.rail_lines[0]["osm_id"] == "way/1201"
    xy = np.array(ann.rail_lines[0]["xy"])
    street = np.array(base.annotations.streets[0].xy)[[0, -1]]  # the 30 m street the tram runs 2 m south of
    assert np.allclose(np.sort(xy, axis=0), np.sort(street, axis=0) - [0.0, 2.0], atol=0.05)
    assert len(ann.land_areas) == 1 and ann.land_areas[0]["kind"] == "grass"
    assert Polygon(ann.land_areas[0]["polygon_xy"][0][0]).area == pytest.approx(30 * 6, rel=0.02)
    back = Annotations.from_dict(ann.to_dict())
    assert back.rail_lines == ann.rail_lines and back.land_areas == ann.land_areas
    assert "rail_lines" not in base.annotations.to_dict()  # files without them are unchanged
    scene = scene_from_city(city)
    assert len(scene.rails) == 1 and len(scene.land_areas) == 1 and scene.land_areas[0].kind == "grass"
    (b,) = scene.buildings
    assert (b.material, b.roof_shape, b.kind) == ("brick", "hipped", "retail")


def test_annotations_reject_malformed_drawn_layers():
    from urbanarena.errors import CityFormatError
    from urbanarena.world.annotations import Annotations

    d = Annotations(60.0, 24.0).to_dict()
    d["rail_lines"] = {"not": "a list"}
    with pytest.raises(CityFormatError, match="rail_lines"):
        Annotations.from_dict(d, "x/annotations.json.gz")


def test_blade_signs_have_two_faces_and_window_lettering_is_flagged():
    from dataclasses import replace

    from urbanarena.render.scene3d.layout import SignLayout
    from urbanarena.render.scene3d.meshes import MeshBuilder, build_sign_atlas, sign_meshes
    from urbanarena.render.scene3d.scene import Poi

    scene = Scene(name="s", buildings=(Building("b", [(0, 0), (20, 0), (20, 10), (0, 10)], 12.0),),
                  pois=(Poi("p", "Kahvila", "amenity", 10, 0, "b"),))
    (s,) = SignLayout(scene).place()
    for kind, faces in (("blade", 2), ("window", 1)):
        t = replace(s, kind=kind, family="noto-sans")
        atlas = build_sign_atlas([t])
        (mesh,) = sign_meshes([t], atlas, MeshBuilder())
        assert mesh.n_triangles == 2 * faces
        if kind == "blade":
            front, back = mesh.normals[0], mesh.normals[6]
            assert np.allclose(front, -back)
            # the back face is the front mirrored: its u runs the other way along the sign
            u_front = mesh.uv[:6, 0][np.argmin(mesh.positions[:6] @ np.r_[np.cross([0, 0, 1], front)[:2], 0])]
            u_back = mesh.uv[6:, 0][np.argmin(mesh.positions[6:] @ np.r_[np.cross([0, 0, 1], front)[:2], 0])]
            assert u_front != u_back
        else:
            assert mesh.uv[:, 0].min() >= 2.0  # see-through glass flag (realistic sign program)


def test_awnings_hide_some_signs_and_never_blades():
    from urbanarena.render.scene3d.realistic import SIGN_AWNING_SHARE

    keys = [f"b{i}/0" for i in range(3000)]
    share = sum(B.stable_unit(k, "awning-under-sign") < SIGN_AWNING_SHARE for k in keys) / len(keys)
    assert share == pytest.approx(SIGN_AWNING_SHARE, abs=0.03)


@needs_gl
def test_a_tall_building_casts_its_shadow_on_the_wall_behind_it():
    # Sun from the south-west (towards the sun: azimuth 225, 45 degrees up: d = (-0.5, -0.5, 0.707)). A 30 m
    # tower on x, y in [-3, 3] x [-13, -7]; north-east of it a wall facing south at y = 0. From the wall
    # point (x0, 0, 0.5) the ray to the sun has x = x0 + y and z = 0.5 - 1.414 y: for x0 = 10 it crosses
    # the tower's centre (0, -10) at z = 14.6 < 30 (shadowed); for x0 = 25 it passes x = 12..18 beside the
    # tower (lit). Each point is looked at straight on from 5 m (centre pixel), with and without shadows.
    from urbanarena.render.scene3d.context import current
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    tower = Building("tower", [(-3, -13), (3, -13), (3, -7), (-3, -7)], 30.0)
    wall = Building("wall", [(-30, 0), (40, 0), (40, 8), (-30, 8)], 6.0, material="plaster")
    st = RenderSettings(style="realistic", sun_azimuth_deg=225.0, sun_elevation_deg=45.0)
    r = SceneRenderer(Scene(name="sh", buildings=(tower, wall)), st)
    ratio = {}
    try:
        for x0 in (10.0, 25.0):
            on = r.render_view(x0, -5.0, 0.0, 0.0, 40.0, 200, 200, 0.5).astype(float)
            with current(r.ctx):
                r.prog_facade["shadow_on"].value = 0.0
            off = r.render_view(x0, -5.0, 0.0, 0.0, 40.0, 200, 200, 0.5).astype(float)
            with current(r.ctx):
                r.prog_facade["shadow_on"].value = 1.0
            c = (slice(95, 105), slice(95, 105))
            ratio[x0] = on[c].mean() / off[c].mean()
        assert r.sun_shadow.texture is not None and r.sun_shadow.bake_s > 0
    finally:
        r.release()
    assert ratio[10.0] < 0.85 and ratio[25.0] == pytest.approx(1.0, abs=0.01)


def test_sun_matrix_covers_the_box():
    from urbanarena.render.scene3d.sun_shadow import sun_matrix

    lo, hi = np.array([-50.0, -20.0, 0.0]), np.array([30.0, 60.0, 40.0])
    M = sun_matrix(lo, hi, (-0.26, -0.72, 0.64))
    corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    ndc = corners @ M.T
    assert np.all(np.abs(ndc[:, :3]) <= 1.0) and np.allclose(ndc[:, 3], 1.0)
    # a point further along the sun direction is nearer the sun: smaller depth
    c = (lo + hi) / 2
    d = np.array([-0.26, -0.72, 0.64]) / np.linalg.norm([-0.26, -0.72, 0.64])
    assert (M @ np.r_[c + 10 * d, 1])[2] < (M @ np.r_[c, 1])[2]
