"""CITY and TASKS argument resolution (world/resolve.py, tasks/resolve.py)."""

from __future__ import annotations

import json
import math

import pytest

from runner_util import grid_city, grid_tasks, write_inputs
from urbanarena import paths
from urbanarena.errors import CityFormatError, TaskFormatError, UnknownCityError, UrbanArenaError
from urbanarena.tasks.resolve import resolve_task_set, resolve_tasks
from urbanarena.tasks.schema import CityRef, TaskFile
from urbanarena.world.city_io import save_city
from urbanarena.world.importers import get_importer
from urbanarena.world.resolve import locate_city, resolve_city, resolve_city_source, save_named


def write_cityseeker_source(d, city):
    """A CitySeeker-format directory (connections.json + <dir>_info.csv) for ``city``:
    edge_distance in Web Mercator units = metres / cos(mid latitude)."""
    d.mkdir(parents=True, exist_ok=True)
    g = city.graph
    recs = []
    for u, v, e in g.edges(data=True):
        lat_mid = (g.nodes[u]["lat"] + g.nodes[v]["lat"]) / 2
        recs.append({
            "start_filename": u, "start_heading": 0.0, "start_walkable_headings": g.nodes[u]["walkable_headings_raw"],
            "end_filename": v, "end_heading": 0.0, "end_walkable_headings": g.nodes[v]["walkable_headings_raw"],
            "edge_azimuth": e["azimuth_deg"], "edge_distance": e["length_m"] / math.cos(math.radians(lat_mid)),
        })
    (d / "connections.json").write_text(json.dumps(recs))
    lines = ["filename,lon,lat,year,month,heading,walkable_headings"]
    for n, a in g.nodes(data=True):
        lines.append(f'{n},{a["lon"]},{a["lat"]},2020,1,0.0,"{json.dumps(a["walkable_headings_raw"])}"')
    (d / f"{d.name}_info.csv").write_text("\n".join(lines) + "\n")
    return d


def test_saved_dir_and_cached_name(tmp_path):
    city = grid_city(3)
    d = save_city(city, tmp_path / "saved")
    c1 = resolve_city(str(d))
    assert c1.content_hash == city.content_hash
    save_named(c1, "toytown")
    assert (paths.cities_dir() / "toytown" / "city.json").is_file()
    c2, src = resolve_city_source("toytown")
    assert src.kind == "name" and c2.content_hash == city.content_hash


def test_import_is_cached_and_keyed_by_source_bytes(tmp_path, monkeypatch):
    city = grid_city(3)
    src_dir = write_cityseeker_source(tmp_path / "Toy", city)
    c1, s1 = resolve_city_source(f"cityseeker:{src_dir}")
    assert s1.kind == "import" and s1.directory.parent == paths.imports_dir()
    assert s1.directory.name.startswith("cityseeker-") and len(s1.directory.name) == len("cityseeker-") + 16
    assert sorted(c1.graph.edges) == sorted(city.graph.edges)
    # second load: from the cache, the importer is not called
    imp = get_importer("cityseeker")
    calls = []
    real = imp.import_city
    monkeypatch.setattr(imp, "import_city", lambda p: calls.append(p) or real(p))
    c2, s2 = resolve_city_source(f"cityseeker:{src_dir}")
    assert calls == [] and s2.directory == s1.directory and c2.content_hash == c1.content_hash
    # one changed source byte -> new key -> re-import
    csv = src_dir / "Toy_info.csv"
    csv.write_text(csv.read_text().replace(",2020,", ",2021,", 1))
    c3, s3 = resolve_city_source(f"cityseeker:{src_dir}")
    assert len(calls) == 1 and s3.directory != s1.directory


def test_bad_import_source_raises_and_caches_nothing(tmp_path):
    src_dir = write_cityseeker_source(tmp_path / "Bad", grid_city(2))
    text = (src_dir / "connections.json").read_text()
    (src_dir / "connections.json").write_text(text[: len(text) // 2])
    with pytest.raises(CityFormatError) as ei:
        resolve_city(f"cityseeker:{src_dir}")
    assert "connections.json" in str(ei.value)
    assert [p for p in paths.imports_dir().iterdir()] == []


@pytest.mark.parametrize("spec,needle", [
    ("no-such-city", "unknown city 'no-such-city'"),
    ("cityseeker:/definitely/not/here", "does not exist"),
])
def test_unknown_city(spec, needle):
    with pytest.raises(UnknownCityError) as ei:
        resolve_city(spec)
    assert needle in str(ei.value)


def test_raw_directory_gets_an_import_hint(tmp_path):
    src_dir = write_cityseeker_source(tmp_path / "Raw", grid_city(2))
    with pytest.raises(UnknownCityError, match=r"not a saved city .*cityseeker:"):
        locate_city(str(src_dir))
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(UnknownCityError, match="is a file"):
        locate_city(str(f))


def test_invalid_cache_name():
    with pytest.raises(UnknownCityError, match="invalid city name"):
        save_named(grid_city(2), "../escape")


# --------------------------------------------------------------------- tasks
def test_task_file_resolution_and_hash(tmp_path):
    city_dir, task_path, city, tf = write_inputs(tmp_path, n=3, n_tasks=4)
    ts = resolve_task_set(str(task_path), city)
    assert [t.task_id for t in ts.tasks] == [t.task_id for t in tf.tasks]
    assert ts.source_files == [task_path]
    h1 = ts.source_hash
    assert resolve_task_set(str(task_path), city).source_hash == h1
    task_path.write_text(task_path.read_text().replace('"go to', '"walk to'))
    assert resolve_task_set(str(task_path), city).source_hash != h1


def test_task_file_for_another_city(tmp_path):
    city = grid_city(3)
    other = grid_city(4, name="other")
    p = grid_tasks(other, 2).save(tmp_path / "other.json")
    with pytest.raises(TaskFormatError) as ei:
        resolve_tasks(str(p), city)
    e = ei.value
    assert e.path == str(p) and e.record == "city.content_hash" and "'other'" in str(e)


def test_task_with_unknown_node(tmp_path):
    city = grid_city(3)
    tf = grid_tasks(city, 3)
    tf.tasks[1].goals[0].node = "nowhere"
    p = tf.save(tmp_path / "t.json")
    with pytest.raises(TaskFormatError) as ei:
        resolve_tasks(str(p), city)
    assert ei.value.record == f"task 1 ({tf.tasks[1].task_id})" and "'nowhere'" in str(ei.value)


def test_task_with_unknown_family(tmp_path):
    city = grid_city(3)
    tf = grid_tasks(city, 2)
    tf.tasks[0].family = "nosuchfamily"
    p = tf.save(tmp_path / "t.json")
    with pytest.raises(TaskFormatError, match="unknown task family 'nosuchfamily'"):
        resolve_tasks(str(p), city)


def test_empty_task_file(tmp_path):
    city = grid_city(2)
    p = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=[]).save(tmp_path / "e.json")
    with pytest.raises(TaskFormatError, match="no tasks"):
        resolve_tasks(str(p), city)


def test_default_suite(tmp_path):
    city = grid_city(3)
    with pytest.raises(UrbanArenaError, match="no frozen task suite for city"):
        resolve_tasks("default", city)
    city.meta.extra["default_tasks"] = "suite.json"
    city_dir = save_city(city, tmp_path / "c")
    grid_tasks(city, 3).save(city_dir / "suite.json")
    loaded = resolve_city(str(city_dir))
    ts = resolve_task_set("default", loaded, city_dir)
    assert len(ts.tasks) == 3 and ts.source_files == [city_dir / "suite.json"]


def test_unknown_task_kind_and_missing_file(tmp_path):
    city = grid_city(2)
    with pytest.raises(UrbanArenaError, match="unknown task format 'nosuch'"):
        resolve_tasks("nosuch:/x.json", city)
    with pytest.raises(TaskFormatError, match="file not found"):
        resolve_tasks(str(tmp_path / "missing.json"), city)
    with pytest.raises(TaskFormatError, match="file not found"):
        resolve_tasks(f"cityseeker:{tmp_path / 'missing.json'}", city)
