"""inspect_ai: ``urbanarena/suite`` end to end with inspect's mock model and, through inspect's own
OpenAI provider and the package's entry point (``inspect eval``), with the fake OpenAI server.

City and task: the cross of ``vlm_util`` (c(0,0), arms n/e/s/w 20 m away, compass panoramas); one
cityseeker task from s to e under ``cityseeker-v1``. The script (as in test_run_vlm_cityseeker): at s
continue and take the only heading A; at c continue and take B (east); at e stop — five model calls,
trajectory s, c, e, TC-E 1. Every call goes through inspect's model API, so its transcript holds five
model events and its usage the tokens the model reported.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from importlib.metadata import entry_points
from pathlib import Path

import pytest

inspect_ai = pytest.importorskip("inspect_ai", reason="inspect_ai is not installed (pip install 'urbanarena[inspect]')")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import list_eval_logs, read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from fakes import FakeOpenAIServer  # noqa: E402
from urbanarena.harness.inspect_tasks import suite  # noqa: E402
from urbanarena.tasks.schema import CityRef, TaskFile  # noqa: E402
from urbanarena.world.city_io import save_city  # noqa: E402
from test_run_vlm_cityseeker import choice, stop  # noqa: E402
from vlm_util import OPENAI_KEY, cross_city, graph_task, phase_script  # noqa: E402




SCRIPT = [stop(0), choice("A", 1), stop(0), choice("B", 4), stop(1)]


@pytest.fixture()
def cross_suite(tmp_path):
    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[graph_task(city)]).save(tmp_path / "tasks.json")
    return city_dir, task_file


def check_episode_log(log, n_calls: int):
    """What every run of the script must leave in the eval log."""
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.id == "cs/1@0" and sample.metadata["protocol"] == "cityseeker-v1"
    score = sample.scores["urbanarena_scorer"]
    assert score.metadata["stop_reason"] == "stop" and score.metadata["error"] is None
    assert score.metadata["protocol"] == "cityseeker-v1"
    m = score.metadata["metrics"]
    assert m["tc_exact"] == 1.0 and m["avg_steps"] == 3.0 and m["spd_m"] == 0.0
    assert score.value == 1.0  # headline: TC-P at 50 m
    assert sum(1 for e in sample.events if e.event == "model") == n_calls
    metrics = log.results.scores[0].metrics
    assert metrics["mean"].value == 1.0 and metrics["tc_exact"].value == 1.0 and metrics["errored"].value == 0.0
    assert log.eval.metadata["urbanarena"]["protocols"] == ["cityseeker-v1"]
    return sample


def test_mock_model_runs_our_episode_and_our_scorer(cross_suite, tmp_path):
    city_dir, task_file = cross_suite
    # usage given per output, so inspect's token accounting has known sums (7 + i in, 3 out)
    outs = [ModelOutput.from_content(model="mockllm/model", content=text) for text in SCRIPT]
    for i, o in enumerate(outs):
        o.usage = ModelUsage(input_tokens=7 + i, output_tokens=3, total_tokens=10 + i)
    [log] = inspect_eval(suite(city=str(city_dir), tasks=str(task_file)),
                         model=get_model("mockllm/model", custom_outputs=outs),
                         log_dir=str(tmp_path / "logs"), display="none")
    sample = check_episode_log(log, n_calls=5)
    usage = sample.model_usage["mockllm/model"]
    assert usage.input_tokens == sum(7 + i for i in range(5)) and usage.output_tokens == 15
    # the log on disk reads back with inspect's log API
    [info] = list_eval_logs(str(tmp_path / "logs"))
    back = read_eval_log(info)
    assert back.samples[0].scores["urbanarena_scorer"].metadata["metrics"]["tc_exact"] == 1.0


def test_garbage_replies_are_counted_and_score_as_failures(cross_suite, tmp_path):
    """Every reply unparseable: the protocol's fallbacks act, the parse failures are counted."""
    city_dir, task_file = cross_suite

    def garbage(input, tools, tool_choice, config):
        out = ModelOutput.from_content(model="mockllm/model", content="no json here")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    [log] = inspect_eval(suite(city=str(city_dir), tasks=str(task_file), max_steps=4),
                         model=get_model("mockllm/model", custom_outputs=garbage),
                         log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    [sample] = log.samples
    score = sample.scores["urbanarena_scorer"]
    n_calls = sum(1 for e in sample.events if e.event == "model")
    stats = sample.store["urbanarena:row"]["agent_stats"]
    assert n_calls > 0 and stats["requests"] == n_calls and stats["parse_failures"] == n_calls
    assert score.metadata["metrics"]["tc_exact"] == 0.0  # it never reaches e by stopping there


def test_arena_tasks_answer_and_walk_through_inspect(tmp_path):
    """The two cityarena tasks of test_run_vlm_arena (localization answered at once, a landmark walk of
    nine replies) through inspect's mock model: both scored 1 by the arena validators."""
    import re

    from test_run_vlm_arena import PLANS, make_inputs

    city_dir, task_file = make_inputs(tmp_path)

    def plan(input, tools, tool_choice, config):
        text = "\n".join(m.text for m in input)
        key = next(k for k in PLANS if k in text)
        step = int(re.search(r"This is step (\d+)\.", text).group(1))
        out = ModelOutput.from_content(model="mockllm/model", content=PLANS[key][step - 1])
        out.usage = ModelUsage(input_tokens=5, output_tokens=2, total_tokens=7)
        return out

    [log] = inspect_eval(suite(city=str(city_dir), tasks=str(task_file)),
                         model=get_model("mockllm/model", custom_outputs=plan), log_dir=str(tmp_path / "logs"),
                         display="none")  # both samples at once: two episodes in worker threads
    assert log.status == "success", log.error
    by_id = {s.id: s for s in log.samples}
    assert sorted(by_id) == ["t/land@0", "t/loc@0"]
    for sid, n_calls in (("t/loc@0", 1), ("t/land@0", 9)):
        sc = by_id[sid].scores["urbanarena_scorer"]
        assert sc.value == 1.0 and sc.metadata["protocol"] == "cityarena-v1", sc
        assert sum(1 for e in by_id[sid].events if e.event == "model") == n_calls
    # the localization request carried the panorama view and the reference image as inspect image content
    first = next(e for e in by_id["t/loc@0"].events if e.event == "model")
    images = [c for m in first.input for c in (m.content if isinstance(m.content, list) else []) if c.type == "image"]
    assert len(images) >= 2
    assert log.results.scores[0].metrics["mean"].value == 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry_point_installed() -> bool:
    return any(ep.value == "urbanarena.harness.inspect_registry" for ep in entry_points(group="inspect_ai"))


@pytest.mark.skipif(not _entry_point_installed(),
                    reason="urbanarena's inspect_ai entry point is not installed (pip install -e '.[inspect]')")
def test_inspect_eval_cli_with_the_fake_openai_server_and_inspect_view(cross_suite, tmp_path):
    city_dir, task_file = cross_suite
    inspect_bin = shutil.which("inspect", path=str(Path(sys.executable).parent)) or shutil.which("inspect")
    assert inspect_bin, "the inspect command is not on PATH"
    logs = tmp_path / "logs"
    # the installed package, not a PYTHONPATH copy: inspect namespaces a task by the distribution it was
    # installed from (an editable install here), which a bare source folder on PYTHONPATH hides
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OPENAI_API_KEY=OPENAI_KEY, INSPECT_LOG_DIR=str(logs))
    with FakeOpenAIServer(phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)]),
                          api_key=OPENAI_KEY) as srv:
        r = subprocess.run([inspect_bin, "eval", "urbanarena/suite", "--model", "openai/fake",
                            "--model-base-url", srv.base_url, "-M", "responses_api=false", "-T", f"city={city_dir}", "-T", f"tasks={task_file}",
                            "--log-dir", str(logs), "--display", "none"],
                           env=env, capture_output=True, text=True, timeout=300)
        reqs = list(srv.log)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(reqs) == 5 and all(q.auth_ok for q in reqs)
    assert all(q.path == "/v1/chat/completions" and (q.body.get("max_completion_tokens") or q.body.get("max_tokens")) == 2048 for q in reqs)  # the protocol preset
    [info] = list_eval_logs(str(logs))
    log = read_eval_log(info)
    sample = check_episode_log(log, n_calls=5)
    usage = sample.model_usage["openai/fake"]
    assert usage.input_tokens == sum(FakeOpenAIServer.default_usage(q.body, "")[0] for q in reqs)
    # inspect view serves the log: its API lists the file and returns the log with our scores
    port = _free_port()
    view = subprocess.Popen([inspect_bin, "view", "--log-dir", str(logs), "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        listing = None
        for _ in range(150):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/log-files", timeout=2) as resp:
                    listing = json.loads(resp.read())
                break
            except OSError:
                time.sleep(0.2)
        assert listing is not None, "inspect view did not answer"
        [entry] = listing["files"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs/{urllib.parse.quote(entry['name'])}",
                                    timeout=10) as resp:
            served = json.loads(resp.read())
        assert served["results"]["scores"][0]["metrics"]["tc_exact"]["value"] == 1.0
    finally:
        view.terminate()
        view.wait(timeout=10)


@pytest.mark.parametrize("model, dropped", [("gpt-5-mini", True), ("gpt-4o", False)])
def test_settings_a_provider_drops_are_logged_warned_and_marked(cross_suite, tmp_path, monkeypatch, caplog,
                                                                model, dropped):
    """Issue 25 item 7: inspect's OpenAI provider sends no temperature to gpt-5-class models. What the fake
    server received is the independent record; the score metadata must say the same and mark the episode."""
    city_dir, task_file = cross_suite
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    caplog.set_level("WARNING", logger="urbanarena.harness")
    with FakeOpenAIServer(phase_script([stop(0), stop(0), stop(1)], [choice("A", 1), choice("B", 4)]),
                          api_key=OPENAI_KEY) as srv:
        m = get_model(f"openai/{model}", base_url=srv.base_url, responses_api=False)
        [log] = inspect_eval(suite(city=str(city_dir), tasks=str(task_file), params={"generation": {"temperature": 0.0}}),
                             model=m, log_dir=str(tmp_path / "logs"), display="none")
        bodies = [q.body for q in srv.log]
    assert log.status == "success", log.error
    assert len(bodies) == 5
    assert all(("temperature" in b) is (not dropped) for b in bodies)
    [sample] = log.samples
    md = sample.scores["urbanarena_scorer"].metadata
    sent = md["generation_sent"]
    last = bodies[-1]
    max_key = "max_completion_tokens" if "max_completion_tokens" in last else "max_tokens"
    assert sent["max_output_tokens"] == last[max_key] == 2048 and sent["max_tokens_field"] == max_key
    assert sent.get("temperature") == last.get("temperature")
    changed = log.results.scores[0].metrics["generation_changed"].value
    warned = [r.getMessage() for r in caplog.records if "temperature 0.0 dropped" in r.getMessage()]
    if dropped:
        assert md["generation_changes"] == ["temperature 0.0 dropped"] and changed == 1.0
        assert len(warned) == 1 and model in warned[0]
    else:
        assert md["generation_changes"] == [] and changed == 0.0 and not warned


def test_generation_changes_hand_cases():
    from urbanarena.agents.clients import GenerationSettings
    from urbanarena.harness.inspect_tasks import generation_changes, sent_generation

    want = GenerationSettings(temperature=1.0, max_output_tokens=8192)
    sent = sent_generation({"model": "o3", "max_completion_tokens": 8192,
                            "messages": [{"role": "developer", "content": "x"}, {"role": "user", "content": "y"}]})
    assert sent == {"max_output_tokens": 8192, "max_tokens_field": "max_completion_tokens", "system_role": "developer"}
    assert generation_changes(want, sent, had_system=True) == ["temperature 1.0 dropped",
                                                               "system prompt sent as developer message"]
    anth = sent_generation({"max_tokens": 4096, "temperature": 1.0, "system": "x", "messages": []})
    assert generation_changes(want, anth, had_system=True) == ["max_output_tokens 8192 sent as 4096"]
    assert generation_changes(want, None, had_system=True) == []  # nothing recorded: nothing claimed
    resp = sent_generation({"max_output_tokens": 8192, "temperature": 1, "reasoning": {"effort": "low"},
                            "input": [{"role": "system", "content": "x"}]})
    assert generation_changes(GenerationSettings(temperature=1.0, max_output_tokens=8192, reasoning_effort="high"),
                              resp, had_system=True) == ["reasoning_effort high sent as low"]
