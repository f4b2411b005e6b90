"""Property-based tests of the task sources (issue 18): our task-file schema, map2seq JSON lines and
CitySeeker questions, mutated (fuzz_util.py), must resolve to valid tasks or raise a TaskFormatError naming
the file, never another exception, never a hang (10 s a case). ``pytest -s`` prints the outcome tally."""

from __future__ import annotations

import gzip
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fuzz_util import Tally, check_outcome, tallies, damaged_bytes, dumps, fuzz_settings, mutated_json
from runner_util import grid_city, grid_tasks
from test_cityseeker_badinput import edges, questions
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.resolve import resolve_task_set, task_hash

pytestmark = pytest.mark.timeout(600)


tally = pytest.fixture(scope="module")(tallies)


@pytest.fixture(scope="module")
def grid():
    city = grid_city(4)
    return city, json.loads(grid_tasks(city, 3).model_dump_json())


def valid_tasks(city):
    def check(ts):
        assert ts.tasks
        for t in ts.tasks:
            task_hash(t)  # canonical JSON: finite numbers, encodable text
            assert t.start.node is None or t.start.node in city
            for g in t.goals:
                assert g.node is None or g.node in city
                for p in [g.position] if g.position is not None else []:
                    assert math.isfinite(p.lat) and math.isfinite(p.lon)
            assert all(n in city for n in t.reference_path)
            assert t.success_radius_m is None or (math.isfinite(t.success_radius_m) and t.success_radius_m >= 0)
    return check


@fuzz_settings()
@given(data=st.data())
def test_task_file_survives_mutations(tally, grid, data):
    city, doc = grid
    blob = data.draw(damaged_bytes(dumps(data.draw(mutated_json(doc)))))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "tasks.json"
        p.write_bytes(blob)
        out = check_outcome(lambda: resolve_task_set(str(p), city), [p], valid_tasks(city), (TaskFormatError,))
    tally.setdefault("task file", Tally("task file")).add(out)


@pytest.fixture(scope="module")
def touchdown_city():
    from test_fuzz_importers import TD_LINKS, TD_NODES
    from urbanarena.world.importers.touchdown import import_city

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "nodes.txt").write_text("\n".join(",".join(r) for r in TD_NODES) + "\n")
        (d / "links.txt").write_text("\n".join(",".join(r) for r in TD_LINKS) + "\n")
        return import_city(d)


M2S = [{"id": 7, "instructions_id": 1, "route_panoids": ["a", "b", "c", "d"], "navigation_text": "Go north, then east.",
        "start_heading": 0}, {"id": "8", "instructions_id": 2, "route_panoids": ["d", "c"],
                              "navigation_text": "Turn around.", "start_heading": 180.0}]


@fuzz_settings()
@given(data=st.data())
def test_map2seq_tasks_survive_mutations(tally, touchdown_city, data):
    recs = data.draw(mutated_json(M2S))
    lines = (b"\n".join(dumps(r) for r in recs) if isinstance(recs, list) else dumps(recs)) + b"\n"
    blob = data.draw(damaged_bytes(lines))
    gz = data.draw(st.booleans())
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / ("m2s_dev.jsonl.gz" if gz else "m2s_dev.jsonl")
        p.write_bytes(gzip.compress(blob) if gz else blob)
        out = check_outcome(lambda: resolve_task_set(f"map2seq:{p}", touchdown_city), [p], valid_tasks(touchdown_city),
                            (TaskFormatError,))
    tally.setdefault("map2seq", Tally("map2seq")).add(out)


@pytest.fixture(scope="module")
def cityseeker_city():
    from urbanarena.world.importers.cityseeker import import_city

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "tiny1"
        d.mkdir()
        (d / "connections.json").write_text(json.dumps(edges()))
        (d / "question.json").write_text(json.dumps(questions(), ensure_ascii=False))
        return import_city(d)


@fuzz_settings()
@given(data=st.data())
def test_cityseeker_questions_survive_mutations(tally, cityseeker_city, data):
    blob = data.draw(damaged_bytes(dumps(data.draw(mutated_json(questions())))))
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "question.json"
        p.write_bytes(blob)
        out = check_outcome(lambda: resolve_task_set(f"cityseeker:{p}", cityseeker_city), [p],
                            valid_tasks(cityseeker_city), (TaskFormatError,))
    tally.setdefault("cityseeker questions", Tally("cityseeker questions")).add(out)
