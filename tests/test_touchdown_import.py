"""Touchdown/StreetLearn importer: real graph facts (../shared) and malformed input.

Reference values are computed here from the raw ``nodes.txt.gz``/``links.txt.gz``
lines (plain Python, haversine on a sphere) or are the counts published in
``../shared/README.md`` (29,641 nodes, 61,319 links, one component).
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from urbanarena.env.motion.turn_hop import TouchdownHop
from urbanarena.errors import CityFormatError
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.importers import get_importer
from urbanarena.world.importers.touchdown import import_city, source_files

R_EARTH_M = 6371008.8  # mean Earth radius (IUGG), for the independent haversine check


def _raw(shared_dir: Path, name: str) -> list[list[str]]:
    with gzip.open(shared_dir / "data" / "touchdown" / name, "rt") as f:
        return [line.rstrip("\n").split(",") for line in f]


@pytest.fixture(scope="module")
def raw_nodes(shared_dir):
    return _raw(shared_dir, "nodes.txt.gz")


@pytest.fixture(scope="module")
def raw_links(shared_dir):
    return _raw(shared_dir, "links.txt.gz")


# --------------------------------------------------------------------------- real data


@pytest.mark.shared
def test_published_counts_and_facts(touchdown_city, raw_nodes, raw_links):
    city = touchdown_city
    facts = city.meta.extra["facts"]
    # published in ../shared/README.md
    assert city.graph.number_of_nodes() == 29641 == len(raw_nodes) == facts["nodes"]
    assert city.graph.number_of_edges() == 61319 == len(raw_links) == facts["links"]
    assert facts["components"] == 1 == nx.number_weakly_connected_components(city.graph)
    # out-degree histogram and dead ends from the raw lines
    outdeg = Counter(a for a, _, _ in raw_links)
    hist = Counter(outdeg[n[0]] for n in raw_nodes)
    assert facts["out_degree_histogram"] == {str(k): v for k, v in sorted(hist.items())}
    assert facts["nodes_fewer_than_2_out_links"] == sum(v for k, v in hist.items() if k < 2)
    pairs = {(a, b) for a, _, b in raw_links}
    assert facts["non_reciprocal_links"] == sum(1 for a, b in pairs if (b, a) not in pairs)
    lats = [float(n[2]) for n in raw_nodes]
    lons = [float(n[3]) for n in raw_nodes]
    assert facts["bbox"] == [min(lons), min(lats), max(lons), max(lats)]
    assert city.meta.licence == "CC-BY-4.0"
    assert "Touchdown" in city.meta.attribution and "CC BY 4.0" in city.meta.attribution
    assert city.meta.source["kind"] == "touchdown"


@pytest.mark.shared
def test_node_and_edge_attributes_match_raw_files(touchdown_city, raw_nodes, raw_links):
    g = touchdown_city.graph
    for pid, yaw, lat, lng in raw_nodes:
        d = g.nodes[pid]
        assert d["lat"] == float(lat) and d["lon"] == float(lng)
        assert d["heading_deg"] == int(yaw) % 360 and d["pano_yaw_angle"] == int(yaw)
    order = defaultdict(list)
    for a, h, b in raw_links:
        order[a].append(int(h))
        e = g.edges[a, b]
        assert e["link_heading"] == int(h) and e["azimuth_deg"] == float(h)
    for pid, _, _, _ in raw_nodes:
        # link headings in file order: the reference navigator's tie-break order
        assert g.nodes[pid]["walkable_headings_raw"] == order[pid]
        assert g.nodes[pid]["walkable_headings_deg"] == [float(h) for h in order[pid]]
    # lengths: geodesic (WGS84) vs an independent spherical haversine, within the
    # sphere/ellipsoid difference (< 0.6 %) for every link
    pos = {n[0]: (math.radians(float(n[2])), math.radians(float(n[3]))) for n in raw_nodes}
    a = np.array([pos[x[0]] for x in raw_links])
    b = np.array([pos[x[2]] for x in raw_links])
    h = np.sin((b[:, 0] - a[:, 0]) / 2) ** 2 + np.cos(a[:, 0]) * np.cos(b[:, 0]) * np.sin((b[:, 1] - a[:, 1]) / 2) ** 2
    hav = 2 * R_EARTH_M * np.arcsin(np.sqrt(h))
    ours = np.array([g.edges[x[0], x[2]]["length_m"] for x in raw_links])
    assert np.all(np.abs(ours - hav) <= 0.006 * hav + 1e-6)
    assert 9.0 < float(np.median(ours)) < 11.0  # "median link length about 10 m" (README)


@pytest.mark.shared
def test_registry_and_source_files(shared_dir):
    d = shared_dir / "data" / "touchdown"
    mod = get_importer("touchdown")
    assert mod.import_city is import_city
    assert [p.name for p in source_files(d)] == ["nodes.txt.gz", "links.txt.gz"]


@pytest.mark.shared
def test_untakeable_edges_are_the_edges_into_dead_ends(touchdown_city, raw_links):
    outdeg = Counter(a for a, _, _ in raw_links)
    into_dead_end = {(a, b) for a, _, b in raw_links if outdeg[b] < 2}
    all_edges = {(a, b) for a, _, b in raw_links}
    faithful = TouchdownHop(touchdown_city, enter_dead_ends=False).takeable_edges()
    assert all_edges - faithful == into_dead_end
    assert len(into_dead_end) > 0
    assert TouchdownHop(touchdown_city, enter_dead_ends=True).takeable_edges() == all_edges


# --------------------------------------------------------------------------- tiny graphs


def write_graph(d: Path, nodes: str, links: str, gz: bool = False) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    for name, text in (("nodes.txt", nodes), ("links.txt", links)):
        if gz:
            with gzip.open(d / (name + ".gz"), "wt") as f:
                f.write(text)
        else:
            (d / name).write_text(text)
    return d


NODES = "A,10,40.0,-74.0\nB,360,40.0001,-74.0\nC,-20,40.0,-74.0001\n"
LINKS = "A,0,B\nB,180,A\nA,270,C\nC,90,A\n"


def test_small_graph_plain_and_gz_and_graph_subfolder(tmp_path):
    plain = import_city(write_graph(tmp_path / "p", NODES, LINKS))
    gz = import_city(write_graph(tmp_path / "g", NODES, LINKS, gz=True))
    sub = import_city(write_graph(tmp_path / "s" / "graph", NODES, LINKS).parent)
    for c in (plain, gz, sub):
        assert sorted(c.graph.edges) == [("A", "B"), ("A", "C"), ("B", "A"), ("C", "A")]
        # headings: yaw wrapped into [0, 360)
        assert [c.node(n)["heading_deg"] for n in "ABC"] == [10.0, 0.0, 340.0]
        assert c.node("A")["walkable_headings_raw"] == [0, 270]
        # 0.0001 deg of latitude at 40 N: meridian radius of curvature
        # M = a (1 - e2) / (1 - e2 sin^2 phi)^1.5 (WGS84) times the angle
        a, e2, phi = 6378137.0, 0.00669437999014, math.radians(40.00005)
        meridian = a * (1 - e2) / (1 - e2 * math.sin(phi) ** 2) ** 1.5 * math.radians(0.0001)
        assert c.graph.edges["A", "B"]["length_m"] == pytest.approx(meridian, abs=1e-4)
        assert c.graph.edges["A", "B"]["geodesic_azimuth_deg"] == pytest.approx(0.0, abs=1e-9)
        assert c.graph.edges["A", "C"]["geodesic_azimuth_deg"] == pytest.approx(270.0, abs=0.01)
    assert plain.content_hash == gz.content_hash == sub.content_hash


def test_save_load_keeps_link_order_for_tie_breaks(tmp_path):
    # node X: links at 100 and 10 (file order); a start heading of 55 is 45 deg
    # from both, so the reference's tie-break (file order) picks 100.
    nodes = "X,0,40.0,-74.0\nY,0,40.0,-73.9999\nZ,0,40.0001,-74.0\n"
    links = "X,100,Y\nX,10,Z\nY,280,X\nY,0,Z\nZ,190,X\nZ,120,Y\n"
    city = import_city(write_graph(tmp_path / "src", nodes, links))
    saved = load_city(save_city(city, tmp_path / "saved"))
    for c in (city, saved):
        hop = TouchdownHop(c)
        st = hop.transition(hop.start_state("X", 55.0), 0)
        assert (st.node, st.heading_deg) == ("X", 100.0)


def _case(tmp_path, nodes=NODES, links=LINKS):
    return write_graph(tmp_path / "g", nodes, links)


BAD = [
    # (id, nodes text, links text, file name, line)
    ("nodes-wrong-columns", "A,10,40.0,-74.0\nB,0,40.0001\nC,0,40.0,-74.0001\n", LINKS, "nodes.txt", 2),
    ("nodes-nan-lat", "A,10,40.0,-74.0\nB,0,40.0001,-74.0\nC,0,nan,-74.0001\n", LINKS, "nodes.txt", 3),
    ("nodes-lat-out-of-range", "A,10,91.0,-74.0\nB,0,40.0001,-74.0\nC,0,40.0,-74.0001\n", LINKS, "nodes.txt", 1),
    ("nodes-non-numeric-lng", "A,10,40.0,-74.0\nB,0,40.0001,west\nC,0,40.0,-74.0001\n", LINKS, "nodes.txt", 2),
    ("nodes-inf-yaw", "A,10,40.0,-74.0\nB,inf,40.0001,-74.0\nC,0,40.0,-74.0001\n", LINKS, "nodes.txt", 2),
    ("nodes-yaw-far-out-of-range", "A,10,40.0,-74.0\nB,1000,40.0001,-74.0\nC,0,40.0,-74.0001\n", LINKS, "nodes.txt", 2),
    ("nodes-duplicate-panoid", "A,10,40.0,-74.0\nB,0,40.0001,-74.0\nA,0,40.0,-74.0001\n", LINKS, "nodes.txt", 3),
    ("nodes-empty-file", "", LINKS, "nodes.txt", 1),
    ("node-without-links", NODES + "D,0,40.001,-74.0\n", LINKS, "nodes.txt", 4),
    ("links-unknown-panoid", NODES, "A,0,B\nB,180,Q\n", "links.txt", 2),
    ("links-duplicate-link", NODES, "A,0,B\nB,180,A\nA,1,B\n", "links.txt", 3),
    ("links-duplicate-heading", NODES, "A,0,B\nA,0,C\n", "links.txt", 2),
    ("links-non-integer-heading", NODES, "A,12.5,B\n", "links.txt", 1),
    ("links-heading-out-of-range", NODES, "A,0,B\nB,360,A\n", "links.txt", 2),
    ("links-self-link", NODES, "A,0,B\nB,180,B\n", "links.txt", 2),
    ("links-wrong-columns", NODES, "A,0,B\nB,180\n", "links.txt", 2),
    ("links-empty-file", NODES, "\n\n", "links.txt", 1),
]


@pytest.mark.parametrize("nodes,links,fname,line", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_text_files(tmp_path, nodes, links, fname, line):
    d = _case(tmp_path, nodes, links)
    with pytest.raises(CityFormatError) as ei:
        import_city(d)
    msg = str(ei.value)
    assert str(d / fname) in msg
    assert f"[line {line}]" in msg
    assert ei.value.record == f"line {line}"


def test_truncated_gzip_names_first_incomplete_line(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "nodes.txt").write_text(NODES)
    body = LINKS * 1  # 4 good lines, then many filler links between two new nodes
    extra_nodes = "".join(f"N{i},0,40.{i:04d},-74.0\n" for i in range(1, 3000))
    (d / "nodes.txt").write_text(NODES + extra_nodes)
    filler = "".join(f"N{i},0,N{i + 1}\nN{i + 1},180,N{i}\n" for i in range(1, 2999))
    full = gzip.compress((body + filler).encode())
    cut = full[: len(full) // 2]
    (d / "links.txt.gz").write_bytes(cut)
    prefix = zlib.decompressobj(wbits=31).decompress(cut)
    expected_line = prefix.count(b"\n") + 1
    assert 1 < expected_line < (body + filler).count("\n")
    with pytest.raises(CityFormatError) as ei:
        import_city(d)
    assert str(d / "links.txt.gz") in str(ei.value)
    assert ei.value.record == f"line {expected_line}"
    assert "truncated" in str(ei.value)


def test_non_utf8_and_missing_files(tmp_path):
    d = tmp_path / "g"
    d.mkdir()
    (d / "nodes.txt").write_bytes(b"A,10,40.0,-74.0\nB,0,40.0001,-74.0\nC\xff,0,40.0,-74.0001\n")
    (d / "links.txt").write_text(LINKS)
    with pytest.raises(CityFormatError) as ei:
        import_city(d)
    assert str(d / "nodes.txt") in str(ei.value) and ei.value.record == "line 3"
    (d / "links.txt").unlink()
    with pytest.raises(CityFormatError, match="links.txt or links.txt.gz not found"):
        import_city(d)
    with pytest.raises(CityFormatError, match="not a directory"):
        import_city(tmp_path / "nowhere")
