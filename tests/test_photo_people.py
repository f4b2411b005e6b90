"""The photo style's people variation (:mod:`urbanarena.render.scene3d.people_look`): hand-worked cases."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from urbanarena.render.scene3d import people_look as PL
from urbanarena.render.scene3d.population import Placement


def test_skin_test_on_hand_picked_colours():
    got = PL.skin_like(np.array([[0.80, 0.60, 0.50],    # light skin: hue 60*0.1/0.3 = 20 deg, sat 0.375
                                 [0.45, 0.30, 0.22],    # dark skin: hue 60*0.08/0.23 = 20.9, sat 0.51
                                 [0.20, 0.30, 0.60],    # blue jacket: blue largest
                                 [0.50, 0.50, 0.50],    # grey: saturation 0
                                 [0.80, 0.10, 0.10],    # red top: hue 0
                                 [0.10, 0.08, 0.06]]))  # near black: r < 0.2
    assert got.tolist() == [True, True, False, False, False, False]


def _tri(z, rgb):
    """One small triangle at height ``z`` with colour ``rgb``: ``(3, 3)`` positions and colours."""
    return np.array([[0, 0, z], [0.01, 0, z], [0, 0.01, z + 0.001]]), np.tile(rgb, (3, 1))


def test_clothing_regions_follow_the_garment_colour():
    red, blue, skin = (0.7, 0.1, 0.1), (0.1, 0.2, 0.6), (0.8, 0.6, 0.5)
    tris = [_tri(0.9, red),      # head: kept
            _tri(0.02, blue),    # shoes: kept
            _tri(0.7, red),      # upper band: region 1
            _tri(0.3, blue),     # lower band: region 2
            _tri(0.45, red),     # a red hem below the middle: nearer the upper reference, region 1
            _tri(0.55, blue),    # blue above the middle: region 2
            _tri(0.5, skin)]     # a hand: kept
    pos = np.concatenate([t[0] for t in tris]).astype(np.float32)
    col = np.concatenate([t[1] for t in tris]).astype(np.float32)
    region, refs = PL.cloth_regions(pos, col)
    assert region.reshape(-1, 3)[:, 0].tolist() == [0, 0, 1, 2, 1, 2, 0]
    lum = lambda c: 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    assert refs == pytest.approx((lum(red), lum(blue)), rel=1e-5)
    # a dress (the same colour above and below): one garment, the lower palette's region 2
    one = np.concatenate([_tri(0.7, red)[1], _tri(0.3, red)[1]]).astype(np.float32)
    onep = np.concatenate([_tri(0.7, red)[0], _tri(0.3, red)[0]]).astype(np.float32)
    assert PL.cloth_regions(onep, one)[0].tolist() == [2] * 6


def test_recolour_keeps_detail_and_untouched_regions():
    col = np.array([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0], [0.05, 0.05, 0.05], [0.3, 0.2, 0.1]], np.float32)
    region = np.array([1, 1, 1, 0], np.int8)
    paint = np.array([0.2, 0.4, 0.6], np.float32)
    out = PL.recolour(col, region, (0.5, 1.0), paint, paint)
    assert out[0] == pytest.approx(paint)                     # luminance = the region's mean: the paint itself
    assert out[1] == pytest.approx(1.6 * paint)               # twice the mean: clipped at 1.6
    assert out[2] == pytest.approx(0.35 * paint)              # a tenth: clipped at 0.35
    assert out[3] == pytest.approx(col[3])                    # skin/head/shoes unchanged


def test_mirror_negates_x_and_keeps_the_winding_front_facing():
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1]], np.float32) + [0.3, 0.0, 0.0]
    n = np.cross(pos[1] - pos[0], pos[2] - pos[0])
    nrm = np.tile(n / np.linalg.norm(n), (3, 1)).astype(np.float32)   # (0, -1, 0)
    tag = np.array([10, 11, 12])
    p2, n2, t2 = PL.mirrored(pos, nrm, tag)
    assert t2.tolist() == [10, 12, 11]
    assert p2.tolist() == [[-0.3, 0, 0], [-0.3, 0, 1], [-1.3, 0, 0]]
    assert np.dot(np.cross(p2[1] - p2[0], p2[2] - p2[0]), n2[0]) > 0   # the stored normal is still the front


def test_choices_are_hashes_of_the_variant():
    for v in (1, 7, 12345):
        h = lambda salt: int.from_bytes(hashlib.sha256(f"{salt}:{v}".encode()).digest()[:8], "big")
        assert PL.is_mirrored(v) == bool(h("mirror") & 1)
        got = PL.clothing_colours(v)
        if h("keep-clothes") / 2.0 ** 64 < PL.KEEP_ORIGINAL:
            assert got is None
        else:
            k = 0.85 + 0.3 * h("upper-k") / 2.0 ** 64
            assert got[0] == pytest.approx(np.clip(PL.UPPER_PALETTE[h("upper") % len(PL.UPPER_PALETTE)] * k, 0, 1))
        again = PL.clothing_colours(v)
        assert (got is None and again is None) or all(np.array_equal(a, b) for a, b in zip(got, again))
    # over many people both palettes' entries and both mirror sides occur
    picks = [PL.clothing_colours(v) for v in range(400)]
    assert 0.15 < sum(p is None for p in picks) / 400 < 0.35
    assert 0.4 < sum(PL.is_mirrored(v) for v in range(400)) / 400 < 0.6


def _ped(pid, x, y, heading, variant, kind="pedestrian"):
    return Placement(pid, kind, x, y, heading, 0.35, 0.5, 1.7, (0, 0, 0), "road:r", 0, variant)


def test_headings_pairs_face_each_other_others_jitter():
    # find two variants whose pair hash says "talk" and two that do not (the rule, worked by hand)
    def talks(a, b):
        pair = min(a, b) * 1_000_003 + max(a, b)
        return int.from_bytes(hashlib.sha256(f"talk:{pair}".encode()).digest()[:8], "big") / 2.0 ** 64 < PL.TALK_SHARE
    va = next(v for v in range(2, 100) if talks(1, v))
    vb = next(v for v in range(200, 300) if not talks(201, v) and v != 201)
    ps = [_ped("a", 0.0, 0.0, 90.0, 1), _ped("b", 1.6, 0.0, 90.0, va),          # 1.6 m apart, east-west: talk
          _ped("c", 50.0, 0.0, 0.0, 201), _ped("d", 50.0, 1.5, 0.0, vb),          # 1.5 m apart: no talk
          _ped("e", 100.0, 0.0, 30.0, 5),                                           # alone
          _ped("w", 0.5, 0.5, 200.0, 9, kind="waiting")]                            # waiting: unchanged
    got = PL.photo_headings(ps)
    assert got[0] == pytest.approx(90.0) and got[1] == pytest.approx(270.0)        # a faces east to b, b west
    for i, v in ((2, 201), (3, vb), (4, 5)):
        u = int.from_bytes(hashlib.sha256(f"jitter:{v}".encode()).digest()[:8], "big") / 2.0 ** 64
        assert got[i] == pytest.approx((ps[i].heading_deg + 12.0 * (2 * u - 1)) % 360.0)
        assert abs((got[i] - ps[i].heading_deg + 180) % 360 - 180) <= 12.0
    assert got[5] == 200.0
    assert PL.photo_headings(ps) == got                                              # deterministic


def test_photo_pose_moves_nobody():
    from urbanarena.render.scene3d.population_photo import photo_pose

    ps = [_ped("a", 0.0, 0.0, 90.0, 1), _ped("b", 2.0, 0.0, 90.0, 3), _ped("w", 9.0, 0.5, 200.0, 9, "waiting")]
    got = photo_pose(ps)
    assert [(p.id, p.x_m, p.y_m, p.height_m, p.variant) for p in got] == \
        [(p.id, p.x_m, p.y_m, p.height_m, p.variant) for p in ps]
    assert got[2] is ps[2]
    assert math.isfinite(got[0].heading_deg)


def _unit_model(paint=False):
    """A one-triangle 'model' of unit size at the origin (x 0..0.1, y 0..0.1, z 0..1)."""
    from urbanarena.render.scene3d.photo_models import Model

    pos = np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 1]], np.float32)
    nrm = np.tile([0, 0, 1], (3, 1)).astype(np.float32)
    col = np.full((3, 3), 0.5, np.float32)
    return Model(pos, nrm, col, np.full(3, 1.0 if paint else 0.0, np.float32), (1.0, 1.0, 1.0), "unit")


def test_a_cyclist_is_a_person_walking_a_painted_bicycle(monkeypatch):
    from urbanarena.render.scene3d import population_photo
    from urbanarena.render.scene3d.population_photo import (BIKE_PALETTE, WALK_BESIDE_M, PhotoModels,
                                                            photo_placements_mesh)

    monkeypatch.setattr(population_photo, "WALKING", False)   # the stride (test_people_pose.py) moves the legs

    bike, person = _unit_model(paint=True), _unit_model()
    models = PhotoModels(((person,),), (), (), (), "t", ((bike,),))
    # heading 90 (east): forward +x, right -y; the bicycle scaled by length 1.75, the person by height 1.8
    c = Placement("c", "cyclist", 5.0, 7.0, 90.0, 1.75, 0.6, 1.8, (0, 0, 0), "road:r", 0, 42)
    mesh = photo_placements_mesh([c], models, first_feature=3)
    assert mesh.n_triangles == 2 and set(mesh.feature.tolist()) == {3.0}
    b, p = mesh.positions[:3].astype(np.float64), mesh.positions[3:].astype(np.float64)
    assert b[2] == pytest.approx([5.0 + 0.175, 7.0, 1.75], abs=1e-5)          # model y (forward) -> east
    assert b[1] == pytest.approx([5.0, 7.0 - 0.175, 0.0], abs=1e-5)          # model x (right) -> south
    # the person: WALK_BESIDE_M to the right (south), possibly mirrored (x negated, corners 2 and 3 swapped)
    mir = PL.is_mirrored(42)
    tip = p[1] if mir else p[2]
    u = int.from_bytes(hashlib.sha256(b"build:42").digest()[:8], "big") / 2.0 ** 64
    k = 0.9 + 0.2 * u                                                         # the body's horizontal scale
    assert tip == pytest.approx([5.0 + 0.18 * k, 7.0 - WALK_BESIDE_M, 1.8], abs=1e-5)
    side = p[2] if mir else p[1]                                              # model (0.1, 0, 0): x, right
    assert side == pytest.approx([5.0, 7.0 - WALK_BESIDE_M - (-0.18 if mir else 0.18) * k, 0.0], abs=1e-5)
    c = int.from_bytes(hashlib.sha256(b"bike-colour:42").digest()[:8], "big") % len(BIKE_PALETTE)
    assert mesh.colours[:3] == pytest.approx(np.tile(BIKE_PALETTE[c], (3, 1)))   # paint 1 x the frame colour


def test_transparent_texture_triangles_are_cut_out(tmp_path):
    from PIL import Image

    from urbanarena.render.scene3d.photo_models import opaque_triangles

    px = np.array([[[255, 255, 255, 0], [255, 255, 255, 255]]], np.uint8)     # left texel clear, right opaque
    Image.fromarray(px, "RGBA").save(tmp_path / "t.png")
    Image.fromarray(px[..., :3], "RGB").save(tmp_path / "rgb.png")
    mats = {"spokes": {"kd": (1, 1, 1), "map_kd": tmp_path / "t.png"},
            "plain": {"kd": (1, 1, 1), "map_kd": tmp_path / "rgb.png"}}
    uv = np.array([np.full((3, 2), [0.25, 0.5]), np.full((3, 2), [0.75, 0.5]), np.full((3, 2), [0.25, 0.5]),
                   np.full((3, 2), np.nan)])
    got = opaque_triangles(uv, ["spokes", "spokes", "plain", "spokes"], mats)
    # texel centres: u 0.25 -> the clear texel, 0.75 -> the opaque one; no alpha channel or no UVs: kept
    assert got.tolist() == [False, True, True, True]
