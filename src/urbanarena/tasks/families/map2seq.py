"""map2seq (and Touchdown) route-following tasks on the Touchdown graph.

Source data (``--tasks map2seq:FILE``): JSON lines, plain or gzipped, one
route instruction per line with fields ``id`` (route id), ``instructions_id``,
``route_panoids`` (node ids of the route, start first), ``navigation_text``
and ``start_heading`` (degrees clockwise from north). Schumann & Riezler 2021,
"Generating Landmark Navigation Instructions from Maps as a Graph-to-Text
Problem" (map2seq) and 2022, "Analyzing Generalization of Vision and Language
Navigation to Unseen Outdoor Areas" (ORAR, code ``raphael-sch/map2seq_vln``).

Episode: start at ``route_panoids[0]`` facing ``start_heading``, goal
``route_panoids[-1]``, reference path ``route_panoids``. In every released
dev/test record the start heading is the heading of the route's first link (the
protocol gives the agent its initial orientation, as in map2seq/Touchdown).

Protocol and step budget: ``touchdown-v1`` (Touchdown's navigator, see
:mod:`urbanarena.env.motion.turn_hop`) by default; 55 actions, STOP included
(ORAR's ``--max_route_len 55``, the rollout loop of ``vln/agent.py``).

Metrics (:meth:`Map2seqFamily.score`), following map2seq's evaluation code
(``vln/env.py``, ``_eva_metrics``) where it defines them:

* ``tc`` — task completion: the stop node is the goal or a neighbour of the goal
  in the undirected graph of all links (map2seq: ``traj[-1] in
  nx.all_neighbors(G, goal) + [goal]`` with ``G`` an ``nx.Graph``).
* ``spd_hops`` — shortest-path distance from the stop node to the goal in hops
  on the undirected, unweighted graph (map2seq: ``nx.dijkstra_path_length`` on
  that ``nx.Graph`` without weights). ``spd_m`` — the same in metres
  (undirected, ``length_m``).
* ``sed`` — success-weighted edit distance over node sequences with
  consecutive repeats removed (map2seq's trajectory only grows when the node
  changes), with the optimal-string-alignment distance map2seq uses
  (``pyxdameraulevenshtein``): ``tc * (1 - osa(P, R) / max(|P|, |R|))``.
* ``ndtw``/``sdtw``/``dtw_m`` — Ilharco et al. 2019 over local-frame node
  positions (metres, repeats removed) with ``d_th = 25 m`` (our choice, the
  success radius of these tasks: about 2.5 links of the graph, whose median
  link is 10 m). Note: map2seq's own optional nDTW (``cal_dtw``) uses hop
  distances and ``exp(-DTW / (2 * sqrt(|R|)))``, not Ilharco's normalisation;
  we report the standard one. ``sdtw`` uses ``tc`` as success.
* ``tc_exact`` (stop node is the goal), ``goal_dist_m`` (geodesic metres from
  stop node to goal), ``tc_proximity_{40,50,60}m`` (``goal_dist_m`` within the
  radius), ``spl`` (Anderson et al. 2018 with success = ``tc``, lengths in
  metres along directed edges), ``avg_steps`` (actions taken, STOP included).
* ``tc_category`` and ``spd_cityseeker`` do not apply (``None``).

Corner cases (defined values, never NaN): an empty trajectory is read as the
agent standing at the start node (as the CitySeeker scorer does); goal
unreachable from the stop node -> ``spd_*`` None; start == goal -> SPL =
success; a one-node reference route -> nDTW against that single point; a task
without a usable goal -> every rate 0 and distances None.
"""

from __future__ import annotations

import json
import math
import weakref
from pathlib import Path
from typing import Any

import networkx as nx

from urbanarena.env.protocols import get_protocol
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.families.base import TaskFamily, Trajectory
from urbanarena.tasks.metrics import METRIC_KEYS
from urbanarena.tasks.metrics.dtw import dedup_consecutive, dtw_distance, sed
from urbanarena.tasks.metrics.navigation import spl, tc_exact, within_radius
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.city import City
from urbanarena.world.importers.touchdown import read_text_lines

#: nDTW/SDTW threshold and the success radius recorded in each task, metres
D_TH_M = 25.0
#: map2seq/ORAR evaluation step budget (``--max_route_len 55``)
MAX_STEPS = 55
LICENCE = "Apache-2.0"
_FIELDS = ("id", "instructions_id", "route_panoids", "navigation_text", "start_heading")


def split_name(path: str | Path) -> str:
    """Split name of a map2seq file: its name without ``.gz``/``.jsonl``/``.json``
    (``map2seq_seen_dev.jsonl.gz`` -> ``map2seq_seen_dev``)."""
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "map2seq"



def _undirected_distances(city: City, a: str, b: str) -> tuple[float | None, float | None]:
    """(hops, metres) between two nodes on the undirected graph of all links;
    ``(None, None)`` if disconnected. Point-to-point searches (bidirectional BFS
    and Dijkstra), so no whole-graph distance table is built per goal."""
    if a == b:
        return 0.0, 0.0
    und = city.graph.to_undirected(as_view=True)
    try:
        hops = float(nx.shortest_path_length(und, a, b))
        metres = float(nx.bidirectional_dijkstra(und, a, b, weight="length_m")[0])
    except nx.NetworkXNoPath:
        return None, None
    return hops, metres


def _directed_length_m(city: City, a: str, b: str) -> float:
    """Directed shortest-path length in metres (``length_m``), ``math.inf`` if unreachable."""
    if a == b:
        return 0.0
    try:
        return float(nx.bidirectional_dijkstra(city.graph, a, b, weight="length_m")[0])
    except nx.NetworkXNoPath:
        return math.inf


def _directed_path(city: City, a: str, b: str) -> list[str] | None:
    """A directed metric shortest path (node ids) or ``None``."""
    if a == b:
        return [a]
    try:
        return list(nx.bidirectional_dijkstra(city.graph, a, b, weight="length_m")[1])
    except nx.NetworkXNoPath:
        return None


def _walked_m(city: City, path: list[str]) -> float:
    """Metres walked along ``path``: edge ``length_m`` per hop (a hop between
    non-adjacent nodes counts its geodesic distance); repeats add 0."""
    total = 0.0
    g = city.graph
    for a, b in zip(path, path[1:]):
        if a == b:
            continue
        total += g.edges[a, b]["length_m"] if g.has_edge(a, b) else city.distance_m(a, b)
    return total


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class Map2seqFamily(TaskFamily):
    """map2seq route following (see module docstring)."""

    name = "map2seq"
    action_style = "turn"
    default_protocol = "touchdown-v1"
    default_max_steps = MAX_STEPS
    foreign_format = "map2seq"

    def __init__(self) -> None:
        self._memo: weakref.WeakKeyDictionary[City, dict[tuple[str, str], float]] = weakref.WeakKeyDictionary()

    # ---------------------------------------------------------------- import
    def load_foreign(self, path: Path, city: City) -> list[Task]:
        """Read a map2seq JSON-lines file (plain or ``.gz``) into tasks.

        ``task_id`` = ``<split>/<id>-<instructions_id>`` (split from the file
        name); ``success_radius_m`` = 25.

        Raises:
            TaskFormatError: naming the file and line: unreadable/truncated
                file, invalid JSON, a missing or mistyped field, an empty
                route, a panoid not in ``city``, consecutive route nodes not
                joined by a link, a non-finite start heading, a duplicate task
                id, or a file without records.
        """
        p = Path(path)
        split = split_name(p)
        ref = CityRef(name=city.name, content_hash=city.content_hash)
        tasks: list[Task] = []
        seen: dict[str, int] = {}
        for n, line in enumerate(read_text_lines(p, TaskFormatError), 1):
            if line.strip():
                tasks.append(self._record(p, n, line, split, city, ref, seen))
        if not tasks:
            raise TaskFormatError(p, "line 1", "empty file: no map2seq records")
        return tasks

    def _record(self, p: Path, n: int, line: str, split: str, city: City, ref: CityRef, seen: dict[str, int]) -> Task:
        rec = f"line {n}"
        try:
            d = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskFormatError(p, rec, f"invalid JSON: {e.msg} (column {e.colno})") from None
        except RecursionError:
            raise TaskFormatError(p, rec, "JSON nested too deeply") from None
        if not isinstance(d, dict):
            raise TaskFormatError(p, rec, "a record must be a JSON object")
        missing = [k for k in _FIELDS if k not in d]
        if missing:
            raise TaskFormatError(p, rec, f"missing field(s) {', '.join(missing)}")
        rid, iid = d["id"], d["instructions_id"]
        for k, v in (("id", rid), ("instructions_id", iid)):
            if not (_is_int(v) or (isinstance(v, str) and v)):
                raise TaskFormatError(p, rec, f"{k} must be an integer or a non-empty string, got {v!r}")
        route = d["route_panoids"]
        if not isinstance(route, list) or not route or not all(isinstance(x, str) and x for x in route):
            raise TaskFormatError(p, rec, "route_panoids must be a non-empty list of panorama ids")
        for k, node in enumerate(route):
            if node not in city:
                raise TaskFormatError(p, rec, f"route_panoids[{k}] {node!r} is not in city {city.name!r}")
        for k, (a, b) in enumerate(zip(route, route[1:])):
            if not city.graph.has_edge(a, b):
                raise TaskFormatError(p, rec, f"route_panoids[{k}] -> [{k + 1}] ({a!r} -> {b!r}) is not a link of the graph")
        text = d["navigation_text"]
        if not isinstance(text, str):
            raise TaskFormatError(p, rec, "navigation_text must be a string")
        h = d["start_heading"]
        if isinstance(h, bool) or not (isinstance(h, int) or (isinstance(h, float) and math.isfinite(h))):
            raise TaskFormatError(p, rec, f"start_heading must be a finite number of degrees, got {h!r}")
        if not 0 <= h <= 360:
            raise TaskFormatError(p, rec, f"start_heading {h!r} is outside [0, 360] degrees")
        task_id = f"{split}/{rid}-{iid}"
        if task_id in seen:
            raise TaskFormatError(p, rec, f"duplicate task id {task_id!r} (id {rid}, instructions_id {iid}; first on line {seen[task_id]})")
        seen[task_id] = n
        return Task(
            task_id=task_id,
            family=self.name,
            city=ref,
            start=Start(node=route[0], heading_deg=float(h)),
            goals=[Goal(node=route[-1])],
            success_radius_m=D_TH_M,
            instruction=text,
            reference_path=list(route),
            provenance={"source": "map2seq", "split": split, "file": p.name, "line": n, "licence": LICENCE},
            extra={"id": rid, "instructions_id": iid},
        )

    # ---------------------------------------------------------------- score
    def score(self, task: Task, city: City, protocol_id: str, traj: Trajectory) -> dict[str, float | None]:
        """Per-episode metrics keyed as :data:`~urbanarena.tasks.metrics.METRIC_KEYS`
        (rates 0/1; ``spl``, ``ndtw``, ``sdtw``, ``sed`` in [0, 1]).

        Let ``P`` be the trajectory's node path (an empty path is read as the
        agent standing at the start node), ``f`` its last node, ``g`` the goal
        and ``R`` the reference path (an empty one is replaced by a directed
        metric shortest path from the start to ``g``). Definitions and sources
        are in the module docstring. Every protocol is scored alike (a single
        goal; map2seq's code checks only the stop node).

        Corner cases: no usable path or goal -> every rate 0, distances None;
        ``g`` unreachable from ``f`` on the undirected graph -> ``spd_hops`` and
        ``spd_m`` None; start == goal -> SPL = success (zero shortest length);
        one-node reference -> nDTW against that point.

        Raises:
            ProtocolError: unknown ``protocol_id``.
        """
        get_protocol(protocol_id)
        out: dict[str, float | None] = {k: None for k in METRIC_KEYS}
        out["avg_steps"] = float(traj.steps)
        for k in ("tc", "tc_exact", "tc_proximity_40m", "tc_proximity_50m", "tc_proximity_60m", "spl", "ndtw", "sdtw", "sed"):
            out[k] = 0.0
        start = task.start.node
        goal = task.final_goal.node if task.final_goal is not None else None
        path = list(traj.path) if traj.path else ([start] if start is not None else [])
        if not path or goal is None or goal not in city:
            return out
        final = path[-1]
        d_th = float(task.success_radius_m or D_TH_M)
        graph = city.graph

        # TC, goal distance, SPD (map2seq: undirected nx.Graph of all links)
        tc = 1.0 if final == goal or graph.has_edge(final, goal) or graph.has_edge(goal, final) else 0.0
        gd = city.distance_m(final, goal)
        hops, metres = _undirected_distances(city, final, goal)
        out["tc"] = tc
        out["tc_exact"] = tc_exact(final, goal)
        out["goal_dist_m"] = gd
        for r in (40, 50, 60):
            out[f"tc_proximity_{r}m"] = within_radius(gd, float(r))
        out["spd_hops"] = hops
        out["spd_m"] = metres

        # reference path
        ref = list(task.reference_path)
        if not ref:
            src = start if start is not None and start in city else path[0]
            ref = _directed_path(city, src, goal) or [src, goal]

        p_nodes, r_nodes = dedup_consecutive(path), dedup_consecutive(ref)
        same = p_nodes == r_nodes  # then every distance below is 0 (a shortcut, same values)

        # SED with map2seq's edit distance (optimal string alignment), repeats removed
        out["sed"] = tc if same else sed(tc, p_nodes, r_nodes, transpositions=True)

        # SPL: success = TC, lengths in metres
        src = start if start is not None and start in city else path[0]
        shortest = self._shortest_m(city, src, goal)
        out["spl"] = spl(tc, shortest, _walked_m(city, path))

        # DTW family over local positions, repeats removed
        if same:
            d = 0.0
        else:
            d = dtw_distance([city.xy(n) for n in p_nodes], [city.xy(n) for n in r_nodes])
        out["dtw_m"] = d if math.isfinite(d) else None
        # nDTW = exp(-DTW / (|R| d_th)) (Ilharco et al. 2019, eq. 3; as dtw.ndtw, whose
        # DTW is computed once here); SDTW = S * nDTW (eq. 4)
        out["ndtw"] = math.exp(-d / (len(r_nodes) * d_th)) if math.isfinite(d) and r_nodes and d_th > 0 else 0.0
        out["sdtw"] = tc * out["ndtw"]
        return out

    def _shortest_m(self, city: City, a: str, b: str) -> float:
        """Directed shortest-path metres ``a -> b``, memoised per city (weakly)
        because every seed and agent of a task asks the same question."""
        memo = self._memo.get(city)
        if memo is None:
            memo = self._memo[city] = {}
        key = (a, b)
        if key not in memo:
            memo[key] = _directed_length_m(city, a, b)
        return memo[key]
