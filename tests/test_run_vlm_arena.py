"""``urbanarena run --agent vlm-arena`` end to end: a hand-written ``cityarena`` task file on a
synthetic city with synthetic panoramas, a scripted fake OpenAI-compatible server, the real
``openai`` SDK, the CLI, the store, the results-schema-v3 columns and the cityarena-csv export.

City: the T junction of ``arena_util`` (stem s(0,-20) - j(0,0); arms w(-20,0), e(20,0)) with
the compass-coloured panoramas of ``vlm_util``. Tasks:

* ``t/loc`` — localization (exact_match ``x:1 y:2``) with one reference image (50 x 40 px,
  colour (10, 200, 30)); the model answers ``x:1 y:2`` at once;
* ``t/land`` — landmark search with language to node e (coordinate_match, 10 m) with the
  current-location map; the model walks W LARGE x3 (7 + 7 + 6 m: the third stops at the
  junction), D LARGE, RIGHT (commits to the east arm), W LARGE x3 (7 + 7 + 6 m: stops at e,
  a dead end) and answers: final position (20, 0) = the goal, distance 0.

The fake server answers by (task, step): the reply is a function of the request only, so
concurrent episodes (``--workers 2``: threads) get the same replies as sequential ones.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from fakes import FakeOpenAIServer
from urbanarena.cli.main import app
from urbanarena.runner.store import TIME_COLUMNS
from urbanarena.world.city_io import save_city
from vlm_util import reply, strip_volatile, t_city

runner = CliRunner()

REF_RGB = (10, 200, 30)
REF_SIZE = (50, 40)  # width, height
PLANS = {
    "Localise yourself": [reply("ANSWER", "x:1 y:2", thought="I know this corner")],
    "Walk to the east end": [
        reply("W", "LARGE", memory="heading north on the stem"), reply("W", "LARGE"), reply("W", "LARGE"),
        reply("D", "LARGE"), reply("RIGHT"), reply("W", "LARGE"), reply("W", "LARGE"), reply("W", "LARGE"),
        reply("ANSWER", "I am at the east end"),
    ],
}
TASK_OF = {"Localise yourself": "t/loc", "Walk to the east end": "t/land"}

#: results.csv header of 360CityArena's results schema v3 (docs/results_schema.md), copied from the document
SCHEMA_V3 = (
    "timestamp run_id experiment_id task_id task_type difficulty map_id landmark model provider pretrained "
    "max_tokens temperature validation_model validation_provider validation_pretrained status scored_success "
    "is_correct validation_available completed_by_answer evaluation_metric evaluation_score steps act_requests "
    "elapsed_seconds final_action final_position_x final_position_z final_segment_path user_answer expected "
    "distance_to_goal validation_threshold message stop_reason_detail llm_request_count llm_error_count "
    "parse_error_count invalid_action_count request_error_count total_prompt_tokens total_completion_tokens "
    "total_tokens total_llm_latency_seconds avg_llm_latency_seconds last_finish_reason last_response_model "
    "last_error_type last_error_message artifact_dir"
).split()


# ------------------------------------------------------------------ helpers (also used by test_run_vlm_replay)
def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def body_texts(body) -> list[str]:
    out = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        else:
            out += [p["text"] for p in c or [] if p.get("type") == "text"]
    return out


def task_and_step(body) -> tuple[str, int]:
    """(task key of PLANS, step number) of a recorded request body."""
    system = body["messages"][0]["content"]
    key = next(k for k in PLANS if k in system)
    step = int(re.search(r"This is step (\d+)\.", "\n".join(body_texts(body))).group(1))
    return key, step


def script(body, n):
    key, step = task_and_step(body)
    return PLANS[key][step - 1]


def make_inputs(root: Path) -> tuple[Path, Path]:
    """Saved T-junction city with panoramas and the hand-written task file; returns (city_dir, task_file)."""
    city = t_city(root)
    city_dir = save_city(city, root / "city")
    (root / "refs").mkdir()
    Image.fromarray(np.full((REF_SIZE[1], REF_SIZE[0], 3), REF_RGB, np.uint8)).save(root / "refs" / "grid.png")
    ref = {"name": city.name, "content_hash": city.content_hash}
    tasks = {"format": "urbanarena-tasks", "schema_version": 1, "city": ref, "tasks": [
        {"task_id": "t/loc", "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
         "instruction": "Localise yourself on the 5 x 5 grid map and answer as x:N y:M.",
         "answer": "x:1 y:2", "answer_metric": "exact_match", "difficulty": "easy", "category": "localization",
         "extra": {"task_kind": "localization", "reference_images": ["refs/grid.png"], "map_id": "grid-7"}},
        {"task_id": "t/land", "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
         "goals": [{"node": "e", "label": "the east end"}], "difficulty": "medium", "category": "landmark",
         "instruction": "Walk to the east end of the street, then answer.",
         "extra": {"task_kind": "landmark_language", "requires_current_location": True}},
    ]}
    task_file = root / "tasks.json"
    task_file.write_text(json.dumps(tasks), encoding="utf-8")
    return city_dir, task_file


def run_args(city_dir, task_file, out, srv_url, *extra):
    return ["run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-arena",
            "--model", f"openai-compatible:{srv_url}:fake", "--out", out, *extra]


def db_rows(run_dir: Path) -> list[dict]:
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM episodes ORDER BY task_id, seed")]
    con.close()
    return rows


def stable(row: dict, drop_stats: tuple[str, ...] = ()) -> dict:
    """A store row without the columns that legitimately differ between runs (times, latencies)."""
    out = {}
    for k, v in row.items():
        if k in TIME_COLUMNS:
            continue
        if k in ("agent_stats", "details", "metrics", "trajectory", "actions") and v is not None:
            v = strip_volatile(json.loads(v))
            if k == "agent_stats":
                for s in drop_stats:
                    v.pop(s, None)
        out[k] = v
    return out


# ------------------------------------------------------------------ fixtures
@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("arena_run")
    city_dir, task_file = make_inputs(root)
    return root, city_dir, task_file


@pytest.fixture(scope="module")
def full_run(inputs):
    """Two seeds, two concurrent episodes (threads), traces on; the server's log is kept."""
    root, city_dir, task_file = inputs
    out = root / "run"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2, "--trace"))
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    return out, log, r


# ------------------------------------------------------------------ tests
def test_full_run_stores_the_episodes_with_their_scores(full_run):
    out, log, r = full_run
    assert "4 episodes run, 0 skipped, 0 agent errors (protocol cityarena-v1" in r.stdout
    rows = db_rows(out)
    assert [(x["task_id"], x["seed"]) for x in rows] == [("t/land", 0), ("t/land", 1), ("t/loc", 0), ("t/loc", 1)]
    by_task = {}
    for rec in log:
        key, step = task_and_step(rec.body)
        by_task.setdefault(TASK_OF[key], []).append(rec)
    assert len(by_task["t/loc"]) == 2 and len(by_task["t/land"]) == 18  # 1 and 9 requests per episode, 2 seeds
    for x in rows:
        assert x["family"] == "cityarena" and x["protocol"] == "cityarena-v1" and x["agent"] == "vlm-arena"
        assert x["status"] == x["stop_reason"] == "ANSWER" and x["error"] is None
        assert x["scored_success"] == 1 and x["is_correct"] == 1 and x["completed_by_answer"] == 1
        assert x["evaluation_score"] == 1.0 and x["validation_available"] == 1
        assert x["model"] == "fake" and x["provider"] == "openai-compatible"
        assert x["max_tokens"] == 8192 and x["temperature"] == 1.0  # cityarena-v1's generation preset
        assert x["parse_error_count"] == 0 and x["invalid_action_count"] == 0 and x["llm_error_count"] == 0
        assert x["request_error_count"] == 0 and x["last_finish_reason"] == "stop"
        # tokens: the server's own usage of this episode's requests (both seeds send identical bodies)
        recs = by_task[x["task_id"]]
        usage = [FakeOpenAIServer.default_usage(q.body, script(q.body, 0)) for q in recs]
        assert x["total_prompt_tokens"] == sum(u[0] for u in usage) // 2
        assert x["total_completion_tokens"] == sum(u[1] for u in usage) // 2
        assert x["total_tokens"] == x["total_prompt_tokens"] + x["total_completion_tokens"]
        assert x["artifact_dir"] == f"traces/{x['task_id'].replace('/', '_')}__s{x['seed']}__{x['config_hash'][:12]}"
    land = [x for x in rows if x["task_id"] == "t/land"]
    for x in land:
        # hand-worked walk (module docstring): the goal e at (20, 0) is reached exactly
        assert x["steps"] == x["act_requests"] == x["llm_request_count"] == 9
        assert json.loads(x["actions"]) == ["W LARGE"] * 3 + ["D LARGE", "RIGHT"] + ["W LARGE"] * 3 + [
            "ANSWER: I am at the east end"]
        assert x["final_position_x"] == pytest.approx(20.0, abs=1e-6)
        assert x["final_position_z"] == pytest.approx(0.0, abs=1e-6)
        assert x["distance_to_goal"] == pytest.approx(0.0, abs=1e-6) and x["validation_threshold"] == 10.0
        assert x["final_segment_path"] == "e" and x["final_action"] == "ANSWER"
        assert x["evaluation_metric"] == "coordinate_match" and x["task_type"] == "LandmarkSearchWithLanguage"
        assert x["landmark"] == "the east end"
        details = json.loads(x["details"])
        # (the saved city's node metres come back from WGS84 within a nanometre)
        assert np.allclose(details["positions"], [[0, -20], [0, -13], [0, -6], [0, 0], [0, 0], [0, 0], [7, 0],
                                                  [14, 0], [20, 0], [20, 0]], atol=1e-6)
        assert json.loads(x["trajectory"])[0] == "s" and json.loads(x["trajectory"])[-1] == "e"
        assert details["env_counters"]["blocked_moves"] == 2
    for x in (x for x in rows if x["task_id"] == "t/loc"):
        assert x["steps"] == 1 and x["user_answer"] == "x:1 y:2" and x["expected"] == "x:1 y:2"
        assert x["evaluation_metric"] == "exact_match" and x["task_type"] == "Localization" and x["map_id"] == "grid-7"
        assert x["final_position_x"] == pytest.approx(0.0, abs=1e-6)
        assert x["final_position_z"] == pytest.approx(-20.0, abs=1e-6) and x["final_segment_path"] == "s"
    # what the model saw: 640 x 360 view; the reference image (localization); the 640 x 640 map (landmark)
    for q in by_task["t/loc"]:
        assert [(i.width, i.height) for i in q.images] == [(640, 360), REF_SIZE]
        assert np.allclose(q.images[1].mean_rgb, REF_RGB, atol=6)
    for q in by_task["t/land"]:
        assert [(i.width, i.height) for i in q.images] == [(640, 360), (640, 640)]


def test_run_json_records_prompt_and_task_catalog_hashes(full_run, inputs):
    out, _, _ = full_run
    meta = json.loads((out / "run.json").read_text())
    from urbanarena.agents.vlm import ArenaReActAgent

    assert meta["prompt_hash"] == ArenaReActAgent("openai-compatible:http://127.0.0.1:9/v1:fake").prompt_hash
    assert re.fullmatch(r"[0-9a-f]{64}", meta["task_catalog_hash"])
    assert meta["backend"] == "threads" and meta["status"] == "finished" and meta["trace"] is True
    assert meta["model_runtime"]["cache"]["mode"] == "read-write"
    assert meta["model_runtime"]["cache"]["path"] == str((out / "responses.sqlite").absolute())


def test_task_catalog_hash_follows_the_reference_image_bytes(inputs, tmp_path):
    from urbanarena.runner.driver import RunRequest, prepare

    _, city_dir, task_file = inputs
    local = tmp_path / "copy"
    (local / "refs").mkdir(parents=True)
    (local / "tasks.json").write_text(task_file.read_text())
    (local / "refs" / "grid.png").write_bytes((task_file.parent / "refs" / "grid.png").read_bytes())
    req = RunRequest(city=str(city_dir), tasks=str(local / "tasks.json"), agent="vlm-arena", out=tmp_path / "o",
                     model="openai-compatible:http://127.0.0.1:9/v1:fake")
    h1 = prepare(req).task_catalog_hash
    Image.fromarray(np.full((REF_SIZE[1], REF_SIZE[0], 3), (0, 0, 0), np.uint8)).save(local / "refs" / "grid.png")
    h2 = prepare(req).task_catalog_hash
    assert h1 != h2 and not (tmp_path / "o").exists()
    assert h1 == prepare(RunRequest(**{**req.__dict__, "tasks": str(task_file)})).task_catalog_hash


def test_traces_hold_every_step_and_its_images(full_run):
    out, _, _ = full_run
    folder = out / "traces" / next(p.name for p in (out / "traces").iterdir() if p.name.startswith("t_land__s1__"))
    lines = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == list(range(1, 10))
    assert [x["action"] for x in lines][:5] == ["W LARGE", "W LARGE", "W LARGE", "D LARGE", "RIGHT"]
    assert [x["outcome"]["moved_m"] for x in lines][:3] == [7.0, 7.0, 6.0] and lines[2]["outcome"]["blocked"]
    assert lines[0]["agent"]["requests"] == 1 and lines[0]["agent"]["action"] == "W LARGE"
    assert lines[-1]["outcome"]["stop_reason"] == "ANSWER"
    for x in lines:
        assert x["images"] == [f"images/step_{x['step']:04d}_view.png", f"images/step_{x['step']:04d}_map.png"]
        for rel in x["images"]:
            assert (folder / rel).is_file()
    view = np.asarray(Image.open(folder / "images" / "step_0001_view.png"))
    # facing north: the central half of the 90-degree view lies inside the red (north) sector
    assert view.shape == (360, 640, 3) and np.allclose(view[:, 160:480].reshape(-1, 3).mean(0), (255, 0, 0), atol=3)
    loc = next(p for p in (out / "traces").iterdir() if p.name.startswith("t_loc__s0__"))
    first = json.loads((loc / "steps.jsonl").read_text().splitlines()[0])
    assert first["images"] == ["images/step_0001_view.png", "images/reference_0.png"]


def test_summary_and_cityarena_csv_export(full_run, tmp_path):
    out, _, _ = full_run
    r = invoke("summary", out, "--json", "--resamples", 100)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["episodes"] == 4 and s["missing_scores"] == 0 and s["family"] == "cityarena"
    assert s["metrics"]["evaluation_score"] == 100.0 and s["metrics"]["scored_success"] == 100.0
    assert s["metrics"]["steps"] == pytest.approx((9 + 9 + 1 + 1) / 4)
    assert s["by_category"]["landmark"]["metrics"]["distance_to_goal"] == pytest.approx(0.0, abs=1e-6)
    csv_path = tmp_path / "results.csv"
    r = invoke("export", out, "--format", "cityarena-csv", "--out", csv_path)
    assert r.exit_code == 0, r.output
    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == SCHEMA_V3
    recs = [dict(zip(rows[0], x)) for x in rows[1:]]
    assert sorted((x["task_id"], x["status"], x["scored_success"], x["evaluation_score"]) for x in recs) == [
        ("t/land", "ANSWER", "true", "1.0")] * 2 + [("t/loc", "ANSWER", "true", "1.0")] * 2
    land = next(x for x in recs if x["task_id"] == "t/land")
    assert math.isclose(float(land["final_position_x"]), 20.0, abs_tol=1e-6)
    assert math.isclose(float(land["final_position_z"]), 0.0, abs_tol=1e-6)
    assert land["run_id"] == out.name and land["steps"] == "9" and land["llm_request_count"] == "9"
    assert land["task_type"] == "LandmarkSearchWithLanguage" and land["provider"] == "openai-compatible"
    text = csv_path.read_text()
    assert str(out.parent) not in text and "data:image" not in text and "Walk to the east end" not in text


def test_same_seed_and_script_give_identical_store_rows(inputs, tmp_path):
    _, city_dir, task_file = inputs
    rows = []
    for name in ("a", "b"):
        with FakeOpenAIServer(script) as srv:
            r = invoke(*run_args(city_dir, task_file, tmp_path / name, srv.base_url, "--seeds", 2, "--workers", 2,
                                 "--cache", "off"))
        assert r.exit_code == 0, r.output
        rows.append(db_rows(tmp_path / name))
    a, b = ([stable(x) for x in rs] for rs in rows)
    assert len(a) == 4 and a == b
    assert {x["config_hash"] for x in rows[0]} == {x["config_hash"] for x in rows[1]}


def _expected_tokens(rec) -> tuple[int, int, int]:
    """(input tokens, image tokens, images) of one request by hand: text = ceil(chars / 4) + 4 per message
    (system + user) + 3; each image ceil(W * H / 784) (the price table's area rule for OpenAI-compatible servers:
    784 px per token, no size cap below 12,845,056 px)."""
    chars = sum(len(t) for t in body_texts(rec.body))
    img = sum(math.ceil(i.width * i.height / 784) for i in rec.images)
    return math.ceil(chars / 4) + 4 * 2 + 3 + img, img, len(rec.images)


def test_dry_run_prints_the_hand_computed_estimate(full_run, inputs, tmp_path):
    _, log, _ = full_run
    _, city_dir, task_file = inputs
    out = tmp_path / "dry"
    r = invoke(*run_args(city_dir, task_file, out, "http://127.0.0.1:9/v1", "--seeds", 3, "--dry-run"))
    assert r.exit_code == 0, r.output
    assert not out.exists()
    # per task: its first request as the server received it (step 1)
    first = {TASK_OF[task_and_step(q.body)[0]]: q for q in log if task_and_step(q.body)[1] == 1}
    seeds, steps, per_step = 3, 50, 4  # cityarena-v1: 50 steps, 1 request + 3 re-requests per step
    n = seeds * steps * per_step
    tin = sum(n * _expected_tokens(first[t])[0] for t in ("t/loc", "t/land"))
    timg = sum(n * _expected_tokens(first[t])[1] for t in ("t/loc", "t/land"))
    images = sum(n * _expected_tokens(first[t])[2] for t in ("t/loc", "t/land"))
    requests = 2 * n
    text = r.stdout
    assert f"requests (max)   {requests:,} = 2 tasks x 3 seeds x 50 steps x 4 requests/step" in text
    assert f"images           {images:,}" in text
    assert f"input tokens     {tin:,} (images {timg:,})" in text
    assert f"output tokens    {requests * 8192:,} (upper bound)" in text
    assert "cost (max)       $0.00" in text and "openai-compatible:fake (price entry: default)" in text


def test_dry_run_with_a_priced_model(inputs, tmp_path, monkeypatch):
    """A user-edited price table prices the estimate: cost = (in * 2.5 + out * 10) / 1e6 USD."""
    _, city_dir, task_file = inputs
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"providers": {"openai-compatible": {"models": {
        "fake": {"input_per_mtok": 2.5, "output_per_mtok": 10.0}}}}}))
    monkeypatch.delenv("URBANARENA_PRICES", raising=False)
    r = invoke(*run_args(city_dir, task_file, tmp_path / "dry", "http://127.0.0.1:9/v1", "--dry-run", "--limit", 1,
                         "--prices", prices))
    assert r.exit_code == 0, r.output
    tin = int(re.search(r"input tokens\s+([\d,]+)", r.stdout).group(1).replace(",", ""))
    tout = int(re.search(r"output tokens\s+([\d,]+)", r.stdout).group(1).replace(",", ""))
    assert tout == 1 * 1 * 50 * 4 * 8192
    assert f"cost (max)       ${(tin * 2.5 + tout * 10.0) / 1e6:,.2f}" in r.stdout
    assert "(price entry: fake)" in r.stdout


@pytest.mark.parametrize("case", ["bad_answer", "graph_agent", "model_flag_for_baseline", "missing_reference",
                                  "graph_protocol"])
def test_bad_arena_input_is_one_line_and_leaves_no_run_dir(inputs, tmp_path, case):
    _, city_dir, task_file = inputs
    tasks = json.loads(task_file.read_text())
    out = tmp_path / "out"
    args = run_args(city_dir, task_file, out, "http://127.0.0.1:9/v1")
    expect = ""
    if case == "bad_answer":
        tasks["tasks"][0]["answer"] = "the north-west corner"
        bad = tmp_path / "t.json"
        bad.write_text(json.dumps(tasks))
        args = run_args(city_dir, bad, out, "http://127.0.0.1:9/v1")
        expect = "task 0 (t/loc)"
    elif case == "graph_agent":
        # forward has no arena counterpart (random, oracle and straight resolve to arena-random / arena-oracle /
        # arena-straight)
        args = ["run", "--city", city_dir, "--tasks", task_file, "--agent", "forward", "--out", out]
        expect = "run in the arena"
    elif case == "model_flag_for_baseline":
        args = ["run", "--city", city_dir, "--tasks", task_file, "--agent", "forward", "--out", out,
                "--model", "openai:gpt-4o"]
        expect = "calls no model API"
    elif case == "missing_reference":
        tasks["tasks"][0]["extra"]["reference_images"] = ["refs/nope.png"]
        bad = tmp_path / "t.json"
        bad.write_text(json.dumps(tasks))
        args = run_args(city_dir, bad, out, "http://127.0.0.1:9/v1")
        expect = "nope.png not found"
    elif case == "graph_protocol":
        args = args + ["--protocol", "cityseeker-v1"]
        expect = "runs in the arena"
    r = invoke(*args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], r.stderr
    assert not out.exists()


def test_a_version_1_store_is_read_and_upgraded(tmp_path):
    """A store written before the v3 columns existed: read-only it reads as it is (new columns None);
    opened for writing it gains the columns and keeps its rows."""
    from urbanarena.runner.results import V3_STORE_NAMES
    from urbanarena.runner.store import COLUMNS, Store

    path = tmp_path / "episodes.sqlite"
    with Store(path) as st:
        st.add({"task_id": "a", "seed": 0, "agent": "random", "config_hash": "h", "protocol": "p", "family": "f",
                "task_hash": "x", "stop_reason": "stop", "steps": 1, "invalid_actions": 0, "trajectory": ["n"],
                "actions": [-1], "metrics": {"tc_exact": 1.0}})
    con = sqlite3.connect(path)
    for c in ("details",) + V3_STORE_NAMES:  # make it a version-1 store
        con.execute(f"ALTER TABLE episodes DROP COLUMN {c}")
    con.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    con.commit()
    con.close()
    with Store(path, readonly=True) as st:
        [row] = list(st.rows())
        assert st.schema_version == 1 and list(row) == list(COLUMNS)
        assert row["tc_exact"] == 1.0 and row["status"] is None and row["details"] is None
    with Store(path) as st:
        assert st.schema_version == 2
        st.add({"task_id": "b", "seed": 0, "agent": "random", "config_hash": "h", "protocol": "p", "family": "f",
                "task_hash": "x", "stop_reason": "ANSWER", "steps": 1, "invalid_actions": 0, "trajectory": [],
                "actions": ["ANSWER: 3"], "metrics": {}, "v3": {"status": "ANSWER", "evaluation_score": 0.5}})
        rows = list(st.rows())
    assert [(r["task_id"], r["status"], r["evaluation_score"]) for r in rows] == [("a", None, None),
                                                                                  ("b", "ANSWER", 0.5)]
