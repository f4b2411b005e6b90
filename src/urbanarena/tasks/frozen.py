"""Frozen, versioned task suites: a generated suite stored once with the hashes that pin it.

A frozen suite (format ``urbanarena-frozen-suite`` v1) is a folder holding
``manifest.json`` and one gzip'd task file per size (``mini.json.gz`` 25 tasks
per family, ``standard.json.gz`` 100, ``full.json.gz`` 300). The manifest
records:

* ``suite`` (ours, e.g. ``helsinki-arena7-v1``; each size's tasks are named
  ``<suite>-<size>/<family>/<n>`` so sizes never share task ids), the
  generator version, seed and split;
* ``city``: name, ``content_hash`` (the suite only runs on a city with this
  hash) and how to build it;
* per size: the task file's sha256 (of the uncompressed bytes), the task
  count per family, and every reference image (maps, landmark photos) as its
  drawing spec plus the sha256 of its decoded pixels
  (:func:`urbanarena.render.scene3d.cache.pixel_hash`);
* ``renderer``: the identity of the renderer that drew them (GL vendor,
  renderer, version, settings) and ``panorama_fingerprint``: pixel hashes of
  the rendered panoramas at a fixed sample of pose nodes.

Images are not stored: :func:`.frozen_materialize.materialize` writes the task file under
``<urbanarena home>/suites/<suite>-<size>/`` and redraws the images from
their specs, then compares pixel hashes with the manifest (and renders the
fingerprint panoramas). Any difference — typically another OpenGL driver
(llvmpipe vs a GPU) — is reported in the returned check (``matches`` false,
the differing files and nodes), which the runner stores in ``run.json`` and
prints: scores on differing renders are not comparable with the frozen
suite's reference runs.

Suites ship inside the package (``urbanarena/tasks/frozen/<suite>/``); users
freeze their own with ``urbanarena tasks freeze`` into
``<urbanarena home>/frozen/<suite>/``, found the same way.
"""

from __future__ import annotations

import datetime
import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from urbanarena import paths
from urbanarena.errors import TaskFormatError, UrbanArenaError
from urbanarena.progress import Progress, counted
from urbanarena.tasks.frozen_tolerance import coarse_fingerprint
from urbanarena.tasks.frozen_tolerance import scheme as tolerance_scheme
from urbanarena.world.city import City

FORMAT = "urbanarena-frozen-suite"
FORMAT_VERSION = 1
from urbanarena.tasks.generators.suite import SUITE_SIZES as SIZES  # noqa: E402  (mini 25, standard 100, full 300)
#: suite version of each render style: v1 was frozen on the flat renderer, v2 on the realistic one (issue 14),
#: v3 on the photo one (issue 24)
SUITE_VERSION_OF_STYLE = {"flat": 1, "realistic": 2, "photo": 3}
#: the built-in Helsinki cities' default suite names, city -> (name stem, style -> version): the core keeps the
#: names of the suites frozen when it was the default city (``helsinki-arena7-v1`` flat, ``-v2`` realistic); the
#: whole extract's realistic suites are ``helsinki-arena7-v3`` (issue 19, generator version 2) and ``-v4`` (the
#: same tasks, reference photos with their own people: generator version 3); its photo suite is ``-v5`` (issue 24,
#: generator version 4), the default. No flat suite of the whole extract is shipped (the flat style exists to keep
#: v1 bit-identical); freezing one needs a name of its own.
BUILTIN_SUITE_VERSIONS: dict[str, tuple[str, dict[str, int]]] = {
    "helsinki-core": ("helsinki", {"flat": 1, "realistic": 2}),
    "helsinki": ("helsinki", {"realistic": 4, "photo": 5}),
}
#: a suite name's version suffix (``...-v4``)
_VERSION = re.compile(r"-v(\d+)$")


def suite_version(name: str) -> int:
    """The version number ending a suite name (``helsinki-arena7-v4`` -> 4; 0 without one)."""
    m = _VERSION.search(name)
    return int(m.group(1)) if m else 0


def default_suite_name(city_name: str, render_style: str) -> str:
    """The name ``tasks freeze`` gives a suite of ``city_name`` in ``render_style`` (:data:`BUILTIN_SUITE_VERSIONS`
    for the built-in Helsinki cities, else ``<city>-arena7-v<SUITE_VERSION_OF_STYLE[style]>``).

    Raises:
        UrbanArenaError: a built-in city without a suite version in that style (give the suite a name).
    """
    from urbanarena.tasks.generators import suite_name

    stem, versions = BUILTIN_SUITE_VERSIONS.get(city_name, (city_name, SUITE_VERSION_OF_STYLE))
    if render_style not in versions:
        raise UrbanArenaError(
            f"city {city_name!r} has no default suite name in the {render_style!r} style (its versions: "
            f"{', '.join(f'{k} v{v}' for k, v in versions.items())}; v1/v2 belong to helsinki-core); "
            "give the suite a name of its own (--name)")
    return suite_name(stem, version=versions[render_style])
#: pose nodes whose panoramas fingerprint the renderer
FINGERPRINT_NODES = 8
#: where the frozen suites shipped with urbanarena live
PACKAGE_DIR = Path(__file__).with_name("frozen")

#: ``(city, view dict) -> RGB uint8`` reference-photo renderer (see :mod:`urbanarena.tasks.generators.suite`)
ReferenceRenderer = Callable[[City, dict], np.ndarray]


class FrozenSuiteError(UrbanArenaError):
    """A frozen suite cannot be used on this city or is damaged."""


@dataclass
class FrozenSuite:
    """A frozen suite on disk: its folder and parsed manifest."""

    directory: Path
    manifest: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.manifest["suite"])

    @property
    def render_style(self) -> str:
        """The render style its images and fingerprints were drawn in (``flat`` for suites frozen before
        styles existed, e.g. ``helsinki-arena7-v1``)."""
        return str(self.manifest.get("render_style", "flat"))

    @property
    def city_hash(self) -> str:
        return str(self.manifest["city"]["content_hash"])

    def sizes(self) -> list[str]:
        return [s for s in SIZES if s in self.manifest["sizes"]]


def user_dir() -> Path:
    """``<urbanarena home>/frozen``: suites frozen by ``urbanarena tasks freeze`` without ``--out``."""
    return paths.home() / "frozen"


def load_frozen(directory: str | Path) -> FrozenSuite:
    """Read a frozen suite folder.

    Raises:
        TaskFormatError: missing/unreadable ``manifest.json`` or a wrong format/version (names the file).
    """
    d = Path(directory)
    mp = d / "manifest.json"
    try:
        m = json.loads(mp.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskFormatError(mp, None, "frozen suite manifest not found") from None
    except (OSError, json.JSONDecodeError) as e:
        raise TaskFormatError(mp, None, f"unreadable frozen suite manifest: {e}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise TaskFormatError(mp, "format", f"not a frozen suite manifest (format must be {FORMAT!r})")
    if m.get("format_version") != FORMAT_VERSION:
        raise TaskFormatError(mp, "format_version", f"unsupported version {m.get('format_version')!r}; "
                                                    f"this urbanarena reads {FORMAT_VERSION}")
    for key in ("suite", "city", "sizes"):
        if key not in m:
            raise TaskFormatError(mp, key, "missing field")
    return FrozenSuite(d, m)


def frozen_suites(extra_dirs: Sequence[Path] = ()) -> list[FrozenSuite]:
    """Every readable frozen suite in the package folder, ``<home>/frozen`` and ``extra_dirs``
    (folders of suite folders); damaged ones are skipped (``load_frozen`` names the problem)."""
    out = []
    for root in (PACKAGE_DIR, user_dir(), *map(Path, extra_dirs)):
        if not root.is_dir():
            continue
        for d in sorted(p for p in root.iterdir() if (p / "manifest.json").is_file()):
            try:
                out.append(load_frozen(d))
            except TaskFormatError:
                continue
    return out


def frozen_for_city(city: City, render_style: str | None = None, name: str | None = None) -> FrozenSuite:
    """The frozen suite built on exactly this city (matching content hash) for ``render_style`` (default
    :data:`~urbanarena.render.scene3d.render_settings.DEFAULT_RENDER_STYLE`; ``photo`` without its fetched assets
    counts as ``realistic``, :func:`~urbanarena.render.scene3d.styles.usable_style`;
    :attr:`FrozenSuite.render_style`), the
    newest (highest :func:`suite_version`) when several match; when the city has suites in other styles only,
    the newest of them (its tasks are the style's too: a freeze in another style draws other images of the
    same tasks; :func:`materialize` checks the images in the suite's own style and records it). ``name``
    (e.g. ``helsinki-arena7-v3``) picks that suite of the city instead, whatever its style.

    Raises:
        FrozenSuiteError: none matches (``name``: no suite of that name for this city); when a suite exists for a
            city of the same name with another hash the message says so (a differing build: other library
            versions or import settings).
    """
    from urbanarena.render.scene3d.styles import usable_style

    style = usable_style(render_style)   # photo without its assets: the realistic suite (never fetches)
    suites = frozen_suites()
    mine = [fs for fs in suites if fs.city_hash == city.content_hash]
    if name is not None:
        named = [fs for fs in mine if fs.name == name]
        if named:
            return named[0]
        raise FrozenSuiteError(
            f"no frozen suite {name!r} for city {city.name!r} (its suites: "
            f"{', '.join(sorted(fs.name for fs in mine)) or 'none'})")
    newest = lambda xs: max(xs, key=lambda fs: (suite_version(fs.name), fs.name))  # noqa: E731
    same_style = [fs for fs in mine if fs.render_style == style]
    if same_style:
        return newest(same_style)
    if mine:
        return newest(mine)
    same = [fs for fs in suites if fs.manifest["city"].get("name") == city.name]
    if same:
        fs = same[0]
        raise FrozenSuiteError(
            f"frozen suite {fs.name} was built on city {city.name!r} with content hash {fs.city_hash[:12]}..., "
            f"but this city's hash is {city.content_hash[:12]}... (a different build: "
            f"{fs.manifest['city'].get('build', 'see the manifest')}); generate a suite for this build with "
            "`urbanarena tasks generate` or freeze one with `urbanarena tasks freeze`")
    raise FrozenSuiteError(
        f"no frozen task suite for city {city.name!r}; generate one with `urbanarena tasks generate --city "
        f"{city.name} --out FILE` (or `urbanarena tasks freeze`) and pass --tasks FILE")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _pixel_hash(img: np.ndarray) -> str:
    from urbanarena.render.scene3d.cache import pixel_hash

    return pixel_hash(img)


def fingerprint_nodes(city: City, n: int = FINGERPRINT_NODES) -> list[str]:
    """``n`` pose nodes evenly spaced through the sorted node ids (deterministic)."""
    nodes = sorted(map(str, city.graph.nodes))
    if not nodes:
        return []
    idx = np.linspace(0, len(nodes) - 1, min(n, len(nodes))).round().astype(int)
    return [nodes[i] for i in dict.fromkeys(idx.tolist())]


def _panorama_hashes(city: City, nodes: Sequence[str], render_style: str = "flat", progress: Progress | None = None,
                     ) -> tuple[dict[str, str], dict[str, Any], dict[str, str]]:
    """``({node: pixel sha256}, renderer identity, {node: coarse fingerprint})`` of the fingerprint panoramas."""
    from urbanarena.render.scene3d.cache import RenderedPanoramaStore
    from urbanarena.render.scene3d.styles import settings_for_style

    # the style's own population (people and vehicles in realistic panoramas, none in flat ones), as runs draw it
    store = RenderedPanoramaStore(city, settings=settings_for_style(render_style))
    try:
        hashes, coarse = {}, {}
        for n in counted(progress, "check panoramas", nodes):
            img = store.get(n)
            hashes[n], coarse[n] = _pixel_hash(img), coarse_fingerprint(img)
        return hashes, renderer_identity(store), coarse
    finally:
        release = getattr(store, "release", None)
        if callable(release):
            release()


def renderer_identity(store) -> dict[str, Any]:
    """The GL identity and settings behind a :class:`RenderedPanoramaStore` (what the cache keys on)."""
    ident = store.renderer.identity()
    return json.loads(json.dumps(ident, default=str))


def default_reference_renderer(city: City, render_style: str = "flat") -> ReferenceRenderer | None:
    """The 3D renderer's landmark reference photos for ``city`` in ``render_style`` (``None`` when it
    cannot render)."""
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    if gl_unavailable_reason() is not None:
        return None
    from urbanarena.render.scene3d.reference import reference_renderer_of

    # the renderer itself (callable as ``(city, view) -> RGB``): materialize orders its draws by its settings
    # and releases it when done
    return reference_renderer_of(city, render_style)


def freeze(city: City, out_dir: str | Path, *, suite: str | None = None, seed: int = 0,
           sizes: Sequence[str] = tuple(SIZES), split: str | None = "test", solver=None,
           reference_renderer: ReferenceRenderer | None = None, build: str | None = None,
           log: Callable[[str], None] = lambda s: None, render_style: str = "flat",
           real_references: Any = None) -> FrozenSuite:
    """Generate and freeze a suite of ``city`` at each of ``sizes`` into ``out_dir``.

    Args:
        suite: suite name (default :func:`default_suite_name`: ``<city>-arena7-v1`` for the ``flat`` style,
            ``-v2`` for ``realistic``; ``helsinki-arena7-v4`` for the whole default city).
        render_style: style of the landmark photos and fingerprint panoramas (recorded as the manifest's
            ``render_style`` when not ``flat``). Task generation (incl. the visibility check of counting
            tasks) does not depend on it, so both styles' suites hold the same tasks.
        solver: the oracle the generator verifies navigation tasks with (required).
        reference_renderer: landmark photo renderer (default :func:`default_reference_renderer`); when
            the renderer works, counting tasks also keep only objects visible from their range
            (:class:`urbanarena.render.scene3d.visibility.CountVisibility`).
        build: how a user rebuilds the city (shown when hashes differ).
        real_references: on a city of real photographs, the confirmed
            :class:`~urbanarena.tasks.generators.real_references.ReferenceFinder` of ``landmark_image`` (without
            it the family is an ``excluded_families`` entry there). Its chosen pictures are pinned in the
            manifest's ``reference_pictures`` block (id, sha256, licence, author; Panoramax id) and stored locally
            by sha256; the asset specs keep no local path and each cut's ``pixel_sha256`` is drawn from the stored
            picture (:mod:`urbanarena.tasks.frozen_refs`).

    On a city of real photographs (:func:`urbanarena.tasks.generators.real_imagery.is_real_imagery`) the
    families its views exclude are recorded as ``excluded_families`` (family -> reason) instead of refusing,
    and the manifest's ``pictures`` block pins every picture by id and sha256 with its licence and author
    (:func:`urbanarena.world.picture_pins.picture_pins`; ``urbanarena tasks fetch`` rebuilds the city from it).
    ``city.annotations_hash`` records the annotations' hash.
    Raises:
        UrbanArenaError: unknown size, no solver, a family that could not be generated in full (other than a
            real-imagery exclusion), a real-imagery city whose pictures cannot be pinned, the ``photo`` style
            without its installed assets. A ``photo`` suite's manifest carries ``render_assets``
            (:func:`urbanarena.render.assets.credits.asset_credits`: packages with their sha256, licences with
            their authors).
    """
    from urbanarena.tasks.frozen_refs import manifest_spec, pin_references, store, with_pinned_path
    from urbanarena.tasks.generators import generate_suite, real_imagery
    from urbanarena.tasks.generators.suite import draw_asset
    from urbanarena.world.picture_pins import picture_pins

    bad = [s for s in sizes if s not in SIZES]
    if bad or not sizes:
        raise UrbanArenaError(f"unknown suite size(s) {bad or sizes}; known: {', '.join(SIZES)}")
    if solver is None:
        raise UrbanArenaError("freezing a suite needs the oracle solver to verify its tasks")
    from urbanarena.render.scene3d.styles import check_style

    check_style(render_style)
    credits = None
    if render_style == "photo":  # its images carry third-party pixels: pin the packages, credit every licence
        from urbanarena.render.assets.credits import asset_credits

        credits = asset_credits()
        if credits is None:
            raise UrbanArenaError("the photo style's assets are not installed here (it would draw the realistic "
                                  "style instead): run `urbanarena assets fetch` before freezing a photo suite")
    suite = suite or default_suite_name(city.name, render_style)
    ref = reference_renderer if reference_renderer is not None else default_reference_renderer(city, render_style)
    visibility = None
    if ref is not None:  # the renderer works here: count only objects a view can show
        from urbanarena.render.scene3d.visibility import CountVisibility

        visibility = CountVisibility(city)
    check = share = None
    if reference_renderer is None and ref is not None:  # the default renderer: check the view distance too
        from urbanarena.render.scene3d.reference import GoalViewDistance

        check = GoalViewDistance(city, render_style)
    if ref is not None and gl_ok():  # the photos must show their goal (reference scheme 4)
        from urbanarena.render.scene3d.goal_share import GoalShare

        share = GoalShare(city, render_style)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "suite": suite,
        "created": datetime.date.today().isoformat(), "seed": int(seed), "split": split,
        "city": {"name": city.name, "content_hash": city.content_hash, "build": build or f"city {city.name}",
                 "source": {k: v for k, v in (city.meta.source or {}).items() if k in ("kind", "files", "sha256",
                                                                                        "bbox")},
                 "licence": city.meta.licence, "attribution": city.meta.attribution},
        "sizes": {},
    }
    ann = getattr(city, "annotations", None)
    if ann is not None:
        manifest["city"]["annotations_hash"] = ann.content_hash
    pins = picture_pins(city)  # real photographs: every picture by id, sha256, licence and author
    if pins is not None:
        manifest["pictures"] = pins
    if render_style != "flat":
        manifest["render_style"] = render_style
    if credits is not None:
        manifest["render_assets"] = credits
    for size in sizes:
        name = f"{suite}-{size}"
        log(f"generating {name} ({SIZES[size]} per family)")
        res = generate_suite(city, per_family=SIZES[size], seed=seed, split=split, name=name, solver=solver,
                             reference_renderer=ref, count_visibility=visibility, reference_check=check,
                             reference_goal_share=share, real_references=real_references)
        hidden = unchecked_references(res.task_file.tasks)
        if hidden:
            raise UrbanArenaError(f"{name}: {len(hidden)} landmark reference photo(s) of scheme 4 do not pass the "
                                  f"goal-share check (the goal hidden, or not checked: no renderer here), not "
                                  f"freezing: {', '.join(hidden[:5])}{' ...' if len(hidden) > 5 else ''}")
        unavailable = {k: f["unavailable"] for k, f in res.report["families"].items() if f.get("unavailable")}
        # families a city of real photographs never has (or has only once confirmed) are stated, not fatal
        excluded = {k: why for k, why in unavailable.items() if real_imagery.unavailable_reason(city, k) is not None}
        unavailable = {k: why for k, why in unavailable.items() if k not in excluded}
        if unavailable:
            raise UrbanArenaError(f"{name}: families unavailable, not freezing: {unavailable}")
        if excluded:
            manifest["excluded_families"] = excluded
        blob = (json.dumps(res.task_file.model_dump(mode="json"), indent=1, sort_keys=False, allow_nan=False)
                + "\n").encode()
        with open(out / f"{size}.json.gz", "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh,
                                                                       mtime=0) as gz:
            gz.write(blob)
        assets = {}
        for rel, spec in sorted(res.asset_specs.items()):
            if spec["kind"] == "real_reference":  # pinned: drawn again from the stored picture, no local path
                store(spec["params"]["path"], spec["params"]["sha256"])
                spec = manifest_spec(spec)
                img = draw_asset(city, spec["kind"], with_pinned_path(spec)["params"])
            else:
                img = _decode_png(res.assets[rel])
            assets[rel] = {**spec, "pixel_sha256": _pixel_hash(img), "pixel_coarse": coarse_fingerprint(img)}
        fams: dict[str, int] = {}
        for t in res.task_file.tasks:
            k = str(t.extra.get("task_kind"))
            fams[k] = fams.get(k, 0) + 1
        manifest["sizes"][size] = {
            "suite_name": name, "per_family": SIZES[size], "file": f"{size}.json.gz", "tasks": len(res.task_file.tasks),
            "by_family": fams, "task_file_sha256": _sha256(blob), "assets": assets,
            "generator_version": res.task_file.tasks[0].provenance.get("generator_version") if res.task_file.tasks
            else None,
            "shortfall": {k: f["shortfall"] for k, f in res.report["families"].items() if f.get("shortfall")},
        }
    refs = pin_references(real_references) if real_references is not None else None
    if refs is not None:
        manifest["reference_pictures"] = refs
    nodes = fingerprint_nodes(city)
    log(f"rendering {len(nodes)} fingerprint panoramas")
    hashes, ident, coarse = _panorama_hashes(city, nodes, render_style)
    manifest["renderer"] = ident
    manifest["panorama_fingerprint"] = hashes
    manifest["panorama_coarse"] = coarse
    manifest["coarse_fingerprint"] = tolerance_scheme()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return load_frozen(out)


def gl_ok() -> bool:
    """Whether the 3D renderer works here (the goal-share check needs its ID pass)."""
    from urbanarena.render.scene3d.context import gl_unavailable_reason

    return gl_unavailable_reason() is None


def unchecked_references(tasks) -> list[str]:
    """Ids of the ``landmark_image`` tasks whose reference (``extra.reference_view``, scheme 4 or later) carries
    no passing goal-share check (``extra.reference_check.goal_share.passed``): what :func:`freeze` refuses.
    References of older schemes (``helsinki-arena7-v1``..``-v4``) were frozen before the check and are not asked."""
    out = []
    for t in tasks:
        view = t.extra.get("reference_view")
        if t.extra.get("task_kind") != "landmark_image" or not isinstance(view, dict):
            continue
        if int(view.get("scheme", 1)) < 4:
            continue
        share = (t.extra.get("reference_check") or {}).get("goal_share") or {}
        if share.get("passed") is not True:
            out.append(t.task_id)
    return out


def _decode_png(data: bytes) -> np.ndarray:
    import cv2

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError("PNG decoding failed")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def _read_png(path: Path) -> np.ndarray:
    return _decode_png(path.read_bytes())


def _write_png(path: Path, img: np.ndarray) -> None:
    try:
        data = _encode_png(img)
    except ValueError:
        raise ValueError(f"{path}: PNG encoding failed") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _drawing_order(assets: dict[str, dict[str, Any]], ref: ReferenceRenderer | None) -> list[tuple[str, dict]]:
    """Assets by path, with the reference photos grouped by the renderer settings they need (their lighting
    and condition), so that each lighting's renderer is built once and released before the next (the
    renderer keeps only a few: :class:`~urbanarena.render.scene3d.reference.ReferenceRenderer`). Each image
    depends on its own spec only, so the order changes no pixel."""
    items = sorted(assets.items())
    if ref is None or not hasattr(ref, "base_settings"):
        return items
    from urbanarena.render.scene3d.reference import reference_settings

    def key(item):
        rel, spec = item
        if spec["kind"] != "reference_view":
            return (1, "", rel)
        try:
            return (0, reference_settings(spec["params"], ref.base_settings).key(), rel)
        except (ValueError, TypeError, KeyError):
            return (0, "", rel)
    return sorted(items, key=key)


def _draw_assets(assets: dict[str, dict[str, Any]], city: City, ref: ReferenceRenderer | None,
                 progress: Progress | None = None, label: str = "suite images"):
    """Yield ``(relative path, spec, RGB uint8 (H, W, 3))`` for every asset of a size's manifest entry, drawn
    from its spec (maps with one renderer per map extent: the district map, or a split area's), reporting
    each drawn asset to ``progress`` as step ``label``."""
    from urbanarena.tasks.frozen_refs import with_pinned_path
    from urbanarena.tasks.generators.suite import draw_asset

    map_renderers: dict[tuple, Any] = {}
    for rel, spec in counted(progress, label, _drawing_order(assets, ref)):
        map_renderer = None
        if spec["kind"] == "real_reference":  # cut from the stored reference picture of its sha256
            try:
                drawable = with_pinned_path(spec)
            except UrbanArenaError as e:
                raise FrozenSuiteError(f"{rel}: {e}") from None
            yield rel, spec, draw_asset(city, spec["kind"], drawable["params"], ref)
            continue
        if spec["kind"] != "reference_view":
            from urbanarena.render.maps import map_renderer_for
            from urbanarena.tasks.generators.suite import MAP_PX, map_extent

            key = tuple(spec["params"].get("extent_m") or ())
            if key not in map_renderers:
                map_renderers[key] = map_renderer_for(city, MAP_PX, MAP_PX, map_extent(city, spec["params"]))
            map_renderer = map_renderers[key]
        yield rel, spec, draw_asset(city, spec["kind"], spec["params"], ref, renderer=map_renderer)


def redraw_images(fs: FrozenSuite, city: City, *, reason: str, log: Callable[[str], None] = lambda s: None,
                  reference_renderer: ReferenceRenderer | None = None, progress: Progress | None = None) -> FrozenSuite:
    """Re-pin a frozen suite's images to this renderer, keeping its task files (ours).

    For a suite whose tasks stay valid but whose style's look changed (the renderer drew its photos
    differently): every asset is redrawn from its stored spec and its ``pixel_sha256`` replaced, the
    fingerprint panoramas and renderer identity are rendered again, and the manifest's
    ``images_redrawn`` list gains ``{"date", "reason", "assets_changed", "panoramas_changed"}``. Task files and
    their sha256 are untouched, so task ids, answers and reference paths stay the same; scores measured
    before the redraw were measured on other pixels (the reason says why). ``progress``
    (:mod:`urbanarena.progress`) hears the images of each size and the fingerprint panoramas.

    Raises:
        FrozenSuiteError: the city's hash differs from the suite's, or no renderer for its landmark photos.
    """
    if fs.city_hash != city.content_hash:
        raise FrozenSuiteError(f"frozen suite {fs.name} is for city hash {fs.city_hash[:12]}..., "
                               f"not {city.content_hash[:12]}... ({city.name})")
    ref = (reference_renderer if reference_renderer is not None
           else default_reference_renderer(city, fs.render_style))
    manifest = json.loads(json.dumps(fs.manifest))
    changed = 0
    for size, entry in manifest["sizes"].items():
        if ref is None and any(a["kind"] == "reference_view" for a in entry["assets"].values()):
            from urbanarena.render.scene3d.context import gl_unavailable_reason

            raise FrozenSuiteError(f"frozen suite {fs.name}: its landmark photos need the 3D renderer, "
                                   f"unavailable here: {gl_unavailable_reason()}")
        log(f"redrawing the {len(entry['assets'])} images of {entry['suite_name']}")
        for rel, spec, img in _draw_assets(entry["assets"], city, ref, progress, f"{entry['suite_name']} images"):
            back = _decode_png(_encode_png(img))
            h = _pixel_hash(back)
            changed += h != spec["pixel_sha256"]
            spec["pixel_sha256"], spec["pixel_coarse"] = h, coarse_fingerprint(back)
    want = manifest.get("panorama_fingerprint") or {}
    log(f"rendering {len(want)} fingerprint panoramas")
    hashes, ident, coarse = _panorama_hashes(city, list(want), fs.render_style, progress)
    pano_changed = sum(hashes[n] != want[n] for n in want)
    manifest["panorama_fingerprint"] = hashes
    manifest["panorama_coarse"] = coarse
    manifest["coarse_fingerprint"] = tolerance_scheme()
    manifest["renderer"] = ident
    manifest.setdefault("images_redrawn", []).append({
        "date": datetime.date.today().isoformat(), "reason": str(reason), "assets_changed": int(changed),
        "panoramas_changed": int(pano_changed)})
    (fs.directory / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return load_frozen(fs.directory)


def _encode_png(img: np.ndarray) -> bytes:
    import cv2

    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError("PNG encoding failed")
    return buf.tobytes()


__all__ = ["BUILTIN_SUITE_VERSIONS", "FINGERPRINT_NODES", "FORMAT", "FrozenSuite", "FrozenSuiteError", "SIZES",
           "SUITE_VERSION_OF_STYLE", "default_reference_renderer", "default_suite_name",
           "fingerprint_nodes", "freeze", "frozen_for_city", "frozen_suites", "load_frozen", "suite_version",
           "user_dir"]
