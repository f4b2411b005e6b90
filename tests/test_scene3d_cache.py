"""Panorama cache on disk, the store interface views use, prerendering, and scenes built from a city.

Rendering tests skip, with the reason, where no headless OpenGL context can be created.
"""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from urbanarena.errors import CityFormatError
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.scene import OSM_ATTRIBUTION, Building, Poi, Road, Scene, StreetObject
from urbanarena.world.city import City, CityMeta
from urbanarena.world.geo import LocalFrame


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


def tiny_city(heading_a: float = 0.0) -> City:
    """Three nodes along a street, positions set directly in a frame at Helsinki."""
    frame = LocalFrame(60.17, 24.94)
    g = nx.DiGraph()
    for n, (x, y, h) in {"a": (0.0, 0.0, heading_a), "b": (10.0, 0.0, 90.0), "c/odd id": (20.0, 0.0, None)}.items():
        lat, lon = frame.to_latlon(x, y)
        g.add_node(n, lat=lat, lon=lon, x_m=x, y_m=y, heading_deg=h, walkable_headings_raw=None,
                   walkable_headings_deg=None)
    g.add_edge("a", "b", azimuth_deg=90.0, length_m=10.0)
    g.add_edge("b", "c/odd id", azimuth_deg=90.0, length_m=10.0)
    return City(g, CityMeta(name="tiny", attribution=OSM_ATTRIBUTION), frame=frame)


def tiny_scene() -> Scene:
    return Scene(
        "tiny",
        (Building("b1", [(-10, 6), (30, 6), (30, 20), (-10, 20)], 14.0),),
        (Poi("p1", "Apteekki", "shop", 5.0, 6.0, "b1"),),
        (StreetObject("t", "tree", 15.0, 4.0),),
        (Road("r", [(-50, 0), (60, 0)], 7.0, 2.0),),
        attribution=OSM_ATTRIBUTION,
    )


def test_store_renders_once_then_reads_the_file(gl, tmp_path):
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, node_file_name, read_png
    from urbanarena.render.views import compass_view, node_view

    city = tiny_city()
    s1 = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path, width=256)
    img = s1.get("b")
    assert img.shape == (128, 256, 3) and not img.flags.writeable
    assert s1.rendered == 1 and s1.path("b").is_file()
    assert s1.path("c/odd id").name == node_file_name("c/odd id") and "/" not in s1.path("c/odd id").name
    manifest = json.loads((s1.dir / "manifest.json").read_text())
    assert manifest["scene_hash"] == tiny_scene().content_hash() and manifest["width"] == 256
    # a fresh store (another process, later) reads the file: same pixels, nothing rendered
    s2 = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path, width=256)
    assert s2.dir == s1.dir
    again = s2.get("b")
    assert s2.rendered == 0 and again.tobytes() == img.tobytes()
    assert np.array_equal(read_png(s2.path("b")), img)  # lossless
    assert s2.pixel_hash("b") == s1.pixel_hash("b")
    # the store works where views are cut: node_view == compass_view at the node's centre bearing
    v = node_view(s2, "b", 45.0, 0.0, 90.0, 160, 120)
    assert np.array_equal(v, compass_view(again, 45.0, 0.0, 90.0, 160, 120, heading_deg=90.0))
    assert s2.centre_bearing_deg("c/odd id") == 0.0  # unset heading -> north
    with pytest.raises(KeyError):
        s2.get("nope")


def test_cache_key_changes_with_scene_settings_width_and_poses(gl, tmp_path):
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.render.scene3d.renderer import RenderSettings

    city, scene = tiny_city(), tiny_scene()
    base = RenderedPanoramaStore(city, scene, root=tmp_path, width=256).dir
    moved = Scene(scene.name, scene.buildings, (Poi("p1", "Apteekki", "shop", 6.0, 6.0, "b1"),), scene.objects,
                  scene.roads, attribution=scene.attribution)
    assert RenderedPanoramaStore(city, moved, root=tmp_path, width=256).dir != base
    assert RenderedPanoramaStore(city, scene, RenderSettings(sun_azimuth_deg=90.0), root=tmp_path,
                                 width=256).dir != base
    assert RenderedPanoramaStore(city, scene, root=tmp_path, width=512).dir != base
    assert RenderedPanoramaStore(tiny_city(heading_a=10.0), scene, root=tmp_path, width=256).dir != base
    assert RenderedPanoramaStore(tiny_city(), tiny_scene(), root=tmp_path, width=256).dir == base


def test_prerender_in_worker_processes_matches_in_process_renders(gl, tmp_path):
    """Two spawn workers (one llvmpipe thread each) write the same pixels as this process renders."""
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender, read_png

    city = tiny_city()
    store = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path / "w", width=256)
    out = prerender(store, workers=2)
    assert out["rendered"] == 3 and out["cached"] == 0
    assert store.missing() == []
    assert prerender(store, workers=2)["rendered"] == 0  # all cached now
    local = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path / "l", width=256)
    for n in ("a", "b", "c/odd id"):
        assert np.array_equal(read_png(store.path(n)), local.render(n)), n


def test_imagery_source_lets_the_plain_panorama_store_read_the_cache(gl, tmp_path):
    from urbanarena.render.panorama_store import PanoramaStore
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender
    from urbanarena.world.imagery import attach_imagery

    city = tiny_city()
    rs = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path, width=256)
    with pytest.raises(CityFormatError, match="heading_deg"):
        rs.imagery_source()  # node "c/odd id" has no heading: the imagery rule could not orient it
    city.graph.nodes["c/odd id"]["heading_deg"] = 0.0
    rs = RenderedPanoramaStore(city, tiny_scene(), root=tmp_path, width=256)
    prerender(rs)
    attach_imagery(city, rs.imagery_source())
    ps = PanoramaStore(city)
    for n in ("a", "b", "c/odd id"):
        assert np.array_equal(ps.get(n), rs.get(n))
        assert ps.centre_bearing_deg(n) == rs.centre_bearing_deg(n)
    assert ps.source.attribution == OSM_ATTRIBUTION and ps.source.redistributable


# ------------------------------------------------------------- from a city
def annotated_city() -> City:
    """A city with hand-made annotations: one building with a shop, a carriageway, a footway, a
    zebra crossing, a tree and an unnamed POI."""
    from urbanarena.world import annotations as A

    city = tiny_city()
    fac = A.Facade("w1:0", "w1", (-10.0, 6.0), (30.0, 6.0), 180.0, True, 6.0)
    bldg = A.Building("w1", "way/1", [[[(-10.0, 6.0), (30.0, 6.0), (30.0, 20.0), (-10.0, 20.0)]]],
                      [[[(0.0, 0.0)]]], 14.0, "levels", levels=4, facades=[fac])
    shop = A.POI("n1", "node/1", "Apteekki", "shop", "chemist", 5.0, 12.0, 60.17, 24.94, building_id="w1",
                 facade_id="w1:0", facade_xy=(5.0, 6.0))
    unnamed = A.POI("n2", "node/2", None, "amenity", "atm", 8.0, 12.0, 60.17, 24.94, building_id="w1",
                    facade_id="w1:0", facade_xy=(8.0, 6.0))
    road = A.Street("s1", ["a", "b"], [(-50.0, 0.0), (60.0, 0.0)], [(24.9, 60.1), (24.9, 60.1)], 110.0,
                    "secondary", "Testikatu", [1], True, 7.0, sidewalk_left=True, sidewalk_right=True)
    path = A.Street("s2", ["b"], [(0.0, -20.0), (0.0, -60.0)], [(24.9, 60.1), (24.9, 60.1)], 40.0,
                    "footway", None, [2], False, 2.5)
    cross = A.StreetObject("o1", "node/3", "crossing", 12.0, 0.0, 60.17, 24.94, street_id="s1",
                           street_azimuth_deg=90.0)
    tree = A.StreetObject("o2", "node/4", "tree", 15.0, 4.0, 60.17, 24.94, street_id="s1",
                          street_azimuth_deg=90.0)
    sign = A.StreetObject("o3", "node/5", "traffic_sign", 20.0, 4.0, 60.17, 24.94,
                          tags={"traffic_sign": "FI:B5"})
    city.annotations = A.Annotations(60.17, 24.94, pois=[shop, unnamed], objects=[cross, tree, sign],
                                     buildings=[bldg], streets=[road, path])
    return city


def test_scene_from_city_maps_the_annotations():
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.layout import layout_signs

    scene = scene_from_city(annotated_city())
    assert [b.id for b in scene.buildings] == ["w1"] and scene.buildings[0].height_m == 14.0
    assert [(p.id, p.name, p.x_m, p.y_m, p.building_id, p.facing_hint_deg) for p in scene.pois] == \
        [("n1", "Apteekki", 5.0, 6.0, "w1", 180.0)]  # unnamed POIs carry no sign
    assert [(c.id, c.road_bearing_deg, c.road_width_m) for c in scene.crosswalks] == [("o1", 90.0, 7.0)]
    assert [(o.kind, o.label) for o in scene.objects] == [("tree", None), ("traffic_sign", "FI:B5")]
    assert {r.id: (r.kind, r.sidewalk_m) for r in scene.roads} == {"s1": ("road", 2.0), "s2": ("footway", 0.0)}
    assert scene.attribution == OSM_ATTRIBUTION
    (sign,) = layout_signs(scene)
    assert sign.facing_deg == pytest.approx(180.0) and sign.building_id == "w1"
    with pytest.raises(ValueError, match="no annotations"):
        scene_from_city(tiny_city())


def test_annotated_city_renders_its_sign(gl, tmp_path):
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.render.scene3d.palette import sign_colours

    city = annotated_city()
    store = RenderedPanoramaStore(city, root=tmp_path, width=512)
    pano = store.get("a")  # node a at (0, 0), centre bearing 0 (north): the shop is north-east
    assert sign_colours("n1")[0] == (90, 30, 90)  # purple panel: R = B, both well above G
    r, g, b = (pano[: pano.shape[0] // 2, :, i].astype(int) for i in range(3))
    purple = (np.abs(r - b) < 15) & (r - g > 30) & (b - g > 30)
    rows, cols = np.nonzero(purple)
    assert len(cols) > 10
    # the sign centre is at about (5, 6) m from the node: bearing atan2(5, 6) = 39.8 deg
    bearing = (cols.mean() + 0.5 - 256) * 360 / 512
    assert bearing == pytest.approx(39.8, abs=6.0)
