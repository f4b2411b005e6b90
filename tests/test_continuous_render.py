"""First-person renders of the continuous environment (needs OpenGL: skipped with the reason without it)."""

from __future__ import annotations

import numpy as np
import pytest

from continuous_util import fix_pose, from_fix, passage_city
from urbanarena.env.continuous import ContinuousEnv, SceneViewObserver
from urbanarena.render.scene3d import gl_unavailable_reason

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")

W, H = 160, 90


@pytest.fixture(scope="module")
def observed():
    city = passage_city()
    obs_fn = SceneViewObserver(city, width=W, height=H, hfov_deg=90.0)
    return city, obs_fn


def test_blocked_agent_faces_the_wall_it_hit(observed):
    """Sprinting south from (30, -20) stops 0.25 m before B3's north wall (y = -25): the whole view centre
    row shows B3. Turned around (look yaw 180), the view along x = 30 meets B1's south wall (y = -10)."""
    city, obs_fn = observed
    env = ContinuousEnv(city, observer=obs_fn)
    obs, _ = env.reset(options={"start_xy_m": from_fix(city, 30, -20), "start_yaw_deg": 180})
    assert obs["view"].shape == (H, W, 3) and obs["view"].dtype == np.uint8
    obs, _, _, _, info = env.step({"action": "sprint", "dir": "forward", "seconds": 2.0})
    assert info["blocked"] and fix_pose(city, info) == pytest.approx((30.0, -24.75), abs=0.01)
    r = obs_fn.renderer
    p = env.pose()
    assert np.array_equal(obs["view"], r.render_view(p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7,
                                                     attribution=True))
    ids = r.render_ids(p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7)
    assert {r.features[k - 1] for k in np.unique(ids[H // 2]) if k} == {("building", "w3103")}
    obs2, _, _, _, _ = env.step({"action": "look", "yaw": 180})
    p = env.pose()
    ids = r.render_ids(p.x_m, p.y_m, p.yaw_deg, p.pitch_deg, 90.0, W, H, 1.7)
    assert r.features[ids[H // 2, W // 2] - 1] == ("building", "w3101")
    assert not np.array_equal(obs2["view"], obs["view"])


def test_map_mode_does_not_render_and_views_follow_the_pose(observed):
    city, obs_fn = observed
    calls = []

    def counting(c, pose):
        calls.append(pose)
        return obs_fn(c, pose)

    env = ContinuousEnv(city, observer=counting)
    env.reset(options={"start_xy_m": from_fix(city, 5, 0), "start_yaw_deg": 90})
    obs, _, _, _, _ = env.step({"action": "open_map"})
    assert obs["view"] is None and obs["map"] is not None and len(calls) == 1
    env.step({"action": "close_map"})
    obs, _, _, _, _ = env.step({"action": "move", "dir": "forward", "seconds": 2.0})  # 2.8 m east, into B1's passage
    assert len(calls) == 3 and calls[-1].x_m == pytest.approx(env.pose().x_m)
    assert fix_pose(city, {"pose": calls[-1].to_dict()}) == pytest.approx((7.8, 0.0), abs=0.01)
    assert obs["view"].shape == (H, W, 3)
