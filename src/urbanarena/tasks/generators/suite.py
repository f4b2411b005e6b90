"""Suite builder: the seven ``cityarena`` families of a city in one task file.

:func:`generate_suite` asks each family generator (one module per family) for
candidates, then per difficulty picks ``per_family`` tasks split as evenly as
possible (remainder to easy, then medium): a seeded random start improved by
swaps so that the per-difficulty means of the calibrated statistics land on
360CityArena's (:data:`~.common.CALIBRATION_TARGETS`: map-navigation path
length and decision points, counting ground truth, VLN instruction steps).
Every navigation task (landmark search, map navigation, VLN) is run by the
arena oracle through the real env and its stop rules under each protocol of
the solver; tasks it cannot solve within the step limit are replaced. Where an
area lacks data for a family, the report names the family and the reason
(:class:`~.common.FamilyUnavailable`) instead of producing degenerate tasks;
a difficulty with too few candidates is reported as a shortfall.

Split areas: with ``split=S`` on a city that contains S's area but is larger (the whole default city,
:mod:`~.splits`), starts are drawn from the area's nodes, every candidate that leaves the area is dropped
(:mod:`~.area`) and the localization grid and start/goal maps are drawn over the area (their specs record
``extent_m``, which :func:`draw_asset` honours); on a city cropped to the area nothing changes.

Determinism: each family draws from its own stream ``numpy.random.default_rng([seed, k])``
(``k`` its index in :data:`ALL_KINDS`), so a family's tasks do not change when
other families are added or dropped; the same city, seed and arguments give a
byte-identical task file.

Layering: the tasks layer cannot import agents, so the oracle comes in as a
:class:`TaskSolver` (``urbanarena.agents.arena_oracle.ArenaOracleSolver``) and
the 3D reference photos of ``landmark_image`` as a :data:`ReferenceRenderer`
(the hook for ``render/scene3d``; without it that family is reported
unavailable).

Suite names are ours: ``<city>-arena7-v<version>`` (e.g. ``helsinki-arena7-v1``).
Sizes: ``mini`` 25 per family (360CityArena's size), ``standard`` 100, ``full`` 300.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import cv2
import numpy as np

from urbanarena.render.maps import Extent, map_renderer_for
from urbanarena.tasks.families.cityarena import CityArenaFamily
from urbanarena.tasks.generators import (
    landmark, localization, map_navigation, object_count, population_count, relational, vln,
)
from urbanarena.tasks.generators import real_imagery
from urbanarena.tasks.generators.common import (
    CALIBRATION_TARGETS,
    CALIBRATION_TOLERANCE,
    DIFFICULTIES,
    NAVIGATION_KINDS,
    Candidate,
    CandidatePool,
    FamilyUnavailable,
    ImageSpec,
    bbox_extent,
    district_extent,
    make_context,
    means,
    select_calibrated,
    split_counts,
)
from urbanarena.tasks.generators.area import area_nodes, restrict_pool
from urbanarena.tasks.generators.kinds import ALL_KINDS, OPT_IN_KINDS  # noqa: F401  (re-exported: defined here before)
from urbanarena.tasks.generators.splits import split_restriction
from urbanarena.tasks.schema import Task, TaskFile
from urbanarena.world.city import City

#: 4: ``landmark_image`` references that show the goal (goal share of sign and storefront in the ID pass with the
#: photo's people) and a condition mix that includes the clear day (issue 25 item 8);
#: 3: ``landmark_image`` references with their own people and vehicles, checked against goal views with the
#: episodes' people (issue 19); 2: references with context, another condition and a view-distance check
#: (:mod:`.landmark`; ``helsinki-arena7-v3``; version 3: ``-v4``); 1: the references of ``helsinki-arena7-v1``/``-v2``
GENERATOR_VERSION = 4
SUITE_VERSION = 1
SUITE_SIZES = {"mini": 25, "standard": 100, "full": 300}
#: most tasks per diversity group (goal POI, counted block/type, grid cell ...) in one suite
GROUP_CAPS = {"localization": 2}
MAP_PX = 640

GENERATORS: dict[str, Callable[..., CandidatePool]] = {
    "localization": localization.generate,
    "landmark_language": lambda ctx, wanted: landmark.generate(ctx, wanted, "landmark_language"),
    "landmark_image": lambda ctx, wanted: landmark.generate(ctx, wanted, "landmark_image"),
    "map_navigation": map_navigation.generate,
    "vln": vln.generate,
    "object_count": object_count.generate,
    "relational": relational.generate,
    "population_count": lambda ctx, wanted: population_count.generate(ctx, wanted),
}

#: ``(city, view) -> RGB uint8 (H, W, 3)``: renders a landmark reference photo from the
#: ``extra.reference_view`` dict (position, eye height, yaw, pitch, field of view, size, lighting)
ReferenceRenderer = Callable[[City, dict], np.ndarray]


class TaskSolver(Protocol):
    """The oracle as the generator sees it (implemented by ``agents.arena_oracle.ArenaOracleSolver``)."""

    max_steps: int
    protocols: tuple[str, ...]

    def plan_steps(self, task: Task) -> int | None:
        """Requests the oracle's plan needs (the most over its protocols); ``None``: no legal plan."""

    def verify(self, task: Task) -> list[dict[str, Any]]:
        """Run the oracle through the env under every protocol: dicts with ``protocol``, ``solved``,
        ``steps``, ``status``, ``max_steps``, ``distance_m``."""


@dataclass
class SuiteResult:
    """A generated suite: its name, the task file, the reference images (relative path -> PNG bytes)
    and the report (JSON-able: per family produced counts, calibration, unavailable families)."""

    name: str
    task_file: TaskFile
    assets: dict[str, bytes] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    #: how each asset was drawn: relative path -> ``{"kind", "params"}`` (JSON-able; :func:`draw_asset` redraws it)
    asset_specs: dict[str, dict[str, Any]] = field(default_factory=dict)


def suite_name(city_name: str, version: int = SUITE_VERSION) -> str:
    """Our suite name: ``<city>-arena7-v<version>``."""
    return f"{city_name}-arena7-v{version}"


def _png(img: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("PNG encoding failed")
    return buf.tobytes()


def _calibration(kind: str, chosen: dict[str, list[Candidate]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    targets = CALIBRATION_TARGETS.get(kind, {})
    for d in DIFFICULTIES:
        sel = chosen.get(d, [])
        entry: dict[str, Any] = {"n": len(sel)}
        if sel:
            entry["means"] = {k: round(v, 3) for k, v in means(sel, sel[0].stats.keys()).items()}
        if targets and sel:
            entry["targets"] = {s: t[d] for s, t in targets.items()}
            entry["relative_error"] = {s: round(entry["means"][s] / t[d] - 1.0, 4) for s, t in targets.items()}
            entry["within_tolerance"] = all(abs(v) <= CALIBRATION_TOLERANCE for v in entry["relative_error"].values())
        out[d] = entry
    return out


def generate_suite(city: City, *, per_family: int = 25, seed: int = 0, kinds: Sequence[str] = ALL_KINDS,
                   split: str | None = None, name: str | None = None, solver: TaskSolver | None = None,
                   reference_renderer: ReferenceRenderer | None = None, max_steps: int | None = None,
                   assets_dir: str | None = None,
                   count_visibility: object_count.VisibilityHook | None = None,
                   reference_check: landmark.ReferenceCheck | None = None,
                   reference_goal_share: landmark.GoalShareCheck | None = None,
                   real_references: Any = None) -> SuiteResult:
    """Generate a ``cityarena`` suite on ``city`` (module docstring).

    Args:
        per_family: tasks per family (``mini`` 25, ``standard`` 100, ``full`` 300).
        seed: the suite's seed (same city + seed + arguments = same file).
        kinds: families to generate (subset of :data:`ALL_KINDS` and :data:`OPT_IN_KINDS`).
        split: ``train``/``val``/``test``: refused unless the city is cropped to that split's area or
            contains it (:mod:`~.splits`); on a city that contains it, only tasks that lie in the area are
            kept (:mod:`~.area`) and the grid and start/goal maps cover the area (their specs record
            ``extent_m``); recorded in provenance (``area``: the bbox).
        name: suite name (default :func:`suite_name` of the city).
        solver: the oracle (plans and verifies navigation tasks); without one navigation tasks are
            not verified (``report["verified"]`` false).
        reference_renderer: renders landmark reference photos (``landmark_image``).
        max_steps: step limit tasks must be solvable within (default: the solver's, else 50).
        assets_dir: folder of reference images relative to the task file (default ``<name>_assets``).
        count_visibility: ``object_count``'s visibility hook (``render.scene3d.visibility.CountVisibility``):
            counting tasks with an object no pose node of the range sees are dropped; without it
            visibility is not checked.
        reference_check: ``landmark_image``'s view-distance hook
            (``render.scene3d.reference.GoalViewDistance``): references too close to a view at the goal are
            drawn again (:mod:`.landmark`); without it the distance is not checked.
        reference_goal_share: ``landmark_image``'s goal-share hook (``render.scene3d.goal_share.GoalShare``):
            references whose photo hides the goal's sign or storefront are drawn again, a POI without a camera
            that shows it is replaced (:mod:`.landmark`); without it not checked.
        real_references: on a city of real pictures, the
            :class:`~.real_references.ReferenceFinder` of ``landmark_image`` (references cut from other real
            pictures; the report's ``reference_pictures`` counts the POIs without one); without it the family
            is unavailable there.
    Raises:
        LandmarkReferencesUnconfirmed: ``landmark_image`` asked on real imagery with references the user has
            not confirmed (``real_references.confirmed`` false).
        SplitError: the city neither is nor contains the requested split's area.
        ValueError: unknown kind or a bad ``per_family``.
    """
    unknown = [k for k in kinds if k not in GENERATORS]
    if unknown:
        raise ValueError(f"unknown task kinds {unknown}; known: {', '.join(ALL_KINDS + OPT_IN_KINDS)}")
    if per_family < 1:
        raise ValueError("per_family must be at least 1")
    if (real_references is not None and not real_references.confirmed and "landmark_image" in kinds
            and real_imagery.is_real_imagery(city)):
        from urbanarena.tasks.generators.real_references import REFUSAL, LandmarkReferencesUnconfirmed

        raise LandmarkReferencesUnconfirmed(REFUSAL)
    area = split_restriction(city, split)
    area_ids = area_nodes(city, area) if area is not None else None
    extent = bbox_extent(city, area.bbox) if area is not None else district_extent(city)
    name = name or suite_name(city.name)
    assets_dir = assets_dir or f"{name}_assets"
    limit = int(max_steps if max_steps is not None else (solver.max_steps if solver is not None else
                                                          CityArenaFamily.default_max_steps))
    wanted = split_counts(per_family)
    tasks: list[Task] = []
    assets: dict[str, bytes] = {}
    asset_specs: dict[str, dict[str, Any]] = {}
    report: dict[str, Any] = {
        "suite": name, "city": {"name": city.name, "content_hash": city.content_hash}, "seed": seed,
        "split": split, "per_family": per_family, "generator_version": GENERATOR_VERSION,
        "max_steps": limit, "verified": solver is not None,
        "protocols": list(solver.protocols) if solver is not None else [], "families": {},
    }
    if area is not None:
        report["area"] = {"split": area.split, "bbox": list(area.bbox), "pose_nodes": len(area_ids)}
    renderer = None
    for kind in kinds:
        k_index = (ALL_KINDS + OPT_IN_KINDS).index(kind)
        fam_rep: dict[str, Any] = {"requested": per_family, "produced": 0, "unavailable": None}
        report["families"][kind] = fam_rep
        try:
            real_refs = real_references if real_imagery.is_real_imagery(city) else None
            real_why = real_imagery.unavailable_reason(city, kind, real_refs)  # photographs: docs/panoramax.md
            if real_why is not None:
                raise FamilyUnavailable(kind, real_why)
            if kind == "landmark_image" and reference_renderer is None and real_refs is None:
                raise FamilyUnavailable(kind, "no reference-photo renderer was given: landmark_image needs the 3D "
                                              "renderer (render/scene3d) to draw each POI from an off-node viewpoint")
            ctx = make_context(city, [seed, k_index], max_steps=limit,
                               plan_steps=solver.plan_steps if (solver is not None and kind in NAVIGATION_KINDS)
                               else None, extent=extent, area_node_ids=area_ids)
            if kind == "object_count" and count_visibility is not None:
                pool = object_count.generate(ctx, wanted, visibility=count_visibility)
            elif kind == "landmark_image" and real_refs is not None:
                try:
                    pool = landmark.generate(ctx, wanted, kind, real_references=real_refs)
                finally:
                    fam_rep["reference_pictures"] = real_refs.report()
            elif kind == "landmark_image" and (reference_check is not None or reference_goal_share is not None):
                pool = landmark.generate(ctx, wanted, kind, reference_check=reference_check,
                                         goal_share=reference_goal_share)
            else:
                pool = GENERATORS[kind](ctx, wanted)
            if area is not None:
                pool = restrict_pool(ctx, pool, area)
                if pool.total() == 0:
                    raise FamilyUnavailable(kind, f"no candidate lies in the {area.split} area")
        except FamilyUnavailable as e:
            fam_rep["unavailable"] = e.reason
            continue
        fam_rep["candidates"] = {d: len(v) for d, v in pool.by_difficulty.items()}
        fam_rep["rejected"] = dict(sorted(pool.rejected.items()))
        chosen, verif, failures = _choose(kind, pool, wanted, np.random.default_rng([seed, k_index, 1]),
                                          solver if kind in NAVIGATION_KINDS else None)
        fam_rep["verification_failures"] = failures  # replaced tasks, by protocol and stop reason
        shortfall = {d: wanted[d] - len(chosen[d]) for d in DIFFICULTIES if len(chosen[d]) < wanted[d]}
        if shortfall:
            top = ", ".join(f"{r} ({n})" for r, n in sorted(pool.rejected.items(), key=lambda kv: -kv[1])[:3])
            fam_rep["shortfall"] = {
                d: {"missing": n, "reason": f"only {len(chosen[d])} {d} candidates pass the family's checks in this "
                                            f"area{' (most rejected: ' + top + ')' if top else ''}"}
                for d, n in shortfall.items()}
        fam_rep["calibration"] = _calibration(kind, chosen)
        i = 0
        for d in DIFFICULTIES:
            for c in chosen[d]:
                i += 1
                tid = f"{name}/{kind}/{i:03d}"
                paths = []
                for spec in c.images:
                    rel = f"{assets_dir}/{spec.name}.png"
                    if area is not None and spec.kind not in ("reference_view", "real_reference"):
                        spec.params.setdefault("extent_m", [extent.xmin, extent.ymin, extent.xmax, extent.ymax])
                    if rel not in assets:
                        if renderer is None:
                            renderer = map_renderer_for(city, MAP_PX, MAP_PX, extent)
                        assets[rel] = _png(_draw(spec, city, renderer, reference_renderer))
                        asset_specs[rel] = {"kind": spec.kind, "params": json.loads(json.dumps(spec.params))}
                    paths.append(rel)
                task = c.build(tid, paths)
                task.provenance = {"generator": "urbanarena.tasks.generators", "generator_version": GENERATOR_VERSION,
                                   "suite": name, "seed": seed, "split": split, "licence": city.meta.licence,
                                   "attribution": city.meta.attribution, "source": _source(city)}
                if area is not None:
                    task.provenance["area"] = list(area.bbox)
                if kind == "map_navigation":
                    task.extra["map_id"] = f"{kind}-{i:03d}"
                if c.key in verif:
                    task.extra["oracle"] = verif[c.key]
                # the family's checks (images are checked once written, in save_suite)
                CityArenaFamily.check_task(task.model_copy(update={"extra": {
                    k: v for k, v in task.extra.items() if k != "reference_images"}}))
                tasks.append(task)
        fam_rep["produced"] = i
    tf = TaskFile(city={"name": city.name, "content_hash": city.content_hash}, tasks=tasks)
    return SuiteResult(name, tf, assets, report, asset_specs)


def _source(city: City) -> dict[str, Any]:
    src = city.meta.source or {}
    return {k: src[k] for k in ("kind", "files", "sha256", "bbox") if k in src}


def _draw(spec: ImageSpec, city: City, renderer, reference_renderer: ReferenceRenderer | None) -> np.ndarray:
    if spec.kind == "grid_map":
        return renderer.grid_map(int(spec.params.get("n", 5)))
    if spec.kind == "start_goal_map":
        return renderer.start_goal_map(tuple(spec.params["start_xy"]), tuple(spec.params["goal_xy"]))
    if spec.kind == "real_reference":  # a view cut from another real picture (.real_references)
        from urbanarena.tasks.generators.real_references import cut_view

        return cut_view(spec.params)
    if spec.kind == "reference_view":
        if reference_renderer is None:
            raise ValueError("a reference_view image needs a reference_renderer")
        img = np.asarray(reference_renderer(city, dict(spec.params)))
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise ValueError(f"reference_renderer must return RGB uint8 (H, W, 3), got {img.dtype} {img.shape}")
        return img
    raise ValueError(f"unknown image kind {spec.kind!r}")


def draw_asset(city: City, kind: str, params: dict[str, Any], reference_renderer: ReferenceRenderer | None = None,
               renderer=None) -> np.ndarray:
    """Redraw one suite image from its recorded spec (:attr:`SuiteResult.asset_specs`): ``grid_map`` and
    ``start_goal_map`` with the city's district map (``MAP_PX`` square; over the spec's ``extent_m`` when it has one,
    :func:`map_extent`), ``reference_view`` with
    ``reference_renderer``. Returns RGB uint8 ``(H, W, 3)``.

    Raises:
        ValueError: unknown kind, or a ``reference_view`` without a renderer.
    """
    if renderer is None and kind not in ("reference_view", "real_reference"):
        renderer = map_renderer_for(city, MAP_PX, MAP_PX, map_extent(city, params))
    return _draw(ImageSpec(kind, "asset", dict(params)), city, renderer, reference_renderer)


def map_extent(city: City, params: dict[str, Any]) -> Extent:
    """The extent a map asset is drawn over: its spec's ``extent_m`` ``[xmin, ymin, xmax, ymax]`` (local metres;
    suites restricted to a split area, :mod:`.area`), else the city's district map
    (:func:`~.common.district_extent`)."""
    e = params.get("extent_m")
    return Extent(*(float(v) for v in e)) if e is not None else district_extent(city)


def _choose(kind: str, pool: CandidatePool, wanted: dict[str, int], rng: np.random.Generator,
            solver: TaskSolver | None) -> tuple[dict[str, list[Candidate]], dict[str, list[dict]], dict[str, int]]:
    """Per difficulty (hard first: usually the scarcest), calibrated selection; candidates with a
    ``finalize`` check run it, navigation tasks are verified by the solver, and failures are replaced
    (the pool shrinks until all chosen pass)."""
    targets = CALIBRATION_TARGETS.get(kind, {})
    cap = GROUP_CAPS.get(kind, 1)
    used: set[str] = set()
    verif: dict[str, list[dict]] = {}
    failed: set[str] = set()
    finalized: set[str] = set()
    why: dict[str, int] = {}
    chosen: dict[str, list[Candidate]] = {}
    for d in reversed(DIFFICULTIES):
        tg = {s: t[d] for s, t in targets.items()}
        for _ in range(25):
            cands = [c for c in pool.by_difficulty[d] if c.key not in used and c.key not in failed]
            sel = select_calibrated(cands, wanted[d], tg, rng, group_cap=cap)
            bad = []
            for c in sel:
                if c.finalize is not None and c.key not in finalized:
                    reason = c.finalize(c)
                    if reason is not None:
                        bad.append(c.key)
                        why[reason] = why.get(reason, 0) + 1
                        continue
                    finalized.add(c.key)
            if solver is not None:
                for c in sel:
                    if c.key in verif or c.key in bad:
                        continue
                    res = solver.verify(c.build("verify"))
                    if all(r["solved"] for r in res):
                        verif[c.key] = res
                    else:
                        bad.append(c.key)
                        for r in res:
                            if not r["solved"]:
                                label = f"{r['protocol']}: {r['status']}"
                                why[label] = why.get(label, 0) + 1
            if not bad:
                break
            failed.update(bad)
        else:
            sel = [c for c in sel if c.key not in failed]
        chosen[d] = sel
        used.update(c.key for c in sel)
    return chosen, verif, dict(sorted(why.items()))


def save_suite(result: SuiteResult, out: str | Path) -> Path:
    """Write the task file to ``out``, its reference images beside it (paths relative to its
    folder) and the report to ``<out stem>.report.json``; returns the task file path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for rel, data in sorted(result.assets.items()):
        p = out.parent / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    result.task_file.save(out)
    for t in result.task_file.tasks:
        CityArenaFamily.check_task(t, base_dir=out.parent)
    rep = out.with_name(out.name[: -len(out.suffix)] + ".report.json" if out.suffix else out.name + ".report.json")
    rep.write_text(json.dumps(result.report, indent=1, sort_keys=True), encoding="utf-8")
    return out


__all__ = ["ALL_KINDS", "GENERATORS", "GENERATOR_VERSION", "ReferenceRenderer", "SUITE_SIZES", "SuiteResult",
           "TaskSolver", "draw_asset", "generate_suite", "map_extent", "save_suite", "suite_name"]
