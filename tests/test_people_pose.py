"""The photo style's walking stride (render/scene3d/people_pose.py): the leg rotation worked by hand, who walks,
and the stride's determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.scene3d import people_pose as PP


def test_legs_swing_about_the_hip_by_hand():
    pos = np.array([[0.1, 0.0, 0.0], [-0.1, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)   # two feet, the head
    nrm = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, -1.0], [0.0, 0.0, 1.0]], np.float32)
    a = 30.0
    got, n = PP.walk_pose(pos, nrm, a)
    s, c = math.sin(math.radians(a)), math.cos(math.radians(a))
    # the x > 0 foot, a hip height below the axis, swings forward (+y) by HIP_Z sin a and rises by HIP_Z (1 - cos a);
    # the other back; the legs (weight 1) are then lowered by that rise, so both feet stand on z = 0 again
    assert got[0] == pytest.approx([0.1, PP.HIP_Z * s, 0.0], abs=1e-6)
    assert got[1] == pytest.approx([-0.1, -PP.HIP_Z * s, 0.0], abs=1e-6)
    assert got[2] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)            # above the hip: nothing moves
    assert n[0] == pytest.approx([0.0, s, -c], abs=1e-6)                  # the sole turns with the foot
    assert n[2] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)


def test_a_heel_behind_the_axis_does_not_lift_the_person():
    # a heel 0.3 behind the axis on the forward leg dips below the ground when turned: the legs go up by the dip,
    # the head stays at 1 (the person keeps its height)
    pos = np.array([[0.1, -0.3, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    got, _ = PP.walk_pose(pos, np.zeros_like(pos), 30.0)
    s, c = math.sin(math.radians(30.0)), math.cos(math.radians(30.0))
    heel_z = PP.HIP_Z - 0.3 * s - PP.HIP_Z * c                     # rotated: HIP_Z + dy sin a + dz cos a
    assert heel_z < 0
    assert got[0, 2] == pytest.approx(0.0, abs=1e-6)
    assert got[1, 2] == pytest.approx(PP.HIP_Z * (1 - c) - heel_z, abs=1e-6)
    assert got[2] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)


def test_weight_blends_at_the_hip_and_across_the_crotch():
    z = PP.HIP_Z - PP.HIP_BLEND / 2          # halfway down the blend: smoothstep weight 1/2
    pos = np.array([[0.2, 0.0, z], [PP.SIDE_BLEND / 2, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    got, _ = PP.walk_pose(pos, np.zeros_like(pos), 20.0)
    a = math.radians(10.0)                   # 20 degrees at weight 1/2
    dz = z - PP.HIP_Z
    assert got[:, 2].min() == pytest.approx(0.0, abs=1e-7)   # the model stands on z = 0 again
    assert got[0, 1] == pytest.approx(-dz * math.sin(a), abs=1e-6)
    assert got[0, 2] - got[3, 2] == pytest.approx(PP.HIP_Z + dz * math.cos(a) - 1.0, abs=1e-6)
    assert got[1, 1] == pytest.approx(PP.HIP_Z * math.sin(math.radians(10.0)), abs=1e-6)   # half-way side: half
    assert got[2, 1] == pytest.approx(0.0, abs=1e-7)                                       # the crotch: 0


def test_stride_is_deterministic_and_varied():
    got = [PP.stride_deg(v) for v in range(200)]
    assert got == [PP.stride_deg(v) for v in range(200)]
    assert max(abs(g) for g in got) <= PP.STRIDE_DEG
    assert len({round(g, 6) for g in got}) > 150
    assert min(got) < -0.8 * PP.STRIDE_DEG and max(got) > 0.8 * PP.STRIDE_DEG


def test_who_walks():
    from urbanarena.render.scene3d.people_look import TALK_SHARE, unit, walkers
    from urbanarena.render.scene3d.population import Placement

    def person(i, kind, x, v):
        return Placement(f"p{i}", kind, x, 0.0, 0.0, 0.4, 0.5, 1.7, (0, 0, 0), "w", 0, v)

    # a pair 1 m apart whose pair hash says "talk", and one whose says "walk"
    talk = next(v for v in range(1, 500) if unit(min(v, v + 1) * 1_000_003 + max(v, v + 1), "talk") < TALK_SHARE)
    walk = next(v for v in range(1, 500) if unit(min(v, v + 1) * 1_000_003 + max(v, v + 1), "talk") >= TALK_SHARE)
    ps = [person(0, "pedestrian", 0.0, talk), person(1, "pedestrian", 1.0, talk + 1),
          person(2, "pedestrian", 100.0, walk), person(3, "pedestrian", 101.0, walk + 1),
          person(4, "waiting", 200.0, 7), person(5, "crossing", 300.0, 8), person(6, "pedestrian", 400.0, 9)]
    assert walkers(ps) == [False, False, True, True, False, True, True]
