"""Signal and sign poles moved from the carriageway to the kerb in the photo style
(:mod:`urbanarena.render.scene3d.photo_kerbside`): the moves by hand, and the mesh shift by feature."""

from __future__ import annotations

import numpy as np

from urbanarena.render.scene3d.meshes import build_scene_meshes
from urbanarena.render.scene3d.photo_kerbside import kerb_moves, with_kerbside
from urbanarena.render.scene3d.scene import Road, Scene, StreetObject


def _scene():
    road = Road("r", ((0.0, 0.0), (100.0, 0.0)), width_m=10.0, sidewalk_m=3.0)
    objects = (StreetObject("sig", "traffic_signals", 50.0, 0.0),      # on the centreline
               StreetObject("sgn", "traffic_sign", 30.0, 2.0),          # in the left lane
               StreetObject("ben", "bench", 30.0, 2.0),                 # not a pole: stays
               StreetObject("far", "traffic_signals", 30.0, 8.0),       # on the sidewalk already
               StreetObject("lamp", "street_lamp", 70.0, 1.0))          # lamps stay (their light is placed)
    return Scene(roads=(road,), objects=objects)


def test_moves_by_hand():
    # the way runs east: its left is north (+y). On the centreline: the right-hand kerb, 5 + 0.5 m south;
    # 2 m north: the northern kerb at 5.5 m, 3.5 m further
    moves = kerb_moves(_scene())
    assert set(moves) == {"sig", "sgn"}
    assert np.allclose(moves["sig"], (0.0, -5.5)) and np.allclose(moves["sgn"], (0.0, 3.5))


def test_the_mesh_moves_by_feature_and_the_input_is_kept():
    scene = _scene()
    m = build_scene_meshes(scene)
    before = m.objects.positions.copy()
    out = with_kerbside(m, scene)
    assert np.array_equal(m.objects.positions, before)
    index = {fid: k for k, (kind, fid) in enumerate(m.features, 1)}
    f = m.objects.feature.astype(int)
    d = out.objects.positions - before
    assert (f == index["sig"]).any() and (f == index["sgn"]).any()
    assert np.allclose(d[f == index["sig"]], (0.0, -5.5, 0.0), atol=1e-5)
    assert np.allclose(d[f == index["sgn"]], (0.0, 3.5, 0.0), atol=1e-5)
    rest = ~np.isin(f, [index["sig"], index["sgn"]])
    assert np.array_equal(d[rest], np.zeros_like(d[rest]))
