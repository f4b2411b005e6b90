"""People and vehicles of the panoramas (issue 19, item 1): snapshot rules, settings, ID-pass coverage, counting.

Checked independently of the code under test where it matters: the counting ground truth against a geometric
recount from the placements' positions and against the ID pass (every counted placement shows pixels from the
start node, and the ID pass shows no other placement of that kind at that anchor); the coverage on the shopping
streets from the ID pass; flat settings keep their identity and draw nobody.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from generate_util import helsinki_area, helsinki_pbf_path
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.population import (
    CAMERA_CLEAR_M, CAMERA_CLEAR_VEHICLE_M, RADIUS_M, VEHICLE_KINDS, check_population, snapshot,
)
from urbanarena.render.scene3d.renderer import RenderSettings
from urbanarena.render.scene3d.styles import settings_for_style


@pytest.fixture(scope="module")
def city(request, tmp_path_factory):
    return helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")


@pytest.fixture(scope="module")
def scene(city):
    from urbanarena.render.scene3d.city_scene import scene_from_city

    return scene_from_city(city)


@pytest.fixture(scope="module")
def renderer(scene):
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    from urbanarena.render.scene3d.renderer import SceneRenderer

    return SceneRenderer(scene, settings_for_style("realistic"))


def _pose(city, node):
    from urbanarena.render.scene3d.city_scene import node_pose

    return node_pose(city, node)


# ----------------------------------------------------------------- settings
def test_flat_and_default_settings_keep_their_identity():
    base = RenderSettings()
    assert "population" not in base.identity_dict() and "population_seed" not in base.identity_dict()
    flat = settings_for_style("flat")
    assert flat.population == "none" and flat.key() == RenderSettings(style="flat").key()
    real = settings_for_style("realistic")
    assert real.population == "snapshot"
    assert real.key() != RenderSettings(style="realistic").key()
    assert settings_for_style("realistic", population="none").key() == RenderSettings(style="realistic").key()
    assert settings_for_style(settings=RenderSettings.for_condition("night"), population="snapshot").population \
        == "snapshot"
    with pytest.raises(ValueError, match="population must be one of"):
        check_population("crowd")
    with pytest.raises(ValueError, match="population"):
        RenderSettings(population="many")


def test_arena_view_records_population():
    from urbanarena.runner.arena import ArenaViewSettings

    assert "population" not in ArenaViewSettings(render_style="flat").as_dict()
    assert ArenaViewSettings().as_dict()["population"] == "snapshot"
    assert ArenaViewSettings(population="none").as_dict().get("population") is None
    old = ArenaViewSettings.from_stored({"render_style": "realistic"})  # a run from before issue 19
    assert old.population == "none" and old.render_settings.population == "none"


def test_store_keys_and_flat_draws_nobody(city, tmp_path):
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore

    flat = RenderedPanoramaStore(city, settings=settings_for_style("flat"), root=tmp_path)
    real = RenderedPanoramaStore(city, settings=settings_for_style("realistic"), root=tmp_path)
    bare = RenderedPanoramaStore(city, settings=settings_for_style("realistic", population="none"), root=tmp_path)
    n = sorted(city.graph.nodes)[0]
    assert flat.population(n) is None and bare.population(n) is None
    assert real.population(n) is not None
    assert len({flat.key, real.key, bare.key}) == 3
    assert "population" in real.identity and "population" not in bare.identity


def test_store_renders_people_into_cached_panoramas(city, renderer, tmp_path):
    """The store draws the node's snapshot (a realistic panorama with people differs from one without, is
    written to and read back from the cache unchanged, and the prerender workers draw the same pixels)."""
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore, prerender, read_png

    n = shopping_nodes(city)[0]
    real = RenderedPanoramaStore(city, settings=settings_for_style("realistic"), root=tmp_path, width=256)
    bare = RenderedPanoramaStore(city, settings=settings_for_style("realistic", population="none"), root=tmp_path,
                                 width=256)
    try:
        a, b = real.get(n), bare.get(n)
    finally:  # two more renderers of the city beside the module's: free their GL objects now
        real.release()
        bare.release()
    assert np.any(a != b)
    assert np.array_equal(read_png(real.path(n)), a)
    other = RenderedPanoramaStore(city, settings=settings_for_style("realistic"), root=tmp_path / "w", width=256)
    prerender(other, nodes=[n, shopping_nodes(city)[1]], workers=2)
    assert np.array_equal(read_png(other.path(n)), a)


# ----------------------------------------------------------------- snapshot rules
def test_snapshot_deterministic_and_seeded(city, scene):
    nodes = sorted(city.graph.nodes)
    a, b = nodes[10], nodes[11]
    xa, ya, _ = _pose(city, a)
    s1 = snapshot(scene, a, xa, ya)
    assert s1 == snapshot(scene, a, xa, ya)
    assert s1 != snapshot(scene, a, xa, ya, population_seed=1)
    assert s1 != snapshot(scene, a, xa, ya, condition="night")
    xb, yb, _ = _pose(city, b)
    s2 = snapshot(scene, b, xb, yb)
    moving1 = {p.id: p for p in s1.of_kind("pedestrian")}
    moving2 = {p.id: p for p in s2.of_kind("pedestrian")}
    same = [i for i in set(moving1) & set(moving2) if moving1[i] == moving2[i]]
    assert len(same) < 0.2 * max(1, len(moving1))  # another node, another moment
    parked1 = {p.id: p for p in s1.of_kind("parked_car")}
    parked2 = {p.id: p for p in s2.of_kind("parked_car")}
    shared = set(parked1) & set(parked2)
    assert shared and all(parked1[i] == parked2[i] for i in shared)  # parked cars stay where they are
    # night has fewer people than the day (factor 0.35)
    n_day = sum(len(snapshot(scene, n, *_pose(city, n)[:2]).of_kind("pedestrian")) for n in nodes[:40:8])
    n_night = sum(len(snapshot(scene, n, *_pose(city, n)[:2], condition="night").of_kind("pedestrian"))
                  for n in nodes[:40:8])
    assert n_night < 0.6 * n_day


def test_snapshot_keeps_clear_of_camera_buildings_and_road(city, scene):
    import shapely
    from shapely.geometry import LineString, Point, Polygon

    buildings = shapely.union_all([Polygon(b.footprint) for b in scene.buildings if len(b.footprint) >= 3])
    carriage = shapely.union_all([LineString(r.centreline).buffer(r.width_m / 2, cap_style="flat")
                                  for r in scene.roads if r.kind == "road"])
    kinds = set()
    for n in sorted(city.graph.nodes)[::50]:
        x, y, _ = _pose(city, n)
        snap = snapshot(scene, n, x, y)
        for p in snap.placements:
            kinds.add(p.kind)
            assert math.hypot(p.x_m - x, p.y_m - y) <= RADIUS_M + 1e-9
            fp = p.footprint()
            clear = CAMERA_CLEAR_VEHICLE_M if p.kind in VEHICLE_KINDS else CAMERA_CLEAR_M
            assert fp.distance(Point(x, y)) >= clear - 1e-9
            assert fp.intersection(buildings).area < 1e-6, p
            if p.kind in ("pedestrian", "waiting"):
                assert not carriage.contains(Point(p.x_m, p.y_m)), p
            if p.kind in ("car", "parked_car", "tram"):
                assert carriage.buffer(0.5).contains(Point(p.x_m, p.y_m)), p
        assert [p.id for p in snap.placements] == sorted(p.id for p in snap.placements)
    assert {"pedestrian", "parked_car", "car", "waiting"} <= kinds


# ----------------------------------------------------------------- rendering
def test_population_is_drawn_and_occludes(city, scene, renderer):
    from urbanarena.bench.population import shopping_nodes
    from urbanarena.render.scene3d.population_draw import PopulationObjects, population_pixels

    n = shopping_nodes(city)[0]
    x, y, b0 = _pose(city, n)
    objs = PopulationObjects(snapshot(scene, n, x, y))
    b = max((b0 + 90 * k for k in range(4)),
            key=lambda yaw: int((renderer.render_ids(x, y, yaw, 0.0, 90.0, 320, 180, dynamic=objs)
                                 > len(renderer.features)).sum()))
    with_ = renderer.render_view(x, y, b, 0.0, 90.0, 320, 180, dynamic=objs)
    without = renderer.render_view(x, y, b, 0.0, 90.0, 320, 180)
    changed = np.any(with_ != without, axis=2)
    ids = renderer.render_ids(x, y, b, 0.0, 90.0, 320, 180, dynamic=objs)
    mask = ids > len(renderer.features)
    assert mask.sum() > 100
    # the ID pass's population pixels are (almost all) where the render changed, and vice versa
    assert (mask & changed).sum() >= 0.9 * mask.sum()
    assert (changed & ~mask).sum() <= 0.15 * changed.sum()  # edges, anti-aliasing
    assert population_pixels(renderer, objs, x, y, b, 0.0, 90.0, 320, 180)["total_px"] == int(mask.sum())
    # deterministic panorama
    p1 = renderer.render_panorama(x, y, width=256, centre_bearing_deg=b, dynamic=objs)
    p2 = renderer.render_panorama(x, y, width=256, centre_bearing_deg=b, dynamic=PopulationObjects(
        snapshot(scene, n, x, y)))
    assert np.array_equal(p1, p2)


def test_shopping_street_coverage_sample(city, renderer):
    """The acceptance measure (``urbanarena bench population`` runs all 142 nodes) on every 12th node."""
    from urbanarena.bench.population import MIN_PX, coverage, shopping_nodes

    nodes = shopping_nodes(city)
    assert len(nodes) >= 100
    res = coverage(city, nodes[::12], renderer=renderer)
    assert res["nodes"] == len(nodes[::12])
    assert res["share"] >= 0.8, res["by_street"]
    assert all(r["best_px"] >= 0 for r in res["rows"]) and res["min_px"] == MIN_PX


# ----------------------------------------------------------------- counting
def test_counting_targets_ground_truth(city, scene, renderer):
    from urbanarena.render.scene3d.population_draw import PopulationObjects, StartVisibility, visible_placements
    from urbanarena.tasks.generators import population_count
    from urbanarena.tasks.generators.common import make_context
    from urbanarena.tasks.validators import mra_match

    ctx = make_context(city, 0)
    nodes = sorted(city.graph.nodes)[:200:5]
    pool = population_count.generate(ctx, {}, scene=scene, nodes=nodes, visibility=StartVisibility(city, renderer))
    cands = [c for cs in pool.by_difficulty.values() for c in cs]
    ranges = {c.fields["extra"]["range"] for c in cands}
    assert ranges == {"crosswalk_waiting", "street_parked"}
    crosswalks = {c.id: c for c in scene.crosswalks}
    for k, cand in enumerate(cands[:12]):
        task = cand.build(f"pc{k}")
        extra = task.extra
        n = int(task.answer)
        assert n == len(extra["counted"]) >= 1
        node = task.start.node
        x, y, b = _pose(city, node)
        snap = snapshot(scene, node, x, y)
        # independent geometric recount from the placements' positions
        if extra["range"] == "crosswalk_waiting":
            cw = crosswalks[extra["anchor"].split(":", 1)[1]]
            a = math.radians(cw.road_bearing_deg)
            along, across = np.array([math.sin(a), math.cos(a)]), np.array([math.cos(a), -math.sin(a)])
            geo = [p for p in snap.placements if p.kind in ("pedestrian", "waiting")
                   and abs(np.dot([p.x_m - cw.x_m, p.y_m - cw.y_m], along)) <= 1.2
                   and cw.road_width_m / 2 + 0.3 <= abs(np.dot([p.x_m - cw.x_m, p.y_m - cw.y_m], across))
                   <= cw.road_width_m / 2 + 2.0]
            assert {p.id for p in geo} == {c["id"] for c in extra["counted"]}
        else:
            road = next(r for r in scene.roads if f"road:{r.id}" == extra["anchor"])
            from shapely.geometry import LineString, Point

            line = LineString(road.centreline)
            geo = [p for p in snap.placements if p.kind == "parked_car"
                   and abs(line.distance(Point(p.x_m, p.y_m)) - (road.width_m / 2 - 1.1)) < 0.05
                   and 0 < line.project(Point(p.x_m, p.y_m)) < line.length]
            assert len(geo) == n
        # the ID pass from the start shows every counted placement
        seen = visible_placements(renderer, PopulationObjects(snap), x, y, b, min_px=1)
        assert all(c["id"] in seen for c in extra["counted"])
        # the oracle (answers task.answer) scores 100 % under the family's metric
        assert mra_match(task.answer, task.answer).score == 1.0


def test_population_count_is_an_opt_in_suite_kind(city):
    """``generate_suite(kinds=["population_count"])`` builds counting tasks whose answers are the snapshot's counts;
    the default kinds never include it (ordinary counting tasks never count people or vehicles)."""
    from urbanarena.tasks.generators import ALL_KINDS, generate_suite

    assert "population_count" not in ALL_KINDS
    res = generate_suite(city, per_family=3, seed=0, kinds=["population_count"])
    tasks = res.task_file.tasks
    assert tasks and all(t.extra["task_kind"] == "object_count" for t in tasks)
    from urbanarena.render.scene3d.city_scene import scene_from_city

    scene = scene_from_city(city)
    for t in tasks:
        x, y, _ = _pose(city, t.start.node)
        snap = snapshot(scene, t.start.node, x, y, t.extra["population"]["condition"])
        kinds = ("waiting",) if t.extra["range"] == "crosswalk_waiting" else ("parked_car",)
        assert int(t.answer) == snap.count(kinds, anchor=t.extra["anchor"])


def test_count_visibility_sees_people_in_front_of_objects(city, scene, renderer):
    """With ``population=`` the object-count visibility hook draws each node's people and vehicles: an object
    never shows more pixels than without them, and some object near parked cars shows fewer."""
    from urbanarena.render.scene3d.visibility import CountVisibility, VisibilityPass

    vis = VisibilityPass(renderer)
    bare = CountVisibility(city, vis)
    busy = CountVisibility(city, vis, population=settings_for_style("realistic"))
    assert CountVisibility(city, vis, population=settings_for_style("flat")).population is None
    cars = [p for n in sorted(city.graph.nodes)[::60] for p in snapshot(scene, n, *_pose(city, n)[:2])
            .of_kind("parked_car")]
    pairs = []
    for car in cars[:25]:
        objs = [o for o in scene.objects if o.kind in ("tree", "street_lamp", "traffic_sign")
                and math.hypot(o.x_m - car.x_m, o.y_m - car.y_m) < 6.0]
        nodes = sorted(city.graph.nodes, key=lambda n: math.dist(_pose(city, n)[:2], (car.x_m, car.y_m)))[:2]
        pairs += [(o.id, n) for o in objs[:1] for n in nodes]
    assert pairs
    less = 0
    for oid, n in pairs:
        a, b = bare.pixels("object", oid, n), busy.pixels("object", oid, n)
        assert b <= a
        less += b < a
    assert less >= 1
