"""The photo style's procedural tram (render/scene3d/photo_tram.py): dimensions, part placement and cab ends worked
by hand, the glass finish against a hand-worked Fresnel case, its use by the photo population, the identity."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from urbanarena.render.scene3d import photo_tram as PT
from urbanarena.render.scene3d import photo_vehicles as PV


def test_front_y_by_hand():
    # bumper 0.1 m tucked at the underside (z 0.30), upright 0.42..1.10, raked 0.35 m at the window top (2.35),
    # 0.6 m back at the roof (3.40)
    assert PT.front_y(0.30) == pytest.approx(4.4)
    assert PT.front_y(0.8) == pytest.approx(4.5)
    assert PT.front_y(1.725) == pytest.approx(4.5 - 0.35 * 0.5)
    assert PT.front_y(2.35) == pytest.approx(4.15)
    assert PT.front_y(3.40) == pytest.approx(3.9)


def test_side_intervals_cover_and_place_the_door():
    left = PT.side_intervals(False, -4.5, 4.5)
    right = PT.side_intervals(True, -4.5, 4.5)
    for cells in (left, right):
        assert cells[0][0] == pytest.approx(-4.5) and cells[-1][1] == pytest.approx(4.5)
        assert all(a[1] == pytest.approx(b[0]) for a, b in zip(cells[:-1], cells[1:]))   # contiguous
    # left: 9 m / 1.35 m -> 7 panes, 6 pillars of 0.1 m
    assert [k for *_, k in left].count("pane") == 7
    pil = [b - a for a, b, k in left if k == "pillar"]
    assert len(pil) == 12 and sum(pil) == pytest.approx(0.6)   # each pillar drawn as two halves
    assert "door" not in {k for *_, k in left}
    doors = [(a, b) for a, b, k in right if k == "door"]
    assert doors == [(pytest.approx(-0.65), pytest.approx(-0.03)), (pytest.approx(0.03), pytest.approx(0.65))]
    frames = [(a, b) for a, b, k in right if k == "frame"]
    assert frames[0] == (pytest.approx(-0.71), pytest.approx(-0.65))
    assert frames[-1] == (pytest.approx(0.65), pytest.approx(0.71))


def test_section_dimensions_and_parts():
    pos, nrm, col, cls = PT.section_mesh(False, False, False)
    assert len(pos) % 3 == 0 and len(pos) == len(nrm) == len(col) == len(cls)
    assert len(pos) // 3 < 2500                                   # triangle budget
    assert np.abs(pos[:, 0]).max() == pytest.approx(1.2)          # 2.4 m wide
    body = cls == PV.PAINT
    assert pos[body, 2].max() == pytest.approx(3.40)              # roof
    assert pos[body, 1].min() == pytest.approx(-4.5) and pos[body, 1].max() == pytest.approx(4.5)
    # inner ends: bellows 0.15 m (+0.02 m overlap) close half the 0.3 m gap
    assert pos[:, 1].max() == pytest.approx(4.5 + 0.15 / 2 + 0.17 / 2)
    # roof equipment box top: roof 3.40 - 0.03 + 0.33
    assert pos[:, 2].max() == pytest.approx(3.70)
    # wheels: a 10-gon of radius 0.34 standing on the rail: lowest corner 0.34 (1 - sin 72 deg) above it,
    # centres at x = +-0.5 (metre gauge), axles at y = +-0.95
    tyre = cls == PV.TYRE
    assert pos[tyre, 2].min() == pytest.approx(0.34 * (1 - math.sin(math.radians(72))))
    assert pos[tyre, 2].max() == pytest.approx(0.34 * (1 + math.sin(math.radians(72))))
    assert np.abs(pos[tyre, 0]).min() == pytest.approx(0.5 - 0.06)
    assert np.abs(pos[tyre, 1]).max() == pytest.approx(0.95 + 0.34)
    # livery: the lower side (z 0.55..0.98) is green, the window band glass with dark pillars
    ctr = pos.reshape(-1, 3, 3).mean(axis=1)   # per triangle
    tcol = col.reshape(-1, 3, 3)[:, 0]
    side = (np.abs(ctr[:, 0]) > 1.19) & (np.abs(ctr[:, 1]) < 4.4)
    low = side & (ctr[:, 2] > 0.6) & (ctr[:, 2] < 0.95) & (ctr[:, 0] < 0)   # left side: no door
    assert low.any() and np.allclose(tcol[low], PT.GREEN)
    band = ((np.abs(ctr[:, 0]) > 1.15) & (np.abs(ctr[:, 1]) < 4.4) & (ctr[:, 2] > 1.2) & (ctr[:, 2] < 2.3)
            & (ctr[:, 0] < 0))
    tcls = cls[::3]
    assert set(tcls[band]) == {PV.GLASS, PV.OTHER}
    assert np.allclose(tcol[band & (tcls == PV.OTHER)], PT.PILLAR)
    glass = cls == PV.GLASS
    assert (pos[glass, 2].min(), pos[glass, 2].max()) == (pytest.approx(0.42), pytest.approx(2.35))   # door glass
    # smooth outward normals: unit length; the sides' normals point away from the axis
    assert np.allclose(np.linalg.norm(nrm, axis=1), 1.0, atol=1e-5)
    mid = (np.abs(pos[:, 0]) > 1.15) & (np.abs(pos[:, 1]) < 4.4) & (pos[:, 2] > 1.0) & (pos[:, 2] < 2.4)
    assert (nrm[mid, 0] * np.sign(pos[mid, 0]) > 0.9).all()


def test_pantograph_reaches_up_to_the_wire():
    pos, _, _, _ = PT.section_mesh(True, False, False)
    # pan head bars at 5.75 m, 0.05 m square tubes: top 5.775 m, under the 5.8 m contact wire
    assert pos[:, 2].max() == pytest.approx(PT.PAN_TOP_M - 0.03 + 0.025)
    assert pos[:, 2].max() < 5.8
    head = pos[pos[:, 2] > 5.6]
    assert np.abs(head[:, 0]).max() == pytest.approx(0.9 + 0.02, abs=0.03)   # horns reach 0.9 m out


def test_cab_front_is_rounded_and_raked():
    pos, nrm, col, cls = PT.section_mesh(False, True, False)
    # headlights 0.02 m proud of the front at z 0.8 (front_y 4.5)
    assert pos[:, 1].max() == pytest.approx(4.52)
    front = pos[:, 1] > 3.0
    # windscreen glass: the top of the window band leans back to 4.15 at the centre
    g = front & (cls == PV.GLASS) & (np.abs(pos[:, 0]) < 1e-9)
    assert pos[g, 1].min() == pytest.approx(4.15) and pos[g, 1].max() == pytest.approx(4.5)
    # plan rounding: at the bumper's full width (|x| = 1.2) the cab reaches front_y - radius = 3.95 only
    wide = front & (np.abs(pos[:, 0]) > 1.2 - 1e-6)
    assert pos[wide, 1].max() == pytest.approx(4.5 - PT.CAB_RADIUS_M)
    # the windscreen's black surround: the sill strip (z 1.05..1.10) at the front's centre is black, white aft
    ctr = pos.reshape(-1, 3, 3).mean(axis=1)
    tcol = col.reshape(-1, 3, 3)[:, 0]
    sill = (ctr[:, 2] > 1.05) & (ctr[:, 2] < 1.10)
    assert np.allclose(tcol[sill & (np.abs(ctr[:, 0]) < 0.3) & (ctr[:, 1] > 4.0)], PT.PILLAR)
    assert np.allclose(tcol[sill & (np.abs(ctr[:, 1]) < 3.0) & (ctr[:, 0] < 0)], PT.WHITE)
    # the display's amber line on the front
    assert np.isclose(col[front], PT.DISPLAY_TEXT).all(axis=1).any()
    # the back end of this section is an inner end with bellows
    assert pos[:, 1].min() == pytest.approx(-(4.5 + 0.075 + 0.085))


def test_cab_ends_by_hand():
    def tram(k, y, heading):
        return SimpleNamespace(id=f"tram:r1:0:{k}", kind="tram", x_m=0.0, y_m=y, heading_deg=heading, variant=k)

    # heading north (+y), sections at y = 0, 9.3, 18.6: the rear section's cab faces -y, the front one's +y
    ps = [tram(0, 0.0, 0.0), tram(1, 9.3, 0.0), tram(2, 18.6, 0.0),
          SimpleNamespace(id="car:1", kind="car", x_m=0, y_m=0, heading_deg=0, variant=0)]
    assert PT.cab_ends(ps) == {0: (False, True), 1: (False, False), 2: (True, False)}
    # heading south: local +y is -y of the world, so the cabs swap ends
    ps = [tram(0, 0.0, 180.0), tram(1, -9.3, 180.0), tram(2, -18.6, 180.0)]
    assert PT.cab_ends(ps) == {0: (False, True), 1: (False, False), 2: (True, False)}
    # an end section alone (its tram cut by the snapshot's radius): cabs at both ends
    assert PT.cab_ends([tram(2, 0.0, 90.0)]) == {0: (True, True)}
    # cut after the middle section: the middle one shows a cab at the cut end (+y), not its bellows; alone, two
    ps = [tram(0, 0.0, 0.0), tram(1, 9.3, 0.0)]
    assert PT.cab_ends(ps) == {0: (False, True), 1: (True, False)}
    assert PT.cab_ends([tram(1, 5.0, 0.0)]) == {0: (True, True)}


def test_glass_colours_by_hand():
    # eye 10 m west of a pane facing west, at the eye's height: normal incidence, F = F0; the reflection looks
    # back horizontally (r_z = 0): environment smoothstep over r_z in (-0.2, 0.15)
    t = 0.2 / 0.35
    s = t * t * (3 - 2 * t)
    env = np.array(PV.ENV_LOW) * (1 - s) + np.array(PV.ENV_SKY) * s
    want = (1 - PT.GLASS_F0) * np.array(PT.GLASS_TINT) + PT.GLASS_F0 * env
    got = PT.glass_colours(np.array([[10.0, 0.0, 1.7]]), np.array([[-1.0, 0.0, 0.0]]), np.array([0.0, 0.0, 1.7]))
    assert got[0] == pytest.approx(want)


def test_photo_population_draws_the_tram_sections():
    from urbanarena.render.scene3d.population_photo import PhotoModels, photo_placements_mesh

    models = PhotoModels((), (), (), (), "none")
    p = SimpleNamespace(id="tram:r1:0:1", kind="tram", x_m=100.0, y_m=50.0, heading_deg=90.0, length_m=9.0,
                        width_m=2.4, height_m=3.4, variant=1)
    m = photo_placements_mesh([p], models, first_feature=7, camera_xy=(100.0, 40.0))
    ref = PT.section_mesh(True, True, True)[0]   # the middle section alone (the rest cut): cabs at both ends
    assert len(m.positions) == len(ref)
    assert (m.feature == 7).all()
    # heading east: the section's length runs along x (local +y -> world +x), its width along y
    body = m.positions[:, 2] < 3.3
    assert m.positions[body, 0].min() == pytest.approx(100.0 + ref[ref[:, 2] < 3.3, 1].min(), abs=1e-3)
    assert m.positions[body, 0].max() == pytest.approx(100.0 + ref[ref[:, 2] < 3.3, 1].max(), abs=1e-3)
    assert ref[ref[:, 2] < 3.3, 1].min() > -4.5 - 0.16 + 0.05    # a cab's front, not the bellows' 0.16 m
    assert m.positions[body, 1].max() == pytest.approx(50.0 + 1.2, abs=1e-3)
    saved = PT.ENABLED
    try:
        PT.ENABLED = False   # the box meshes, as before
        boxes = photo_placements_mesh([p], models, first_feature=7, camera_xy=(100.0, 40.0))
        assert len(boxes.positions) != len(ref)
    finally:
        PT.ENABLED = saved


def test_photo_identity_names_the_tram():
    from urbanarena.render.scene3d.render_identity import _photo_identity

    assert _photo_identity()["tram"] == PT.TRAM_VERSION
