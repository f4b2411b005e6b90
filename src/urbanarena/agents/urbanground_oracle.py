"""Agents for the UrbanGround ladder (``urbanground`` tasks in :class:`~urbanarena.env.continuous.ContinuousEnv`).

``ug-oracle`` (:class:`UrbanGroundOracle`, privileged): plans over the walkable
graph and acts **only** through UrbanGround's ``look`` and ``move`` actions (plus
``terminate``, with the answer of a question).

Planning (:class:`FreeSpacePlanner`):

1. **Network route.** Shortest walk on the routing graph of
   :class:`~urbanarena.env.continuous.walk_network.WalkNetwork` from the start's to
   the target's snapped point, with every edge removed that comes within
   ``avoid_margin_m`` (1 m) of a forbidden geometry: the task's restricted zones and
   its road closures (all of them from the start: the oracle is privileged and
   needs no notice).
2. **Collision repair.** Each straight piece of that polyline is tested against the
   environment's obstacles grown by the agent radius (:class:`WalkableSpace`) with a
   clearance of ``clearance_m`` (0.1 m) and against the forbidden geometries. A
   blocked piece (street furniture standing on a network line) is replaced by an
   8-connected A* path on a 0.25 m grid of the free cells in a window around the
   piece (window margin 6 m, then 20 m), smoothed by keeping only the corners
   needed for clear straight pieces.
3. **Following.** Before each piece the oracle turns with one ``look`` so that the
   camera points exactly along it, then walks it with ``move forward`` of at most
   2 s (2.8 m). It reads its pose from the observation's text state (lat, lon,
   yaw). A move that makes less than half its intended progress (a contact)
   triggers a replan from where it stands.
4. **Pedestrians** (L5): before each move the oracle predicts the pedestrians'
   positions (privileged: the episode's :class:`~urbanarena.env.continuous.dynamics.DynamicWorld`,
   ``context.dynamics``) over the move and one second of standing after it, sampled
   every 0.05 s. It takes the first of: the move (full, half, quarter length),
   waiting (``look`` with yaw 0, 0.5 s), a 2 s step left, right or back, that keeps
   ``0.5 + pedestrian_margin_m`` (1.5 m) between centres and whose piece is clear
   of obstacles; when none does, the one with the largest predicted gap.

Targets: ``navigation`` the goal; ``search`` the goal point with the shortest
network walk; ``schedule`` the stops in order; ``multi_stop`` the order of stops
with the shortest total network walk (all permutations; at most 6 stops);
``choice``: the answer is computed from the city annotations (not read from the
task): the option POI nearest to the agent (visual recognition, active
exploration) or the relative bearing of the named POI (orientation), then
``terminate`` with it.

``ug-random`` (:class:`UrbanGroundRandom`): chance baseline; answers a uniformly
random option at once on ``choice`` tasks; elsewhere a random walk (``move
forward`` 2 s with probability 0.7, else a ``look`` with yaw uniform in -120..120)
ending with ``terminate`` with probability ``terminate_prob`` per step (default
1/150). It reads no ground truth and no pixels; draws come from ``AgentContext.rng``.

``ug-straight`` (:class:`UrbanGroundStraight`, ours): the continuous counterpart of ``arena-straight``:
walks forward 2 s every step, turns right by 90 degrees after a blocked move, never terminates (the
step limit ends the episode); on ``choice`` tasks it answers the first option.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Sequence

import networkx as nx
import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.ops import unary_union

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.env.continuous.collision import WalkableSpace
from urbanarena.env.continuous.env import ContinuousConfig
from urbanarena.env.continuous.walk_network import WalkNetwork
from urbanarena.tasks.families.urbanground import LETTERS, goal_points_xy, kind_of, latlon_to_xy, zones_xy
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg

_CACHE: dict[str, tuple[WalkableSpace, WalkNetwork]] = {}


def city_geometry(city: City, config: ContinuousConfig | None = None) -> tuple[WalkableSpace, WalkNetwork]:
    """The environment's :class:`WalkableSpace` and :class:`WalkNetwork` of ``city`` (default
    :class:`ContinuousConfig`), cached per city content hash (agents are built per episode)."""
    c = config or ContinuousConfig()
    key = f"{city.content_hash}:{c.agent_radius_m}:{c.passage_half_width_m}:{c.bounds_margin_m}"
    hit = _CACHE.get(key)
    if hit is None:
        space = WalkableSpace.from_city(city, agent_radius_m=c.agent_radius_m,
                                        passage_half_width_m=c.passage_half_width_m,
                                        bounds_margin_m=c.bounds_margin_m)
        hit = (space, WalkNetwork.from_city(city))
        _CACHE.clear()
        _CACHE[key] = hit
    return hit


def bearing_deg(p: Sequence[float], q: Sequence[float]) -> float:
    """Compass bearing from ``p`` to ``q`` (degrees clockwise from north, [0, 360))."""
    return math.degrees(math.atan2(q[0] - p[0], q[1] - p[1])) % 360.0


class FreeSpacePlanner:
    """Collision-free polylines over the walkable graph (module docstring).

    Args:
        space: the environment's walkable space.
        network: the walk network.
        avoid: forbidden geometries (shapely, local metres): zones, closure lines.
        clearance_m: extra distance kept from grown obstacles.
        avoid_margin_m: distance kept from forbidden geometries.
    """

    def __init__(self, space: WalkableSpace, network: WalkNetwork, avoid: Sequence[Any] = (),
                 clearance_m: float = 0.1, avoid_margin_m: float = 1.0, grid_m: float = 0.25):
        self.space = space
        self.net = network
        self.clearance_m = float(clearance_m)
        self.grid_m = float(grid_m)
        self.avoid = unary_union([g.buffer(avoid_margin_m) for g in avoid]) if avoid else None
        if self.avoid is not None:
            shapely.prepare(self.avoid)
        g = network.graph
        if self.avoid is not None:
            xy = network.node_xy
            bad = [(u, v) for u, v in g.edges if self.avoid.intersects(LineString([xy[u], xy[v]]))]
            g = g.copy()
            g.remove_edges_from(bad)
        self.graph = g

    # ------------------------------------------------------------ tests
    def _blocked_by_avoid(self, p, q) -> bool:
        if self.avoid is None:
            return False
        geom = LineString([p, q]) if math.dist(p, q) > 0 else Point(p)
        return bool(self.avoid.intersects(geom))

    def segment_clear(self, p, q) -> bool:
        """The straight piece ``p -> q`` keeps ``clearance_m`` from every grown obstacle (obstacles already that
        close to ``p`` only must not be entered) and meets no forbidden geometry."""
        if self._blocked_by_avoid(p, q):
            return False
        tree = self.space.tree
        if tree is None:
            return True
        seg = LineString([p, q]) if math.dist(p, q) > 0 else Point(p)
        for i in tree.query(seg, predicate="dwithin", distance=self.clearance_m):
            ob = self.space.obstacles[int(i)]
            d_p = ob.distance(Point(p))
            if d_p == 0.0 and isinstance(seg, LineString):
                # the start lies in it (the environment lets the agent walk out): only a short way straight out
                part = ob.intersection(seg)
                if part.geom_type == "LineString" and part.length < 1.0 and Point(p).distance(part) == 0.0:
                    continue
                return False
            if d_p < self.clearance_m and not ob.intersects(seg):
                continue  # already that close (after a contact): moving along or away is fine
            return False
        return True

    # ------------------------------------------------------------ network route
    def network_route(self, a, b) -> list[tuple[float, float]] | None:
        """Polyline ``a -> snapped a -> ... -> snapped b -> b`` avoiding forbidden edges (``None``: no route)."""
        net = self.net
        sa, sb = net.snap(*a), net.snap(*b)
        g = nx.Graph(self.graph)
        xy = net.node_xy
        S, G, PS, PG = "S", "G", "PS", "PG"
        g.add_edge(S, PS, length_m=sa.distance_m)
        g.add_edge(PG, G, length_m=sb.distance_m)
        pos = {S: tuple(a), G: tuple(b), PS: sa.point, PG: sb.point}
        for P, s in ((PS, sa), (PG, sb)):
            for n in (s.u, s.v):
                if not self._blocked_by_avoid(s.point, xy[n]):
                    g.add_edge(P, n, length_m=math.dist(s.point, xy[n]))
        if {sa.u, sa.v} == {sb.u, sb.v} and not self._blocked_by_avoid(sa.point, sb.point):
            g.add_edge(PS, PG, length_m=math.dist(sa.point, sb.point))
        try:
            path = nx.dijkstra_path(g, S, G, weight="length_m")
        except nx.NetworkXNoPath:
            return None
        pts = [pos[n] if isinstance(n, str) else (float(xy[n][0]), float(xy[n][1])) for n in path]
        out = [pts[0]]
        for p in pts[1:]:
            if math.dist(p, out[-1]) > 1e-6:
                out.append(p)
        return out

    def route_length_m(self, a, b) -> float:
        r = self.network_route(a, b)
        if r is None:
            return math.inf
        return float(sum(math.dist(p, q) for p, q in zip(r, r[1:])))

    # ------------------------------------------------------------ repair
    def _grid_path(self, p, q, margin: float) -> list[tuple[float, float]] | None:
        h = self.grid_m
        x0, y0 = min(p[0], q[0]) - margin, min(p[1], q[1]) - margin
        x1, y1 = max(p[0], q[0]) + margin, max(p[1], q[1]) + margin
        nx_, ny_ = int(math.ceil((x1 - x0) / h)) + 1, int(math.ceil((y1 - y0) / h)) + 1
        xs = x0 + h * np.arange(nx_)
        ys = y0 + h * np.arange(ny_)
        X, Y = np.meshgrid(xs, ys, indexing="ij")
        window = box(x0 - 1, y0 - 1, x1 + 1, y1 + 1)
        blocked = np.zeros(X.shape, bool)
        if self.space.tree is not None:
            idx = self.space.tree.query(window)
            if len(idx):
                obs = unary_union([self.space.obstacles[int(i)] for i in idx]).buffer(self.clearance_m + 0.02)
                blocked |= shapely.contains_xy(obs, X, Y) | shapely.intersects_xy(obs, X, Y)
        if self.avoid is not None:
            blocked |= shapely.intersects_xy(self.avoid, X, Y)

        def cell(pt):
            return (min(max(int(round((pt[0] - x0) / h)), 0), nx_ - 1), min(max(int(round((pt[1] - y0) / h)), 0), ny_ - 1))

        s, t = cell(p), cell(q)
        # the agent may stand in a sliver left by a contact: cells within 0.75 m of the ends stay open
        near = (np.hypot(X - p[0], Y - p[1]) <= 0.75) | (np.hypot(X - q[0], Y - q[1]) <= 0.75)
        blocked &= ~near
        nb = [(dx, dy, math.hypot(dx, dy)) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy]
        dist = {s: 0.0}
        prev: dict[tuple[int, int], tuple[int, int]] = {}
        heap = [(math.dist(s, t), 0.0, s)]
        while heap:
            _, d, c = heapq.heappop(heap)
            if c == t:
                break
            if d > dist.get(c, math.inf):
                continue
            for dx, dy, w in nb:
                n = (c[0] + dx, c[1] + dy)
                if not (0 <= n[0] < nx_ and 0 <= n[1] < ny_) or blocked[n]:
                    continue
                if dx and dy and (blocked[c[0] + dx, c[1]] or blocked[c[0], c[1] + dy]):
                    continue
                nd = d + w
                if nd < dist.get(n, math.inf):
                    dist[n] = nd
                    prev[n] = c
                    heapq.heappush(heap, (nd + math.dist(n, t), nd, n))
        if t not in dist:
            return None
        cells = [t]
        while cells[-1] != s:
            cells.append(prev[cells[-1]])
        cells.reverse()
        pts = [tuple(p)] + [(float(x0 + h * i), float(y0 + h * j)) for i, j in cells[1:-1]] + [tuple(q)]
        return self.smooth(pts)

    def smooth(self, pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """Keep only the corners needed: from each kept point jump to the farthest point (within 60 ahead)
        reachable by a clear straight piece."""
        out = [pts[0]]
        i = 0
        while i < len(pts) - 1:
            j = min(len(pts) - 1, i + 60)
            while j > i + 1 and not self.segment_clear(pts[i], pts[j]):
                j -= 1
            out.append(pts[j])
            i = j
        return out

    def free_target(self, pt, min_clearance_m: float = 0.15, max_m: float = 5.0) -> tuple[float, float]:
        """``pt`` when it keeps ``min_clearance_m`` from obstacles and lies outside the forbidden geometries,
        else the nearest such point on rings of 0.25 m steps (16 directions) up to ``max_m`` (``pt`` if none)."""
        def ok(q) -> bool:
            return self.space.clearance_m(*q) >= min_clearance_m and not self._blocked_by_avoid(q, q)

        if ok(pt):
            return (float(pt[0]), float(pt[1]))
        for k in range(1, int(max_m / 0.25) + 1):
            r = 0.25 * k
            for j in range(16):
                a = math.radians(22.5 * j)
                q = (pt[0] + r * math.sin(a), pt[1] + r * math.cos(a))
                if ok(q):
                    return (float(q[0]), float(q[1]))
        return (float(pt[0]), float(pt[1]))

    def plan(self, a, b) -> list[tuple[float, float]]:
        """Collision-free polyline from ``a`` to ``b`` (module docstring); falls back to the unrepaired
        pieces where no repair is found (the environment's slide response then takes over)."""
        route = self.network_route(a, b) or [tuple(a), tuple(b)]
        # network vertices inside (or hugging) an obstacle, e.g. furniture mapped on the line, are dropped:
        # the repair below walks around them between their neighbours
        keep = [route[0]] + [v for v in route[1:-1] if self.space.clearance_m(*v) >= self.clearance_m + 0.02]
        route = keep + [route[-1]]
        out = [route[0]]
        for p, q in zip(route, route[1:]):
            if self.segment_clear(p, q):
                out.append(q)
                continue
            fixed = None
            for margin in (6.0, 20.0):
                fixed = self._grid_path(p, q, margin)
                if fixed is not None:
                    break
            out.extend(fixed[1:] if fixed is not None else [q])
        return self.smooth(out) if len(out) > 2 else out


def _pose_from_obs(city: City, observation: dict[str, Any]) -> tuple[float, float, float, float]:
    st = (observation.get("text") or {}).get("state") or {}
    x, y = latlon_to_xy(city, st["lat"], st["lon"])
    return x, y, float(st.get("yaw_deg") or 0.0), float(st.get("time_s") or 0.0)


class UrbanGroundOracle(Agent):
    """``ug-oracle`` (module docstring). Privileged: plans on the city's geometry and the task's ground truth
    (goals, zones, closures, pedestrians), acts only through look/move/terminate.

    Args:
        clearance_m: distance kept from obstacles while planning (metres, >= 0).
        pedestrian_margin_m: distance kept from pedestrians (metres, >= 0).
    """

    name = "ug-oracle"
    action_style = "continuous"
    privileged = True
    uses_images = False

    def __init__(self, clearance_m: float = 0.1, pedestrian_margin_m: float = 1.0):
        if clearance_m < 0 or pedestrian_margin_m < 0:
            raise ValueError("clearance_m and pedestrian_margin_m must be >= 0")
        super().__init__(clearance_m=float(clearance_m), pedestrian_margin_m=float(pedestrian_margin_m))
        self.clearance_m = float(clearance_m)
        self.pedestrian_margin_m = float(pedestrian_margin_m)

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        self.task = task
        self.city = context.city
        self.kind = kind_of(task)
        self.dynamics = getattr(context, "dynamics", None)
        space, net = city_geometry(self.city)
        avoid: list[Any] = [Polygon(r) for r in zones_xy(task, self.city)]
        avoid += [c.geometry() for c in getattr(context, "closures", None) or []]
        self.planner = FreeSpacePlanner(space, net, avoid, clearance_m=self.clearance_m)
        self.targets: list[tuple[float, float]] | None = None
        self.waypoints: list[tuple[float, float]] = []
        self.expect: tuple[float, float, float] | None = None  # position before a move and intended metres
        self.replans = 0
        self.stats = {"replans": 0, "waits": 0}

    def _targets(self, start: tuple[float, float]) -> list[tuple[float, float]]:
        goals = [self.planner.free_target(g) for g in goal_points_xy(self.task, self.city)]
        if self.kind == "search":
            return [min(goals, key=lambda g: self.planner.route_length_m(start, g))]
        if self.kind == "multi_stop" and len(goals) > 1:
            pts = [start] + goals
            D = [[0.0 if i == j else self.planner.route_length_m(pts[i], pts[j]) for j in range(len(pts))]
                 for i in range(len(pts))]
            best = min(itertools.permutations(range(1, len(pts))),
                       key=lambda perm: sum(D[a][b] for a, b in zip((0,) + perm, perm)))
            return [pts[i] for i in best]
        return goals

    def _replan(self, here: tuple[float, float]) -> None:
        self.waypoints = []
        a = here
        for t in self.targets or []:
            self.waypoints.extend(self.planner.plan(a, t)[1:])
            a = t

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        x, y, yaw, t = _pose_from_obs(self.city, observation)
        here = (x, y)
        if self.kind == "choice":
            return {"action": "terminate", "answer": self._answer(here, yaw)}
        if self.targets is None:
            self.targets = self._targets(here)
            self._replan(here)
        if self.expect is not None:
            px, py, want = self.expect
            self.expect = None
            if want > 0.05 and math.hypot(x - px, y - py) < 0.5 * want and self.replans < 50:
                self.replans += 1
                self.stats["replans"] = self.replans
                self._replan(here)
        while self.waypoints and math.dist(here, self.waypoints[0]) < 0.08:
            reached = self.waypoints.pop(0)
            if self.targets and math.dist(reached, self.targets[0]) < 1e-6:
                self.targets.pop(0)
        if not self.waypoints:
            return {"action": "terminate"}
        if self.dynamics is not None and not self.planner.segment_clear(here, self.waypoints[0]) and self.replans < 200:
            self.replans += 1  # e.g. after stepping aside for a pedestrian
            self.stats["replans"] = self.replans
            self._replan(here)
            if not self.waypoints:
                return {"action": "terminate"}
        w = self.waypoints[0]
        diff = wrap_deg(bearing_deg(here, w) - yaw)
        if diff > 180.0:
            diff -= 360.0
        if abs(diff) > 1e-6:
            return {"action": "look", "yaw": diff, "pitch": 0.0}
        d = math.dist(here, w)
        secs = min(2.0, max(0.05, d / 1.4))
        act = self._pedestrian_action(here, yaw, w, t, secs)
        if act["action"] == "move" and act["dir"] == "forward":
            self.expect = (x, y, 1.4 * act["seconds"])
        return act

    def _min_gap(self, here, delta, t0: float, secs: float, dwell_s: float = 1.0) -> float:
        """Least predicted distance to any pedestrian while moving by ``delta`` over ``secs`` from ``t0`` and then
        standing at the end for ``dwell_s`` (sampled every 0.05 s; ``inf`` without pedestrians)."""
        best = math.inf
        n = max(1, int(math.ceil((secs + dwell_s) / 0.05)))
        for k in range(n + 1):
            tt = t0 + (secs + dwell_s) * k / n
            f = min(1.0, (tt - t0) / secs) if secs > 0 else 1.0
            ax, ay = here[0] + f * delta[0], here[1] + f * delta[1]
            pts = np.asarray(self.dynamics.pedestrian_positions(tt), float).reshape(-1, 2)
            if len(pts):
                best = min(best, float(np.min(np.hypot(pts[:, 0] - ax, pts[:, 1] - ay))))
        return best

    def _pedestrian_action(self, here, yaw: float, w, t0: float, secs: float) -> dict[str, Any]:
        """The move towards ``w`` when it keeps ``0.5 + pedestrian_margin_m`` from every pedestrian (also shorter
        ones), else waiting (a ``look`` of yaw 0, 0.5 s) or a 2 s side/back step, whichever is safe first (else the
        one with the largest predicted gap); obstacles are respected (clear pieces only)."""
        if self.dynamics is None or not getattr(self.dynamics, "n_pedestrians", 0):
            return {"action": "move", "dir": "forward", "seconds": secs}
        d = math.dist(here, w)
        ux, uy = ((w[0] - here[0]) / d, (w[1] - here[1]) / d) if d > 0 else (0.0, 0.0)
        limit = 0.5 + self.pedestrian_margin_m
        cands: list[tuple[dict[str, Any], tuple[float, float], float]] = []
        for f in (1.0, 0.5, 0.25):
            sc = max(0.05, secs * f)
            cands.append(({"action": "move", "dir": "forward", "seconds": sc}, (ux * 1.4 * sc, uy * 1.4 * sc), sc))
        cands.append(({"action": "look", "yaw": 0.0, "pitch": 0.0}, (0.0, 0.0), 0.5))
        for dname, off in (("left", -90.0), ("right", 90.0), ("backward", 180.0)):
            a = math.radians(yaw + off)
            cands.append(({"action": "move", "dir": dname, "seconds": 2.0}, (2.8 * math.sin(a), 2.8 * math.cos(a)), 2.0))
        best, best_gap = None, -1.0
        for act, delta, dur in cands:
            end = (here[0] + delta[0], here[1] + delta[1])
            if delta != (0.0, 0.0) and not self.planner.segment_clear(here, end):
                continue
            gap = self._min_gap(here, delta, t0, dur)
            if gap >= limit:
                if act["action"] != "move" or act["dir"] != "forward":
                    self.stats["waits"] = self.stats.get("waits", 0) + 1
                return act
            if gap > best_gap:
                best, best_gap = act, gap
        self.stats["waits"] = self.stats.get("waits", 0) + 1
        return best or {"action": "look", "yaw": 0.0, "pitch": 0.0}

    # ------------------------------------------------------------ questions
    def _answer(self, here: tuple[float, float], yaw: float) -> str:
        ann = self.city.annotations
        opts = [str(o) for o in self.task.extra.get("options") or []]
        pois = [p for p in list(ann.pois) + list(ann.standalone_pois) if p.name]
        sub = self.task.category or ""
        if sub == "l1_orientation":
            name = self.task.extra.get("target_name")
            cand = [p for p in pois if p.name == name]
            if cand:
                p = min(cand, key=lambda p: math.dist(here, p.front_xy or (p.x_m, p.y_m)))
                rel = wrap_deg(bearing_deg(here, p.facade_xy or (p.x_m, p.y_m)) - yaw)
                word = ("ahead", "to the right", "behind", "to the left")[int(((rel + 45.0) % 360.0) // 90.0)]
                for i, o in enumerate(opts):
                    if o == word:
                        return LETTERS[i]
            return LETTERS[0]

        def dist_of(name: str) -> float:
            ds = [math.dist(here, p.facade_xy or (p.x_m, p.y_m)) for p in pois if p.name == name]
            return min(ds) if ds else math.inf

        i = min(range(len(opts)), key=lambda k: dist_of(opts[k])) if opts else 0
        return LETTERS[i]


class UrbanGroundRandom(Agent):
    """``ug-random`` (module docstring).

    Args:
        terminate_prob: per-step probability of ``terminate`` outside questions, in [0, 1].
    """

    name = "ug-random"
    action_style = "continuous"
    uses_images = False

    def __init__(self, terminate_prob: float = 1 / 150):
        if not 0.0 <= terminate_prob <= 1.0:
            raise ValueError("terminate_prob must lie in [0, 1]")
        super().__init__(terminate_prob=float(terminate_prob))
        self.terminate_prob = float(terminate_prob)

    def reset(self, task: Task, context: AgentContext) -> None:
        self.rng = context.rng
        self.kind = kind_of(task)
        self.n_options = len(task.extra.get("options") or LETTERS)

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        if self.kind == "choice":
            return {"action": "terminate", "answer": LETTERS[int(self.rng.integers(self.n_options))]}
        if self.rng.random() < self.terminate_prob:
            return {"action": "terminate"}
        if self.rng.random() < 0.7:
            return {"action": "move", "dir": "forward", "seconds": 2.0}
        return {"action": "look", "yaw": float(self.rng.uniform(-120.0, 120.0)), "pitch": 0.0}


class UrbanGroundStraight(Agent):
    """``ug-straight`` (ours; module docstring): on ``choice`` tasks the first option at once; elsewhere
    ``move forward`` 2 s every step, a ``look`` of +90 degrees after a move that covered less than 40 %
    of its 2.8 m (read from the text state's latitude and longitude), never ``terminate`` (the episode
    ends at the step limit). Reads no ground truth and no pixels; deterministic."""

    name = "ug-straight"
    action_style = "continuous"
    uses_images = False

    def reset(self, task: Task, context: AgentContext) -> None:
        self.kind = kind_of(task)
        self.city = context.city
        self.last: tuple[float, float] | None = None

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        if self.kind == "choice":
            return {"action": "terminate", "answer": LETTERS[0]}
        x, y, _, _ = _pose_from_obs(self.city, observation)
        last, self.last = self.last, (x, y)
        if last is not None and math.hypot(x - last[0], y - last[1]) < 0.4 * 2.8:
            self.last = None
            return {"action": "look", "yaw": 90.0, "pitch": 0.0}
        return {"action": "move", "dir": "forward", "seconds": 2.0}


__all__ = ["FreeSpacePlanner", "UrbanGroundOracle", "UrbanGroundRandom", "UrbanGroundStraight", "bearing_deg",
           "city_geometry"]
