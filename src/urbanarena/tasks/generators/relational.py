"""Relational spatial reasoning: name the shop left/right of X, N doors away, or across the street.

Storefront rows. A named, facade-attached POI has a *storefront*: its facade
point (``facade_xy``) on a street-facing facade. Storefronts facing the same
street (``street_id``) on the same side (sign of ``lateral_m``) form a row,
ordered by their position along the street (``along_m``). Only named POIs
count as doors (unnamed ones carry no sign); a relation is dropped when an
unnamed POI of the row lies between X and the answer, or when two doors on the
way are closer than :data:`MIN_DOOR_GAP_M` along the street (their order could
flip with a metre of mapping error) or farther apart than :data:`MAX_DOOR_GAP_M`
(not next doors), or when the facade of X does not run
along the street (within 35 degrees).

Left and right are as seen facing X's storefront from the street (issue 4):
the viewer stands in front of the facade looking at it (against the facade's
outward normal); facades run counter-clockwise around their building, so the
viewer's right hand points along the facade's direction ``p0 -> p1``
(:class:`~urbanarena.world.annotations.Facade`). "k doors to the right" is the
k-th door of the row on the side where ``along_m`` changes in the direction of
that vector.

Across the street: the door of the opposite row of the same street whose
``along_m`` is nearest X's, within :data:`ACROSS_MAX_M`, and at least
:data:`ACROSS_MARGIN_M` nearer than the opposite row's next door.

Difficulty (by relation): ``easy`` — the adjacent door left/right; ``medium`` —
two or three doors away; ``hard`` — across the street. The start is a pose
node 10–60 m along the graph from X's node. Answer: the other POI's name.
360CityArena judges these answers with an LLM (``fuzzy_match``); our suites
score them with the deterministic ``name_match`` instead (the expected name
read in the answer, no nearby distractor name read: the up-to-four doors on
each side of X and the three nearest across the street, listed in
``extra.distractor_names``), so every run is judged the same way without a
judge model.
"""

from __future__ import annotations

import math
from collections import defaultdict

import networkx as nx

from urbanarena.tasks.generators.common import (
    Candidate,
    CandidatePool,
    FamilyUnavailable,
    GenContext,
    STOREFRONT_CATEGORIES,
    fold_name,
)
from urbanarena.world.annotations import POI

KIND = "relational"
MIN_DOOR_GAP_M = 2.0
MAX_DOOR_GAP_M = 30.0
FACADE_STREET_MAX_DEG = 35.0
ACROSS_MAX_M = 15.0
ACROSS_MARGIN_M = 6.0
START_BAND_M = (10.0, 60.0)
WORDS = {1: "immediately", 2: "two doors", 3: "three doors"}
INSTRUCTION = "Find {x} nearby and tell me the name of {relation}. {x} is close to where you start."


def relation_text(relation: str, k: int = 1) -> str:
    """Our wording of a relation: ``left``/``right`` with ``k`` doors, or ``across``."""
    if relation == "across":
        return "the shop or venue directly across the street from it"
    if k == 1:
        return f"the shop or venue immediately to its {relation}, as seen facing its storefront from the street"
    return (f"the shop or venue {WORDS[k]} to its {relation} (counting named storefronts), as seen facing its "
            "storefront from the street")


def storefront_rows(ctx: GenContext) -> dict[tuple[str, int], list[POI]]:
    """Rows ``(street_id, side)`` -> POIs ordered by ``along_m`` (side +1: right of the street's
    direction, -1: left); every attached POI with a facade point and a street position."""
    rows: dict[tuple[str, int], list[POI]] = defaultdict(list)
    for p in ctx.ann.pois:
        if p.facade_xy is None or p.street_id is None or p.along_m is None or p.lateral_m is None:
            continue
        if p.lateral_m == 0:
            continue
        rows[(p.street_id, 1 if p.lateral_m > 0 else -1)].append(p)
    return {k: sorted(v, key=lambda p: (p.along_m, p.id)) for k, v in rows.items()}


def right_along_sign(ctx: GenContext, poi: POI) -> int | None:
    """+1 when the viewer's right (facing the storefront) points to increasing ``along_m``, -1 when to
    decreasing; ``None`` when the facade does not run along the street."""
    ann = ctx.ann
    f = ann.facade(poi.facade_id)
    L = f.length_m
    if L <= 0:
        return None
    fx, fy = (f.p1[0] - f.p0[0]) / L, (f.p1[1] - f.p0[1]) / L  # viewer's right
    st = ann.street(poi.street_id)
    line = st.line()
    a0 = line.interpolate(max(0.0, poi.along_m - 1.0))
    a1 = line.interpolate(min(line.length, poi.along_m + 1.0))
    tx, ty = a1.x - a0.x, a1.y - a0.y
    tl = math.hypot(tx, ty)
    if tl == 0:
        return None
    cos = (fx * tx + fy * ty) / tl
    if abs(cos) < math.cos(math.radians(FACADE_STREET_MAX_DEG)):
        return None
    return 1 if cos > 0 else -1


def _eligible(p: POI) -> bool:
    return bool(p.name) and p.category in STOREFRONT_CATEGORIES


def neighbour(row: list[POI], i: int, step: int, k: int) -> POI | None:
    """The ``k``-th named door from ``row[i]`` in direction ``step`` (+1 increasing along), or ``None``
    when the row ends, an unnamed POI lies on the way, or two doors on the way are too close."""
    prev = row[i]
    found = 0
    j = i + step
    while 0 <= j < len(row):
        q = row[j]
        gap = abs(q.along_m - prev.along_m)
        if gap < MIN_DOOR_GAP_M or gap > MAX_DOOR_GAP_M:
            return None
        if not _eligible(q):
            return None
        found += 1
        if found == k:
            # the answer must also be clear of the next door beyond it
            nxt = j + step
            if 0 <= nxt < len(row) and abs(row[nxt].along_m - q.along_m) < MIN_DOOR_GAP_M:
                return None
            return q
        prev = q
        j += step
    return None


def across(rows: dict[tuple[str, int], list[POI]], x: POI, side: int) -> POI | None:
    """The door across the street from ``x`` (module docstring), or ``None``."""
    other = [p for p in rows.get((x.street_id, -side), []) if p.name]
    if not other:
        return None
    ranked = sorted(other, key=lambda p: (abs(p.along_m - x.along_m), p.id))
    best = ranked[0]
    if abs(best.along_m - x.along_m) > ACROSS_MAX_M or not _eligible(best):
        return None
    unnamed = [p for p in rows.get((x.street_id, -side), []) if not p.name]
    if any(abs(p.along_m - x.along_m) < abs(best.along_m - x.along_m) + ACROSS_MARGIN_M for p in unnamed):
        return None
    if len(ranked) > 1 and abs(ranked[1].along_m - x.along_m) - abs(best.along_m - x.along_m) < ACROSS_MARGIN_M:
        return None
    return best


def generate(ctx: GenContext, wanted: dict[str, int]) -> CandidatePool:
    """Relational candidates (module docstring)."""
    pool = CandidatePool(KIND)
    ann = ctx.ann
    if ann is None:
        raise FamilyUnavailable(KIND, "the city has no annotations (POIs on facades)")
    counts: dict[str, int] = defaultdict(int)
    for p in list(ann.pois) + list(ann.standalone_pois):
        if p.name:
            counts[fold_name(p.name)] += 1
    rows = storefront_rows(ctx)
    rev = ctx.city.graph.reverse(copy=False)
    for (sid, side), row in sorted(rows.items()):
        for i, x in enumerate(row):
            if not _eligible(x) or counts[fold_name(x.name)] != 1 or x.node_id not in ctx.city or x.facade_id is None:
                continue
            right = right_along_sign(ctx, x)
            if right is None:
                pool.reject("facade not along its street")
                continue
            rels: list[tuple[str, str, int, POI]] = []
            for rel, step in (("right", right), ("left", -right)):
                for k in (1, 2, 3):
                    y = neighbour(row, i, step, k)
                    if y is not None:
                        rels.append(("easy" if k == 1 else "medium", rel, k, y))
            y = across(rows, x, side)
            if y is not None:
                rels.append(("hard", "across", 1, y))
            if not rels:
                pool.reject("no unambiguous neighbour")
                continue
            dist = nx.single_source_dijkstra_path_length(rev, x.node_id, cutoff=START_BAND_M[1], weight="length_m")
            starts = sorted(n for n, d in dist.items() if START_BAND_M[0] <= d <= START_BAND_M[1] and ctx.in_area(n))
            if not starts:
                pool.reject("no start node 10-60 m away")
                continue
            # names a guesser would list: the doors around X on its row and across the street
            near = row[max(0, i - 4): i + 5] + sorted(rows.get((x.street_id, -side), []),
                                                      key=lambda p: (abs(p.along_m - x.along_m), p.id))[:3]
            for diff, rel, k, y in rels:
                if counts[fold_name(y.name)] != 1 or fold_name(y.name) == fold_name(x.name):
                    pool.reject("answer name not unique")
                    continue
                s = starts[int(ctx.rng.integers(len(starts)))]
                text = relation_text(rel, k)
                pool.add(Candidate(
                    kind=KIND, difficulty=diff, key=f"{x.id}|{rel}|{k}", group=x.id,
                    stats={"doors": float(k), "start_distance_m": float(dist[s])},
                    fields=dict(family="cityarena", city=ctx.city_ref, start=ctx.start(s, ctx.random_heading(s)),
                                instruction=INSTRUCTION.format(x=x.name, relation=text), answer=y.name,
                                answer_metric="name_match", difficulty=diff,
                                category="across" if rel == "across" else f"{k}_door_{rel}",
                                extra={"task_kind": KIND, "landmark": x.name, "poi_id": x.id, "answer_poi_id": y.id,
                                       "relation": rel, "doors": k, "relation_text": text,
                                       "distractor_names": sorted({p.name for p in near if p is not None and p.name
                                                                   and p.id not in (x.id, y.id)
                                                                   and fold_name(p.name) != fold_name(y.name)}),
                                       "requires_current_location": False})))
    if pool.total() == 0:
        raise FamilyUnavailable(KIND, "no named storefront with an unambiguous neighbour (left/right or across "
                                      "the street) in this area")
    return pool
