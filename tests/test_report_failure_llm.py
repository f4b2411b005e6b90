"""The optional LLM failure classifier of the report: parsing, agreement, the never-the-model-under-test
rule, and the report's classifier table end to end through the real openai SDK against the fake server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from fakes.servers import FakeOpenAIServer  # noqa: E402
from generate_util import fixture_city  # noqa: E402
from test_report_html import parse  # noqa: E402
from urbanarena.cli.main import app  # noqa: E402
from urbanarena.errors import UrbanArenaError  # noqa: E402
from urbanarena.report.failure_llm import (  # noqa: E402
    UNPARSED, FailureClassifier, check_classifier, classify_run, cohen_kappa, episode_digest, parse_cause,
)
from urbanarena.report.failures import CAUSES  # noqa: E402
from urbanarena.world.city_io import save_city  # noqa: E402

KEY = "sk-test-failure-classifier-77aa"
runner = CliRunner()


def test_parse_cause():
    assert parse_cause('{"cause": "Explore", "reason": "ran out"}') == "Explore"
    assert parse_cause('Sure. {"cause": "planning"} done') == "Planning"  # case-insensitive, text around
    assert parse_cause('{"cause": "Laziness"}') is None
    assert parse_cause('{"reason": "x"}') is None
    assert parse_cause("Explore") is None  # not a JSON object
    assert parse_cause('{"cause": ') is None
    assert parse_cause("") is None and parse_cause(None) is None


def test_cohen_kappa_hand_worked():
    # po = 3/4; rule marginals A .5 G .25 E .25, llm A .25 G .5 E .25 -> pe = .125 + .125 + .0625 = .3125
    k = cohen_kappa(["A", "A", "G", "E"], ["A", "G", "G", "E"])
    assert k == pytest.approx((0.75 - 0.3125) / (1 - 0.3125))
    assert cohen_kappa(["A", "B"], ["A", "B"]) == pytest.approx(1.0)
    assert cohen_kappa(["A", "A"], ["A", "A"]) is None  # chance agreement 1
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["A"], [])


class _Scripted:
    """A classifier stand-in returning labels from a list (classify_run needs only .classify)."""

    def __init__(self, labels):
        self.labels = list(labels)
        self.seen = []

    def classify(self, digest):
        self.seen.append(digest)
        return self.labels.pop(0)


def test_classify_run_counts_agreement_and_limit():
    rows = [{"family": "vln", "steps": i, "stop_reason": "step_limit"} for i in range(5)]
    rules = ["Explore", "Explore", "Grounding", "Unclassified", "Planning"]
    clf = _Scripted(["Explore", "Grounding", "Grounding", "Explore", UNPARSED])
    res = classify_run(clf, [(r, None, None, c) for r, c in zip(rows, rules)], max_episodes=4)
    assert res["classified"] == 4 and res["skipped"] == 1 and len(clf.seen) == 4
    assert res["counts"] == {**{c: 0 for c in CAUSES}, "Explore": 2, "Grounding": 2, UNPARSED: 0}
    # compared: rule in CAUSES and parsed -> first three (the 4th's rule is Unclassified)
    assert res["compared"] == 3 and res["agreement"] == pytest.approx(2 / 3)
    assert res["kappa"] == pytest.approx(cohen_kappa(["Explore", "Explore", "Grounding"],
                                                     ["Explore", "Grounding", "Grounding"]))


def test_never_the_model_under_test(monkeypatch):
    check_classifier("openai:gpt-4o-mini", ["openai:gpt-4o", "anthropic:claude-x"])  # another model: fine
    with pytest.raises(UrbanArenaError, match="model under test"):
        check_classifier("openai:gpt-4o-2024-08-06", ["openai-compatible:gpt-4o"])
    with pytest.raises(UrbanArenaError, match=r"\{episode\}"):
        FailureClassifier("openai:gpt-4o-mini", prompt="only {causes}")
    with pytest.raises(UrbanArenaError, match="braces"):
        FailureClassifier("openai:gpt-4o-mini", prompt="{causes} {episode} {other}")


def test_digest_holds_trace_and_clips():
    row = {"family": "vln", "steps": 3, "stop_reason": "step_limit", "metrics": {"answer": None},
           "agent_stats": {"trace": [{"step": 0, "action": "FORWARD", "thought": "x" * 1000},
                                     {"step": 1, "action": "PARSE_ERROR"}]}}
    d = episode_digest(row)
    assert "ended by: step_limit" in d and "step 0: FORWARD" in d and "step 1: PARSE_ERROR" in d
    assert max(len(line) for line in d.splitlines()) < 400  # the 1000-char thought is clipped


def test_report_with_classifier_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    city_dir = tmp_path / "fixture"
    save_city(fixture_city(), city_dir)
    suite = tmp_path / "suite.json"
    r = runner.invoke(app, ["tasks", "generate", "--city", str(city_dir), "--per-family", "2", "--seed", "1",
                            "--out", str(suite), "--families", "landmark_language,map_navigation,object_count"])
    assert r.exit_code == 0, r.output
    run_dir = tmp_path / "random"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(suite), "--agent", "random",
                            "--seeds", "2", "--out", str(run_dir)])
    assert r.exit_code == 0, r.output

    def reply(body, i):
        if i % 2 == 1:
            return "I think it is perception."  # no JSON: Unparsed
        return '{"cause": "Explore", "reason": "wandered"}'

    html = tmp_path / "r.html"
    with FakeOpenAIServer(reply, api_key=KEY) as srv:
        r = runner.invoke(app, ["report", str(run_dir), "--out", str(html), "--resamples", "200",
                                "--failure-classifier", f"openai:{srv.base_url}:judge-model",
                                "--failure-classifier-max", "100"])
        assert r.exit_code == 0, r.output
        log = list(srv.log)
    t = parse(html)
    tid = next(k for k in t.tables if k.endswith("-failures-llm"))
    rows = t.tables[tid]
    cells = {c[0].get("data-k"): c for c in rows[1]["cells"]}
    # one request per classified failed episode; replies counted under their label
    n_obj = len(log) // 2  # replies 1, 3, 5, ... are not JSON
    assert int(cells["classified"][1]) == len(log) > 1
    assert int(cells[UNPARSED][0]["data-n"]) == n_obj > 0
    assert int(cells["Explore"][0]["data-n"]) == len(log) - n_obj
    assert KEY not in html.read_text(encoding="utf-8")
    # the classifier table names the classifier model
    assert "judge-model" in html.read_text(encoding="utf-8")
