"""Shared pieces of the ``cityarena`` task generators: context, candidates, calibration, geometry.

Units: local metres of the city frame (x east, y north), degrees clockwise
from north. Every generator is deterministic given the city and the
:class:`numpy.random.Generator` it is handed (seeded by the suite builder).
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from urbanarena.env.motion.trajectory import MotionConfig, TrajectoryMotion
from urbanarena.errors import UrbanArenaError
from urbanarena.render.maps import Extent
from urbanarena.tasks.schema import CityRef, Goal, Position, Start, Task
from urbanarena.world.annotations import POI, Annotations
from urbanarena.world.city import City
from urbanarena.world.geo import signed_turn_deg, wrap_deg

DIFFICULTIES = ("easy", "medium", "hard")
#: relative tolerance of the calibration targets (issue 4)
CALIBRATION_TOLERANCE = 0.15
#: 360CityArena's per-difficulty means (paper, Akihabara): kind -> statistic -> difficulty -> mean
CALIBRATION_TARGETS: dict[str, dict[str, dict[str, float]]] = {
    "map_navigation": {
        "path_length_m": {"easy": 124.0, "medium": 247.0, "hard": 347.0},
        "decision_points": {"easy": 3.3, "medium": 6.4, "hard": 9.0},
    },
    "object_count": {"count": {"easy": 3.5, "medium": 4.6, "hard": 9.0}},
    "vln": {"instruction_steps": {"easy": 4.4, "medium": 5.9, "hard": 7.4}},
}
#: arena kinds whose ground truth is a place (verified by the oracle)
NAVIGATION_KINDS = frozenset({"landmark_language", "landmark_image", "map_navigation", "vln"})
#: POI categories that have storefronts (signs at street level)
STOREFRONT_CATEGORIES = frozenset({"shop", "amenity", "tourism", "leisure", "craft", "healthcare", "office"})
#: straight-on tolerance of a turn, degrees (|turn| below it reads "straight")
STRAIGHT_DEG = 30.0
#: metres one W LARGE step walks (``cityarena-v1``'s motion rules): with the step limit, the longest walk a task
#: may ask for (50 steps: 350 m)
LARGE_STEP_M = float(MotionConfig().move_m["LARGE"])


class FamilyUnavailable(UrbanArenaError):
    """A family cannot be generated in this area; ``reason`` says why (no degenerate tasks are made)."""

    def __init__(self, kind: str, reason: str):
        super().__init__(f"{kind}: {reason}")
        self.kind = kind
        self.reason = reason


@dataclass
class ImageSpec:
    """A reference image the suite builder must write: ``kind`` in ``grid_map``, ``start_goal_map``,
    ``reference_view``; ``params`` its inputs; ``name`` the file name stem (shared files keep one name)."""

    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Candidate:
    """One possible task before selection.

    Attributes:
        kind: ``extra.task_kind``.
        difficulty: ``easy`` / ``medium`` / ``hard``.
        key: de-duplication key (one task per key in a suite).
        group: diversity group (e.g. the goal POI); at most ``group_cap`` selected per group.
        stats: calibration statistics (see :data:`CALIBRATION_TARGETS`) and descriptive numbers.
        fields: :class:`Task` keyword arguments except ``task_id`` (``extra`` included).
        images: reference images the task needs (written by the suite builder).
        finalize: optional last check run once the candidate is selected, before the oracle verifies it
            (e.g. the view distance of a ``landmark_image`` reference, too costly for every candidate):
            returns ``None`` when the candidate is kept (it may update ``fields``/``images``), else the
            reason it is replaced (counted in the report's ``verification_failures``).
    """

    kind: str
    difficulty: str
    key: str
    group: str
    stats: dict[str, float]
    fields: dict[str, Any]
    images: list[ImageSpec] = field(default_factory=list)
    finalize: Callable[["Candidate"], str | None] | None = None

    def build(self, task_id: str, image_paths: Sequence[str] = ()) -> Task:
        f = dict(self.fields)
        extra = dict(f.pop("extra", {}))
        if image_paths:
            extra["reference_images"] = list(image_paths)
        extra["stats"] = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.stats.items()}
        return Task(task_id=task_id, extra=extra, **f)


@dataclass
class CandidatePool:
    """Candidates of one kind by difficulty, plus notes on what was rejected and why (counts)."""

    kind: str
    by_difficulty: dict[str, list[Candidate]] = field(default_factory=lambda: {d: [] for d in DIFFICULTIES})
    rejected: dict[str, int] = field(default_factory=dict)

    def add(self, c: Candidate) -> None:
        self.by_difficulty[c.difficulty].append(c)

    def reject(self, reason: str, n: int = 1) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + n

    def total(self) -> int:
        return sum(len(v) for v in self.by_difficulty.values())


# --------------------------------------------------------------------------- context
@dataclass
class GenContext:
    """What every family generator reads.

    Attributes:
        city: the city (with ``annotations`` for everything but localization and map navigation).
        rng: the generator's random stream (seeded per family by the suite builder).
        motion: the arena motion rules (``cityarena-v1``: nearest-arrow branch keys), used to
            find where arrows are shown (decision points) along a route.
        extent: the district map extent (local metres) used for the grid and start/goal maps.
        max_steps: the step limit tasks must be solvable within.
        plan_steps: optional ``task -> oracle steps or None`` (the suite builder passes the
            arena oracle's planner; the tasks layer cannot import agents).
        area_node_ids: the pose nodes of the split area tasks must lie in, sorted (``None``: the whole
            city; :mod:`.area`); generators draw starts from :meth:`area_nodes`.
    """

    city: City
    rng: np.random.Generator
    motion: TrajectoryMotion
    extent: Extent
    max_steps: int = 50
    plan_steps: Callable[[Task], int | None] | None = None
    area_node_ids: tuple[str, ...] | None = None

    def area_nodes(self) -> list[str]:
        """Node ids tasks may start from, sorted: the area's (:attr:`area_node_ids`), else :meth:`nodes`."""
        return list(self.area_node_ids) if self.area_node_ids is not None else self.nodes()

    def in_area(self, node: str) -> bool:
        """Whether ``node`` lies in the area (always true without one)."""
        if self.area_node_ids is None:
            return True
        if not hasattr(self, "_area_set"):
            self._area_set = frozenset(self.area_node_ids)
        return node in self._area_set

    @property
    def ann(self) -> Annotations | None:
        return getattr(self.city, "annotations", None)

    @property
    def city_ref(self) -> CityRef:
        return CityRef(name=self.city.name, content_hash=self.city.content_hash)

    def nodes(self) -> list[str]:
        """Node ids, sorted (stable order for seeded sampling)."""
        return sorted(self.city.graph.nodes)

    def xy(self, node: str) -> tuple[float, float]:
        x, y = self.city.xy(node)
        return float(x), float(y)

    def position(self, x_m: float, y_m: float) -> Position:
        lat, lon = self.city.frame.to_latlon(x_m, y_m)
        return Position(lat=float(lat), lon=float(lon))

    def azimuth(self, u: str, v: str) -> float:
        return float(self.city.graph.edges[u, v]["azimuth_deg"])

    def start(self, node: str, heading_deg: float) -> Start:
        return Start(node=node, heading_deg=round(wrap_deg(heading_deg), 6))

    def random_heading(self, node: str) -> float:
        """Azimuth of a uniformly drawn out-edge of ``node`` (the agent faces along a street)."""
        outs = sorted(float(d["azimuth_deg"]) for _, d in self.city.out_edges(node))
        return outs[int(self.rng.integers(len(outs)))] if outs else 0.0


def make_context(city: City, seed: int | Sequence[int], *, max_steps: int = 50,
                 plan_steps: Callable[[Task], int | None] | None = None,
                 extent: Extent | None = None, area_node_ids: Sequence[str] | None = None) -> GenContext:
    """A :class:`GenContext` with a seeded RNG and the ``cityarena-v1`` motion rules (nearest-arrow keys)."""
    return GenContext(city=city, rng=np.random.default_rng(seed), motion=TrajectoryMotion(city, MotionConfig()),
                      extent=extent or district_extent(city), max_steps=max_steps, plan_steps=plan_steps,
                      area_node_ids=tuple(area_node_ids) if area_node_ids is not None else None)


def district_extent(city: City) -> Extent:
    """The district map's extent (local metres): the axis-aligned box around the import bbox's
    corners when the city has annotations with a bbox (an OSM import), else the node bounding box
    plus 5 % (:meth:`Extent.of_city`). Localization grids and start/goal maps use it."""
    ann = getattr(city, "annotations", None)
    bb = getattr(ann, "bbox", None) if ann is not None else None
    if bb:
        return bbox_extent(city, bb)
    return Extent.of_city(city)


def bbox_extent(city: City, bbox: Sequence[float]) -> Extent:
    """The axis-aligned box (local metres) around the corners of a WGS84 ``(W, S, E, N)`` bbox."""
    w, s, e, n = bbox
    xs, ys = city.frame.to_xy(np.array([s, s, n, n]), np.array([w, e, w, e]))
    return Extent(float(np.min(xs)), float(np.min(ys)), float(np.max(xs)), float(np.max(ys)))


# --------------------------------------------------------------------------- POIs
def fold_name(name: str) -> str:
    """Case- and diacritics-folded name with collapsed spaces (for uniqueness checks)."""
    t = unicodedata.normalize("NFKD", name)
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    return " ".join(t.casefold().split())


def unique_named_pois(ann: Annotations) -> list[POI]:
    """Facade-attached named POIs whose folded name occurs once among all POIs of the area (attached
    and standalone) and that have a front point and a pose node: the unambiguous landmarks.
    Sorted by id."""
    counts: dict[str, int] = {}
    for p in list(ann.pois) + list(ann.standalone_pois):
        if p.name:
            k = fold_name(p.name)
            counts[k] = counts.get(k, 0) + 1
    out = [p for p in ann.pois if p.name and counts[fold_name(p.name)] == 1 and p.front_xy is not None
           and p.node_id is not None and p.facade_id is not None]
    return sorted(out, key=lambda p: p.id)


def poi_goal(ctx: GenContext, poi: POI) -> Goal:
    """The goal of a POI: its front point (the facade point snapped to walkable space, where radii
    are measured) as ``position``, its nearest pose node as ``node``, its name as ``label``."""
    assert poi.front_xy is not None
    return Goal(node=poi.node_id, position=ctx.position(*poi.front_xy), label=poi.name)


def side_of(heading_deg: float, from_xy: tuple[float, float], to_xy: tuple[float, float]) -> str:
    """``"left"`` or ``"right"``: the side of ``to_xy`` for someone at ``from_xy`` facing ``heading_deg``."""
    bearing = math.degrees(math.atan2(to_xy[0] - from_xy[0], to_xy[1] - from_xy[1]))
    return "right" if signed_turn_deg(heading_deg, bearing) > 0 else "left"


# --------------------------------------------------------------------------- routes
@dataclass(frozen=True)
class RoutePoint:
    """A node along a route where the arena shows arrows (two or more onward branches).

    Attributes: ``index`` in the route, ``node``, ``turn_deg`` (signed, + right) of the route's next
    edge from the arrival direction, ``branch_turns`` (every offered branch's turn), ``along_m``
    (metres from the route start).
    """

    index: int
    node: str
    turn_deg: float
    branch_turns: tuple[float, ...]
    along_m: float

    @property
    def direction(self) -> str:
        """``straight`` (|turn| < :data:`STRAIGHT_DEG`), ``left`` or ``right``."""
        if abs(self.turn_deg) < STRAIGHT_DEG:
            return "straight"
        return "right" if self.turn_deg > 0 else "left"

    def ambiguous(self) -> bool:
        """Another offered branch reads the same (``straight``/``left``/``right``) as the route's."""
        d = self.direction

        def cat(t: float) -> str:
            return "straight" if abs(t) < STRAIGHT_DEG else ("right" if t > 0 else "left")

        return sum(1 for t in self.branch_turns if cat(t) == d) != 1


@dataclass(frozen=True)
class RouteInfo:
    """A route's length, its decision points and whether the walk follows it without help.

    ``followable``: at every node without arrows the single onward branch is the route's next edge
    (the route never needs a reversal or an excluded sharp turn)."""

    nodes: tuple[str, ...]
    length_m: float
    decisions: tuple[RoutePoint, ...]
    followable: bool

    @property
    def decision_points(self) -> int:
        return len(self.decisions)


def analyse_route(ctx: GenContext, path: Sequence[str]) -> RouteInfo:
    """Decision points of a node route under the arena motion rules.

    Walking the route, the arrival direction at an interior node is the azimuth
    of the edge just walked; the node is a *decision point* when
    :meth:`TrajectoryMotion.branches_at` offers two or more branches there (the
    arena shows arrows and the agent must press a branch key). This is the
    count calibrated against 360CityArena's "decision points".
    """
    g = ctx.city.graph
    length = 0.0
    decisions: list[RoutePoint] = []
    followable = True
    for i in range(1, len(path)):
        length += float(g.edges[path[i - 1], path[i]]["length_m"])
        if i == len(path) - 1:
            break
        a_in = ctx.azimuth(path[i - 1], path[i])
        a_out = ctx.azimuth(path[i], path[i + 1])
        br = ctx.motion.branches_at(path[i], a_in)
        if len(br) >= 2:
            decisions.append(RoutePoint(i, path[i], signed_turn_deg(a_in, a_out), tuple(b.turn_deg for b in br),
                                        length))
        elif len(br) == 1 and br[0].target != path[i + 1]:
            followable = False
        elif not br:
            followable = False
    return RouteInfo(tuple(path), length, tuple(decisions), followable)


def estimated_steps(info: RouteInfo, radius_m: float, large_m: float = LARGE_STEP_M) -> int:
    """A quick step estimate of walking ``info``'s route in the arena: LARGE walks per leg between
    decision points, one key per decision point, one ANSWER, minus the walking the success radius
    saves. Used to skip routes far beyond the step limit and to plan only the borderline ones."""
    legs, last = [], 0.0
    for dp in info.decisions:
        legs.append(dp.along_m - last)
        last = dp.along_m
    legs.append(info.length_m - last)
    return sum(math.ceil(leg / large_m) for leg in legs) + info.decision_points + 1 - int(radius_m // large_m)


#: routes whose estimate is this far below the step limit are not pre-planned (the suite verifies them)
PLAN_MARGIN_STEPS = 12


# --------------------------------------------------------------------------- calibration
def split_counts(n: int) -> dict[str, int]:
    """Tasks per difficulty for ``n`` tasks: as even as possible, the remainder to easy, then medium."""
    base, rem = divmod(int(n), 3)
    return {d: base + (1 if i < rem else 0) for i, d in enumerate(DIFFICULTIES)}


#: relative error beyond which the selection objective adds a steep penalty (inside the tolerance)
SOFT_TOLERANCE = 0.12


def objective(selected: Sequence[Candidate], targets: dict[str, float]) -> float:
    """Selection loss: over the target statistics, the squared relative error of the mean plus
    ``100 x`` the squared excess over :data:`SOFT_TOLERANCE` (so that, where the data cannot meet
    every target, no statistic is given up to perfect another). 0 without targets."""
    if not targets or not selected:
        return 0.0
    tot = 0.0
    for stat, tgt in targets.items():
        m = float(np.mean([c.stats[stat] for c in selected]))
        e = (m - tgt) / tgt
        tot += e * e + 100.0 * max(0.0, abs(e) - SOFT_TOLERANCE) ** 2
    return tot


def select_calibrated(pool: Sequence[Candidate], n: int, targets: dict[str, float], rng: np.random.Generator,
                      group_cap: int = 1, iterations: int = 4000) -> list[Candidate]:
    """Choose ``n`` candidates (distinct ``key``, at most ``group_cap`` per ``group``) whose means of the
    target statistics are as close as possible to ``targets`` (relative squared error).

    Method: a seeded random feasible start, then swap local search (a selected candidate for an
    unselected one) accepting strict improvements, over ``iterations`` random proposals; without
    targets the random start is returned. Deterministic for a given ``rng`` state. Fewer than
    ``n`` are returned when the pool (after the key/group rules) is smaller.
    """
    if n <= 0:
        return []
    order = [int(i) for i in rng.permutation(len(pool))]
    chosen: list[int] = []
    keys: set[str] = set()
    groups: dict[str, int] = {}
    for i in order:
        c = pool[i]
        if c.key in keys or groups.get(c.group, 0) >= group_cap:
            continue
        chosen.append(i)
        keys.add(c.key)
        groups[c.group] = groups.get(c.group, 0) + 1
        if len(chosen) == n:
            break
    if not targets or len(chosen) < n or len(pool) == n:
        return [pool[i] for i in chosen]
    cur = objective([pool[i] for i in chosen], targets)
    rest = [i for i in order if i not in set(chosen)]
    if not rest:
        return [pool[i] for i in chosen]
    for _ in range(iterations):
        if cur < 1e-6:
            break
        a = int(rng.integers(len(chosen)))
        b = int(rng.integers(len(rest)))
        out_c, in_c = pool[chosen[a]], pool[rest[b]]
        if in_c.key in keys:
            continue
        if in_c.group != out_c.group and groups.get(in_c.group, 0) >= group_cap:
            continue
        trial = [pool[i] for k, i in enumerate(chosen) if k != a] + [in_c]
        val = objective(trial, targets)
        if val < cur - 1e-12:
            keys.discard(out_c.key)
            keys.add(in_c.key)
            groups[out_c.group] -= 1
            groups[in_c.group] = groups.get(in_c.group, 0) + 1
            chosen[a], rest[b] = rest[b], chosen[a]
            cur = val
    return [pool[i] for i in chosen]


def means(cands: Iterable[Candidate], stats: Iterable[str]) -> dict[str, float]:
    cands = list(cands)
    return {s: float(np.mean([c.stats[s] for c in cands])) if cands else math.nan for s in stats}


__all__ = [
    "CALIBRATION_TARGETS", "CALIBRATION_TOLERANCE", "Candidate", "CandidatePool", "DIFFICULTIES",
    "FamilyUnavailable", "GenContext", "ImageSpec", "LARGE_STEP_M", "NAVIGATION_KINDS", "PLAN_MARGIN_STEPS", "RouteInfo",
    "RoutePoint", "STOREFRONT_CATEGORIES", "analyse_route", "bbox_extent", "district_extent", "estimated_steps", "fold_name",
    "make_context", "means", "objective", "poi_goal", "select_calibrated", "side_of", "split_counts",
    "unique_named_pois",
]
