"""map2seq task import: the real dev files (../shared) and malformed JSON lines."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest

from test_touchdown_navigator import cross_city
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.families import get_family
from urbanarena.tasks.families.map2seq import Map2seqFamily, split_name
from urbanarena.tasks.resolve import resolve_task_set

FAMILY = get_family("map2seq")


def test_family_registration_and_defaults():
    assert isinstance(FAMILY, Map2seqFamily)
    assert FAMILY.action_style == "turn"
    assert FAMILY.default_protocol == "touchdown-v1"
    assert FAMILY.default_max_steps == 55  # ORAR's --max_route_len
    assert FAMILY.foreign_format == "map2seq"
    assert split_name("a/map2seq_seen_dev.jsonl.gz") == "map2seq_seen_dev"
    assert split_name("dev.json") == "dev"


@pytest.mark.shared
@pytest.mark.parametrize("split", ["map2seq_seen_dev", "map2seq_unseen_dev"])
def test_real_dev_files(touchdown_city, shared_dir, split):
    path = shared_dir / "data" / "map2seq" / f"{split}.jsonl.gz"
    with gzip.open(path, "rt") as f:
        raw = [json.loads(line) for line in f]
    tasks = FAMILY.load_foreign(path, touchdown_city)
    assert len(tasks) == len(raw) == 800
    assert len({t.task_id for t in tasks}) == 800
    for t, r in zip(tasks, raw):
        assert t.task_id == f"{split}/{r['id']}-{r['instructions_id']}"
        assert t.family == "map2seq"
        assert t.start.node == r["route_panoids"][0]
        assert t.start.heading_deg == r["start_heading"]
        assert [g.node for g in t.goals] == [r["route_panoids"][-1]]
        assert t.reference_path == r["route_panoids"]
        assert t.instruction == r["navigation_text"]
        assert t.success_radius_m == 25.0
        assert t.provenance["split"] == split and t.provenance["licence"] == "Apache-2.0"
        assert t.city.name == "touchdown" and t.city.content_hash == touchdown_city.content_hash
    # through the TASKS grammar
    ts = resolve_task_set(f"map2seq:{path}", touchdown_city)
    assert [t.task_id for t in ts.tasks] == [t.task_id for t in tasks]


# --------------------------------------------------------------------------- malformed input

GOOD = {"id": 1, "instructions_id": 11, "route_panoids": ["S1", "C", "N1"], "navigation_text": "go north", "start_heading": 1}


def line(**over):
    d = dict(GOOD, **over)
    for k, v in list(d.items()):
        if v is ...:
            del d[k]
    return json.dumps(d)


def good(i):
    return line(id=100 + i, instructions_id=200 + i)


BAD = [
    # (id, file text, bad line)
    ("truncated-json", good(1) + "\n" + line()[:-9] + "\n", 2),
    ("not-an-object", good(1) + "\n" + good(2) + "\n[1, 2]\n", 3),
    ("missing-route", line(route_panoids=...) + "\n", 1),
    ("unknown-panoid", good(1) + "\n" + good(2) + "\n" + line(route_panoids=["S1", "C", "Q9"]) + "\n", 3),
    ("not-a-graph-path", line(route_panoids=["S1", "N1"]) + "\n", 1),
    ("empty-route", good(1) + "\n" + line(route_panoids=[]) + "\n", 2),
    ("nan-start-heading", good(1) + "\n" + line(start_heading=float("nan")) + "\n", 2),
    ("string-start-heading", line(start_heading="north") + "\n", 1),
    ("text-not-string", line(navigation_text=None) + "\n", 1),
    ("bad-id", line(id=None) + "\n", 1),
    ("duplicate-id", good(1) + "\n" + good(2) + "\n" + good(1) + "\n", 3),
    ("empty-file", "\n", 1),
]


@pytest.mark.parametrize("text,bad_line", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_jsonl(tmp_path, text, bad_line):
    city = cross_city(tmp_path)
    p = tmp_path / "map2seq_bad_dev.jsonl"
    p.write_text(text)
    with pytest.raises(TaskFormatError) as ei:
        FAMILY.load_foreign(p, city)
    assert str(p) in str(ei.value)
    assert ei.value.record == f"line {bad_line}"
    assert f"[line {bad_line}]" in str(ei.value)


def test_truncated_gzip_and_plain_gzip_equivalence(tmp_path):
    city = cross_city(tmp_path)
    text = "".join(good(i) + "\n" for i in range(400))
    plain = tmp_path / "map2seq_x_dev.jsonl"
    plain.write_text(text)
    gz = tmp_path / "map2seq_x_dev.jsonl.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    a = FAMILY.load_foreign(plain, city)
    b = FAMILY.load_foreign(gz, city)
    assert len(a) == 400
    assert [t.model_dump(exclude={"provenance"}) for t in a] == [t.model_dump(exclude={"provenance"}) for t in b]
    assert b[5].provenance["file"] == gz.name and b[5].provenance["line"] == 6
    cut = gzip.compress(text.encode())
    cut = cut[: len(cut) * 2 // 3]
    bad = tmp_path / "map2seq_cut_dev.jsonl.gz"
    bad.write_bytes(cut)
    expected = zlib.decompressobj(wbits=31).decompress(cut).count(b"\n") + 1
    with pytest.raises(TaskFormatError) as ei:
        FAMILY.load_foreign(bad, city)
    assert str(bad) in str(ei.value) and ei.value.record == f"line {expected}"
    assert "truncated" in str(ei.value)


def test_missing_file(tmp_path):
    city = cross_city(tmp_path)
    p = Path(tmp_path / "nope.jsonl")
    with pytest.raises(TaskFormatError, match="file not found"):
        FAMILY.load_foreign(p, city)
