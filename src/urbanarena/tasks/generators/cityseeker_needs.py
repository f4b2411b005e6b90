"""Generated CitySeeker-style implicit-need tasks for any OSM city (``tasks generate --suite cityseeker``).

CitySeeker (its seven one-stop question types plus two-stop tasks) asks an
agent to turn an implicit need ("I'm thirsty") into a place and walk there.
This module makes such tasks from a city's own annotations (an OSM import:
POIs with their raw OSM tags and the pose node in front of them, street
objects such as bus stops and subway entrances), so the suite runs on every
rendered OSM city with exact ground truth. Docs: ``docs/cityseeker-generation.md``.

Need mapping
------------
A JSON file (default :data:`DEFAULT_MAPPING`, ``data/needs_v1.json``; users
pass their own) lists *needs*. Each need has an ``id``, one of the seven
one-stop :data:`CATEGORIES` (the names of
:data:`urbanarena.tasks.families.cityseeker.CATEGORY_NAMES`, so summaries of
generated and imported CitySeeker tasks line up: ``implicit_need`` is the
paper's "abstract demand", ``accessible_entrance`` its "inclusive
infrastructure"), a ``label`` (the target type, stored as the goal label),
``instructions`` (several wordings; one is drawn per task), optional
``errands`` (short phrases; a need with errands can be a stage of a two-stop
task) and ``match``: clauses, **any** of which makes a place satisfy the need.
A clause holds

* ``tags``: ``{key: value | [values] | "*"}``, **all** must hold. A POI tag
  value is split at ``;`` (OSM's multi-value separator) and compared case-
  insensitively with the listed values; ``"*"`` means the key is present with
  a value other than ``no``;
* ``name``: a regular expression (Python :mod:`re`, case-insensitive,
  ``re.search``) matched against the ``name``, ``name:en`` and ``brand`` tags;
* ``object_type``: the clause matches street objects of that type
  (:data:`urbanarena.world.annotations.OBJECT_TYPES`, e.g. ``bus_stop``,
  ``subway_entrance``; only those inside the import bbox) instead of POIs.

Places and distances
--------------------
A *place* is a POI (facade-attached or standalone) or a street object with a
pose node (``node_id``) no more than :data:`MAX_NODE_DISTANCE_M` from it (a
POI's node is the one nearest its front point). A need's *goal nodes* are the
nodes of its places. Graph distances are shortest-path metres along directed
edges (``length_m``; Dijkstra, :func:`scipy.sparse.csgraph.dijkstra`, run
from the goal nodes on the reversed graph in batches, within ``25 x`` the
longest edge + :data:`AMBIGUITY_GAP_M`, beyond which no route of at most 24
steps can lie). A route's *steps* are the hops of that metric-shortest path:
the moves a heading-choice agent makes (STOP not counted).

One-stop task of need ``N`` from start ``s``: the goal is the goal node of
``N`` nearest to ``s``; TC-C counts **every** goal node of ``N``
(``Goal.category_nodes``). A start is used only when

* ``s`` is not itself a goal node of ``N``;
* the nearest goal node is unique: the second nearest is at least
  :data:`AMBIGUITY_GAP_M` farther (else "nearest" is ambiguous);
* the route has :data:`MIN_ROUTE_STEPS` to :data:`MAX_ROUTE_STEPS` steps.

Difficulty by route steps as CitySeeker: easy 3-10, medium 11-18, hard 19-24
(:data:`DIFFICULTY_STEPS`; with the 5-step minimum easy is 5-10).

Two-stop task "X then Y" (category ``two_stop``): stage 1 goes from ``s`` to
the nearest goal node ``g1`` of X, stage 2 from ``g1`` to the nearest goal
node ``g2`` of Y (each unique as above, each at least
:data:`MIN_STAGE_STEPS` steps); ``s`` is no goal node of X or Y, ``g1`` no
goal node of Y; the total steps lie in 5-24 and set the difficulty.
``reference_stages`` holds the two stage routes, ``reference_path`` their
concatenation, each goal its own ``category_nodes``; the foundation's
scorer judges it (per stage under ``urbanarena-graph-v1``, final node only
under ``cityseeker-v1``). The instruction fills a template of the mapping
(``two_stop_templates``, ``{first}``/``{second}``) with an errand of each need.

Selection and determinism
-------------------------
Per category ``per_category`` tasks, split over easy/medium/hard as evenly as
possible, the remainder to the bands starting at the category's index mod 3
(:func:`~urbanarena.tasks.generators.needs_rules.category_split`: a suite of
one or two tasks per category still has hard tasks); where a band has too few
candidates the other bands fill in and the report states the shortfall.
Needs (two-stop: need pairs) take turns in a seeded order, so each category
spreads over its needs; within a need the least-used goal and unused start
nodes are preferred. Category ``k`` (its index in :data:`ALL_CATEGORIES`)
draws from ``numpy.random.default_rng([seed, k])``: the same city, mapping,
seed and options give a byte-identical file. A category (or need) whose
needs no place satisfies, or with no start in range, is reported with the
reason instead of producing degenerate tasks.

Verification: the tasks layer cannot import agents, so the graph oracle comes
in as ``verify(task) -> [{"protocol", "solved", "steps", "status", ...}]``
(``urbanarena.cli.tasks_cmd.GraphOracleVerifier``: the oracle through the
runner's env under ``cityseeker-v1`` and ``urbanarena-graph-v1``, 35 steps);
tasks it cannot solve are replaced and counted in the report.

Tasks are family ``cityseeker``: the suite's default protocol is that
family's, ``cityseeker-v1`` (CitySeeker's rule, 35 steps); on OSM cities
every edge is takeable under it (the walkable headings are the edge
azimuths), so both protocols can reach every goal. Suite name (ours):
``<city>-needs7-v1``.

Modules: the rules are in :mod:`.needs_rules`, the mapping file in :mod:`.needs_mapping`, places and routes in
:mod:`.needs_routes`, candidates and selection in :mod:`.needs_selection`; this module generates and saves the
suite and re-exports their names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from urbanarena.tasks.families.cityseeker import SUCCESS_RADIUS_M, CitySeekerFamily
from urbanarena.tasks.generators.common import DIFFICULTIES, split_counts
from urbanarena.tasks.generators.splits import check_split
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg
# re-exported: the rules, the needs mapping file, places and routes, and candidate selection were defined here
from urbanarena.tasks.generators.needs_rules import (  # noqa: F401
    ALL_CATEGORIES, AMBIGUITY_GAP_M, CATEGORIES, DEFAULT_MAPPING, DEFAULT_MAX_STEPS, DEFAULT_PER_CATEGORY,
    DIFFICULTY_STEPS, GENERATOR_VERSION, MAPPING_FORMAT, MAPPING_VERSION, MAX_NODE_DISTANCE_M, MAX_ROUTE_STEPS,
    MIN_ROUTE_STEPS, MIN_STAGE_STEPS, NO_ROUTE, SUITE_VERSION, TWO_STOP, VERIFY_PROTOCOLS, Verifier, category_split,
    default_mapping_path, difficulty_of, needs_suite_name,
)
from urbanarena.tasks.generators.needs_mapping import (  # noqa: F401
    Clause, Need, NeedMapping, _ClauseModel, _MappingModel, _NeedModel, _Strict, _nonempty, _template, load_needs,
)
from urbanarena.tasks.generators.needs_routes import (  # noqa: F401
    NeedRoute, Place, _Graph, _NeedTable, _need_table, need_route, satisfying_places,
)
from urbanarena.tasks.generators.needs_selection import (  # noqa: F401
    _Candidate, _DIFF_CODE, _Pool, _one_stop, _reject, _select, _two_stop,
)


# --------------------------------------------------------------------------- suite
@dataclass
class NeedsSuiteResult:
    """A generated need suite: its name, the task file and the report (JSON-able)."""

    name: str
    task_file: TaskFile
    report: dict[str, Any] = field(default_factory=dict)


def generate_needs_suite(city: City, *, per_category: int = DEFAULT_PER_CATEGORY, seed: int = 0,
                         mapping: NeedMapping | str | Path | None = None, name: str | None = None,
                         split: str | None = None, categories: Sequence[str] = ALL_CATEGORIES,
                         verify: Verifier | None = None, verify_protocols: Sequence[str] = (),
                         max_steps: int = DEFAULT_MAX_STEPS) -> NeedsSuiteResult:
    """Generate the CitySeeker-style need suite of ``city`` (module docstring).

    Args:
        city: an OSM city (with annotations).
        per_category: tasks per category (each of :data:`ALL_CATEGORIES` asked for).
        seed: the suite's seed (same city + mapping + seed + arguments = same file).
        mapping: a :class:`NeedMapping` or a mapping file path (default: the built-in one).
        name: suite name (default :func:`needs_suite_name`).
        split: ``train``/``val``/``test``: refused unless the city is that split's area.
        categories: the categories to generate (subset of :data:`ALL_CATEGORIES`).
        verify: ``task -> [{"protocol", "solved", ...}]`` (the graph oracle); a task counts as
            verified when every entry is solved. Without it tasks are not verified
            (``report["verified"]`` false).
        verify_protocols: the protocols ``verify`` runs (for the report).
        max_steps: the step limit ``verify`` uses (for the report; default 35).
    Returns: a :class:`NeedsSuiteResult`; tasks are ordered by category (as listed), then
        difficulty; ids ``<suite>/<category>/<nnn>``.
    Raises:
        ValueError: ``per_category`` < 1 or an unknown category.
        TaskFormatError: a bad mapping file.
        SplitError: the city is not the requested split's area.
        UrbanArenaError: the city has no annotations.
    """
    if per_category < 1:
        raise ValueError("per_category must be at least 1")
    bad = [c for c in categories if c not in ALL_CATEGORIES]
    if bad:
        raise ValueError(f"unknown categories {bad}; known: {', '.join(ALL_CATEGORIES)}")
    check_split(city, split)
    if not isinstance(mapping, NeedMapping):
        mapping = load_needs(mapping)
    name = name or needs_suite_name(city.name)
    if getattr(city, "annotations", None) is None:
        satisfying_places(city, mapping.needs[0])  # raises the no-annotations error
    g = _Graph(city)
    tables = {n.id: _need_table(g, n) for n in mapping.needs}
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    report: dict[str, Any] = {
        "suite": name, "city": {"name": city.name, "content_hash": city.content_hash}, "seed": seed,
        "split": split, "per_category": per_category, "generator_version": GENERATOR_VERSION,
        "mapping": {"file": mapping.source, "sha256": mapping.sha256, "needs": len(mapping.needs)},
        "family": CitySeekerFamily.name, "default_protocol": CitySeekerFamily.default_protocol,
        "max_steps": int(max_steps), "verified": verify is not None, "protocols": list(verify_protocols),
        "route_steps": [MIN_ROUTE_STEPS, MAX_ROUTE_STEPS], "difficulty_steps": {k: list(v) for k, v in DIFFICULTY_STEPS.items()},
        "categories": {},
        "coverage": {"needs": len(mapping.needs),
                     "with_places": sorted(n.id for n in mapping.needs if tables[n.id].places),
                     "without_places": sorted(n.id for n in mapping.needs if not tables[n.id].places)},
    }
    verif: dict[tuple[str, int], list[dict[str, Any]]] = {}
    tasks: list[Task] = []
    for cat in categories:
        k = ALL_CATEGORIES.index(cat)
        rng = np.random.default_rng([seed, k])
        wanted = category_split(per_category, k)
        crep: dict[str, Any] = {"requested": per_category, "wanted": wanted, "produced": 0, "unavailable": None, "needs": {}}
        report["categories"][cat] = crep
        groups: dict[str, _Pool] = {}
        rejected: dict[str, int] = {}
        if cat == TWO_STOP:
            errand_needs = [n for n in mapping.needs if n.errands and len(tables[n.id].targets)]
            crep["needs"] = {"with_errands_and_places": [n.id for n in errand_needs]}
            for a in errand_needs:
                for b in errand_needs:
                    if a.id == b.id:
                        continue
                    pool, rej = _two_stop(tables[a.id], tables[b.id])
                    for r, c in rej.items():
                        _reject(rejected, r, c)
                    if pool is not None:
                        groups[pool.group] = pool
            crep["pairs_with_candidates"] = len(groups)
            if len(errand_needs) < 2:
                crep["unavailable"] = ("fewer than two needs with errands have a place in this area "
                                       f"({', '.join(n.id for n in errand_needs) or 'none'})")
            elif not groups:
                crep["unavailable"] = (f"no start has both stages with a unique nearest goal and a total route of "
                                       f"{MIN_ROUTE_STEPS}-{MAX_ROUTE_STEPS} steps")
        else:
            needs = mapping.by_category(cat)
            for n in needs:
                tab = tables[n.id]
                nrep: dict[str, Any] = {"places": len(tab.places), "goal_nodes": int(len(tab.targets)),
                                        "places_without_node": tab.missing, "unavailable": None}
                if not tab.places:
                    nrep["unavailable"] = "no POI or street object in this area matches the need's clauses"
                else:
                    pool, rej = _one_stop(tab)
                    nrep["candidates"] = {d: (pool.count(d) if pool is not None else 0) for d in DIFFICULTIES}
                    nrep["rejected"] = dict(sorted(rej.items()))
                    if pool is not None:
                        groups[n.id] = pool
                    else:
                        nrep["unavailable"] = (f"no start node has a unique nearest goal {MIN_ROUTE_STEPS}-"
                                               f"{MAX_ROUTE_STEPS} steps away (most rejected: "
                                               f"{max(rej, key=rej.get) if rej else '-'})")
                crep["needs"][n.id] = nrep
            if not needs:
                crep["unavailable"] = "the mapping has no need of this category"
            elif not any(t.places for t in (tables[n.id] for n in needs)):
                crep["unavailable"] = ("no POI or street object in this area satisfies any of its needs ("
                                       + ", ".join(n.id for n in needs) + ")")
            elif not groups:
                crep["unavailable"] = (f"places exist, but no start node has a unique nearest one "
                                       f"{MIN_ROUTE_STEPS}-{MAX_ROUTE_STEPS} steps away")
        crep["candidates"] = {d: sum(p.count(d) for p in groups.values()) for d in DIFFICULTIES}
        if rejected:
            crep["rejected"] = dict(sorted(rejected.items()))
        failures: dict[str, int] = {}

        # the verify build must not consume the category's stream: verify on a throw-away copy
        vrng = np.random.default_rng([seed, k, 1])

        def _verify(c: _Candidate) -> bool:
            if verify is None:
                return True
            res = verify(_build_task(c, "verify", cat, g, tables, mapping, vrng, ref))
            if all(r.get("solved") for r in res):
                verif[c.key] = res
                return True
            for r in res:
                if not r.get("solved"):
                    lab = f"{r.get('protocol')}: {r.get('status')}"
                    failures[lab] = failures.get(lab, 0) + 1
            return False

        chosen, shortfall = _select(groups, wanted, rng, _verify)
        crep["verification_failures"] = dict(sorted(failures.items()))
        if shortfall and not crep["unavailable"]:
            crep["shortfall"] = {d: {"missing": m, "reason": f"only {crep['candidates'][d]} {d} candidates "
                                     f"({DIFFICULTY_STEPS[d][0]}-{DIFFICULTY_STEPS[d][1]} steps) pass the checks "
                                     "in this area; the other bands fill in"}
                                 for d, m in shortfall.items()}
        by_d: dict[str, int] = {d: 0 for d in DIFFICULTIES}
        for i, c in enumerate(chosen, start=1):
            t = _build_task(c, f"{name}/{cat}/{i:03d}", cat, g, tables, mapping, rng, ref)
            t.provenance = {"generator": "urbanarena.tasks.generators.cityseeker_needs",
                            "generator_version": GENERATOR_VERSION, "suite": name, "seed": seed, "split": split,
                            "mapping": mapping.source, "mapping_sha256": mapping.sha256,
                            "licence": city.meta.licence, "attribution": city.meta.attribution,
                            "source": _source(city)}
            if c.key in verif:
                t.extra["oracle"] = verif[c.key]
            tasks.append(t)
            by_d[c.difficulty] += 1
        crep["produced"] = len(chosen)
        crep["by_difficulty"] = by_d
        crep["groups_used"] = len({c.group for c in chosen})
    tf = TaskFile(city=ref, tasks=tasks)
    return NeedsSuiteResult(name, tf, report)


def _source(city: City) -> dict[str, Any]:
    src = city.meta.source or {}
    return {k: src[k] for k in ("kind", "files", "sha256", "bbox") if k in src}


def _build_task(c: _Candidate, task_id: str, cat: str, g: _Graph, tables: dict[str, _NeedTable],
                mapping: NeedMapping, rng: np.random.Generator, ref: CityRef) -> Task:
    city = g.city
    needs = [tables[n].need for n in c.needs]
    stages: list[list[str]] = []
    at = c.start
    for n, goal in zip(c.needs, c.goals):
        tab = tables[n]
        route = tab.route(at)
        assert route[-1] == goal
        stages.append([g.nodes[i] for i in route])
        at = goal
    if len(needs) == 1:
        need = needs[0]
        instruction = need.instructions[int(rng.integers(len(need.instructions)))]
    else:
        tpl = mapping.two_stop_templates[int(rng.integers(len(mapping.two_stop_templates)))]
        e1 = needs[0].errands[int(rng.integers(len(needs[0].errands)))]
        e2 = needs[1].errands[int(rng.integers(len(needs[1].errands)))]
        instruction = tpl.format(first=e1, second=e2)
    goals = []
    goal_places = []
    for n, goal in zip(c.needs, c.goals):
        tab = tables[n]
        gid = g.nodes[goal]
        goals.append(Goal(node=gid, label=tab.need.label,
                          category_nodes=sorted({p.node for p in tab.places})))
        goal_places.append([p.to_json() for p in tab.places if p.node == gid])
    path = stages[0] + [x for s in stages[1:] for x in s[1:]]
    s_node = g.nodes[c.start]
    heading = wrap_deg(float(city.node(s_node).get("heading_deg") or 0.0))
    return Task(
        task_id=task_id, family=CitySeekerFamily.name, city=ref,
        start=Start(node=s_node, heading_deg=round(heading, 6)),
        goals=goals, success_radius_m=SUCCESS_RADIUS_M, instruction=instruction,
        reference_path=path, reference_stages=stages if len(stages) > 1 else None,
        difficulty=c.difficulty, category=cat, privileged=False,
        extra={
            "generator": "cityseeker_needs",
            "needs": list(c.needs),
            "need_categories": [n.category for n in needs],
            "target_types": [n.label for n in needs],
            "route_steps": c.steps,
            "stage_steps": list(c.stage_hops),
            "route_length_m": round(float(city.path_length_m(path)), 3),
            "goal_places": goal_places,
            "satisfying_places": [len(tables[n].places) for n in c.needs],
        },
    )


def save_needs_suite(result: NeedsSuiteResult, out: str | Path) -> Path:
    """Write the task file to ``out`` and the report to ``<out stem>.report.json``; returns ``out``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result.task_file.save(out)
    rep = out.with_name((out.name[: -len(out.suffix)] if out.suffix else out.name) + ".report.json")
    rep.write_text(json.dumps(result.report, indent=1, sort_keys=True), encoding="utf-8")
    return out


__all__ = [
    "ALL_CATEGORIES", "AMBIGUITY_GAP_M", "CATEGORIES", "Clause", "DIFFICULTY_STEPS", "MAX_NODE_DISTANCE_M",
    "MAX_ROUTE_STEPS", "MIN_ROUTE_STEPS", "MIN_STAGE_STEPS", "Need", "NeedMapping", "NeedRoute", "NeedsSuiteResult",
    "Place", "TWO_STOP", "VERIFY_PROTOCOLS", "default_mapping_path", "difficulty_of", "generate_needs_suite",
    "load_needs", "need_route", "needs_suite_name", "satisfying_places", "save_needs_suite",
]
