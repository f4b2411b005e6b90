"""The photo style's vehicles (render/scene3d/photo_vehicles.py) and crease-angle normals (photo_models):
hand-worked cases and a second implementation of the seeded colour draw."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_vehicles as PV
from urbanarena.render.scene3d.photo_models import cluster_decimate, crease_normals
from urbanarena.render.scene3d.population import Placement


# ------------------------------------------------------------------------------------------ crease normals
def test_a_box_corner_keeps_its_three_face_normals():
    # three faces of a unit cube meeting at the vertex 0 = origin: the floor (z = 0), the wall x = 0, the wall y = 0
    # vertices: 0 origin, 1 (1,0,0), 2 (0,1,0), 3 (0,0,1)
    tri = np.array([[0, 2, 1], [0, 3, 2], [0, 1, 3]])
    fn = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]) * 0.5   # area-weighted (area 1/2)
    n = crease_normals(tri, fn, 45.0)
    for t in range(3):
        assert np.allclose(n[t], fn[t] / 0.5)                         # every corner: its own face's normal
    smooth = crease_normals(tri, fn, 180.0)                          # no crease: the average at shared vertices
    assert np.allclose(smooth[0, 0], -np.ones(3) / math.sqrt(3))      # vertex 0 is shared by all three
    # vertex 2 lies on faces 0 (floor) and 1 (wall x = 0): (0, 0, -0.5) + (-0.5, 0, 0) -> (-1, 0, -1) / sqrt 2
    assert np.allclose(smooth[0, 1], np.array([-1.0, 0.0, -1.0]) / np.sqrt(2))


def test_a_shallow_fold_is_smoothed_and_a_sharp_one_kept():
    # two unit right triangles sharing the edge (0,0,0)-(0,1,0), the second turned up by angle a about it
    def fold(a_deg, crease):
        a = math.radians(a_deg)
        v = np.array([[0, 0, 0], [0, 1, 0], [-1, 0, 0], [math.cos(a), 0, math.sin(a)]], np.float64)
        tri = np.array([[0, 1, 2], [0, 3, 1]])
        p = v[tri]
        fn = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
        return crease_normals(tri, fn, crease), fn

    n, fn = fold(10.0, 45.0)
    both = (fn[0] + fn[1]) / np.linalg.norm(fn[0] + fn[1])            # equal areas: the bisector
    assert np.allclose(n[0, 0], both) and np.allclose(n[1, 0], both)  # the shared vertex 0, on both faces
    assert np.allclose(n[0, 2], fn[0] / np.linalg.norm(fn[0]))        # vertex 2: only the first face
    n, fn = fold(80.0, 45.0)
    assert np.allclose(n[0, 0], fn[0] / np.linalg.norm(fn[0])) and np.allclose(n[1, 0], fn[1] / np.linalg.norm(fn[1]))


def test_cluster_decimate_with_crease_keeps_flat_faces():
    # a unit square on the floor and one on the wall x = 1 (a 90-degree edge): crease 45 keeps both flat
    pos = np.array([[[0, 0, 0], [1, 0, 0], [1, 1, 0]], [[0, 0, 0], [1, 1, 0], [0, 1, 0]],
                    [[1, 0, 0], [1, 0, 1], [1, 1, 1]], [[1, 0, 0], [1, 1, 1], [1, 1, 0]]], np.float64)
    cols = np.zeros((4, 3, 3), np.float32)
    _, n, _, _ = cluster_decimate(pos, cols, np.zeros((4, 3), np.float32), 0.0, crease_deg=45.0)
    assert np.allclose(np.abs(n[:6]), [0, 0, 1]) and np.allclose(np.abs(n[6:]), [1, 0, 0])
    _, s, _, _ = cluster_decimate(pos, cols, np.zeros((4, 3), np.float32), 0.0)   # default: smooth
    assert not np.allclose(np.abs(s[:6]), [0, 0, 1])


# ------------------------------------------------------------------------------------------ classes, colours
def test_material_classes_of_catalogue_names():
    names = ["chapa_roja", "cristales", "GLASS_car_window", "GLASS_headlights", "neumaticos", "tires", "llantas",
             "chrome", "faros_rojos", "interior", "firstcolor", "sweethome3d_window_mirror", "black-rubber"]
    want = [PV.PAINT, PV.GLASS, PV.GLASS, PV.OTHER, PV.TYRE, PV.TYRE, PV.METAL, PV.METAL, PV.OTHER, PV.OTHER,
            PV.PAINT, PV.METAL, PV.TYRE]
    assert PV.material_classes(names).tolist() == want


def test_pick_weighted_hand_cases():
    w = [1, 2, 1]                                                    # cumulative 0.25, 0.75, 1
    assert [PV.pick_weighted(u, w) for u in (0.0, 0.2499, 0.25, 0.74, 0.75, 0.9999)] == [0, 0, 1, 1, 2, 2]


def test_car_colours_are_seeded_and_follow_the_weights():
    weights = np.array([w for _, w in PV.CAR_COLOURS])
    cum = np.cumsum(weights / weights.sum())
    counts = np.zeros(len(weights))
    for v in range(0, 8000, 2):                                      # even variants: cars
        u = int.from_bytes(hashlib.sha256(f"car-paint:{v}".encode()).digest()[:8], "big") / 2.0 ** 64
        k = int(np.argmax(cum > u))                                  # a second implementation of the draw
        got = PV.car_colour(v)
        assert np.allclose(got, PV.CAR_COLOURS[k][0]) and np.array_equal(got, PV.car_colour(v))
        counts[k] += 1
    share = counts / counts.sum()
    assert np.all(np.abs(share - weights / weights.sum()) < 0.02)
    neutral = sum(share[i] for i, (c, _) in enumerate(PV.CAR_COLOURS) if max(c) - min(c) < 0.05)
    assert neutral > 0.7                                             # whites, greys, silvers, blacks dominate
    vans = [PV.car_colour(v, van=True) for v in range(1, 2001, 2)]
    white = np.mean([np.allclose(c, PV.VAN_WHITE_RGB) for c in vans])
    assert PV.VAN_WHITE - 0.05 < white < PV.VAN_WHITE + 0.05 + PV.CAR_COLOURS[0][1]


# ------------------------------------------------------------------------------------------ finish
def _smooth(e0, e1, x):
    t = min(max((x - e0) / (e1 - e0), 0.0), 1.0)
    return t * t * (3 - 2 * t)


def test_fresnel_limits():
    assert PV.fresnel(np.array([1.0]), 0.05)[0] == pytest.approx(0.05)
    assert PV.fresnel(np.array([0.0]), 0.05)[0] == pytest.approx(PV.F_MAX)
    assert PV.fresnel(np.array([0.5]), 0.05)[0] == pytest.approx(0.05 + 0.95 * 0.5 ** 5)


def test_finish_of_hand_placed_corners():
    eye = np.array([0.0, 0.0, 1.7])
    # a panel facing the eye head-on 4 m away (normal -x): cos 1, F = F0, reflected straight back (r_z = 0);
    # a roof corner (1, 0, 0.7), 1 m ahead and 1 m down: v = (1, 0, -1)/sqrt2, n = +z: cos = 1/sqrt2,
    # r = (1, 0, 1)/sqrt2 (the sky)
    pos = np.array([[4.0, 0, 1.7], [4.0, 0, 1.7], [1.0, 0, 0.7], [4.0, 0, 0.3], [4.0, 0, 0.3]])
    nrm = np.array([[-1.0, 0, 0], [-1.0, 0, 0], [0, 0, 1.0], [-1.0, 0, 0], [-1.0, 0, 0]])
    col = np.array([[0.5, 0.1, 0.1], [0.9, 0.9, 0.9], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4]])
    cls = np.array([PV.PAINT, PV.GLASS, PV.PAINT, PV.TYRE, PV.METAL])
    out = PV.finish_colours(pos, nrm, col, cls, eye)
    s0 = _smooth(*PV.HORIZON_RZ, 0.0)
    env0 = (1 - s0) * np.array(PV.ENV_LOW) + s0 * np.array(PV.ENV_SKY)
    f = PV.PAINT_F0
    assert out[0] == pytest.approx((1 - f) * col[0] + f * env0, abs=1e-6)
    g = PV.GLASS_F0
    assert out[1] == pytest.approx((1 - g) * np.array(PV.GLASS_TINT) + g * env0, abs=1e-6)
    c = 1 / math.sqrt(2)
    f2 = min(PV.PAINT_F0 + (1 - PV.PAINT_F0) * (1 - c) ** 5, PV.F_MAX)    # cos > BACK_FADE: no fade
    s2 = _smooth(*PV.HORIZON_RZ, c)                                       # r_z = 1/sqrt2: 1 (the sky)
    env2 = (1 - s2) * np.array(PV.ENV_LOW) + s2 * np.array(PV.ENV_SKY)
    assert out[2] == pytest.approx((1 - f2) * col[2] + f2 * env2, abs=1e-6)
    # a paint corner whose normal faces away from the eye keeps its albedo
    back = PV.finish_colours(pos[:1], -nrm[:1], col[:1], cls[:1], eye)
    assert back[0] == pytest.approx(col[0], abs=1e-6)
    assert out[3] == pytest.approx(PV.TYRE_RGB) and out[4] == pytest.approx(col[4] * PV.METAL_K)


def test_vehicle_mesh_takes_the_seeded_colour_and_finish():
    from urbanarena.render.scene3d.photo_models import Model
    from urbanarena.render.scene3d.population_photo import PhotoModels, photo_placements_mesh

    # one painted triangle facing -y (the model's back) at unit length, standing up
    pos = np.array([[-0.2, 0, 0], [0.2, 0, 0], [0, 0, 0.3]], np.float32)
    nrm = np.tile([0, -1, 0], (3, 1)).astype(np.float32)
    car = Model(pos, nrm, np.full((3, 3), 0.5, np.float32), np.ones(3, np.float32), (1, 1, 1), "car",
                material=np.full(3, PV.PAINT, np.int8))
    models = PhotoModels((), (), ((car,),), (), "t")
    # heading 0 (north): model forward +y is north, the back faces south, the camera 10 m south
    c = Placement("c", "parked_car", 0.0, 10.0, 0.0, 4.0, 1.8, 1.5, (150, 28, 30), "road:r", 0, 8)
    mesh = photo_placements_mesh([c], models, camera_xy=(0.0, 0.0))
    paint = PV.car_colour(8)
    want = PV.finish_colours(mesh.positions.astype(np.float64), mesh.normals.astype(np.float64),
                             np.tile(paint, (3, 1)), np.full(3, PV.PAINT), np.array([0.0, 0.0, PV.EYE_M]))
    assert mesh.colours == pytest.approx(want, abs=1e-6)
    assert mesh.normals == pytest.approx(np.tile([0, -1, 0], (3, 1)), abs=1e-6)


def test_rims_are_the_low_sideways_metal_or_textured_corners():
    pos = np.array([[0.4, 0.3, 0.05], [0.4, 0.3, 0.05], [0.4, 0.3, 0.3], [0.4, 0.3, 0.05], [0.4, 0.3, 0.05]])
    nrm = np.array([[1.0, 0, 0], [0.0, 1.0, 0], [1.0, 0, 0], [-1.0, 0, 0], [1.0, 0, 0]])
    cls = np.array([PV.METAL, PV.METAL, PV.TEXTURED, PV.TEXTURED, PV.PAINT])
    got = PV.with_rims(pos, nrm, cls)
    # sideways and low: rim; facing forward: not; too high: not; paint: never
    assert got.tolist() == [PV.RIM, PV.METAL, PV.TEXTURED, PV.RIM, PV.PAINT]
    out = PV.finish_colours(pos, nrm, np.full((5, 3), 0.9), got, np.array([5.0, 0.3, 1.7]))
    assert out[0] == pytest.approx(PV.RIM_RGB) and out[3] == pytest.approx(PV.RIM_RGB)
    assert PV.material_classes(["body-map", "x"], textured={"body-map"}).tolist() == [PV.TEXTURED, PV.OTHER]


def test_neighbouring_people_never_share_a_model():
    from urbanarena.render.scene3d.photo_models import Model
    from urbanarena.render.scene3d.population_photo import DISTINCT_M, PhotoModels, model_picks

    def person(tag):
        z = np.zeros((3, 3), np.float32)
        return (Model(z, z, z, np.zeros(3, np.float32), (1, 1, 1), tag),)

    pool = (person("a"), person("b"), person("c"))
    models = PhotoModels(pool, (), (), (), "t")

    def first_pick(v):   # model_for's pick: sha256("person:<v>") mod 3 (a second implementation)
        return int.from_bytes(hashlib.sha256(f"person:{v}".encode()).digest()[:8], "big") % 3

    v0 = 0
    same = [v for v in range(1, 200) if first_pick(v) == first_pick(v0)][:2]   # three variants, one model
    ps = [Placement(f"p{i}", "pedestrian", x, 0.0, 0.0, 0.35, 0.5, 1.7, (0, 0, 0), "a", 0, v)
          for i, (x, v) in enumerate([(0.0, v0), (1.0, same[0]), (DISTINCT_M + 5.0, same[1])])]
    got = model_picks(ps, models)
    k = first_pick(v0)
    assert got[0] is pool[k]
    assert got[1] is pool[(k + 1) % 3]              # 1 m from the first: the next model
    assert got[2] is pool[k]                        # far from both: its own pick
    ps.append(Placement("p3", "pedestrian", 0.5, 0.5, 0.0, 0.35, 0.5, 1.7, (0, 0, 0), "a", 0, v0))
    assert model_picks(ps, models)[3] is pool[(k + 2) % 3]   # near the first two: the one model left
