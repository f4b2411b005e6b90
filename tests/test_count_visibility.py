"""Every counted object is visible in at least one rendered view from inside its range (issue 4).

The object-count generator takes a visibility hook (render/scene3d/visibility.CountVisibility: at
least MIN_VISIBLE_PX pixels in a 640x360, 90-degree view from a pose node of the range, turned
towards the object). Checked here independently of the hook: the range is rebuilt from the task
file, the nodes inside it are found with shapely, and from each node eight fixed views (every 45
degrees, so any object narrower than 45 degrees lies wholly inside one of them) are rendered with
the ID pass; an object passes when one of them shows MIN_VISIBLE_PX of its pixels.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from shapely.geometry import Point, Polygon

from generate_util import fixture_city, from_fix, helsinki_area, helsinki_pbf_path
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.generators import generate_suite, object_count
from urbanarena.tasks.generators.common import make_context

YAWS = tuple(range(0, 360, 45))
WANTED = {"easy": 1, "medium": 1, "hard": 1}


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


def feature_key(obj: dict) -> tuple[str, str]:
    return ("poi" if obj["type"] == "shop" else "object", obj["id"])


def keys(pool) -> set[tuple[str, str]]:
    return {(c.key, d) for d, cands in pool.by_difficulty.items() for c in cands}


# ------------------------------------------------------------------ hand-made occlusion on the fixture
def test_hook_drops_exactly_the_ranges_counting_a_hidden_object(gl):
    """On the hand-written fixture, boxing in tree T3 (70, 7) with a 10 m tall block drops every
    candidate that counts it (n403) and nothing else; with the plain scene nothing is dropped."""
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.scene import Building
    from urbanarena.render.scene3d.visibility import CountVisibility, VisibilityPass

    city = fixture_city()
    plain = object_count.generate(make_context(city, 0), WANTED)
    scene = scene_from_city(city)
    seen = object_count.generate(make_context(city, 0), WANTED, visibility=CountVisibility(city, VisibilityPass(scene)))
    assert keys(seen) == keys(plain)
    x, y = from_fix(city, 70, 7)
    box = Building("box", [(x - 2.6, y - 2.6), (x + 2.6, y - 2.6), (x + 2.6, y + 2.6), (x - 2.6, y + 2.6)], 10.0)
    boxed = dataclasses.replace(scene, buildings=scene.buildings + (box,))
    hook = CountVisibility(city, VisibilityPass(boxed))
    hidden = object_count.generate(make_context(city, 0), WANTED, visibility=hook)
    with_t3 = {(c.key, d) for d, cands in plain.by_difficulty.items() for c in cands
               if any(o["id"] == "n403" for o in c.fields["extra"]["counted"])}
    assert with_t3  # T3 is counted in the hand-counted road and block ranges
    assert keys(hidden) == keys(plain) - with_t3
    assert hidden.rejected["tree not visible from any pose node in the range"] > 0
    node = min(city.graph.nodes, key=lambda n: np.hypot(*(np.subtract(city.xy(n), (x, y)))))
    assert hook.pixels("object", "n403", node) == 0 and hook.pixels("object", "n402", node) > 100


# ------------------------------------------------------------------ the default city core
@pytest.fixture(scope="module")
def core(request, tmp_path_factory):
    return helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")


@pytest.fixture(scope="module")
def vis(gl, core):
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.visibility import VisibilityPass

    return VisibilityPass(scene_from_city(core))


def nodes_in_range(core, extra: dict) -> list[str]:
    """Pose nodes inside the task's range, rebuilt from the task file: within 0.5 m of the range
    polygon, and for a block perimeter within 15 m (+0.5) of the block's boundary (the band's hole
    is not written to the file)."""
    polys = [Polygon(r) for r in extra["range_polygon_xy"]]
    out = []
    for n in sorted(core.graph.nodes):
        p = Point(core.xy(n))
        for poly in polys:
            if poly.distance(p) <= 0.5 and (not extra["range"].startswith("block")
                                            or poly.exterior.distance(p) <= 15.5):
                out.append(n)
                break
    return out


def test_every_counted_object_is_visible_from_a_node_of_its_range(core, vis):
    from urbanarena.render.scene3d.visibility import CountVisibility, MIN_VISIBLE_PX

    hook = CountVisibility(core, vis)
    suite = generate_suite(core, per_family=25, kinds=("object_count",), count_visibility=hook)
    tasks = suite.task_file.tasks
    assert len(tasks) == 25
    views: dict[str, dict[tuple[str, str], int]] = {}

    def best_view(node: str) -> dict[tuple[str, str], int]:
        if node not in views:
            x, y = core.xy(node)
            px: dict[tuple[str, str], int] = {}
            for yaw in YAWS:
                for k, n in vis.pixel_counts(float(x), float(y), 1.7, float(yaw), 0.0, 90.0, 640, 360).items():
                    px[k] = max(px.get(k, 0), n)
            views[node] = px
        return views[node]

    checked = 0
    for t in tasks:
        extra = t.extra
        inside = nodes_in_range(core, extra)
        assert inside, t.task_id
        assert int(t.answer) == len(extra["counted"])
        for obj in extra["counted"]:
            order = sorted(inside, key=lambda n: np.hypot(*np.subtract(core.xy(n), obj["xy_m"])))
            best = 0
            for n in order:
                best = max(best, best_view(n).get(feature_key(obj), 0))
                if best >= MIN_VISIBLE_PX:
                    break
            assert best >= MIN_VISIBLE_PX, (t.task_id, obj, best)
            checked += 1
    assert checked == sum(int(t.answer) for t in tasks)
