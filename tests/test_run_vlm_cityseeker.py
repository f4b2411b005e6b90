"""``urbanarena run --agent vlm-cityseeker`` through the CLI on a synthetic image city.

City: the cross of ``arena_util`` (centre c at (0, 0), arms n/e/s/w 20 m away) with the
compass-coloured panoramas of ``vlm_util``, saved as a city directory. Task (cityseeker family,
default protocol ``cityseeker-v1``): from s to e. Script: at s continue and take the only heading
(A, north); at c continue and take B (the offered headings are 0/90/180/270, so B is east); at e
stop. Five requests: three stop decisions and two choices.
"""

from __future__ import annotations

import json

import pytest

from fakes import FakeOpenAIServer
from runner_util import grid_city
from test_run_vlm_arena import db_rows, invoke
from urbanarena.tasks.schema import CityRef, Goal, Start, Task, TaskFile
from urbanarena.world.city_io import save_city
from vlm_util import GREEN, RED, cross_city, graph_task, phase_script


def stop(v: int) -> str:
    return json.dumps({"observation": "a street", "thoughts": "deciding", "action": v})


def choice(label: str, n: int) -> str:
    return json.dumps({"thoughts": "t", "observation": {chr(65 + i): "view" for i in range(n)}, "action": label,
                       "score": 0.9})


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)


def test_vlm_cityseeker_run_through_the_cli(tmp_path):
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task = graph_task(city)
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash), tasks=[task]).save(
        tmp_path / "tasks.json")
    out = tmp_path / "run"
    srv_script = phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    with FakeOpenAIServer(srv_script) as srv:
        r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker",
                   "--model", f"openai-compatible:{srv.base_url}:fake", "--out", out, "--trace",
                   "-p", "hfov_deg=60", "-p", "crop_size=[40, 20]")
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    assert "1 episodes run, 0 skipped, 0 agent errors (protocol cityseeker-v1" in r.stdout
    [row] = db_rows(out)
    assert json.loads(row["trajectory"]) == ["s", "c", "e"] and row["stop_reason"] == "stop"
    assert json.loads(row["actions"]) == [0, 1, -1] and row["tc_exact"] == 1.0
    # the model columns of the results schema are filled for graph VLM episodes too; the arena ones are not
    assert row["llm_request_count"] == len(log) == 5 and row["model"] == "fake"
    assert row["provider"] == "openai-compatible" and row["max_tokens"] == 2048
    assert row["parse_error_count"] == 0 and row["request_error_count"] == 0 and row["status"] is None
    assert row["total_prompt_tokens"] == sum(FakeOpenAIServer.default_usage(q.body, "")[0] for q in log)
    st = json.loads(row["agent_stats"])
    assert st["fallbacks"] == {"stop": 0, "choice": 0} and st["scores"] == [0.9, 0.9]
    # the second choice request showed four 40 x 20 crops: north red, east green (B was chosen)
    choice_reqs = [q for q in log if "Panorama of the current place" not in json.dumps(q.body)]
    assert [(i.width, i.height) for i in choice_reqs[1].images] == [(40, 20)] * 4
    assert all(abs(a - b) < 8 for a, b in zip(choice_reqs[1].images[0].mean_rgb, RED))
    assert all(abs(a - b) < 8 for a, b in zip(choice_reqs[1].images[1].mean_rgb, GREEN))
    # traces: one line per node, written after each act
    [folder] = list((out / "traces").iterdir())
    lines = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    assert [x["action"] for x in lines] == [0, 1, -1] and [x["observation"]["node"] for x in lines] == ["s", "c", "e"]
    assert lines[1]["agent"]["choice"] == "B" and lines[1]["agent"]["requests"] == 2


def test_vlm_agent_on_a_graph_only_city_is_refused_before_anything_runs(tmp_path):
    city = grid_city(3)
    city_dir = save_city(city, tmp_path / "city")
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    task = Task(task_id="g/1", family="cityseeker", city=ref, start=Start(node="r0c0", heading_deg=0.0),
                goals=[Goal(node="r2c2")], success_radius_m=50.0, instruction="go")
    task_file = TaskFile(city=ref, tasks=[task]).save(tmp_path / "tasks.json")
    with FakeOpenAIServer([]) as srv:
        r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker",
                   "--model", f"openai-compatible:{srv.base_url}:fake", "--out", tmp_path / "run")
        assert len(srv.log) == 0
    assert r.exit_code == 2, r.output
    assert "graph-only" in r.stderr and "needs panorama images" in r.stderr
    assert not (tmp_path / "run").exists()


def test_dry_run_of_the_cityseeker_protocol_matches_a_hand_computation(tmp_path):
    """Per step CitySeeker's protocol sends a stop request (the panorama) and a choice request (the crops):
    2 requests per step under cityseeker-v1 (no re-asks), 35 steps by default. The estimate prices every
    request like the larger of the two first-step requests, here computed from what the server received."""
    import math

    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[graph_task(city)]).save(tmp_path / "tasks.json")
    params = ["-p", "hfov_deg=60", "-p", "crop_size=[40, 20]"]
    with FakeOpenAIServer(phase_script([stop(0)], [choice("A", 1)])) as srv:
        invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker", "--max-steps", 1,
               "--model", f"openai-compatible:{srv.base_url}:fake", "--out", tmp_path / "live", *params)
        stop_req, choice_req = srv.log[0], srv.log[1]
    assert len(stop_req.images) == 1 and len(choice_req.images) == 1

    def tokens(rec):
        chars = sum(len(t) for t in rec.texts())
        return math.ceil(chars / 4) + 4 * 1 + 3 + sum(math.ceil(i.width * i.height / 784) for i in rec.images)

    per_request = max(tokens(stop_req), tokens(choice_req))
    r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker", "--dry-run",
               "--model", "openai-compatible:http://127.0.0.1:9/v1:fake", "--out", tmp_path / "dry", *params)
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "dry").exists()
    assert "requests (max)   70 = 1 tasks x 1 seeds x 35 steps x 2 requests/step" in r.stdout
    assert f"input tokens     {70 * per_request:,} " in r.stdout
    assert f"output tokens    {70 * 2048:,} (upper bound)" in r.stdout


def test_graph_vlm_run_stops_at_the_request_cap_and_resumes_from_the_cache(tmp_path):
    """The graph loop treats a budget cap as a run-level stop too (exit 3, episode not stored); the resume
    replays the 3 paid calls from the cache and sends only the 2 missing ones."""
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[graph_task(city)]).save(tmp_path / "tasks.json")
    out = tmp_path / "run"

    def run(srv, *extra):
        return invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker", "--out", out,
                      "--model", f"openai-compatible:{srv.base_url}:fake", "-p", "hfov_deg=60",
                      "-p", "crop_size=[40, 20]", *extra)

    replies = ([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)])
    with FakeOpenAIServer(phase_script(*replies)) as srv:
        r = run(srv, "--max-requests", 3)
        assert len(srv.log) == 3
    assert r.exit_code == 3, r.output
    assert not db_rows(out)
    with FakeOpenAIServer(phase_script([stop(1)], [choice("B", 4)])) as srv:  # only what is left: choice at c, stop at e
        r = run(srv)
        assert len(srv.log) == 2
    assert r.exit_code == 0, r.output
    [row] = db_rows(out)
    assert json.loads(row["trajectory"]) == ["s", "c", "e"] and row["llm_request_count"] == 5
    assert json.loads(row["agent_stats"])["cache_hits"] == 3
