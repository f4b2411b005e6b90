"""CitySeeker tasks (``--tasks cityseeker:FILE``) and their scorer.

Tasks come from a CitySeeker ``question.json`` (validated by
:func:`urbanarena.world.importers.cityseeker_read.read_questions`):

* ``task_id`` = ``"<city>/<question_idx>"`` (``idx`` repeats across
  categories, ``question_idx`` does not).
* ``category``: the release's ``question1``..``question9`` (no ``question3``)
  named by :data:`CATEGORY_NAMES`; ``difficulty`` as given.
* start: the ``from`` node facing its **panorama heading** — the data has no
  start heading, and the first route edge would leak the route.
* goals: one-stop tasks have one goal (``to``, labelled with the target type =
  ``folder``). Two-stop tasks (``question2``, ``folder`` ``"X and Y"``) have two
  goals, ``stage1_route.to`` and ``stage2_route.to``, each labelled with the
  one-stop target type of its stage: the stage's Chinese ``service`` field is
  mapped by :data:`SERVICE_TARGET_TYPES` (e.g. 医院诊所 -> "healthcare
  facility", the one-stop type of the folder word "clinic"); an unknown service
  falls back to the folder's word.
* ``reference_path`` = the ``complete_route`` file names;
  ``reference_stages`` = the two stage routes; ``success_radius_m`` = 50
  (CitySeeker's success radius).
* TC-C category nodes: the release ships no POI list, so the nodes where a
  target type "can be found" are taken as the goal nodes of every task (or
  stage) of the same target type in the same file. This is a **lower bound**
  of the true category set (a real POI of that type at an unused node is not
  counted), so TC-C here can only under-estimate; TC-E <= TC-C holds by
  construction.

Scoring (:meth:`CitySeekerFamily.score`) returns every key of
:data:`urbanarena.tasks.metrics.METRIC_KEYS`; see its docstring.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from urbanarena.env.protocols import get_protocol
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.families.base import TaskFamily, Trajectory
from urbanarena.tasks.metrics import METRIC_KEYS
from urbanarena.tasks.metrics.dtw import dedup_consecutive, dtw_distance, ndtw, sdtw
from urbanarena.tasks.metrics.navigation import spl, tc_exact, within_radius
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from urbanarena.world.city import City
from urbanarena.world.geo import WGS84_GEOD
from urbanarena.world.importers.cityseeker import LICENCE, question_routes, read_questions

#: CitySeeker category id -> our category name
CATEGORY_NAMES: dict[str, str] = {
    "question1": "basic_poi",
    "question2": "two_stop",
    "question4": "brand_specific",
    "question5": "transport_hub",
    "question6": "latent_poi",
    "question7": "implicit_need",
    "question8": "accessible_entrance",
    "question9": "semantic_preference",
}

#: two-stop stage ``service`` (Chinese POI class in the release) -> one-stop target type
SERVICE_TARGET_TYPES: dict[str, str] = {
    "便利店": "convenience store",
    "银行": "bank",
    "购物中心": "shopping mall",
    "医院诊所": "healthcare facility",
    "餐饮服务": "restaurant",
    "酒店住宿": "hotel",
}

SUCCESS_RADIUS_M = 50.0
PROXIMITY_RADII_M = (40.0, 50.0, 60.0)


def _stage_target_types(q: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(target types, folder words) of a question's goals, one per goal."""
    if q["category"] != "question2":
        return [q["folder"]], [q["folder"]]
    words = q["folder"].split(" and ")
    if len(words) != 2:
        words = [q["folder"], q["folder"]]
    types = []
    for j, k in enumerate(("stage1_route", "stage2_route")):
        service = q[k].get("service")
        types.append(SERVICE_TARGET_TYPES.get(service, words[j]) if isinstance(service, str) else words[j])
    return types, words



class CitySeekerFamily(TaskFamily):
    """CitySeeker navigation to a (described) place; heading-choice actions.

    Defaults follow the paper: protocol ``cityseeker-v1``, 35 steps.
    """

    name = "cityseeker"
    action_style = "heading"
    default_protocol = "cityseeker-v1"
    default_max_steps = 35
    foreign_format = "cityseeker"

    # ------------------------------------------------------------- importing
    def load_foreign(self, path: Path, city: City) -> list[Task]:
        """Tasks of a CitySeeker ``question.json`` in ``city``.

        Args:
            path: the question file or the city directory holding it.
            city: the imported city (node ids = panorama file names).
        Returns:
            One :class:`Task` per question, in file order (see module docstring).
        Raises:
            TaskFormatError: malformed file (see ``read_questions``), or a
                question naming a node that is not in ``city`` (message names
                the file and ``question <i> (question_idx <q>)``).
        """
        p = Path(path)
        if p.is_dir():
            p = p / "question.json"
        questions = read_questions(p)
        for i, q in enumerate(questions):
            rec = f"question {i} (question_idx {q['question_idx']})"
            for route in question_routes(q):
                for j, e in enumerate(route):
                    if e["filename"] not in city:
                        raise TaskFormatError(p, rec, f"unknown node {e['filename']!r} (route entry {j}) in city {city.name!r}")
            for k in ("from", "to"):
                if q[k] not in city:
                    raise TaskFormatError(p, rec, f"unknown node {q[k]!r} in field {k!r} (city {city.name!r})")

        # TC-C category nodes: goal nodes of every task/stage of the same target type (file order)
        category_nodes: dict[str, list[str]] = {}
        per_q = []
        for q in questions:
            types, words = _stage_target_types(q)
            goals = [q["to"]] if q["category"] != "question2" else [q["stage1_route"]["to"], q["stage2_route"]["to"]]
            per_q.append((types, words, goals))
            for t, g in zip(types, goals):
                lst = category_nodes.setdefault(t, [])
                if g not in lst:
                    lst.append(g)

        ref = CityRef(name=city.name, content_hash=city.content_hash)
        tasks = []
        for q, (types, words, goals) in zip(questions, per_q):
            two = q["category"] == "question2"
            start = q["from"]
            heading = city.node(start).get("heading_deg")
            extra: dict[str, Any] = {
                "cityseeker_category": q["category"],
                "folder": q["folder"],
                "target_types": types,
                "total_weight_mercator": q.get("total_weight"),
                "total_steps": q.get("total_steps"),
            }
            if two:
                extra["stage_words"] = words
                extra["stage_services"] = [q["stage1_route"].get("service"), q["stage2_route"].get("service")]
            tasks.append(Task(
                task_id=f"{city.name}/{q['question_idx']}",
                family=self.name,
                city=ref,
                start=Start(node=start, heading_deg=heading),
                goals=[Goal(node=g, label=t, category_nodes=list(category_nodes[t])) for g, t in zip(goals, types)],
                success_radius_m=SUCCESS_RADIUS_M,
                instruction=q["question"],
                reference_path=[e["filename"] for e in q["complete_route"]],
                reference_stages=([[e["filename"] for e in q[k]["route"]] for k in ("stage1_route", "stage2_route")]
                                  if two else None),
                difficulty=q["difficulty"],
                category=CATEGORY_NAMES[q["category"]],
                privileged=False,
                provenance={"source": "CitySeeker", "file": str(p), "question_idx": q["question_idx"], "idx": q["idx"],
                            "city": q.get("city"), "licence": LICENCE},
                extra=extra,
            ))
        return tasks

    # ---------------------------------------------------------------- scoring
    def score(self, task: Task, city: City, protocol_id: str, traj: Trajectory) -> dict[str, float | None]:
        """Per-episode CitySeeker metrics (rates 0/1; ``spl``/``ndtw``/``sdtw`` in [0, 1]).

        Let ``P`` be the trajectory's node path (an empty path is read as the
        agent standing at the start node), ``f`` its final node, ``g`` the
        final goal, ``r`` the success radius (50 m) and ``d(a, b)`` the WGS84
        geodesic distance.

        * ``tc_exact``: ``f == g`` (TC-E). ``tc_proximity_{40,50,60}m``:
          ``d(f, g) <= 40/50/60 m`` (TC-P). ``tc_category``: ``f`` is a category
          node of the final goal's target type (TC-C; see module docstring).
        * Two-stop tasks under protocols with ``per_stage_scoring``
          (``urbanarena-graph-v1``): each criterion must first hold for the
          stage-1 goal at some node of ``P`` (exact node for TC-E, within the
          radius for TC-P, a stage-1 category node for TC-C) and then for the
          stage-2 goal at ``f`` (the earliest qualifying visit is used, so any
          order-respecting visit counts). Under ``cityseeker-v1`` only ``f`` is
          checked, as in CitySeeker's code.
        * ``spl``: Anderson et al. 2018 with success = TC-P at ``r`` (per stage
          where applicable), ``l`` = graph shortest path in metres from the
          start to ``g`` (per-stage protocols: the sum over the legs start ->
          goal 1 -> goal 2), ``p`` = metres walked along ``P`` (edge
          ``length_m``; a jump between non-adjacent nodes counts its
          straight-line distance).
        * ``goal_dist_m`` = ``d(f, g)`` (the paper's "SPD");
          ``spd_cityseeker`` = the same distance in Web Mercator units
          (:meth:`City.mercator_distance`), the unit of CitySeeker's data;
          ``spd_m`` = graph shortest-path metres from ``f`` to ``g``, ``None``
          when ``g`` cannot be reached from ``f`` along directed edges.
        * ``ndtw``/``sdtw`` (Ilharco et al. 2019) with ``d_th = r`` over local
          metric positions (:meth:`City.xy`) of ``P`` and of the reference
          path, consecutive repeated nodes removed; ``sdtw`` uses the success
          above. ``dtw_m`` is the raw DTW cost in metres (CitySeeker's
          published "nDTW" exceeds 100, so it is not standard nDTW; both are
          reported). An empty reference path is replaced by the shortest path
          through the goals (or ``[start, goals...]`` if unreachable).
        * ``avg_steps`` = ``traj.steps`` (actions taken, STOP included).
        * ``tc``, ``spd_hops``, ``sed`` (map2seq metrics) are ``None``.

        Corner cases give defined values: start == goal (``l = 0``: SPL = S),
        unreachable goal (SPL 0, ``spd_m`` None), no goal or no start node
        (rates 0, distances None).

        Raises:
            ProtocolError: unknown ``protocol_id``.
        """
        proto = get_protocol(protocol_id)
        out: dict[str, float | None] = {k: None for k in METRIC_KEYS}
        out["avg_steps"] = float(traj.steps)
        radius = float(task.success_radius_m if task.success_radius_m is not None else SUCCESS_RADIUS_M)
        start = task.start.node
        path = list(traj.path) if traj.path else ([start] if start is not None else [])
        goals = [g for g in task.goals if g.node is not None]
        if not path or not goals or any(g.node not in city for g in goals):
            for k in ("tc_exact", "tc_proximity_40m", "tc_proximity_50m", "tc_proximity_60m", "tc_category",
                      "spl", "ndtw", "sdtw"):
                out[k] = 0.0
            return out
        if start is None or start not in city:
            start = path[0]
        final = path[-1]
        per_stage = proto.per_stage_scoring and len(goals) > 1
        stage_goals = goals if per_stage else goals[-1:]

        # geodesic distance of every path node to every judged goal (vectorised)
        lats = np.array([city.node(n)["lat"] for n in path])
        lons = np.array([city.node(n)["lon"] for n in path])
        dists = []
        for g in stage_goals:
            glat, glon = city.latlon(g.node)
            _, _, d = WGS84_GEOD.inv(lons, lats, np.full_like(lons, glon), np.full_like(lats, glat))
            d = np.where(np.array(path) == g.node, 0.0, np.asarray(d, dtype=float))
            dists.append(d)

        def staged(ok) -> float:
            """1.0 if ok(stage j, path index i) holds for stage 1.. in order, last stage at the final node."""
            i0 = 0
            for j in range(len(stage_goals) - 1):
                hit = next((i for i in range(i0, len(path)) if ok(j, i)), None)
                if hit is None:
                    return 0.0
                i0 = hit
            return 1.0 if ok(len(stage_goals) - 1, len(path) - 1) else 0.0

        last = len(stage_goals) - 1
        out["tc_exact"] = staged(lambda j, i: tc_exact(path[i], stage_goals[j].node) == 1.0)
        for r in PROXIMITY_RADII_M:
            out[f"tc_proximity_{r:.0f}m"] = staged(lambda j, i, r=r: within_radius(float(dists[j][i]), r) == 1.0)
        cats = [set(g.category_nodes) if g.category_nodes else {g.node} for g in stage_goals]
        out["tc_category"] = staged(lambda j, i: path[i] in cats[j])
        success = staged(lambda j, i: within_radius(float(dists[j][i]), radius) == 1.0)

        # SPL
        legs = list(zip([start] + [g.node for g in stage_goals[:-1]], [g.node for g in stage_goals]))
        shortest_m = sum(city.shortest_path_length_m(a, b) if a != b else 0.0 for a, b in legs)
        out["spl"] = spl(success, shortest_m, self._walked_m(city, path))

        # distances to the final goal
        g_final = stage_goals[last].node
        out["goal_dist_m"] = float(dists[last][-1])
        out["spd_cityseeker"] = city.mercator_distance(final, g_final) if final != g_final else 0.0
        spd = city.shortest_path_length_m(final, g_final) if final != g_final else 0.0
        out["spd_m"] = float(spd) if math.isfinite(spd) else None

        # DTW family
        ref_nodes = dedup_consecutive([n for n in task.reference_path if n in city])
        if not ref_nodes:
            ref_nodes = self._fallback_reference(city, start, [g.node for g in goals])
        q_xy = np.array([city.xy(n) for n in dedup_consecutive(path)], dtype=float)
        r_xy = np.array([city.xy(n) for n in ref_nodes], dtype=float)
        out["dtw_m"] = dtw_distance(q_xy, r_xy)
        out["ndtw"] = ndtw(q_xy, r_xy, radius)
        out["sdtw"] = sdtw(success, q_xy, r_xy, radius)
        return out

    @staticmethod
    def _walked_m(city: City, path: list[str]) -> float:
        total = 0.0
        for a, b in zip(path, path[1:]):
            if a == b:
                continue
            e = city.graph.get_edge_data(a, b)
            total += e["length_m"] if e is not None else city.distance_m(a, b)
        return total

    @staticmethod
    def _fallback_reference(city: City, start: str, goals: list[str]) -> list[str]:
        nodes = [start]
        for g in goals:
            leg = city.shortest_path(nodes[-1], g)
            if leg is None:
                return dedup_consecutive([start, *goals])
            nodes.extend(leg[1:])
        return dedup_consecutive(nodes)
