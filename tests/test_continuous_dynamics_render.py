"""Pedestrians and closure barriers in first-person renders (needs OpenGL: skipped with the reason without it).

Passage fixture (tests/continuous_util.py): the agent stands on the west path x = 0 at y = 10 looking north
(yaw 0) with the eye at 1.7 m; 160 x 90 pixels, 90 degree field of view: focal length f = 80 px, principal
point (79.5, 44.5). A point at lateral offset a and height z, d metres ahead, is drawn at
u = 79.5 + f a / d, v = 44.5 - f (z - 1.7) / d. Nothing stands on the path between y = 10 and y = 36.
"""

from __future__ import annotations

import numpy as np
import pytest

from continuous_util import from_fix, passage_city
from urbanarena.env.continuous import ContinuousEnv, SceneViewObserver
from urbanarena.render.scene3d import gl_unavailable_reason

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")

W, H, F = 160, 90, 80.0


@pytest.fixture(scope="module")
def observed():
    city = passage_city()
    return city, SceneViewObserver(city, width=W, height=H, hfov_deg=90.0)


def _changed(a, b):
    return np.any(a.astype(int) != b.astype(int), axis=-1)


def test_pedestrian_in_front_shows_its_pixels(observed):
    """A standing pedestrian 4 m ahead: 0.5 m wide, 1.75 m tall -> columns 79.5 +- 5, rows 43.5 .. 78.5."""
    city, obs_fn = observed
    spec = {"pedestrians": {"routes": [[from_fix(city, 0, 14)]], "speed_mps": 0.0}}
    env = ContinuousEnv(city, observer=obs_fn, dynamics=spec)
    obs, _ = env.reset(options={"start_xy_m": from_fix(city, 0, 10), "start_yaw_deg": 0.0})
    p = env.pose()
    plain = obs_fn.renderer.render_view(p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7, attribution=True)
    ch = _changed(obs["view"], plain)
    rows, cols = np.nonzero(ch)
    assert len(rows) > 0.6 * 10 * 35  # most of the figure's 10 x 35 px box
    assert cols.min() >= 79.5 - 5 - 1 and cols.max() <= 79.5 + 5 + 1
    assert rows.min() >= 44.5 - F * 0.05 / 4 - 1 and rows.max() <= 44.5 + F * 1.7 / 4 + 1
    assert rows.max() >= 77 and rows.min() <= 46  # feet and head are both drawn
    # the observation is the renderer's view with the world's objects at the current simulated time
    assert np.array_equal(obs["view"], obs_fn.renderer.render_view(
        p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7, attribution=True,
        dynamic=env.world.scene_objects(env.sim_time_s)))


def test_walking_pedestrian_moves_in_the_view_and_barrier_appears_with_the_notice(observed):
    """A pedestrian walks east across the view 6 m ahead (x = -3 -> 3 at 1 m/s); a closure line across the path
    10 m ahead (x = -3 .. 3, y = 20), announced after 2 s, is drawn only from then on: a 1 m fence spanning
    columns 79.5 +- 24 and rows 44.5 + 8 * 0.7 .. 44.5 + 8 * 1.7."""
    city, obs_fn = observed
    spec = {"pedestrians": {"routes": [[from_fix(city, -3, 16), from_fix(city, 3, 16)]], "speed_mps": 1.0},
            "closures": [{"id": "c", "line_xy_m": [from_fix(city, -3, 20), from_fix(city, 3, 20)],
                          "notice_after_s": 2.0}]}
    env = ContinuousEnv(city, observer=obs_fn, dynamics=spec)
    obs0, _ = env.reset(options={"start_xy_m": from_fix(city, 0, 10), "start_yaw_deg": 0.0})
    p = env.pose()
    plain = obs_fn.renderer.render_view(p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7, attribution=True)
    cols0 = np.nonzero(_changed(obs0["view"], plain))[1]
    assert abs(cols0.mean() - (79.5 - F * 3 / 6)) < 3  # at x = -3: column 39.5
    obs1, _, _, _, _ = env.step({"action": "look", "yaw": 0})  # t = 0.5 s: x = -2.5, no barrier yet
    cols1 = np.nonzero(_changed(obs1["view"], plain))[1]
    assert abs(cols1.mean() - (79.5 - F * 2.5 / 6)) < 3
    for _ in range(3):
        obs2, _, _, _, info = env.step({"action": "look", "yaw": 0})  # t = 2 s: x = -1, barrier shown
    assert info["dynamics"]["closures_announced"] == ["c"]
    ch = _changed(obs2["view"], plain)
    fence_rows = ch[int(np.ceil(44.5 + 8 * 0.7)) + 1:int(44.5 + 8 * 1.7) - 1]
    cols = np.nonzero(fence_rows.any(axis=0))[0]
    assert cols.min() == pytest.approx(79.5 - 24, abs=1.5) and cols.max() == pytest.approx(79.5 + 24, abs=1.5)
    # above the fence top only the pedestrian (x = -1, 6 m ahead: column 79.5 - 80 / 6 = 66.2, +- 3.3) shows
    above = np.nonzero(ch[:int(44.5 + 8 * 0.7) - 1].any(axis=0))[0]
    assert len(above) and above.min() >= 66.2 - 3.3 - 1.5 and above.max() <= 66.2 + 3.3 + 1.5
    reds = (obs2["view"][..., 0].astype(int) - obs2["view"][..., 1].astype(int) > 80) & ch
    assert reds.any()
