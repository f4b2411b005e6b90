"""The generation context of the UrbanGround ladder (:mod:`urbanarena.tasks.generators.urbanground`): the city's
walkable space, network, needs and named POIs, and the task record every sub-family builder makes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from urbanarena.env.continuous.collision import WalkableSpace
from urbanarena.env.continuous.env import ContinuousConfig
from urbanarena.env.continuous.walk_network import WalkNetwork
from urbanarena.errors import UrbanArenaError
from urbanarena.tasks.families.urbanground import LETTERS, SUBFAMILIES
from urbanarena.tasks.generators.cityseeker_needs import NeedMapping, load_needs
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task
from urbanarena.world.city import City

GENERATOR_VERSION = 2  # 2: l4_multi_stop tours fit the 100-step limit; l5_pedestrians crossers drawn near the route


def bearing_deg(p, q) -> float:
    return math.degrees(math.atan2(q[0] - p[0], q[1] - p[1])) % 360.0



@dataclass
class GenContext:
    """What every builder reads: the city, its walkable space and network, the need mapping, the free pose
    nodes and the named POIs, plus caches and the last rejection reason (``reject``)."""

    city: City
    space: WalkableSpace
    net: WalkNetwork
    needs: NeedMapping
    nodes: list[str]  # free pose nodes, sorted
    pois: list[Any]  # named POIs with usable facade/front points, sorted by id
    name_count: dict[str, int] = field(default_factory=dict)
    fronts: dict[str, tuple[float, float]] = field(default_factory=dict)  # POI id -> free front point (cache)
    node_xy: Any = None  # (N, 2) array of ``nodes``' positions (cache)
    why: str | None = None  # why the last builder call gave no task (set by builders that say; reported)

    def reject(self, reason: str) -> None:
        self.why = reason

    def xy(self, n: str) -> tuple[float, float]:
        x, y = self.city.xy(n)
        return float(x), float(y)

    def pos(self, xy) -> Position:
        lat, lon = self.city.frame.to_latlon(float(xy[0]), float(xy[1]))
        return Position(lat=float(lat), lon=float(lon))

    def nd(self, a, b) -> float:
        return float(self.net.network_distance_m(a, b))

    def nearest_node(self, xy) -> str:
        return min(self.city.graph.nodes, key=lambda n: math.dist(self.city.xy(n), xy))


def build_context(city: City, needs: NeedMapping | None) -> GenContext:
    ann = getattr(city, "annotations", None)
    if ann is None or not ann.streets:
        raise UrbanArenaError(f"city {city.name!r} has no annotations: UrbanGround tasks need an OSM city "
                              "(urbanarena city import osm:FILE)")
    c = ContinuousConfig()
    space = WalkableSpace.from_city(city, agent_radius_m=c.agent_radius_m, passage_half_width_m=c.passage_half_width_m,
                                    bounds_margin_m=c.bounds_margin_m)
    net = WalkNetwork.from_city(city)
    nodes = sorted(n for n in city.graph.nodes if space.is_free(*city.xy(n)) and space.clearance_m(*city.xy(n)) > 0.3)
    pois = []
    for p in sorted(list(ann.pois) + list(ann.standalone_pois), key=lambda p: p.id):
        if not p.name or p.front_xy is None:
            continue
        front = space.nearest_free(*p.front_xy, max_m=2.0)
        if front is None:
            continue
        pois.append(p)
    names: dict[str, int] = {}
    for p in pois:
        names[p.name.casefold()] = names.get(p.name.casefold(), 0) + 1
    return GenContext(city, space, net, needs or load_needs(), nodes, pois, names)


def facade_point(p) -> tuple[float, float]:
    return tuple(map(float, p.facade_xy)) if p.facade_xy is not None else (float(p.x_m), float(p.y_m))


def front_point(ctx: GenContext, p) -> tuple[float, float]:
    if p.id not in ctx.fronts:
        f = ctx.space.nearest_free(*p.front_xy, max_m=2.0)
        ctx.fronts[p.id] = (float(f[0]), float(f[1]))
    return ctx.fronts[p.id]


def kind_label(p) -> str:
    return str(p.kind).replace("_", " ")


def make_task(ctx: GenContext, sub: str, start_xy, yaw: float, instruction: str, goals: Sequence[tuple[Any, str]] = (),
          answer: str | None = None, **extra: Any) -> Task:
    level, kind = SUBFAMILIES[sub]
    return Task(
        task_id="pending", family="urbanground", city=CityRef(name=ctx.city.name, content_hash=ctx.city.content_hash),
        start=Start(node=ctx.nearest_node(start_xy), position=ctx.pos(start_xy), heading_deg=round(yaw % 360.0, 3)),
        goals=[Goal(position=ctx.pos(xy), label=label) for xy, label in goals],
        success_radius_m=15.0, instruction=instruction, answer=answer,
        answer_metric="exact" if answer is not None else None, category=sub, privileged=False,
        provenance={"source": "urbanarena urbanground generator", "generator_version": GENERATOR_VERSION,
                    "licence": "derived from OpenStreetMap data, ODbL 1.0 (© OpenStreetMap contributors)"},
        extra={"level": level, "kind": kind, **extra})


def distinct_names(ctx: GenContext, rng, exclude: set[str], far_from, min_m: float, k: int) -> list[str] | None:
    """``k`` names (casefold-distinct, not in ``exclude``) none of whose POIs lies within ``min_m`` of ``far_from``."""
    near: set[str] = {p.name.casefold() for p in ctx.pois if math.dist(facade_point(p), far_from) < min_m}
    cand = sorted({p.name for p in ctx.pois if p.name.casefold() not in near and p.name.casefold() not in exclude})
    if len(cand) < k:
        return None
    out: list[str] = []
    for i in rng.permutation(len(cand)):
        n = cand[int(i)]
        if n.casefold() not in {o.casefold() for o in out}:
            out.append(n)
        if len(out) == k:
            return out
    return None


def shuffled_choice(rng, correct: str, distractors: list[str]) -> tuple[list[str], str]:
    opts = [correct] + distractors
    order = [int(i) for i in rng.permutation(4)]
    options = [opts[i] for i in order]
    return options, LETTERS[order.index(0)]


__all__ = ["GENERATOR_VERSION", "GenContext", "bearing_deg", "build_context", "distinct_names", "facade_point",
           "front_point", "kind_label", "make_task", "shuffled_choice"]
