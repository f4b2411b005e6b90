"""``urbanarena run --judge SPEC``: the LLM judge of ``fuzzy_match`` answers, end to end through the CLI, the
real ``openai`` SDK and one scripted fake OpenAI-compatible server that serves both the model under test
(``fake``) and the judge (``judge-x``; told apart by the request's ``model``).

City: the T junction of ``vlm_util`` (compass panoramas). Tasks (hand-written file): three relational
questions (``fuzzy_match``) and one localization (``exact_match``). The agent answers at once:

=========  ===================  ====================  =============================  ===========================
task       reference            agent's answer        judge's scripted reply         expected
=========  ===================  ====================  =============================  ===========================
r/bakery   the bakery           The Bakery.           reasoning + ``is_correct: true``   score 1, offline 1
r/bank     the bank             the post office       ``{"is_correct": false}``       score 0, offline 0
r/tower    the clock tower      a tall clock tower    ``I cannot decide.`` (garbage)  unparsable: score null
t/loc      x:1 y:2              x:1 y:2               (no judge call)                 score 1, no judge fields
=========  ===================  ====================  =============================  ===========================

Offline scores: normalised string match (NFKC, case-folded, punctuation and articles dropped), worked by
hand: "The Bakery." -> "bakery" == "bakery"; the others differ.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import sqlite3
from pathlib import Path

import pytest

from fakes import FakeOpenAIServer, ScriptedReply
from test_run_vlm_arena import body_texts, db_rows, invoke
from urbanarena.tasks.validators import JUDGE_PROMPT_TEMPLATE
from urbanarena.world.city_io import save_city
from vlm_util import reply, strip_volatile, t_city

JUDGE = "judge-x"
QUESTIONS = {
    "r/bakery": ("Which shop stands left of the fountain? Answer with its name.", "the bakery", "The Bakery.",
                 "The agent names the bakery, as the reference does.\nis_correct: true"),
    "r/bank": ("Which building is opposite the school? Answer with its name.", "the bank", "the post office",
               '{"is_correct": false}'),
    "r/tower": ("What is the tallest structure you saw? Answer with its name.", "the clock tower",
                "a tall clock tower", "I cannot decide."),
}
LOC_TEXT = "Localise yourself on the 5 x 5 grid map and answer as x:N y:M."
#: sha256 of the judge prompt template, computed here from its text
PROMPT_SHA = hashlib.sha256(JUDGE_PROMPT_TEMPLATE.encode("utf-8")).hexdigest()
#: agent_stats / judge_usage counters that differ between a live run and its replay
CACHE_COUNTERS = ("cache_hits", "cache_misses", "api_requests", "http_attempts", "input_tokens", "output_tokens",
                  "cached_input_tokens", "cached_output_tokens", "cost_usd", "reasoning_tokens")


def is_judge(body) -> bool:
    return body.get("model") == JUDGE


def judge_task(body) -> str:
    text = "\n".join(body_texts(body))
    return next(t for t, (q, *_rest) in QUESTIONS.items() if f"Question: {q}" in text)


def agent_task(body) -> str:
    system = body["messages"][0]["content"]
    if LOC_TEXT in system:
        return "t/loc"
    return next(t for t, (q, *_rest) in QUESTIONS.items() if q in system)


def script(body, n):
    if is_judge(body):
        return QUESTIONS[judge_task(body)][3]
    t = agent_task(body)
    return reply("ANSWER", "x:1 y:2" if t == "t/loc" else QUESTIONS[t][2])


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)


def write_tasks(path: Path, city, ids=("r/bakery", "r/bank", "r/tower", "t/loc")) -> Path:
    ref = {"name": city.name, "content_hash": city.content_hash}
    tasks = []
    for tid in ids:
        if tid == "t/loc":
            tasks.append({"task_id": tid, "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
                          "instruction": LOC_TEXT, "answer": "x:1 y:2", "category": "localization",
                          "extra": {"task_kind": "localization"}})
        else:
            q, a, *_ = QUESTIONS[tid]
            tasks.append({"task_id": tid, "family": "cityarena", "city": ref, "start": {"node": "s", "heading_deg": 0},
                          "instruction": q, "answer": a, "category": "relational",
                          "extra": {"task_kind": "relational"}})
    path.write_text(json.dumps({"format": "urbanarena-tasks", "schema_version": 1, "city": ref, "tasks": tasks}))
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("judge_run")
    city = t_city(root)
    city_dir = save_city(city, root / "city")
    task_file = write_tasks(root / "tasks.json", city)
    one = write_tasks(root / "one.json", city, ("r/bakery",))
    return root, city_dir, task_file, one


def args(city_dir, task_file, out, url, *extra, judge: str | None = JUDGE):
    a = ["run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-arena",
         "--model", f"openai-compatible:{url}:fake", "--out", out]
    if judge is not None:
        a += ["--judge", f"openai-compatible:{url}:{judge}"]
    return a + list(extra)


@pytest.fixture(scope="module")
def judged_run(inputs):
    """Two seeds, one worker, the judge on; the server's log is kept."""
    root, city_dir, task_file, _ = inputs
    out = root / "judged"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*args(city_dir, task_file, out, srv.base_url, "--seeds", 2))
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    return out, log


def metrics(row) -> dict:
    return json.loads(row["metrics"])


def test_judged_scores_and_the_judge_record(judged_run):
    out, log = judged_run
    rows = db_rows(out)
    assert [(x["task_id"], x["seed"]) for x in rows] == [(t, s) for t in ("r/bakery", "r/bank", "r/tower", "t/loc")
                                                         for s in (0, 1)]
    expect = {  # evaluation_score, is_correct, validation_available, scored_success, offline, parsed verdict
        "r/bakery": (1.0, 1, 1, 1, 1.0, True),
        "r/bank": (0.0, 0, 1, 0, 0.0, True),
        "r/tower": (None, None, 0, 0, 0.0, False),
    }
    for x in rows:
        m = metrics(x)
        assert x["status"] == "ANSWER" and x["steps"] == 1
        # the judge is not an agent request: one request, one step, the agent's own tokens only
        assert x["llm_request_count"] == 1 and json.loads(x["agent_stats"])["requests"] == 1
        if x["task_id"] == "t/loc":
            assert x["evaluation_score"] == 1.0 and x["validation_model"] is None and m["judge_model"] is None
            assert "judge_usage" not in json.loads(x["details"])
            continue
        score, correct, avail, success, offline, parsed = expect[x["task_id"]]
        assert (x["evaluation_score"], x["is_correct"], x["validation_available"], x["scored_success"]) == (
            score, correct, avail, success), x["task_id"]
        assert x["evaluation_metric"] == "fuzzy_match"
        assert m["offline_score"] == offline and m["validation"]["offline_metric"] == "normalised_string_match"
        # pinned and reported with every result
        assert x["validation_model"] == JUDGE and x["validation_provider"] == "openai-compatible"
        assert m["judge_model"] == f"openai-compatible:{JUDGE}" and m["judge_reported_model"] == JUDGE
        assert m["judge_prompt_hash"] == PROMPT_SHA and m["judge_verdict_parsed"] is parsed
        assert m["validation"]["judge"]["raw_verdict"] == QUESTIONS[x["task_id"]][3]
        assert x["user_answer"] == QUESTIONS[x["task_id"]][2] and x["expected"] == QUESTIONS[x["task_id"]][1]
        usage = json.loads(x["details"])["judge_usage"]
        assert usage["requests"] == 1 and usage["errors"] == [] and usage["model"] == f"openai-compatible:{JUDGE}"
        # the same (question, reference, answer) is judged once: seed 1 is served from the response cache
        assert (usage["api_requests"], usage["cache_hits"]) == ((1, 0) if x["seed"] == 0 else (0, 1))
        jreq = next(q for q in log if is_judge(q.body) and judge_task(q.body) == x["task_id"])
        assert usage["input_tokens"] + usage["cached_input_tokens"] == FakeOpenAIServer.default_usage(
            jreq.body, QUESTIONS[x["task_id"]][3])[0]
    assert [x["message"] for x in rows if x["task_id"] == "r/tower"] == ["unparsable judge verdict: 'I cannot decide.'"] * 2


def test_judge_requests_as_sent(judged_run):
    _, log = judged_run
    judge_reqs = [q for q in log if is_judge(q.body)]
    agent_reqs = [q for q in log if not is_judge(q.body)]
    assert len(judge_reqs) == 3 and len(agent_reqs) == 8  # 4 tasks x 2 seeds; the judge once per distinct answer
    for q in judge_reqs:
        b = q.body
        t = judge_task(b)
        question, reference, answer, _ = QUESTIONS[t]
        assert b["max_tokens"] == 1024 and b["temperature"] == 0.0
        assert [m["role"] for m in b["messages"]] == ["user"] and q.images == []
        assert body_texts(b) == [JUDGE_PROMPT_TEMPLATE.format(question=question, reference=reference, answer=answer)]


def test_run_json_config_hash_and_cache_hold_the_judge(judged_run, inputs, tmp_path):
    out, _ = judged_run
    meta = json.loads((out / "run.json").read_text())
    j = meta["judge"]
    assert j["model"] == f"openai-compatible:{JUDGE}" and j["model_under_test"] == "openai-compatible:fake"
    assert j["config"]["prompt_hash"] == PROMPT_SHA and j["config"]["model"] == {"provider": "openai-compatible",
                                                                                 "model": JUDGE}
    assert j["config"]["generation"]["temperature"] == 0.0 and j["config"]["generation"]["max_output_tokens"] == 1024
    assert j["runtime"]["counts_toward_caps"] is True and j["runtime"]["counts_toward_step_limit"] is False
    assert j["runtime"]["cache"]["path"] == str((out / "responses.sqlite").absolute())
    [h] = meta["configs"]
    assert meta["configs"][h]["extra"]["judge"] == j["config"]
    # the judge's replies live in the run's response cache, next to the agent's
    con = sqlite3.connect(out / "responses.sqlite")
    models = sorted(r[0] for r in con.execute("SELECT model FROM responses"))
    con.close()
    assert models.count(JUDGE) == 3 and models.count("fake") == 8
    # the judge spec changes results, so it changes the config hash (without a judge, another judge)
    from urbanarena.runner.driver import RunRequest, prepare

    _, city_dir, task_file, _ = inputs
    base = dict(city=str(city_dir), tasks=str(task_file), agent="vlm-arena", out=tmp_path / "o",
                model="openai-compatible:http://127.0.0.1:9/v1:fake")
    hashes = [list(prepare(RunRequest(**base, **kw)).configs)[0] for kw in (
        {}, {"judge": "openai-compatible:http://127.0.0.1:9/v1:judge-x"},
        {"judge": "openai-compatible:http://127.0.0.1:7/v1:judge-x"},  # another endpoint: the same judge
        {"judge": "openai-compatible:http://127.0.0.1:9/v1:judge-y"},
        {"judge": "openai-compatible:http://127.0.0.1:9/v1:judge-x", "judge_params": {"max_output_tokens": 4096}})]
    assert hashes[1] == h and hashes[2] == h
    assert len({hashes[0], hashes[1], hashes[3], hashes[4]}) == 4
    assert not (tmp_path / "o").exists()


def test_summary_counts_judged_and_unjudged_fuzzy_answers(judged_run, tmp_path):
    out, _ = judged_run
    r = invoke("summary", out, "--json", "--resamples", 50)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["fuzzy"] == {"answers": 6, "judged": 4, "unjudged": 2, "no_judge": 0, "unparsable": 2,
                          "judge_errors": 0, "offline_matches": 2, "judge_model": f"openai-compatible:{JUDGE}",
                          "judge_requests": 6, "judge_api_requests": 3}
    assert s["missing_scores"] == 2
    # scores per task: loc 1, bakery 1, bank 0, tower missing (counts 0) -> 50 %
    assert s["metrics"]["evaluation_score"] == pytest.approx(50.0)
    text = " ".join(invoke("summary", out, "--resamples", 50).stdout.split())  # rich wraps lines
    assert "unjudged 2" in text and "2 unparsable verdicts" in text
    csv_path = tmp_path / "results.csv"
    assert invoke("export", out, "--format", "cityarena-csv", "--out", csv_path).exit_code == 0
    with open(csv_path, newline="") as f:
        recs = list(csv.DictReader(f))
    assert {x["validation_model"] for x in recs if x["task_id"].startswith("r/")} == {JUDGE}
    assert {x["validation_model"] for x in recs if x["task_id"] == "t/loc"} == {""}
    assert sorted(x["evaluation_score"] for x in recs if x["task_id"] == "r/tower") == ["", ""]


def test_without_a_judge_fuzzy_answers_keep_only_the_offline_column(inputs, tmp_path):
    _, city_dir, task_file, _ = inputs
    out = tmp_path / "nojudge"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*args(city_dir, task_file, out, srv.base_url, judge=None))
        assert not any(is_judge(q.body) for q in srv.log)
    assert r.exit_code == 0, r.output
    for x in db_rows(out):
        if x["task_id"] == "t/loc":
            continue
        m = metrics(x)
        assert x["evaluation_score"] is None and x["is_correct"] is None and x["validation_available"] == 0
        assert x["validation_model"] is None and m["judge_model"] is None
        assert m["offline_score"] == (1.0 if x["task_id"] == "r/bakery" else 0.0)
    s = json.loads(invoke("summary", out, "--json", "--resamples", 50).stdout)
    assert (s["fuzzy"]["answers"], s["fuzzy"]["unjudged"], s["fuzzy"]["no_judge"], s["fuzzy"]["judge_model"]) == (
        3, 3, 3, None)
    assert s["fuzzy"]["offline_matches"] == 1 and s["missing_scores"] == 3
    assert "3 without a judge" in " ".join(invoke("summary", out, "--resamples", 50).stdout.split())
    assert json.loads((out / "run.json").read_text())["judge"] is None


def test_replay_read_only_rescoring_gives_the_same_verdicts(judged_run, inputs, tmp_path):
    live, _ = judged_run
    _, city_dir, task_file, _ = inputs
    replay = tmp_path / "replay"
    # no server at all: every agent and judge call must come from the live run's cache
    r = invoke(*args(city_dir, task_file, replay, "http://127.0.0.1:9/v1", "--seeds", 2, "--cache", "read-only",
                     "--cache-path", live / "responses.sqlite"))
    assert r.exit_code == 0, r.output

    def scored(row):
        d = json.loads(row["details"])
        usage = {k: v for k, v in (d.get("judge_usage") or {}).items() if k not in CACHE_COUNTERS}
        keep = ("task_id", "seed", "config_hash", "status", "evaluation_score", "is_correct", "scored_success",
                "validation_available", "validation_model", "user_answer", "actions")
        return {**{k: row[k] for k in keep}, "metrics": strip_volatile(metrics(row)), "judge": strip_volatile(usage)}

    a, b = [scored(x) for x in db_rows(live)], [scored(x) for x in db_rows(replay)]
    assert len(a) == 8 and a == b
    for x in db_rows(replay):
        u = json.loads(x["details"]).get("judge_usage")
        if u:
            assert u["api_requests"] == 0 and u["cache_hits"] == 1


def test_judge_requests_count_toward_max_requests(inputs, tmp_path):
    """--max-requests 1: the agent's request is admitted, the judge's would cross the cap: a clean stop (exit 3),
    the episode unstored. The resume without the cap replays the agent from the cache and asks only the judge."""
    _, city_dir, _, one = inputs
    out = tmp_path / "capped"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*args(city_dir, one, out, srv.base_url, "--max-requests", 1))
        first = [is_judge(q.body) for q in srv.log]
    assert r.exit_code == 3, r.output
    assert "stopped (budget)" in r.stderr and "max_requests=1" in r.stderr
    assert first == [False] and db_rows(out) == []
    with FakeOpenAIServer(script) as srv:
        r = invoke(*args(city_dir, one, out, srv.base_url))
        second = [is_judge(q.body) for q in srv.log]
    assert r.exit_code == 0, r.output
    assert second == [True]  # the agent's call came from the cache
    [row] = db_rows(out)
    assert row["evaluation_score"] == 1.0 and json.loads(row["agent_stats"])["cache_hits"] == 1


def test_a_failed_judge_request_is_recorded_not_guessed(inputs, tmp_path):
    _, city_dir, _, one = inputs
    out = tmp_path / "failed"
    # arrival 0: the agent; arrival 1: the judge, rejected with HTTP 400 (not retried)
    with FakeOpenAIServer(script, fault_plan=[None, "http_400"]) as srv:
        r = invoke(*args(city_dir, one, out, srv.base_url))
        assert srv.injected["http_400"] == 1 and len(srv.log) == 2
    assert r.exit_code == 0, r.output
    [row] = db_rows(out)
    m = metrics(row)
    usage = json.loads(row["details"])["judge_usage"]
    assert row["evaluation_score"] is None and row["validation_available"] == 0
    assert m["judge_verdict_parsed"] is False and m["offline_score"] == 1.0
    assert len(usage["errors"]) == 1 and usage["errors"][0].startswith("ModelRequestError") and "rejected" in usage["errors"][0]
    assert usage["fault_http_400"] == 1 and row["llm_error_count"] == 0  # the agent had no fault
    s = json.loads(invoke("summary", out, "--json", "--resamples", 20).stdout)
    assert s["fuzzy"]["judge_errors"] == 1 and s["fuzzy"]["unjudged"] == 1


@pytest.mark.parametrize("judge", ["SAME", "openai-compatible:http://127.0.0.1:7/v1:fake",
                                   "openai-compatible:URL:fake-2024-08-06", "anthropic:http://127.0.0.1:5:Fake"])
def test_a_judge_that_is_the_model_under_test_is_refused_before_the_run(inputs, tmp_path, judge):
    _, city_dir, task_file, _ = inputs
    out = tmp_path / "out"
    with FakeOpenAIServer(script) as srv:
        spec = f"openai-compatible:{srv.base_url}:fake" if judge == "SAME" else judge.replace("URL", srv.base_url)
        a = args(city_dir, task_file, out, srv.base_url, judge=None) + ["--judge", spec]
        r = invoke(*a)
        assert srv.log == []
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --judge") and "is the model under test" in lines[0]
    assert not out.exists()


def test_a_judge_served_by_the_model_under_test_stops_the_run(inputs, tmp_path):
    """The validator double-checks the model the provider reports for each verdict."""
    _, city_dir, _, one = inputs
    out = tmp_path / "served"

    def impostor(body, n):
        if is_judge(body):
            return ScriptedReply("is_correct: true", model="fake")
        return script(body, n)

    with FakeOpenAIServer(impostor) as srv:
        r = invoke(*args(city_dir, one, out, srv.base_url))
    assert r.exit_code == 2, r.output
    assert "judge was served by 'fake'" in r.stderr and "model under test" in r.stderr
    assert not (out / "episodes.sqlite").exists() or db_rows(out) == []


def test_judge_needs_arena_tasks_and_judge_param_needs_judge(tmp_path):
    from runner_util import write_inputs

    city_dir, task_path, _, _ = write_inputs(tmp_path, n=3, n_tasks=2)
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--out", tmp_path / "o",
               "--judge", "openai-compatible:http://127.0.0.1:9/v1:judge-x")
    assert r.exit_code == 2 and "arena tasks" in r.stderr and not (tmp_path / "o").exists()
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--out", tmp_path / "o",
               "--judge-param", "temperature=0.5")
    assert r.exit_code == 2 and "--judge-param needs --judge" in r.stderr


def test_dry_run_adds_the_judge_requests(inputs, tmp_path):
    """Hand computation: one judge request per fuzzy task and seed; input tokens of the judge prompt filled with
    the question and the reference (standing in for the answer): ceil(chars / 4) + 4 (one message) + 3; output
    tokens 1024 each (upper bound); price: OpenAI-compatible default 0."""
    _, city_dir, task_file, _ = inputs
    out = tmp_path / "dry"
    r = invoke(*args(city_dir, task_file, out, "http://127.0.0.1:9/v1", "--seeds", 3, "--dry-run"))
    assert r.exit_code == 0, r.output
    assert not out.exists()
    tin = 0
    for q, ref, *_ in QUESTIONS.values():
        chars = len(JUDGE_PROMPT_TEMPLATE.format(question=q, reference=ref, answer=ref))
        tin += 3 * (-(-chars // 4) + 4 + 3)
    assert (f"judge (max)      9 requests = 3 fuzzy_match tasks x 3 seeds, {tin:,} input tokens, "
            f"{9 * 1024:,} output tokens, cost $0.00 (openai-compatible:{JUDGE}, price entry: default)") in r.stdout
    agent = int(re.search(r"requests \(max\)\s+([\d,]+)", r.stdout).group(1).replace(",", ""))
    assert agent == 4 * 3 * 50 * 4
    assert f"total: {agent:,} requests + 9 judge requests (max)" in r.stdout


def test_bad_judge_param_and_secret_scan(inputs, tmp_path, monkeypatch):
    _, city_dir, _, one = inputs
    r = invoke(*args(city_dir, one, tmp_path / "bad", "http://127.0.0.1:9/v1", "--judge-param", "top_k=5"))
    assert r.exit_code == 2 and "--judge-param top_k: Extra inputs are not permitted" in r.stderr
    assert not (tmp_path / "bad").exists()
    # one key for the endpoint serves agent and judge: it reaches the server and no file of the RUN_DIR
    secret = "sk-urbanarena-JUDGE-5e1d9a7c3b"
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", secret)
    out = tmp_path / "run"
    with FakeOpenAIServer(script, api_key=secret) as srv:
        r = invoke(*args(city_dir, one, out, srv.base_url, "--max-requests", 10, "--trace"))
        assert r.exit_code == 0, r.output
        assert [is_judge(q.body) for q in srv.log] == [False, True] and all(q.auth_ok for q in srv.log)
    assert invoke("export", out, "--format", "cityarena-csv", "--out", out / "results.csv").exit_code == 0
    files = [f for f in out.rglob("*") if f.is_file()]
    assert {"run.json", "episodes.sqlite", "responses.sqlite", "budget.sqlite"} <= {f.name for f in files}
    for f in files:
        assert secret[7:].encode() not in f.read_bytes(), f
