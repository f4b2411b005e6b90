"""Arena observers: nearest-panorama views with red branch arrows, and the location map."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from arena_util import straight_street, t_junction
from urbanarena.env.arena_env import ArenaAction, ArenaEnv
from urbanarena.env.motion.trajectory import TrajState
from urbanarena.env.observers import LocationMapObserver, PanoramaObserver, panorama_observer_for
from urbanarena.render.maps import map_renderer_for
from urbanarena.world.imagery import attach_panorama_folder

BLUE, GREEN, GREY = (0, 0, 255), (0, 255, 0), (128, 128, 128)


def with_panoramas(city, tmp_path, colours):
    """Attach one plain-colour 64x32 equirectangular PNG per node (centre column facing north)."""
    for n in city.graph.nodes:
        city.graph.nodes[n]["heading_deg"] = 0.0
        Image.fromarray(np.full((32, 64, 3), colours.get(n, GREY), np.uint8)).save(tmp_path / f"{n}.png")
    return attach_panorama_folder(city, tmp_path, "{node}.png")


def red_pixels(img):
    return int(np.count_nonzero((img[..., 0] > 180) & (img[..., 1] < 90) & (img[..., 2] < 90)))


def test_view_comes_from_the_nearest_panorama(tmp_path):
    city = with_panoramas(straight_street(), tmp_path, {"a": BLUE, "b": GREEN})
    obs_fn = panorama_observer_for(city, width=32, height=18)
    env = ArenaEnv(city, observer=obs_fn)
    obs, _ = env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    assert obs["view"].shape == (18, 32, 3) and obs["view"].dtype == np.uint8
    assert (obs["view"] == BLUE).all()
    obs, *_ = env.step(ArenaAction("W", "MEDIUM"))  # 4 m from a: a's panorama
    assert (obs["view"] == BLUE).all()
    obs, *_ = env.step(ArenaAction("W", "SMALL"))  # 5.5 m: nearer to b
    assert (obs["view"] == GREEN).all()
    # exactly half-way: the edge's source
    assert (obs_fn(city, env.pose(TrajState("a", "b", 5.0, 0.0, 0.0))) == BLUE).all()
    assert (obs_fn(city, env.pose(TrajState("a", "b", 5.000001, 0.0, 0.0))) == GREEN).all()


def test_red_arrows_appear_when_a_branch_is_in_view(tmp_path):
    city = with_panoramas(t_junction(), tmp_path, {})
    obs_fn = PanoramaObserver(panorama_observer_for(city).store, width=160, height=90, hfov_deg=90.0)
    env = ArenaEnv(city, observer=obs_fn)
    obs, _ = env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    assert red_pixels(obs["view"]) == 0  # mid-street: no arrows
    for _ in range(3):
        obs, *_ = env.step(ArenaAction("W", "LARGE"))
    # at the T, facing north: both arms (270 and 90 deg) lie outside a 90 deg view
    assert len(obs["arrows"]) == 2 and red_pixels(obs["view"]) == 0
    assert [p.reason for p in obs_fn.last_placements] == ["outside view", "outside view"]
    obs, *_ = env.step(ArenaAction("D", "MEDIUM"))  # yaw 60: the east arm (90) is 30 deg right of centre
    assert red_pixels(obs["view"]) > 50
    drawn = [p for p in obs_fn.last_placements if p.drawn]
    assert len(drawn) == 1 and drawn[0].branch.bearing_deg == pytest.approx(90.0)
    assert drawn[0].tip_px[0] > 80  # right half of the image
    obs, *_ = env.step(ArenaAction("RIGHT"))  # chosen: arrows gone
    assert red_pixels(obs["view"]) == 0


def test_location_map_marker_and_graph_only_city():
    city = straight_street()
    assert panorama_observer_for(city) is None
    env = ArenaEnv(city, map_renderer=LocationMapObserver(64, 96))
    obs, _ = env.reset(options={"start_node": "a", "start_heading_deg": 0.0})
    env.step(ArenaAction("W", "LARGE"))
    obs, _, _, _, info = env.step(ArenaAction("W", "LARGE"))
    assert obs["view"] is None and obs["map"].shape == (96, 64, 3)
    u, v = map_renderer_for(city, 64, 96).world_to_px(info["pose"]["x_m"], info["pose"]["y_m"])
    assert tuple(obs["map"][int(round(float(v))), int(round(float(u)))]) == (220, 20, 20)  # the agent disc


def test_repeated_poses_are_served_from_the_view_cache_with_the_same_pixels(tmp_path):
    # second implementation: the same observer with the cache off (max_views=0) cuts every view afresh
    city = with_panoramas(t_junction(), tmp_path, {})
    rng = np.random.default_rng(5)
    for n in city.graph.nodes:  # textured panoramas, so a wrong yaw or node would show
        Image.fromarray(rng.integers(0, 256, (32, 64, 3), dtype=np.uint8)).save(tmp_path / f"{n}.png")
    store = panorama_observer_for(city).store
    cached = PanoramaObserver(store, width=160, height=90, max_views=4)
    fresh = PanoramaObserver(store, width=160, height=90, max_views=0)
    env = ArenaEnv(city, observer=cached)
    poses = []
    obs, _ = env.reset(options={"start_node": "s", "start_heading_deg": 0.0})
    poses.append(env.pose())
    for a in (ArenaAction("W", "LARGE"),) * 3 + (ArenaAction("D", "MEDIUM"),):
        env.step(a)
        poses.append(env.pose())
    # between panoramas the nearer node's view is shown: poses with one node, yaw and arrows share a view
    distinct = list(dict.fromkeys((p.nearest_node, p.yaw_deg, p.pitch_deg, p.arrows) for p in poses))
    assert len(distinct) == 4 and cached.view_misses == 4 and cached.view_hits == len(poses) - 4
    last = {k: p for p in poses for k in [(p.nearest_node, p.yaw_deg, p.pitch_deg, p.arrows)]}
    views = [cached(city, last[k]) for k in distinct]  # all 4 fit in the cache: all hits
    assert cached.view_hits == len(poses) and cached.view_misses == 4
    for k, v in zip(distinct, views):
        assert v.flags.writeable and np.array_equal(v, fresh(city, last[k]))
        # the arrows' placements of a hit are those of the cut view
        cached(city, last[k])
        assert [(q.reason, q.drawn, q.tip_px) for q in cached.last_placements] == \
            [(q.reason, q.drawn, q.tip_px) for q in fresh.last_placements]
    assert red_pixels(views[-1]) > 50  # the turned view shows the east arm's arrow
    # editing a returned view does not change the next one
    views[-1][:] = 0
    assert np.array_equal(cached(city, last[distinct[-1]]), fresh(city, last[distinct[-1]]))
    # least recently used dropped first: a fifth view pushes out the first, which is then cut again
    extra = env.pose(TrajState("s", None, 0.0, travel_deg=0.0, yaw_deg=123.0, pitch_deg=0.0))
    assert np.array_equal(cached(city, extra), fresh(city, extra)) and cached.view_misses == 5
    assert np.array_equal(cached(city, last[distinct[0]]), fresh(city, last[distinct[0]]))
    assert cached.view_misses == 6
