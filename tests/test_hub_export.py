"""``urbanarena tasks export --format hf``: the folder ``datasets.load_dataset`` reads offline, and the
static VLMEvalKit table.

City: the cross of ``vlm_util`` (compass-coloured 64 x 32 PNG panoramas, made here, so the test holds
the rights to them). Tasks: the cityseeker task s -> e (split test, provenance without a split) and a
cityarena localization task at s with one reference image (split val). Every exported value is checked
against the task file it came from and the files on disk.
"""

from __future__ import annotations

import base64
import csv
import io
import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from urbanarena.cli.main import app
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile, load_task_file
from urbanarena.world.city_io import save_city
from urbanarena.world.imagery import imagery_of
from vlm_util import cross_city, graph_task

datasets = pytest.importorskip("datasets", reason="the datasets package is not installed (test extra)")

runner = CliRunner()


@pytest.fixture(autouse=True)
def _offline_datasets(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def load(path, *config):
    """``datasets.load_dataset`` with a cache folder of its own (datasets' import-time cache root is shared)."""
    return datasets.load_dataset(str(path), *config, cache_dir=str(path.parent / f"cache-{path.name}-{'-'.join(config)}"))


@pytest.fixture()
def suite(tmp_path):
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    (tmp_path / "assets").mkdir()
    Image.new("RGB", (20, 10), (10, 200, 30)).save(tmp_path / "assets" / "grid.png")
    loc = Task(task_id="loc/1", family="cityarena", city=ref, start=Start(node="s", heading_deg=0.0),
               instruction="Which cell of the grid did you start in? Answer as x:N y:M.", answer="x:1 y:2",
               answer_metric="exact_match", difficulty="easy", provenance={"split": "val"},
               extra={"task_kind": "localization", "reference_images": ["assets/grid.png"]})
    tf = TaskFile(city=ref, tasks=[graph_task(city), loc])
    path = tf.save(tmp_path / "tasks.json")
    return city, city_dir, path, tf


def run_export(city_dir, task_file, out, *extra):
    return runner.invoke(app, ["tasks", "export", "--city", str(city_dir), "--tasks", str(task_file), "--format", "hf",
                               "--out", str(out), *extra], catch_exceptions=False)


def test_export_loads_with_datasets_offline_and_matches_the_task_file(suite, tmp_path):
    city, city_dir, task_file, tf = suite
    out = tmp_path / "hf"
    r = run_export(city_dir, task_file, out, "--i-hold-the-rights")
    assert r.exit_code == 0, r.output
    ds = load(out)
    assert sorted(ds) == ["test", "val"] and ds["test"].num_rows == 1 and ds["val"].num_rows == 1
    by_id = {t.task_id: t for t in tf.tasks}
    for split in ds:
        for row in ds[split]:
            t = by_id[row["task_id"]]
            assert Task.model_validate(json.loads(row["task_json"])) == t  # exact round trip
            assert row["family"] == t.family and row["instruction"] == t.instruction
            assert row["start_node"] == t.start.node and row["start_heading_deg"] == t.start.heading_deg
            assert row["start_lat"] == pytest.approx(city.graph.nodes[t.start.node]["lat"])
            assert row["goal_nodes"] == [g.node for g in t.goals if g.node]
            assert row["reference_path"] == t.reference_path
            assert row["answer"] == t.answer  # plain text ("x:1 y:2"), not JSON-quoted; None for navigation
            # the start panorama is the city's own file, pixel for pixel
            pano = row["start_panorama"]
            assert isinstance(pano, Image.Image) and pano.size == (64, 32)
            src = Image.open(imagery_of(city).path_for(t.start.node, city_dir))
            assert np.array_equal(np.asarray(pano.convert("RGB")), np.asarray(src.convert("RGB")))
    assert ds["test"][0]["protocol"] == "cityseeker-v1" and ds["val"][0]["protocol"] == "cityarena-v1"
    # panoramas of route: start s, path s-c-e, goal e; reference images; city metadata
    panos = load(out, "panoramas")["train"]
    assert panos["node_id"] == ["s", "c", "e"]
    refs = load(out, "reference_images")["train"]
    assert refs["task_id"] == ["loc/1"] and refs[0]["image"].size == (20, 10)
    [c] = load(out, "city")["train"]
    assert c["content_hash"] == city.content_hash and c["nodes"] == city.graph.number_of_nodes()
    # the card: YAML header with configs, licence facts from the city, how to run
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: ") and "config_name: panoramas" in card
    assert "inspect eval urbanarena/suite" in card and "lmms_eval" in card and "urbanarena run" in card
    # our own task file beside the tables reads back as the same tasks
    assert load_task_file(out / "urbanarena" / "tasks.json").tasks == tf.tasks
    assert (out / "urbanarena" / "assets" / "grid.png").read_bytes() == (task_file.parent / "assets" / "grid.png").read_bytes()


def test_static_table_has_vlmevalkit_columns_and_decodable_images(suite, tmp_path):
    city, city_dir, task_file, tf = suite
    out = tmp_path / "hf"
    assert run_export(city_dir, task_file, out, "--i-hold-the-rights").exit_code == 0
    [tsv] = list((out / "vlmevalkit").glob("*.tsv"))
    with tsv.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert [r["task_id"] for r in rows] == ["loc/1"]  # the cityseeker task needs a walk: not static
    [row] = rows
    assert row["index"] == "0" and row["answer"] == "x:1 y:2" and row["category"] == "localization"
    assert row["question"].endswith(tf.tasks[1].instruction)
    images = [s.strip().strip("'") for s in row["image"].strip("[]").split(",")]
    decoded = [Image.open(io.BytesIO(base64.b64decode(b))) for b in images]
    assert [im.size for im in decoded] == [(64, 32), (20, 10)]  # start panorama, then the reference image


def test_non_redistributable_imagery_is_refused_and_nothing_written(suite, tmp_path):
    _, city_dir, task_file, _ = suite
    out = tmp_path / "hf"
    r = run_export(city_dir, task_file, out)
    assert r.exit_code == 2 and "may not be redistributed" in r.stderr
    assert not out.exists()
    # without panoramas the tables are written, start_panorama empty, no static table
    assert run_export(city_dir, task_file, out, "--panoramas", "none").exit_code == 0
    ds = load(out)
    assert ds["test"][0]["start_panorama"] is None and not (out / "vlmevalkit").exists()


def test_reexport_in_place_is_not_served_from_the_datasets_cache(suite, tmp_path):
    """datasets keys a local folder's cache on its card's configs: the exact, content-named files there
    make a re-export with other content a new key (the same patterns served the earlier rows)."""
    _, city_dir, task_file, _ = suite
    out = tmp_path / "hf"
    assert run_export(city_dir, task_file, out, "--i-hold-the-rights").exit_code == 0
    assert isinstance(load(out)["test"][0]["start_panorama"], Image.Image)
    assert run_export(city_dir, task_file, out, "--panoramas", "none").exit_code == 2  # not empty: refused
    assert run_export(city_dir, task_file, out, "--panoramas", "none", "--force").exit_code == 0
    assert load(out)["test"][0]["start_panorama"] is None  # same cache folder as the first load


def test_rendered_osm_city_exports_its_renders_under_odbl(tmp_path):
    """An OSM city without imagery: the start panorama is the renderer's (JPEG of the same pixels within
    JPEG error), its row and the card carry the ODbL and the OpenStreetMap attribution."""
    from generate_util import fixture_city
    from urbanarena.env.observers import rendered_store_for
    from urbanarena.render.scene3d.context import gl_unavailable_reason
    from urbanarena.runner.hub_export import export_hf

    if (reason := gl_unavailable_reason()) is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    city = fixture_city()
    city_dir = save_city(city, tmp_path / "city")
    start, goal = sorted(city.graph.nodes)[40], sorted(city.graph.nodes)[45]
    task = Task(task_id="osm/1", family="cityseeker", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=start, heading_deg=0.0), goals=[Goal(node=goal)], instruction="go",
                success_radius_m=50.0)
    res = export_hf(city, city_dir, [task], None, tmp_path / "hf", panoramas="start")
    assert res.panoramas == [start]
    [p] = load(tmp_path / "hf", "panoramas")["train"]
    assert p["source"] == "rendered" and p["licence"] == "rendered from ODbL-1.0 data"
    direct = np.asarray(rendered_store_for(city).get(start), dtype=np.float64)
    got = np.asarray(p["image"].convert("RGB"), dtype=np.float64)
    assert got.shape == direct.shape and np.abs(got - direct).mean() < 3.0  # JPEG quality 92
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "license: odbl" in card and "© OpenStreetMap contributors" in card


def test_answer_column_is_plain_text_and_the_card_installs_from_the_checkout(suite, tmp_path):
    """Issue 25 item 12: the ``answer`` column holds the answer's text (a place name as it is, not
    ``"\\"Sound Center\\""``), numbers and other values in a stated text form; the card installs urbanarena the
    way README does (from the source checkout with constraints.txt; there is no PyPI package)."""
    from pathlib import Path

    from urbanarena.runner.hub_export import answer_text

    city, city_dir, task_file, tf = suite
    ref = tf.city
    rel = Task(task_id="rel/1", family="cityarena", city=ref, start=Start(node="s", heading_deg=0.0),
               instruction="Which place is one door to the left of the bakery?", answer="Sound Center",
               answer_metric="name_match", extra={"task_kind": "relational"})
    cnt = Task(task_id="cnt/1", family="cityarena", city=ref, start=Start(node="s", heading_deg=0.0),
               instruction="How many cars are parked on this block?", answer=3,
               extra={"task_kind": "object_count"})
    path = TaskFile(city=ref, tasks=[*tf.tasks, rel, cnt]).save(tmp_path / "tasks2.json")
    out = tmp_path / "hf"
    r = run_export(city_dir, path, out, "--i-hold-the-rights", "--panoramas", "none")
    assert r.exit_code == 0, r.output
    ds = load(out)
    answers = {row["task_id"]: row["answer"] for split in ds for row in ds[split]}
    assert answers == {tf.tasks[0].task_id: None, "loc/1": "x:1 y:2", "rel/1": "Sound Center", "cnt/1": "3"}
    # the stated text forms, hand-worked
    assert answer_text("Sound Center") == "Sound Center" and answer_text(None) is None
    assert answer_text(3) == "3" and answer_text(2.5) == "2.5" and answer_text(True) == "true"
    assert answer_text({"y": 4, "x": 3}) == '{"x":3,"y":4}' and answer_text(["a", "b"]) == '["a","b"]'
    card = (out / "README.md").read_text()
    assert "pip install urbanarena\n" not in card and "'urbanarena[inspect]'" not in card
    install = 'python3 -m pip install -c constraints.txt -e ".[all]"'
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert install in readme and install in card  # the card installs the way README does
    assert "not published on PyPI" in card and "Column `answer`: the expected answer as plain text" in card
