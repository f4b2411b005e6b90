"""People and vehicles in ``landmark_image`` reference photos (issue 19 item 2: "at another time of day and with
other people"; ``extra.reference_view.population_key``, generator version 3).

On the synthetic fixture city (no data needed), realistic style: the photo with its key differs from the same
view without it exactly where the ID pass of the key's own snapshot (computed here with
:func:`~urbanarena.render.scene3d.population.snapshot`, the photo's condition) shows people or vehicles; the same
view twice gives the same pixels; the people are not those of any panorama (another seed than every node id);
the flat style, whose panoramas show nobody, draws none; a bad key is a clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

from generate_util import fixture_city


@pytest.fixture(scope="module")
def setup():
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    from urbanarena.render.scene3d.reference import reference_renderer_of
    from urbanarena.tasks.generators import generate_suite

    city = fixture_city()
    res = generate_suite(city, per_family=4, seed=0, kinds=("landmark_image",),
                         reference_renderer=lambda c, v: np.zeros((v["height"], v["width"], 3), np.uint8))
    views = [t.extra["reference_view"] for t in res.task_file.tasks]
    return city, views, reference_renderer_of(city, "realistic")


def _population_mask(rr, view):
    from urbanarena.render.scene3d.population import snapshot
    from urbanarena.render.scene3d.population_draw import PopulationObjects
    from urbanarena.render.scene3d.reference import reference_settings

    settings = reference_settings(view, rr.base_settings)
    snap = snapshot(rr.scene, view["population_key"], view["x_m"], view["y_m"], settings.condition,
                    settings.population_seed)
    renderer = rr.renderer(settings)
    objs = PopulationObjects(snap)
    ids = renderer.render_ids(view["x_m"], view["y_m"], view["yaw_deg"], view["pitch_deg"], view["hfov_deg"],
                              view["width"], view["height"], view["eye_height_m"], dynamic=objs)
    return ids > len(renderer.features), snap


def test_reference_photos_show_their_own_people(setup):
    city, views, rr = setup
    assert views and all(v["population_key"].startswith("reference/") for v in views)
    shown = 0
    for v in views:
        with_ = rr.render(v)
        without = rr.render({k: x for k, x in v.items() if k != "population_key"})
        mask, snap = _population_mask(rr, v)
        changed = np.any(with_ != without, axis=2)
        if mask.sum() == 0:
            assert not changed.any()
            continue
        shown += 1
        # the changed pixels are the snapshot's people and vehicles (anti-aliased edges aside)
        assert (mask & changed).sum() >= 0.9 * mask.sum()
        assert (changed & ~mask).sum() <= 0.15 * changed.sum()
        assert np.array_equal(with_, rr.render(v))  # deterministic
    assert shown >= 1, "no reference of the fixture shows anybody"


def test_reference_people_are_not_a_panoramas(setup):
    from urbanarena.render.scene3d.population import snapshot

    city, views, rr = setup
    v = views[0]
    _, snap = _population_mask(rr, v)
    node = min(city.graph.nodes, key=lambda n: np.hypot(city.xy(n)[0] - v["x_m"], city.xy(n)[1] - v["y_m"]))
    at_node = snapshot(rr.scene, str(node), v["x_m"], v["y_m"], "clear")
    moving = lambda s: {(round(p.x_m, 2), round(p.y_m, 2)) for p in s.placements if p.kind != "parked_car"}  # noqa
    assert moving(snap) != moving(at_node)


def test_flat_references_draw_nobody_and_bad_keys_are_refused(setup):
    from urbanarena.render.scene3d.reference import reference_renderer_of

    city, views, _ = setup
    flat = reference_renderer_of(city, "flat")
    v = views[0]
    assert np.array_equal(flat.render(v), flat.render({k: x for k, x in v.items() if k != "population_key"}))
    with pytest.raises(ValueError, match="population_key"):
        flat.render(dict(v, population_key=""))
