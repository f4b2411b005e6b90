"""The far level of the photo style's seeded hedges and bushes (:mod:`.photo_greenery_mesh` ``far``, drawn by
:func:`.photo_greenery.with_greenery` beyond :data:`.photo_greenery.FAR_FROM_M`) and the tile selection by a
minimum and a maximum distance (:meth:`.tiles.TiledVertexArray.render`): card counts and subsets worked out from
the templates' documented layout, tile distances by hand. Needs no fetched assets and no OpenGL."""

from __future__ import annotations

import numpy as np

from urbanarena.render.scene3d import photo_greenery as PG
from urbanarena.render.scene3d import photo_greenery_mesh as PGM
from urbanarena.render.scene3d.tiles import TiledVertexArray


def _rows(m) -> set:
    return {tuple(np.round(np.concatenate([p, c, u]), 5)) for p, c, u in zip(m.positions, m.colours, m.uv)}


def test_far_hedge_keeps_core_soil_and_eight_cards():
    for v in range(PGM.TEMPLATE_COUNT):
        near, far = PGM.hedge_cell(v), PGM.hedge_cell(v, far=True)
        # 14 cards of 6 vertices each follow the core and soil: the far level drops 6 of them
        head = len(near.positions) - 14 * 6
        assert len(far.positions) == head + 8 * 6
        assert np.array_equal(far.positions[:head], near.positions[:head])
        for j, k in enumerate(PGM.HEDGE_FAR_CARDS):   # card k of the near cell is card j of the far one
            a, b = head + 6 * k, head + 6 * j
            assert np.array_equal(far.positions[b:b + 6], near.positions[a:a + 6])
            assert np.array_equal(far.colours[b:b + 6], near.colours[a:a + 6])
        # the upper three side cards of both sides and the two top cards: no low cards (stems at z 0.02), no sprigs
        low = near.positions[head:].reshape(14, 6, 3)[[3, 4, 8, 9]]
        assert low[:, :, 2].min() < 0.1


def test_far_bush_keeps_every_other_card():
    far = PGM.bush(1, far=True)
    assert far.n_triangles == 5 * 2 + 8 + 11 * 2          # the core's five faces, an 8-sided soil fan, 11 cards
    assert _rows(far) <= _rows(PGM.bush(1))


def test_far_templates_have_no_tufts():
    t = PGM.greenery_templates(far=True)
    assert t["tuft"] == () and len(t["hedge"]) == len(t["bush"]) == PGM.TEMPLATE_COUNT


def test_far_mesh_is_a_subset_of_the_near_one():
    plan = {"tree": np.zeros((0, 2)),
            "hedge": np.array([[3.0, 4.0, 0.3, 1.2, 0.7], [30.0, -2.0, 1.0, 0.9, 0.7]]),
            "bush": np.array([[10.0, 1.0, 0.8, 0.5]]), "tuft": np.array([[5.0, 5.0, 0.4, 0.1]])}
    _, near = PGM.greenery_mesh(plan, kit=None)
    trees, far = PGM.greenery_mesh(plan, kit=None, far=True)
    assert trees.n_triangles == 0
    # a far hedge cell: the core's three faces (6), the soil rectangle (2), 8 cards (16); a far bush 40
    assert far.n_triangles == 2 * (6 + 2 + 16) + 40
    assert _rows(far) <= _rows(near)


class _Recorder:
    def __init__(self):
        self.drawn = []

    def draw(self, vao, first, count):
        self.drawn += [int(f) for f in first]


def test_tiles_between_a_minimum_and_a_maximum_distance():
    # four 1 m tiles along x whose nearest points are 5, 20, 35 and 60 m from the eye at the origin
    lo = np.array([[5.0, 0, 0], [20.0, 0, 0], [35.0, 0, 0], [60.0, 0, 0]])
    t = TiledVertexArray(None, np.array([0, 3, 6, 9]), np.array([3, 3, 3, 3]), lo, lo + 1.0)
    t.indirect = _Recorder()
    everything = np.array([[0.0, 0.0, 0.0, 1.0]] * 6)   # 0 . p + 1 >= 0: no plane culls
    eye = np.zeros(3)
    t.render(everything, eye, 35.0)
    assert t.indirect.drawn == [0]                         # one run: tiles 0..2 (first vertex 0)
    t.indirect.drawn = []
    t.render(everything, eye, 120.0, 35.0)
    assert t.indirect.drawn == [9]                          # 35 m is not beyond 35 m: only the 60 m tile
    t.indirect.drawn = []
    t.render(everything, eye, 30.0, 10.0)
    assert t.indirect.drawn == [3]


def test_with_greenery_levels_meet_at_far_from():
    assert 0 < PG.FAR_FROM_M < PG.SMALL_DISTANCE_M
