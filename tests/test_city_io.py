"""Saved-city format: round trip, order preservation, hash verification, bad directories."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import make_city
from urbanarena.env.motion.base import NavState
from urbanarena.env.motion.heading_hop import CitySeekerHop
from urbanarena.errors import CityFormatError
from urbanarena.world.city_io import load_city, save_city

D = 0.0001


def tie_city():
    # Node A: two edges at azimuths 80 and 100, the heading 90 ties; file order puts Z (100) first.
    return make_city(
        {"A": (0, 0), "Y": (0, D), "Z": (-D, D)},
        [("A", "Z", 100.0, 11.0), ("A", "Y", 80.0, 11.0), ("Y", "A", 260.0, 11.0), ("Z", "A", 280.0, 11.0)],
        walkable_headings_raw={"A": [90.0]},
    )


def test_round_trip_keeps_attributes_order_and_hash(tmp_path):
    city = tie_city()
    assert CitySeekerHop(city).transition(NavState("A", 0), 0).node == "Z"  # tie -> first in file order
    save_city(city, tmp_path / "c")
    back = load_city(tmp_path / "c")
    assert back.content_hash == city.content_hash
    assert list(back.graph.successors("A")) == ["Z", "Y"]
    assert CitySeekerHop(back).transition(NavState("A", 0), 0).node == "Z"
    assert back.node("A")["walkable_headings_raw"] == [90.0]
    assert back.graph.edges["A", "Y"] == {"azimuth_deg": 80.0, "length_m": 11.0}
    assert back.xy("Y") == pytest.approx(city.xy("Y"), abs=1e-6)


def test_tampered_graph_is_refused(tmp_path):
    d = save_city(tie_city(), tmp_path / "c")
    with gzip.open(d / "graph.json.gz", "rt") as f:
        rec = json.load(f)
    rec["edges"][0]["length_m"] = 12.0
    with gzip.open(d / "graph.json.gz", "wt") as f:
        json.dump(rec, f)
    with pytest.raises(CityFormatError, match=r"city\.json.*content_hash"):
        load_city(d)


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda d: (d / "city.json").unlink(), r"city\.json.*not a saved city"),
        (lambda d: (d / "city.json").write_text("{"), r"city\.json.*invalid JSON"),
        (lambda d: (d / "graph.json.gz").write_bytes(b"\x1f\x8b\x08garbage"), r"graph\.json\.gz.*unreadable"),
        (lambda d: (d / "graph.json.gz").unlink(), r"graph\.json\.gz.*missing"),
    ],
)
def test_bad_saved_city(tmp_path, mutate, match):
    d = save_city(tie_city(), tmp_path / "c")
    mutate(d)
    with pytest.raises(CityFormatError, match=match):
        load_city(d)


def test_bad_node_record_named(tmp_path):
    d = save_city(tie_city(), tmp_path / "c")
    with gzip.open(d / "graph.json.gz", "rt") as f:
        rec = json.load(f)
    rec["nodes"][1]["lat"] = None
    with gzip.open(d / "graph.json.gz", "wt") as f:
        json.dump(rec, f)
    with pytest.raises(CityFormatError, match=r"graph\.json\.gz \[node Y\].*lat/lon"):
        load_city(d, verify_hash=False)
