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
possible (remainder to easy, then medium); where a band has too few
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
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, Sequence

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from urbanarena.errors import TaskFormatError, UrbanArenaError
from urbanarena.tasks.families.cityseeker import SUCCESS_RADIUS_M, CitySeekerFamily
from urbanarena.tasks.generators.common import DIFFICULTIES, split_counts
from urbanarena.tasks.generators.splits import check_split
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile
from urbanarena.world.annotations import OBJECT_TYPES
from urbanarena.world.city import City
from urbanarena.world.geo import wrap_deg

GENERATOR_VERSION = 1
SUITE_VERSION = 1
MAPPING_FORMAT = "urbanarena-needs"
MAPPING_VERSION = 1
#: CitySeeker's seven one-stop categories (names as the cityseeker family's CATEGORY_NAMES)
CATEGORIES = ("basic_poi", "brand_specific", "transport_hub", "latent_poi", "implicit_need",
              "accessible_entrance", "semantic_preference")
TWO_STOP = "two_stop"
ALL_CATEGORIES = CATEGORIES + (TWO_STOP,)
#: route steps (hops) of a task, inclusive
MIN_ROUTE_STEPS = 5
MAX_ROUTE_STEPS = 24
#: each stage of a two-stop task has at least this many steps
MIN_STAGE_STEPS = 2
#: CitySeeker's difficulty bands by route steps, inclusive
DIFFICULTY_STEPS: dict[str, tuple[int, int]] = {"easy": (3, 10), "medium": (11, 18), "hard": (19, 24)}
#: the second-nearest goal node must be this much farther (graph metres) for the nearest to be the goal
AMBIGUITY_GAP_M = 5.0
#: a place counts only when its pose node is this close (metres)
MAX_NODE_DISTANCE_M = 15.0
#: step limit and protocols the oracle verifies every task under (the cityseeker family's limit)
DEFAULT_MAX_STEPS = CitySeekerFamily.default_max_steps
VERIFY_PROTOCOLS = ("cityseeker-v1", "urbanarena-graph-v1")
DEFAULT_PER_CATEGORY = 10
NO_ROUTE = f"no goal node within the search limit ({MAX_ROUTE_STEPS + 1} of the longest edges)"
DEFAULT_MAPPING = "needs_v1.json"

Verifier = Callable[[Task], list[dict[str, Any]]]


def default_mapping_path() -> Path:
    """Path of the built-in need mapping (``urbanarena/tasks/generators/data/needs_v1.json``)."""
    return Path(str(resources.files("urbanarena.tasks.generators") / "data" / DEFAULT_MAPPING))


def needs_suite_name(city_name: str, version: int = SUITE_VERSION) -> str:
    """Our suite name: ``<city>-needs7-v<version>``."""
    return f"{city_name}-needs7-v{version}"


def difficulty_of(steps: int) -> str | None:
    """CitySeeker difficulty of a route of ``steps`` hops (:data:`DIFFICULTY_STEPS`), ``None`` outside."""
    for d, (lo, hi) in DIFFICULTY_STEPS.items():
        if lo <= steps <= hi:
            return d
    return None


# --------------------------------------------------------------------------- mapping file
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _nonempty(v: str) -> str:
    if not v.strip():
        raise ValueError("must not be empty")
    return v


class _ClauseModel(_Strict):
    tags: dict[str, str | list[str]] = Field(default_factory=dict)
    name: str | None = None
    object_type: str | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        for k, val in v.items():
            if not k.strip():
                raise ValueError("empty tag key")
            vals = [val] if isinstance(val, str) else val
            if not vals or any(not isinstance(x, str) or not x.strip() for x in vals):
                raise ValueError(f"tag {k!r}: values must be non-empty strings")
        return v

    @field_validator("name")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"invalid regular expression {v!r}: {e}") from None
        return v

    @field_validator("object_type")
    @classmethod
    def _otype(cls, v: str | None) -> str | None:
        if v is not None and v not in OBJECT_TYPES:
            raise ValueError(f"unknown object_type {v!r}; one of {', '.join(OBJECT_TYPES)}")
        return v

    @model_validator(mode="after")
    def _something(self):
        if not self.tags and self.name is None and self.object_type is None:
            raise ValueError("a clause needs tags, name or object_type")
        return self


class _NeedModel(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_]{0,63}$")
    category: Literal["basic_poi", "brand_specific", "transport_hub", "latent_poi", "implicit_need",
                      "accessible_entrance", "semantic_preference"]
    label: str
    instructions: list[str] = Field(min_length=1)
    errands: list[str] = Field(default_factory=list)
    match: list[_ClauseModel] = Field(min_length=1)

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        return _nonempty(v)

    @field_validator("instructions", "errands")
    @classmethod
    def _texts(cls, v: list[str]) -> list[str]:
        for s in v:
            _nonempty(s)
        return v


def _template(t: str) -> str:
    try:
        filled = t.format(first="A", second="B")
    except (KeyError, IndexError, ValueError) as e:
        raise ValueError(f"template {t!r}: only {{first}} and {{second}} may be used ({e})") from None
    if "{first}" not in t or "{second}" not in t or not filled.strip():
        raise ValueError(f"template {t!r} must contain {{first}} and {{second}}")
    return t


class _MappingModel(_Strict):
    format: Literal["urbanarena-needs"]
    version: Literal[1]
    description: str = ""
    two_stop_templates: list[Annotated[str, AfterValidator(_template)]] = Field(default_factory=list)
    needs: list[_NeedModel] = Field(min_length=1)


@dataclass(frozen=True)
class Clause:
    """One ``match`` clause (module docstring): all ``tags`` hold, ``name`` matches, and the place is a
    street object of ``object_type`` (or a POI when ``object_type`` is ``None``)."""

    tags: tuple[tuple[str, frozenset[str] | None], ...]  # None = "*"
    name: re.Pattern[str] | None
    object_type: str | None

    def matches(self, tags: dict[str, str], object_type: str | None) -> bool:
        """Whether a place with these raw OSM tags (``object_type`` ``None`` for a POI) satisfies the clause."""
        if object_type != self.object_type:
            return False
        for k, allowed in self.tags:
            v = tags.get(k)
            if v is None:
                return False
            parts = {p.strip().casefold() for p in str(v).split(";") if p.strip()}
            if allowed is None:
                if not parts or parts == {"no"}:
                    return False
            elif not (parts & allowed):
                return False
        if self.name is not None:
            names = [tags.get(k) for k in ("name", "name:en", "brand")]
            if not any(n and self.name.search(n) for n in names):
                return False
        return True


@dataclass(frozen=True)
class Need:
    """A need of the mapping (module docstring)."""

    id: str
    category: str
    label: str
    instructions: tuple[str, ...]
    errands: tuple[str, ...]
    clauses: tuple[Clause, ...]

    def matches(self, tags: dict[str, str], object_type: str | None = None) -> bool:
        """Any clause matches (``object_type`` ``None``: the place is a POI)."""
        return any(c.matches(tags, object_type) for c in self.clauses)


@dataclass(frozen=True)
class NeedMapping:
    """A loaded need mapping: the needs in file order, the two-stop templates, the file name and sha256."""

    needs: tuple[Need, ...]
    two_stop_templates: tuple[str, ...]
    source: str
    sha256: str

    def by_category(self, category: str) -> list[Need]:
        return [n for n in self.needs if n.category == category]


def load_needs(path: str | Path | None = None) -> NeedMapping:
    """Read and validate a need mapping (default: the built-in :func:`default_mapping_path`).

    Returns: a :class:`NeedMapping` (``source`` = the file name, ``sha256`` of its bytes).
    Raises:
        TaskFormatError: missing or unreadable file, invalid JSON, or a record
            that breaks the format (message names the file and the record,
            e.g. ``needs[3] (id 'thirsty') field match.0.object_type``):
            unknown or missing fields, an unknown category or object type, an
            invalid regular expression, empty instructions, a duplicate need
            id, a two-stop template without ``{first}``/``{second}``, or
            ``two_stop_templates`` missing while a need has errands.
    """
    p = Path(path) if path is not None else default_mapping_path()
    try:
        data = p.read_bytes()
    except FileNotFoundError as e:
        raise TaskFormatError(p, None, "need mapping file not found") from e
    except OSError as e:
        raise TaskFormatError(p, None, f"cannot read need mapping: {e}") from e
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TaskFormatError(p, None, f"not UTF-8 text: {e}") from e
    except json.JSONDecodeError as e:
        raise TaskFormatError(p, f"line {e.lineno}", f"invalid JSON: {e.msg}") from e
    if not isinstance(raw, dict):
        raise TaskFormatError(p, None, "expected a JSON object with format, version, needs")
    if raw.get("format") != MAPPING_FORMAT:
        raise TaskFormatError(p, "format", f"not a need mapping (expected format {MAPPING_FORMAT!r})")
    try:
        m = _MappingModel.model_validate(raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err.get("loc", ()))
        record = ".".join(str(x) for x in loc) or None
        if len(loc) >= 2 and loc[0] == "needs" and isinstance(loc[1], int):
            i = loc[1]
            nid = None
            try:
                nid = raw["needs"][i].get("id")
            except Exception:  # noqa: BLE001 - the record itself may be malformed
                pass
            record = f"needs[{i}]" + (f" (id {nid!r})" if nid else "")
            if len(loc) > 2:
                record += " field " + ".".join(str(x) for x in loc[2:])
        elif len(loc) >= 2 and loc[0] == "two_stop_templates":
            record = f"two_stop_templates[{loc[1]}]"
        raise TaskFormatError(p, record, err.get("msg", str(e))) from e
    seen: dict[str, int] = {}
    for i, n in enumerate(m.needs):
        if n.id in seen:
            raise TaskFormatError(p, f"needs[{i}] (id {n.id!r})", f"duplicate need id (first at needs[{seen[n.id]}])")
        seen[n.id] = i
    if any(n.errands for n in m.needs) and not m.two_stop_templates:
        raise TaskFormatError(p, "two_stop_templates", "needs have errands but no two-stop template is given")
    needs = []
    for n in m.needs:
        clauses = []
        for c in n.match:
            tags = tuple(
                (k, None if v == "*" else frozenset(x.strip().casefold() for x in ([v] if isinstance(v, str) else v)))
                for k, v in sorted(c.tags.items()))
            clauses.append(Clause(tags, re.compile(c.name, re.IGNORECASE) if c.name is not None else None,
                                  c.object_type))
        needs.append(Need(n.id, n.category, n.label.strip(), tuple(n.instructions), tuple(n.errands), tuple(clauses)))
    return NeedMapping(tuple(needs), tuple(m.two_stop_templates), p.name, hashlib.sha256(data).hexdigest())


# --------------------------------------------------------------------------- places
@dataclass(frozen=True)
class Place:
    """A POI or street object that satisfies a need: ``kind`` ``"poi"`` or the object type, its
    annotation ``id``, ``name``, pose ``node`` and OSM ``kind`` value (POIs) for reports."""

    kind: str
    id: str
    name: str | None
    node: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "name": self.name, "detail": self.detail}


def satisfying_places(city: City, need: Need) -> tuple[list[Place], int]:
    """Places of ``city`` that satisfy ``need`` and their count left out for lack of a pose node.

    Returns: ``(places sorted by id, n_without_node)``; a place without ``node_id``, with a node not in
    the graph or farther than :data:`MAX_NODE_DISTANCE_M` is left out; street objects outside the
    import bbox (``in_core`` false) are never considered.
    Raises:
        UrbanArenaError: the city has no annotations (not an OSM import).
    """
    ann = getattr(city, "annotations", None)
    if ann is None:
        raise UrbanArenaError(f"city {city.name!r} has no POI annotations: generated need tasks need an OSM city "
                              "(urbanarena city import osm:FILE)")
    out: list[Place] = []
    missing = 0

    def usable(node, dist) -> bool:
        return node is not None and node in city and (dist is None or dist <= MAX_NODE_DISTANCE_M)

    for poi in list(ann.pois) + list(ann.standalone_pois):
        if need.matches(poi.tags, None):
            if usable(poi.node_id, poi.node_distance_m):
                out.append(Place("poi", poi.id, poi.name, poi.node_id, f"{poi.category}={poi.kind}"))
            else:
                missing += 1
    for o in ann.objects:
        if o.in_core and need.matches(o.tags, o.type):
            if usable(o.node_id, o.node_distance_m):
                out.append(Place(o.type, o.id, o.name, o.node_id, None))
            else:
                missing += 1
    return sorted(out, key=lambda p: p.id), missing


# --------------------------------------------------------------------------- distances
class _Graph:
    """The city graph as a sparse matrix (nodes sorted by id) for Dijkstra towards goal nodes.

    ``limit_m``: the search radius, ``(MAX_ROUTE_STEPS + 1) x`` the longest edge plus
    :data:`AMBIGUITY_GAP_M`: any route of at most ``MAX_ROUTE_STEPS + 1`` hops is shorter, and
    the second-nearest goal matters only within the gap, so the limit changes no decision.
    """

    #: target rows per Dijkstra batch are capped so a batch holds at most this many entries
    BATCH_ENTRIES = 4_000_000

    def __init__(self, city: City):
        from scipy.sparse import csr_matrix

        self.city = city
        self.nodes = sorted(city.graph.nodes)
        self.index = {n: i for i, n in enumerate(self.nodes)}
        rows, cols, w = [], [], []
        for u, v, d in city.graph.edges(data=True):
            if u == v:
                continue
            rows.append(self.index[u])
            cols.append(self.index[v])
            w.append(float(d["length_m"]))
        n = len(self.nodes)
        # reversed graph: Dijkstra from a goal over it gives every node's distance *to* that goal
        self.rev = csr_matrix((np.array(w, dtype=float), (np.array(cols, dtype=np.int64), np.array(rows, dtype=np.int64))),
                              shape=(n, n))
        self.limit_m = (MAX_ROUTE_STEPS + 1) * (max(w) if w else 0.0) + AMBIGUITY_GAP_M


@dataclass
class _NeedTable:
    """Per node, the nearest goal node of one need and the route to it (indices into ``_Graph.nodes``)."""

    need: Need
    places: list[Place]
    missing: int
    targets: np.ndarray  # goal node indices, sorted
    is_target: np.ndarray  # (N,) bool
    nearest: np.ndarray  # (N,) goal node index, -1 if none within the search limit
    dist: np.ndarray  # (N,) metres to nearest (inf if none)
    gap_ok: np.ndarray  # (N,) bool: second nearest at least AMBIGUITY_GAP_M farther
    hops: np.ndarray  # (N,) hops of the route to the nearest (-1 if none or longer than the cap)
    next: np.ndarray  # (N,) next node on the route to the nearest goal (-1 at goals / none)

    def route(self, v: int) -> list[int]:
        """Node indices from ``v`` along the metric-shortest path to a goal node (its nearest one;
        for a start with an ambiguous nearest, whichever the tie-break reaches)."""
        path = [v]
        while not self.is_target[path[-1]] and self.next[path[-1]] >= 0 and len(path) <= len(self.next):
            path.append(int(self.next[path[-1]]))
        return path


def _need_table(g: _Graph, need: Need) -> _NeedTable:
    """Dijkstra from the need's goal nodes (batches of targets) keeping, per node, the nearest goal,
    its distance, the second-nearest distance and the next hop towards the nearest."""
    from scipy.sparse.csgraph import dijkstra

    places, missing = satisfying_places(g.city, need)
    n = len(g.nodes)
    targets = np.array(sorted({g.index[p.node] for p in places}), dtype=np.int64)
    is_target = np.zeros(n, dtype=bool)
    is_target[targets] = True
    d0 = np.full(n, np.inf)
    d1 = np.full(n, np.inf)
    nearest = np.full(n, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    cols = np.arange(n)
    batch = max(1, g.BATCH_ENTRIES // max(n, 1))
    for k in range(0, len(targets), batch):
        tb = targets[k:k + batch]
        dist, pred = dijkstra(g.rev, directed=True, indices=tb, return_predecessors=True, limit=g.limit_m)
        dist = np.atleast_2d(dist)
        pred = np.atleast_2d(pred)
        j = np.argmin(dist, axis=0)  # first (lowest node index) among equals
        bd = dist[j, cols]
        if len(tb) > 1:
            second = np.partition(dist, 1, axis=0)[1]
        else:
            second = np.full(n, np.inf)
        better = bd < d0  # strict: earlier batches (lower indices) win ties
        d1 = np.where(better, np.minimum(d0, second), np.minimum(d1, bd))
        d0 = np.where(better, bd, d0)
        nearest = np.where(better, tb[j], nearest)
        nxt = np.where(better, pred[j, cols], nxt)
    nxt = np.where(nxt < 0, -1, nxt)
    reach = nearest >= 0
    gap_ok = reach & (np.isinf(d1) | (d1 - np.where(reach, d0, 0.0) >= AMBIGUITY_GAP_M))
    # hops along the next-hop chains (all nodes at once), capped: longer routes are never used
    cap = MAX_ROUTE_STEPS + 1
    cur = np.arange(n)
    hops = np.where(reach, 0, -1).astype(np.int64)
    live = reach & ~is_target
    for _ in range(cap):
        if not live.any():
            break
        cur = np.where(live, nxt[cur], cur)
        hops = np.where(live, hops + 1, hops)
        live = live & (cur >= 0) & ~is_target[np.maximum(cur, 0)]
    hops[live] = -1
    return _NeedTable(need, places, missing, targets, is_target, nearest, d0, gap_ok, hops, nxt)


@dataclass(frozen=True)
class NeedRoute:
    """Where a need leads from one start node (:func:`need_route`).

    Attributes:
        start: the start node.
        goal: the nearest goal node (``None`` when no goal node can be reached).
        distance_m: graph metres to it (``inf`` when none).
        steps: hops of the metric-shortest route (``-1`` when none, or longer than
            ``MAX_ROUTE_STEPS + 1``).
        route: node ids from ``start`` to ``goal`` (empty when none).
        usable: a one-stop task may start here (module docstring rules).
        reason: why not, when not usable.
    """

    start: str
    goal: str | None
    distance_m: float
    steps: int
    route: tuple[str, ...]
    usable: bool
    reason: str | None


def need_route(city: City, need: Need, start: str) -> NeedRoute:
    """The goal a one-stop task of ``need`` from ``start`` would have, and whether it may be used.

    Raises:
        KeyError: ``start`` is not a node of ``city``.
        UrbanArenaError: the city has no annotations.
    """
    g = _Graph(city)
    tab = _need_table(g, need)
    v = g.index[start]
    if tab.nearest[v] < 0:
        return NeedRoute(start, None, math.inf, -1, (), False, NO_ROUTE)
    route = tuple(g.nodes[i] for i in tab.route(v))
    steps = int(tab.hops[v])
    reason = None
    if tab.is_target[v]:
        reason = "start is a goal node"
    elif not tab.gap_ok[v]:
        reason = f"nearest goal ambiguous (second within {AMBIGUITY_GAP_M:g} m)"
    elif 0 <= steps < MIN_ROUTE_STEPS:
        reason = f"route under {MIN_ROUTE_STEPS} steps"
    elif steps < 0 or steps > MAX_ROUTE_STEPS:
        reason = f"route over {MAX_ROUTE_STEPS} steps"
    return NeedRoute(start, g.nodes[int(tab.nearest[v])], float(tab.dist[v]), steps, route, reason is None, reason)


# --------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class _Candidate:
    group: str  # need id, or "A+B" for two-stop
    needs: tuple[str, ...]
    start: int
    goals: tuple[int, ...]
    stage_hops: tuple[int, ...]
    difficulty: str

    @property
    def key(self) -> tuple[str, int]:
        return (self.group, self.start)

    @property
    def steps(self) -> int:
        return int(sum(self.stage_hops))


_DIFF_CODE = {d: i for i, d in enumerate(DIFFICULTIES)}


@dataclass
class _Pool:
    """The candidates of one group (a need, or an ordered need pair) as arrays over start nodes."""

    group: str
    needs: tuple[str, ...]
    starts: np.ndarray  # (M,) start node indices, ascending
    goals: np.ndarray  # (M, k) goal node index per stage
    hops: np.ndarray  # (M, k) route steps per stage
    used: np.ndarray = None  # (M,) bool

    def __post_init__(self):
        total = self.hops.sum(axis=1)
        self.diff = np.array([_DIFF_CODE.get(difficulty_of(int(h)) or "", -1) for h in total], dtype=np.int64)
        if self.used is None:
            self.used = np.zeros(len(self.starts), dtype=bool)

    def count(self, d: str) -> int:
        return int((self.diff == _DIFF_CODE[d]).sum())

    def candidate(self, i: int) -> _Candidate:
        return _Candidate(self.group, self.needs, int(self.starts[i]), tuple(int(x) for x in self.goals[i]),
                          tuple(int(x) for x in self.hops[i]), DIFFICULTIES[int(self.diff[i])])


def _reject(rej: dict[str, int], reason: str, n: int) -> None:
    if n:
        rej[reason] = rej.get(reason, 0) + int(n)


def _one_stop(tab: _NeedTable) -> tuple[_Pool | None, dict[str, int]]:
    rej: dict[str, int] = {}
    reach = tab.nearest >= 0
    _reject(rej, NO_ROUTE, int((~reach).sum()))
    _reject(rej, "start is a goal node", int(tab.is_target.sum()))
    live = reach & ~tab.is_target
    _reject(rej, f"nearest goal ambiguous (second within {AMBIGUITY_GAP_M:g} m)", int((live & ~tab.gap_ok).sum()))
    live &= tab.gap_ok
    short = live & (tab.hops >= 0) & (tab.hops < MIN_ROUTE_STEPS)
    long_ = live & ((tab.hops < 0) | (tab.hops > MAX_ROUTE_STEPS))
    _reject(rej, f"route under {MIN_ROUTE_STEPS} steps", int(short.sum()))
    _reject(rej, f"route over {MAX_ROUTE_STEPS} steps", int(long_.sum()))
    v = np.nonzero(live & ~short & ~long_)[0]
    if not len(v):
        return None, rej
    return _Pool(tab.need.id, (tab.need.id,), v, tab.nearest[v][:, None], tab.hops[v][:, None]), rej


def _two_stop(a: _NeedTable, b: _NeedTable) -> tuple[_Pool | None, dict[str, int]]:
    rej: dict[str, int] = {}
    s_ok = (a.nearest >= 0) & ~a.is_target & a.gap_ok & (a.hops >= MIN_STAGE_STEPS)
    _reject(rej, f"stage 1: no unique nearest goal at least {MIN_STAGE_STEPS} steps away", int((~s_ok).sum()))
    _reject(rej, "start is a stage-2 goal node", int((s_ok & b.is_target).sum()))
    s_ok &= ~b.is_target
    g1 = np.where(s_ok, a.nearest, 0)
    st2 = (b.nearest[g1] >= 0) & ~b.is_target[g1] & b.gap_ok[g1] & (b.hops[g1] >= MIN_STAGE_STEPS)
    _reject(rej, f"stage 2: first goal is a stage-2 place, or no unique nearest goal at least {MIN_STAGE_STEPS} "
                 "steps away", int((s_ok & ~st2).sum()))
    ok = s_ok & st2
    total = np.where(ok, a.hops + b.hops[g1], -1)
    out_range = ok & ((total < MIN_ROUTE_STEPS) | (total > MAX_ROUTE_STEPS))
    _reject(rej, f"total route outside {MIN_ROUTE_STEPS}-{MAX_ROUTE_STEPS} steps", int(out_range.sum()))
    v = np.nonzero(ok & ~out_range)[0]
    if not len(v):
        return None, rej
    goals = np.stack([g1[v], b.nearest[g1[v]]], axis=1)
    hops = np.stack([a.hops[v], b.hops[g1[v]]], axis=1)
    return _Pool(f"{a.need.id}+{b.need.id}", (a.need.id, b.need.id), v, goals, hops), rej


# --------------------------------------------------------------------------- selection
def _select(pools: dict[str, _Pool], wanted: dict[str, int], rng: np.random.Generator,
            verify_one: Callable[[_Candidate], bool]) -> tuple[list[_Candidate], dict[str, int]]:
    """Round-robin over the groups (seeded order) per difficulty, then fill the total from the other
    bands; each pick prefers the least-used goal of its group and a start unused in the category,
    random among equals; candidates that fail ``verify_one`` are dropped and replaced.
    Returns (chosen, shortfall per difficulty before filling)."""
    order = sorted(pools)
    order = [order[i] for i in rng.permutation(len(order))] if order else []
    used_starts = np.zeros(0, dtype=np.int64)
    goal_use: dict[tuple[str, tuple[int, ...]], int] = {}
    chosen: list[_Candidate] = []
    turn = 0

    def pick(codes: Sequence[int]) -> _Candidate | None:
        nonlocal turn
        for _ in range(len(order)):
            pool = pools[order[turn % len(order)]]
            turn += 1
            while True:
                idx = np.nonzero(np.isin(pool.diff, codes) & ~pool.used)[0]
                if not len(idx):
                    break
                g_use = np.array([goal_use.get((pool.group, tuple(int(x) for x in pool.goals[i])), 0) for i in idx])
                s_use = np.isin(pool.starts[idx], used_starts).astype(np.int64)
                score = g_use * 2 + s_use
                top = idx[score == score.min()]
                i = int(top[int(rng.integers(len(top)))])
                pool.used[i] = True
                c = pool.candidate(i)
                if verify_one(c):
                    return c
        return None

    def take(c: _Candidate) -> None:
        nonlocal used_starts
        chosen.append(c)
        used_starts = np.append(used_starts, c.start)
        goal_use[(c.group, c.goals)] = goal_use.get((c.group, c.goals), 0) + 1

    shortfall: dict[str, int] = {}
    for d in DIFFICULTIES:
        got = 0
        while got < wanted[d] and order:
            c = pick([_DIFF_CODE[d]])
            if c is None:
                break
            take(c)
            got += 1
        if got < wanted[d]:
            shortfall[d] = wanted[d] - got
    total = sum(wanted.values())
    while len(chosen) < total and order:
        c = pick(list(_DIFF_CODE.values()))
        if c is None:
            break
        take(c)
    chosen.sort(key=lambda c: _DIFF_CODE[c.difficulty])  # stable: pick order within a band
    return chosen, shortfall


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
    wanted = split_counts(per_category)
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    report: dict[str, Any] = {
        "suite": name, "city": {"name": city.name, "content_hash": city.content_hash}, "seed": seed,
        "split": split, "per_category": per_category, "generator_version": GENERATOR_VERSION,
        "mapping": {"file": mapping.source, "sha256": mapping.sha256, "needs": len(mapping.needs)},
        "family": CitySeekerFamily.name, "default_protocol": CitySeekerFamily.default_protocol,
        "max_steps": int(max_steps), "verified": verify is not None, "protocols": list(verify_protocols),
        "route_steps": [MIN_ROUTE_STEPS, MAX_ROUTE_STEPS], "difficulty_steps": {k: list(v) for k, v in DIFFICULTY_STEPS.items()},
        "categories": {},
    }
    verif: dict[tuple[str, int], list[dict[str, Any]]] = {}
    tasks: list[Task] = []
    for cat in categories:
        k = ALL_CATEGORIES.index(cat)
        rng = np.random.default_rng([seed, k])
        crep: dict[str, Any] = {"requested": per_category, "produced": 0, "unavailable": None, "needs": {}}
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
