"""Counting targets over a node's people and vehicles (``object_count`` family; issue 19, item 1).

The ordinary counting tasks (:mod:`.object_count`) count mapped street objects and shops only; people and vehicles
are never counted unless a task asks for them, and only these tasks do. Each task is asked at its start node and
counts what that node's panorama shows: the node's snapshot (:func:`urbanarena.render.scene3d.population.snapshot`,
the city seed, the node and the condition), so the ground truth is computed from the same placements the panorama
is drawn from, and stored in the task (``answer``; ``extra.counted`` lists every counted placement with its id,
kind and position; ``extra.population`` the seed, condition and version that produced them).

Targets (our wording):

* ``crosswalk_waiting`` -- "the people waiting at either kerb of the crosswalk nearest to you (not those already
  on the stripes)": the crosswalk nearest to the start, within :data:`CROSSWALK_MAX_M`, when the next one is at
  least :data:`NEAREST_MARGIN` times farther (no doubt which is meant); counts the ``waiting`` placements of that
  crosswalk.
* ``street_parked`` -- "the parked cars along both kerbs of the street you are on, between the junctions at its
  two ends": the scene road the start node's street is drawn as, when all of it lies within
  ``RADIUS_M - 10`` m of the start (so the snapshot's radius cuts nothing off); counts its ``parked_car``
  placements.

Counts of 1 and more are kept (:data:`MIN_COUNT`); difficulty by count: ``easy`` 1-3, ``medium`` 4-6, ``hard``
7 and more. With a ``visibility`` hook (``(placement ids, node) -> bool``, e.g. an ID-pass check from the start
node) a candidate is kept only when the hook accepts every counted placement.
"""

from __future__ import annotations

import math
from typing import Callable, Iterable

from urbanarena.tasks.generators.common import Candidate, CandidatePool, FamilyUnavailable, GenContext

KIND = "object_count"
CROSSWALK_MAX_M = 25.0
NEAREST_MARGIN = 1.5
MIN_COUNT = 1
BANDS = {"easy": (1, 3), "medium": (4, 6), "hard": (7, 99)}
RANGE_TEXT = {
    "crosswalk_waiting": "the people waiting at either kerb of the crosswalk nearest to you (not those already "
                         "on the stripes)",
    "street_parked": "the parked cars along both kerbs of the street you are on, between the junctions at its "
                     "two ends",
}
INSTRUCTION = "Look around and count {range}. Answer with a single number."
#: ``(placement ids, start node) -> bool``
PopulationVisibility = Callable[[Iterable[str], str], bool]


def _band(n: int) -> str | None:
    for d, (lo, hi) in BANDS.items():
        if lo <= n <= hi:
            return d
    return None


def generate(ctx: GenContext, wanted: dict[str, int], scene=None, condition: str = "clear",
             population_seed: int = 0, visibility: PopulationVisibility | None = None,
             nodes: list[str] | None = None) -> CandidatePool:
    """Counting candidates over the snapshot (module docstring).

    Args:
        scene: the city's scene (default :func:`~urbanarena.render.scene3d.city_scene.scene_from_city`).
        condition: the render condition the panoramas are drawn in (the snapshot depends on it).
        nodes: start nodes to try (default: ``max(120, 12 x the largest wanted count)`` drawn with ``ctx.rng``,
            sorted, as :mod:`.object_count` draws its starts).
    Raises:
        FamilyUnavailable: the city has no annotations, or no start gives a target.
    """
    from urbanarena.render.scene3d.city_scene import node_pose, scene_from_city
    from urbanarena.render.scene3d.population import POPULATION_VERSION, RADIUS_M, city_seed, snapshot

    from urbanarena.tasks.generators.real_imagery import is_real_imagery

    if ctx.ann is None:
        raise FamilyUnavailable(KIND, "the city has no annotations (nothing rendered, no people)")
    if is_real_imagery(ctx.city):
        raise FamilyUnavailable(KIND, "real imagery: the people in photographs are not the rendered snapshot's")
    scene = scene if scene is not None else scene_from_city(ctx.city)
    pool = CandidatePool(KIND)
    roads = {r.id: r for r in scene.roads}
    crosswalks = list(scene.crosswalks)
    seed = city_seed(scene, population_seed)
    if nodes is None:
        every = ctx.nodes()
        k = min(len(every), max(120, 12 * max(wanted.values(), default=1)))
        nodes = [every[int(i)] for i in sorted(ctx.rng.choice(len(every), size=k, replace=False).tolist())]
    for s in nodes:
        x, y, heading = node_pose(ctx.city, s)
        targets = []
        if crosswalks:
            ds = sorted((math.hypot(c.x_m - x, c.y_m - y), c.id) for c in crosswalks)
            if ds[0][0] <= CROSSWALK_MAX_M and (len(ds) == 1 or ds[1][0] >= NEAREST_MARGIN * max(ds[0][0], 1.0)):
                targets.append(("crosswalk_waiting", f"crosswalk:{ds[0][1]}", ("waiting",)))
            else:
                pool.reject("no unambiguous crosswalk nearby")
        sid = ctx.city.node(s).get("street_id")
        road = roads.get(sid)
        if road is not None and road.kind == "road":
            far = max(math.hypot(px - x, py - y) for px, py in road.centreline)
            if far <= RADIUS_M - 10.0:
                targets.append(("street_parked", f"road:{road.id}", ("parked_car",)))
            else:
                pool.reject("street longer than the snapshot radius")
        if not targets:
            continue
        snap = snapshot(scene, s, x, y, condition, population_seed)
        for rname, anchor, kinds in targets:
            counted = [p for p in snap.placements if p.kind in kinds and p.anchor == anchor]
            n = len(counted)
            if n < MIN_COUNT:
                pool.reject(f"{rname}: nothing to count")
                continue
            if visibility is not None and not visibility([p.id for p in counted], s):
                pool.reject(f"{rname}: a counted placement is not visible from the start")
                continue
            diff = _band(n)
            extra = {"task_kind": KIND, "object_type": kinds[0], "object_phrase": RANGE_TEXT[rname], "range": rname,
                     "range_text": RANGE_TEXT[rname], "anchor": anchor,
                     "counted": [{"id": p.id, "type": p.kind, "xy_m": [round(p.x_m, 3), round(p.y_m, 3)]}
                                 for p in counted],
                     "population": {"seed": seed, "population_seed": int(population_seed), "condition": condition,
                                    "version": POPULATION_VERSION, "node": s},
                     "requires_current_location": False}
            pool.add(Candidate(
                kind=KIND, difficulty=diff, key=f"{s}|{rname}", group=f"{rname}|{anchor}",
                stats={"count": float(n)},
                fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, heading),
                            instruction=INSTRUCTION.format(range=RANGE_TEXT[rname]), answer=str(n),
                            answer_metric="mean_relative_accuracy", difficulty=diff, category=rname, extra=extra)))
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no start node has people waiting at a crosswalk or parked cars to count")
    return pool


__all__ = ["BANDS", "INSTRUCTION", "KIND", "RANGE_TEXT", "generate"]
