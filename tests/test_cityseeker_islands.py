"""Issue 15, defect 2: a CitySeeker city holding islands (graph components no route touches)
imports: the islands are dropped with a warning and counted, every node a task can reach is kept.

Tested on a copy of the real HongKong_6 release with an added three-node island."""

from __future__ import annotations

import gzip
import json
import logging
import shutil

import pytest
from typer.testing import CliRunner

from urbanarena.cli.main import app
from urbanarena.tasks.families import get_family
from urbanarena.world.importers.cityseeker import import_city


WALK = {"isl_a.jpg": [90.0], "isl_b.jpg": [270.0, 0.0], "isl_c.jpg": [180.0]}


def _edge(a, b, az):
    return {"start_filename": a, "start_heading": 0.0, "start_walkable_headings": WALK[a],
            "end_filename": b, "end_heading": 0.0, "end_walkable_headings": WALK[b],
            "edge_azimuth": az, "edge_distance": 12.0}


@pytest.fixture(scope="module")
def hk6_dir(shared_dir):
    return shared_dir / "data" / "cityseeker" / "HongKong_6"


def test_hk6_with_an_island_imports_and_keeps_every_reachable_node(hk6_dir, tmp_path, caplog):
    edges = json.loads(gzip.decompress((hk6_dir / "connections.json.gz").read_bytes()))
    island = [_edge("isl_a.jpg", "isl_b.jpg", 90.0), _edge("isl_b.jpg", "isl_a.jpg", 270.0),
              _edge("isl_b.jpg", "isl_c.jpg", 0.0), _edge("isl_c.jpg", "isl_b.jpg", 180.0)]
    d = tmp_path / "HongKong_6"
    d.mkdir()
    (d / "connections.json.gz").write_bytes(gzip.compress(json.dumps(edges[:100] + island + edges[100:]).encode()))
    shutil.copy(hk6_dir / "question.json", d / "question.json")
    with caplog.at_level(logging.WARNING):
        city = import_city(d)
    assert "dropped 1 component(s)" in caplog.text and "connections.json.gz" in caplog.text
    assert city.meta.extra["dropped_islands"] == {"components": 1, "nodes": 3, "edges": 4, "examples": ["isl_a.jpg"]}
    ref = import_city(hk6_dir)
    assert "dropped_islands" not in ref.meta.extra
    # the same graph as the release without the island: every node, edge and position
    assert list(city.graph.nodes) == list(ref.graph.nodes) and city.graph.number_of_nodes() == 3601
    assert list(city.graph.edges) == list(ref.graph.edges)
    assert all(city.graph.nodes[n]["lat"] == pytest.approx(ref.graph.nodes[n]["lat"], abs=1e-9)
               and city.graph.nodes[n]["lon"] == pytest.approx(ref.graph.nodes[n]["lon"], abs=1e-9) for n in ref.graph)
    tasks = get_family("cityseeker").load_foreign(d / "question.json", city)
    assert len(tasks) == 177

    r = CliRunner().invoke(app, ["city", "info", f"cityseeker:{d}", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    info = json.loads(r.stdout)
    assert info["dropped_islands"]["nodes"] == 3 and info["nodes"] == 3601
