"""``urbanarena demos export`` accepts any arena suite (issue 25 item 12): navigation kinds give the oracle's
action demonstrations, the question-answering kinds (localization, object_count, relational) one
ground-truth answer turn each, and the command prints the counts of both.

City: the cross of ``vlm_util`` (compass panoramas made here). Tasks: one of each answer-scored kind at ``s``
and a ``vln`` task ``s -> e`` (north 20 m to the junction, then east 20 m: the oracle walks it).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from urbanarena.agents.vlm.parsing import parse_arena_reply
from urbanarena.cli.main import app
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile
from urbanarena.world.city_io import save_city
from vlm_util import cross_city

runner = CliRunner()
ANSWERS = {"loc/1": "x:1 y:2", "cnt/1": "3", "rel/1": "Sound Center"}


@pytest.fixture()
def suite(tmp_path):
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    ref = CityRef(name=city.name, content_hash=city.content_hash)

    def mk(tid, kind, **kw):
        return Task(task_id=tid, family="cityarena", city=ref, start=Start(node="s", heading_deg=0.0),
                    extra={"task_kind": kind}, **kw)

    tasks = [
        mk("loc/1", "localization", instruction="Which grid cell are you in? Answer as x:N y:M.",
           answer=ANSWERS["loc/1"], answer_metric="exact_match"),
        mk("cnt/1", "object_count", instruction="How many cars are parked here?", answer=ANSWERS["cnt/1"]),
        mk("rel/1", "relational", instruction="Which place is one door left of the bakery?",
           answer=ANSWERS["rel/1"], answer_metric="name_match"),
        mk("vln/1", "vln", instruction="Walk north to the junction, turn right and walk to the end.",
           goals=[Goal(node="e")], success_radius_m=10.0),
    ]
    path = TaskFile(city=ref, tasks=tasks).save(tmp_path / "tasks.json")
    return city_dir, path, tasks


def export(city_dir, path, out, *extra):
    return runner.invoke(app, ["demos", "export", "--city", str(city_dir), "--tasks", str(path), "--out", str(out),
                               *extra], catch_exceptions=False)


def test_mixed_suite_gives_answer_turns_and_action_demonstrations_with_counts(suite, tmp_path):
    city_dir, path, tasks = suite
    out = tmp_path / "demos"
    r = export(city_dir, path, out, "--format", "jsonl", "--seeds", "2")
    assert r.exit_code == 0, r.output
    [jsonl] = list(out.glob("*.jsonl"))
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    answers = [x for x in rows if x["turn"] == "answer"]
    actions = [x for x in rows if x["turn"] == "action"]
    # one answer turn per (question task, seed); every other row is a step of the vln task
    assert sorted((x["task_id"], x["seed"]) for x in answers) == sorted((t, s) for t in ANSWERS for s in (0, 1))
    assert {x["task_id"] for x in actions} == {"vln/1"} and len(actions) + len(answers) == len(rows)
    for x in answers:
        parsed = parse_arena_reply(x["reply"], ())
        assert parsed.ok and parsed.action.kind.value == "ANSWER" and parsed.action.answer == ANSWERS[x["task_id"]]
        assert x["action"] == f"ANSWER: {ANSWERS[x['task_id']]}" and x["step"] == 1 and x["done"]
        assert x["score"] == 1.0 and x["gym_action"] is None
        assert x["kind"] == {"loc/1": "localization", "cnt/1": "object_count", "rel/1": "relational"}[x["task_id"]]
        instruction = next(t.instruction for t in tasks if t.task_id == x["task_id"])
        assert instruction in x["system"] + x["prompt"] and x["prompt"].count("<image>") == len(x["images"]) >= 1
        assert all((out / p).is_file() for p in x["images"])
    # the oracle walks s -> c -> e and answers at e: one episode per seed ending with score 1
    for seed in (0, 1):
        ep = [x for x in actions if x["seed"] == seed]
        assert [x["step"] for x in ep] == list(range(1, len(ep) + 1)) and ep[-1]["done"] and ep[-1]["score"] == 1.0
        assert ep[-1]["action"].startswith("ANSWER") and all(x["gym_action"] is not None for x in ep)
    n_steps = len(actions)
    assert (f"{len(rows)} rows of 8 episodes" in r.output
            and f"{n_steps} action-demonstration steps of 2 oracle episodes" in r.output
            and "6 ground-truth answer turns" in r.output), r.output


def test_answer_turns_load_as_a_datasets_folder(suite, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="the 'train' extra (datasets) is not installed")
    city_dir, path, tasks = suite
    out = tmp_path / "demos-hf"
    r = export(city_dir, path, out, "--format", "hf", "--limit", "3")  # the three question tasks only
    assert r.exit_code == 0, r.output
    assert "0 action-demonstration steps of 0 oracle episodes" in r.output and "3 ground-truth answer turns" in r.output
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    [split] = list(ds)
    rows = ds[split]
    assert rows["task_id"] == ["loc/1", "cnt/1", "rel/1"] and set(rows["turn"]) == {"answer"}
    assert rows["gym_action"] == [None, None, None] and rows["score"] == [1.0, 1.0, 1.0]


def test_graph_families_are_still_refused_by_name(suite, tmp_path):
    city_dir, path, tasks = suite
    from vlm_util import graph_task

    from urbanarena.world.city_io import load_city

    city = load_city(city_dir)
    p = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=[graph_task(city)]).save(
        tmp_path / "graph.json")
    r = export(city_dir, p, tmp_path / "g", "--format", "jsonl")
    assert r.exit_code == 2 and "cs/1" in r.output and "cityseeker" in r.output
