"""``urbanarena tasks export --format hf``: a task suite as a Hugging Face ``datasets`` folder.

Layout of ``DIR`` (every table a Parquet file whose schema carries the ``datasets`` features, so
``datasets.load_dataset(DIR)`` reads it offline, images as ``datasets.Image``)::

    README.md                         dataset card (YAML header: licence, configs; text: docs/harnesses.md)
    tasks/<split>-00000-<sha>.parquet config "tasks" (default): one row per task, split from provenance
    reference_images/train-00000-<sha>.parquet  config "reference_images" (one split, ``train`` by the
                                      hub's convention): task_id, index, name, image
    panoramas/train-00000-<sha>.parquet  config "panoramas": the panoramas the tasks use, licence/author
    city/train-00000-<sha>.parquet    config "city": one row, the city's metadata (city.json) and sizes
    (<sha>: the first 12 hex digits of the file's sha256, see :func:`write_table`)
    urbanarena/tasks.json (+ assets)  the task file in our schema: ``urbanarena run --tasks DIR/urbanarena/tasks.json``
    vlmevalkit/<name>.tsv             the static image-question table (:mod:`urbanarena.runner.static_table`)

``tasks`` columns: ``task_id``, ``family``, ``task_kind`` (arena kinds), ``category``, ``difficulty``,
``split``, ``instruction``, ``answer`` (plain text, :func:`answer_text`), ``answer_metric``, ``start_node``,
``start_heading_deg``, ``start_lat``, ``start_lon`` (WGS84 degrees), ``goal_nodes``, ``goal_labels``,
``success_radius_m``, ``reference_path`` (node ids), ``protocol`` (the family's default protocol id),
``max_steps`` (its default step limit), ``reference_images`` (names, see the config of that name),
``start_panorama`` (image, ``None`` when panoramas are not exported), ``task_json`` (the task in our
schema, JSON text: the exact record ``urbanarena run`` reads).

Panoramas (``--panoramas``): ``start`` — the start nodes'; ``route`` (default) — also every node of the
reference paths and the goal nodes; ``none``. A city with imagery exports the files as they are (bytes
unchanged); a rendered city (OSM) exports its renders (JPEG, quality 92). Imagery whose licence forbids
redistribution (CitySeeker, StreetLearn) is refused unless ``i_hold_the_rights``
(:class:`~urbanarena.errors.ImageryLicenceError`, nothing written); per-picture licences (Panoramax) go
into each panorama row.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

import numpy as np
from PIL import Image

from urbanarena.errors import ImageryLicenceError, RunIOError, UrbanArenaError
from urbanarena.progress import Progress, counted
from urbanarena.runner.answer_column import answer_text
from urbanarena.safe_paths import check_name, confine
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task, TaskFile
from urbanarena.world.city import City
from urbanarena.world.imagery import has_imagery, imagery_of

PANORAMA_CHOICES = ("start", "route", "none")
#: JPEG quality of rendered panoramas in the export
RENDER_JPEG_QUALITY = 92
DEFAULT_SPLIT = "test"
#: the per-file licences of the photographic assets in the images, beside the card (``photo``-style suites)
ASSET_LICENCES = "asset_licences.json"


def _value(dtype: str) -> dict[str, Any]:
    return {"dtype": dtype, "_type": "Value"}


def _seq(dtype: str) -> dict[str, Any]:
    return {"feature": _value(dtype), "_type": "Sequence"}


IMAGE_FEATURE = {"_type": "Image"}

TASK_FEATURES: dict[str, dict[str, Any]] = {
    "task_id": _value("string"), "family": _value("string"), "task_kind": _value("string"),
    "category": _value("string"), "difficulty": _value("string"), "split": _value("string"),
    "instruction": _value("string"), "answer": _value("string"), "answer_metric": _value("string"),
    "start_node": _value("string"), "start_heading_deg": _value("float64"), "start_lat": _value("float64"),
    "start_lon": _value("float64"), "goal_nodes": _seq("string"), "goal_labels": _seq("string"),
    "success_radius_m": _value("float64"), "reference_path": _seq("string"), "protocol": _value("string"),
    "max_steps": _value("int64"), "reference_images": _seq("string"), "start_panorama": IMAGE_FEATURE,
    "task_json": _value("string"),
}
REFERENCE_FEATURES = {"task_id": _value("string"), "index": _value("int64"), "name": _value("string"),
                      "image": IMAGE_FEATURE}
PANORAMA_FEATURES = {
    "node_id": _value("string"), "lat": _value("float64"), "lon": _value("float64"),
    "centre_bearing_deg": _value("float64"), "width": _value("int64"), "height": _value("int64"),
    "source": _value("string"), "licence": _value("string"), "author": _value("string"),
    "source_url": _value("string"), "image": IMAGE_FEATURE,
}
CITY_FEATURES = {
    "name": _value("string"), "content_hash": _value("string"), "licence": _value("string"),
    "attribution": _value("string"), "source_kind": _value("string"), "imagery_licence": _value("string"),
    "imagery_attribution": _value("string"), "nodes": _value("int64"), "edges": _value("int64"),
    "metadata_json": _value("string"),
}


@dataclass
class ExportedImage:
    """An image as stored: encoded bytes and a file name (``path`` of ``datasets.Image``)."""

    data: bytes
    name: str
    width: int
    height: int

    def cell(self) -> dict[str, Any]:
        return {"bytes": self.data, "path": self.name}


@dataclass
class HubExport:
    """What :func:`export_hf` wrote: the folder, row counts per table and split, bytes and file (relative
    path) per table (``tasks/<split>``, ``reference_images``, ``panoramas``, ``city``), panoramas."""

    out_dir: Path
    rows: dict[str, int] = field(default_factory=dict)
    splits: dict[str, int] = field(default_factory=dict)
    bytes_by_table: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    panoramas: list[str] = field(default_factory=list)
    static_rows: int = 0
    static_file: Path | None = None

    @property
    def total_bytes(self) -> int:
        return sum(self.bytes_by_table.values())


def panorama_nodes(tasks: Iterable[Task], which: str) -> list[str]:
    """Nodes whose panoramas the tasks use (module docstring), in first-use order."""
    if which not in PANORAMA_CHOICES:
        raise UrbanArenaError(f"--panoramas {which!r}: choose one of {', '.join(PANORAMA_CHOICES)}")
    out: dict[str, None] = {}
    if which == "none":
        return []
    for t in tasks:
        if t.start.node:
            out.setdefault(t.start.node)
        if which == "route":
            for n in [*t.reference_path, *(g.node for g in t.goals if g.node)]:
                out.setdefault(n)
    return list(out)


class PanoramaSource:
    """The panoramas of a city as exported bytes: imagery files unchanged, renders as JPEG."""

    def __init__(self, city: City, city_dir: Path | None, i_hold_the_rights: bool = False):
        self.city = city
        self.city_dir = city_dir
        self.imagery = imagery_of(city, need="exporting panoramas") if has_imagery(city) else None
        if self.imagery is not None and not self.imagery.redistributable and not i_hold_the_rights:
            raise ImageryLicenceError(
                f"city {city.name!r}: imagery from {self.imagery.source!r} (licence {self.imagery.licence or 'unknown'}) "
                "may not be redistributed; export with --panoramas none, or pass --i-hold-the-rights only if you "
                "hold the rights to these images")
        self._store = None

    @property
    def kind(self) -> str:
        return "imagery" if self.imagery is not None else "rendered"

    def licence(self) -> str | None:
        if self.imagery is not None:
            return self.imagery.licence
        return f"rendered from {self.city.meta.licence or 'unknown'} data"

    def get(self, node: str) -> ExportedImage:
        """The node's panorama. Raises ImageFormatError (unreadable file), RendererUnavailableError."""
        if self.imagery is not None:
            path = self.imagery.path_for(node, self.city_dir)
            data = path.read_bytes()
            with Image.open(io.BytesIO(data)) as im:
                w, h = im.size
            return ExportedImage(data, f"{_safe(node)}{path.suffix.lower()}", w, h)
        if self._store is None:
            from urbanarena.env.observers import rendered_store_for

            self._store = rendered_store_for(self.city)
        arr = np.asarray(self._store.get(node))
        return ExportedImage(_jpeg(arr), f"{_safe(node)}.jpg", int(arr.shape[1]), int(arr.shape[0]))

    def centre_bearing_deg(self, node: str) -> float:
        if self.imagery is not None:
            from urbanarena.world.imagery import centre_bearing_deg

            return float(centre_bearing_deg(self.city, node, self.imagery))
        return float(self.city.graph.nodes[node].get("heading_deg") or 0.0)


def _jpeg(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(arr)).save(buf, "JPEG", quality=RENDER_JPEG_QUALITY)
    return buf.getvalue()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:120] or "x"


def reference_image_paths(task: Task, task_dir: Path | None) -> list[tuple[str, Path]]:
    """``(name, path)`` of a task's reference images (``extra.reference_images``, relative to the task file).

    Raises: UrbanArenaError: an image is listed but the task has no folder, or the file is missing.
    """
    names = list((task.extra or {}).get("reference_images") or [])
    out = []
    for name in names:
        if task_dir is None:
            raise UrbanArenaError(f"task {task.task_id!r}: reference image {name!r} but the tasks were not read from a file")
        p = task_dir / PurePosixPath(str(name))
        if not p.is_file():
            raise UrbanArenaError(f"task {task.task_id!r}: reference image {p} not found")
        out.append((str(name), p))
    return out


def _image_of_file(name: str, path: Path) -> ExportedImage:
    data = path.read_bytes()
    with Image.open(io.BytesIO(data)) as im:
        w, h = im.size
    return ExportedImage(data, PurePosixPath(name).name, w, h)


def task_row(task: Task, city: City, start_pano: ExportedImage | None) -> dict[str, Any]:
    """The ``tasks`` row of one task (module docstring)."""
    fam = get_family(task.family)
    node = task.start.node
    lat = lon = None
    if node is not None and node in city.graph.nodes:
        lat, lon = float(city.graph.nodes[node]["lat"]), float(city.graph.nodes[node]["lon"])
    elif task.start.position is not None:
        lat, lon = task.start.position.lat, task.start.position.lon
    return {
        "task_id": task.task_id, "family": task.family, "task_kind": (task.extra or {}).get("task_kind"),
        "category": task.category, "difficulty": task.difficulty,
        "split": str((task.provenance or {}).get("split") or DEFAULT_SPLIT), "instruction": task.instruction,
        "answer": answer_text(task.answer),
        "answer_metric": task.answer_metric, "start_node": node, "start_heading_deg": task.start.heading_deg,
        "start_lat": lat, "start_lon": lon, "goal_nodes": [g.node for g in task.goals if g.node],
        "goal_labels": [g.label for g in task.goals if g.label], "success_radius_m": task.success_radius_m,
        "reference_path": list(task.reference_path), "protocol": fam.default_protocol,
        "max_steps": int(fam.default_max_steps),
        "reference_images": [str(n) for n in (task.extra or {}).get("reference_images") or []],
        "start_panorama": start_pano.cell() if start_pano is not None else None,
        "task_json": json.dumps(task.model_dump(mode="json"), ensure_ascii=False, sort_keys=True),
    }


def write_table(path: Path, rows: list[dict[str, Any]], features: dict[str, dict[str, Any]]) -> Path:
    """Write ``rows`` as Parquet with the ``datasets`` features in the schema metadata; returns the file.

    The file is named ``<path stem>-<first 12 hex of its sha256>.parquet`` and the card names it exactly:
    ``datasets`` keys the cache of a local folder on the card's ``configs`` (datasets 5.2: the same
    patterns after a re-export in place served the earlier rows), so new content means a new key.
    Needs ``pyarrow`` (the ``export`` extra)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:  # pragma: no cover - the export extra is part of `all`
        raise UrbanArenaError("--format hf needs pyarrow: pip install 'urbanarena[export]'") from e
    fields = [pa.field(name, _arrow_type(spec)) for name, spec in features.items()]
    schema = pa.schema(fields, metadata={"huggingface": json.dumps({"info": {"features": features}})})
    table = pa.Table.from_pylist([{k: r.get(k) for k in features} for r in rows], schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    final = path.with_name(f"{path.stem}-{hashlib.sha256(tmp.read_bytes()).hexdigest()[:12]}{path.suffix}")
    tmp.replace(final)
    return final


def _arrow_type(spec: dict[str, Any]):
    import pyarrow as pa

    kind = spec["_type"]
    if kind == "Image":
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if kind == "Sequence":
        return pa.list_(_arrow_type(spec["feature"]))
    return {"string": pa.string(), "float64": pa.float64(), "int64": pa.int64()}[spec["dtype"]]


def city_row(city: City, pano: PanoramaSource | None) -> dict[str, Any]:
    """The ``city`` row: name, hash, licences and attribution, sizes, the metadata as JSON."""
    meta = city.meta
    imagery = meta.imagery or {}
    return {
        "name": meta.name, "content_hash": city.content_hash, "licence": meta.licence,
        "attribution": meta.attribution, "source_kind": (meta.source or {}).get("kind"),
        "imagery_licence": imagery.get("licence") or (pano.licence() if pano is not None else None),
        "imagery_attribution": imagery.get("attribution"),
        "nodes": city.graph.number_of_nodes(), "edges": city.graph.number_of_edges(),
        "metadata_json": json.dumps({"name": meta.name, "source": meta.source, "licence": meta.licence,
                                     "attribution": meta.attribution, "imagery": meta.imagery, "extra": meta.extra},
                                    ensure_ascii=False, sort_keys=True, default=str),
    }


def export_hf(city: City, city_dir: Path | None, tasks: list[Task], task_dir: Path | None, out_dir: str | Path, *,
              panoramas: str = "route", i_hold_the_rights: bool = False, name: str | None = None,
              city_spec: str = "", tasks_spec: str = "", force: bool = False,
              progress: Progress | None = None) -> HubExport:
    """Write the suite as a ``datasets`` folder (module docstring) and its dataset card.

    Args:
        city, city_dir: the city and its saved folder. tasks, task_dir: the tasks and their file's folder.
        out_dir: the folder to write (created; must be empty or absent unless ``force``).
        panoramas: ``start``, ``route`` or ``none``.
        name: dataset name in the card (default ``<city>-<tasks>``).
        city_spec / tasks_spec: the CITY and TASKS arguments (for the card's commands).
        progress: hears each panorama and each task's row (steps ``export panoramas``, ``export tasks``;
            :mod:`urbanarena.progress`).
    Raises:
        UrbanArenaError: ``out_dir`` is a file or a non-empty folder, a reference image is missing, no task.
        ImageryLicenceError: non-redistributable imagery without ``i_hold_the_rights`` (nothing written).
    """
    final = Path(out_dir)
    if final.exists() and (not final.is_dir() or (any(final.iterdir()) and not force)):
        raise UrbanArenaError(f"--out {final} exists and is not an empty folder (use --force to replace it)")
    if name is not None:
        check_name(name, "--name")
    if not tasks:
        raise UrbanArenaError("no task to export")
    nodes = panorama_nodes(tasks, panoramas)
    pano_src = PanoramaSource(city, city_dir, i_hold_the_rights) if nodes else None
    refs = {t.task_id: reference_image_paths(t, task_dir) for t in tasks}  # checks every file before writing
    # everything is written into a hidden sibling folder, renamed to --out once complete (card included): a
    # failure (disk full, kill) leaves no partial --out, and a failure before writing leaves --out as it was
    final.parent.mkdir(parents=True, exist_ok=True)
    out = final.with_name(f".{final.name}.part-{os.getpid()}")
    if out.exists():
        shutil.rmtree(out)
    try:
        out.mkdir()
        result = _write_hf(city, tasks, out, nodes, pano_src, refs, panoramas=panoramas, name=name,
                           city_spec=city_spec, tasks_spec=tasks_spec, progress=progress,
                           render_credits=render_credits_of(task_dir))
        if final.exists():
            shutil.rmtree(final) if any(final.iterdir()) else final.rmdir()
        os.replace(out, final)
    except OSError as e:
        shutil.rmtree(out, ignore_errors=True)
        raise RunIOError(e.filename or out, e.strerror or str(e)) from e
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    result.out_dir = final
    if result.static_file is not None:
        result.static_file = final / result.static_file.relative_to(out)
    return result


def render_credits_of(task_dir: Path | None) -> dict[str, Any] | None:
    """The photographic assets' credits (:func:`urbanarena.render.assets.credits.asset_credits`) when the tasks'
    reference images were drawn in the ``photo`` style: a frozen suite materialized here (its ``check.json``
    names the style, and its images were verified against the suite's pins); ``None`` otherwise."""
    check = task_dir / "check.json" if task_dir is not None else None
    if check is None or not check.is_file():
        return None
    try:
        style = json.loads(check.read_text(encoding="utf-8")).get("render_style")
    except (OSError, ValueError, AttributeError):
        return None
    if style != "photo":
        return None
    from urbanarena.render.assets.credits import asset_credits

    return asset_credits(with_files=True)


def _write_hf(city: City, tasks: list[Task], out: Path, nodes: list[str], pano_src: Any, refs: dict[str, Any], *,
              panoramas: str, name: str | None, city_spec: str, tasks_spec: str,
              progress: Progress | None = None, render_credits: dict[str, Any] | None = None) -> HubExport:
    from urbanarena.runner.dataset_card import dataset_card
    from urbanarena.runner.static_table import static_rows, write_static_tsv

    result = HubExport(out_dir=out)

    pano_images: dict[str, ExportedImage] = {}
    pano_rows = []
    for n in counted(progress, "export panoramas", nodes):
        img = pano_images[n] = pano_src.get(n)  # type: ignore[union-attr]
        d = city.graph.nodes[n]
        pano_rows.append({"node_id": n, "lat": float(d["lat"]), "lon": float(d["lon"]),
                          "centre_bearing_deg": pano_src.centre_bearing_deg(n),  # type: ignore[union-attr]
                          "width": img.width, "height": img.height, "source": pano_src.kind,  # type: ignore[union-attr]
                          "licence": d.get("licence") or pano_src.licence(),  # type: ignore[union-attr]
                          "author": d.get("author"), "source_url": d.get("source_url"), "image": img.cell()})
    result.panoramas = nodes

    by_split: dict[str, list[dict[str, Any]]] = {}
    ref_rows = []
    ref_images: dict[str, list[ExportedImage]] = {}
    for t in counted(progress, "export tasks", tasks):
        row = task_row(t, city, pano_images.get(t.start.node or ""))
        by_split.setdefault(row["split"], []).append(row)
        ref_images[t.task_id] = []
        for i, (rname, p) in enumerate(refs[t.task_id]):
            img = _image_of_file(rname, p)
            ref_images[t.task_id].append(img)
            ref_rows.append({"task_id": t.task_id, "index": i, "name": rname, "image": img.cell()})
    def table(key: str, rel: str, rows: list[dict[str, Any]], features: dict[str, dict[str, Any]]) -> None:
        f = write_table(out / rel, rows, features)
        result.files[key] = f.relative_to(out).as_posix()
        result.bytes_by_table[key] = f.stat().st_size

    for split, rows in sorted(by_split.items()):
        table(f"tasks/{split}", f"tasks/{split}-00000.parquet", rows, TASK_FEATURES)
        result.splits[split] = len(rows)
    result.rows["tasks"] = len(tasks)
    table("reference_images", "reference_images/train-00000.parquet", ref_rows, REFERENCE_FEATURES)
    result.rows["reference_images"] = len(ref_rows)
    table("panoramas", "panoramas/train-00000.parquet", pano_rows, PANORAMA_FEATURES)
    result.rows["panoramas"] = len(pano_rows)
    table("city", "city/train-00000.parquet", [city_row(city, pano_src)], CITY_FEATURES)
    result.rows["city"] = 1

    # our own task file beside it, with its reference images, so `urbanarena run` reads the same tasks
    own = out / "urbanarena"
    for t in tasks:
        for rname, p in refs[t.task_id]:
            dest = own / PurePosixPath(rname)
            confine(own, dest)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest)
    from urbanarena.tasks.schema import CityRef

    TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=tasks).save(own / "tasks.json")

    srows = static_rows(tasks, pano_images, ref_images)
    dataset_name = name or _safe(f"{city.name}-{Path(tasks_spec).stem if tasks_spec else 'tasks'}")
    if srows:
        tsv = out / "vlmevalkit" / f"{dataset_name}-static.tsv"
        confine(out, tsv)
        result.static_file = write_static_tsv(tsv, srows)
        result.static_rows = len(srows)
        result.bytes_by_table["vlmevalkit"] = result.static_file.stat().st_size
    if render_credits is not None:  # every file's licence and authors beside the card's summary
        (out / ASSET_LICENCES).write_text(json.dumps(render_credits, indent=1, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    (out / "README.md").write_text(dataset_card(city, tasks, result, dataset_name, city_spec=city_spec,
                                                tasks_spec=tasks_spec, panoramas=panoramas,
                                                render_credits=render_credits,
                                                pano_licences=sorted({str(city.graph.nodes[n]["licence"]) for n in nodes
                                                                      if city.graph.nodes[n].get("licence")})),
                                   encoding="utf-8")
    return result


__all__ = ["HubExport", "PANORAMA_CHOICES", "answer_text", "export_hf", "panorama_nodes", "task_row", "write_table"]
