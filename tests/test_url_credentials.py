"""Issue 29 item 4: credentials in a model URL are refused (typed error naming the key variable) and, as defence
in depth, redacted wherever a URL is stored or printed (run.json, the store's error column, run.log)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from test_run_vlm_arena import invoke, make_inputs
from urbanarena.agents.clients.errors import CredentialsInURLError
from urbanarena.agents.clients.spec import parse_model_spec
from urbanarena.redact import redact_urls, url_credentials
from urbanarena.runner.logs import redact
from urbanarena.runner.metadata import write_run_json
from urbanarena.runner.store import Store

KEY = "KEY0123456789abcdef"
BAD_SPECS = {
    f"openai-compatible:http://user:{KEY}@127.0.0.1:9/v1:m": "URBANARENA_API_KEY_127_0_0_1_9",
    f"openai-compatible:http://{KEY}@example.org/v1:m": "URBANARENA_API_KEY_EXAMPLE_ORG",
    f"openai-compatible:http://127.0.0.1:9/v1?key={KEY}:m": "URBANARENA_API_KEY_127_0_0_1_9",
    f"openai-compatible:http://example.org/v1?x=1&api_key={KEY}:m": "URBANARENA_API_KEY_EXAMPLE_ORG",
    f"openai-compatible:http://example.org/v1?Access-Token={KEY}:m": "URBANARENA_API_KEY_EXAMPLE_ORG",
    f"openai:https://api.openai.com/v1?token={KEY}:gpt-4o": "OPENAI_API_KEY",
    f"anthropic:https://u:{KEY}@api.anthropic.com:claude-x": "ANTHROPIC_API_KEY",
    f"openai-compatible:http://example.org/v1?password={KEY}:m": "URBANARENA_API_KEY_EXAMPLE_ORG",
}


@pytest.mark.parametrize("spec", sorted(BAD_SPECS))
def test_a_model_spec_with_a_credential_is_refused_naming_the_variable(spec):
    with pytest.raises(CredentialsInURLError) as ei:
        parse_model_spec(spec)
    msg = str(ei.value)
    assert KEY not in msg and "[redacted]" in msg
    assert BAD_SPECS[spec] in msg and ei.value.variable.startswith(BAD_SPECS[spec])


@pytest.mark.parametrize("spec", ["openai-compatible:http://127.0.0.1:8000/v1:qwen", "openai-compatible:http://h/v1?foo=1:m",
                                  "openai-compatible:http://localhost:11434/v1:llava:13b"])
def test_urls_without_credentials_still_parse(spec):
    assert parse_model_spec(spec).model


def test_redaction_by_hand():
    assert redact_urls(f"see http://u:{KEY}@h:8/v1 and https://h/v1?a=1&key={KEY}&b=2") == \
        "see http://[redacted]@h:8/v1 and https://h/v1?a=1&key=[redacted]&b=2"
    assert redact_urls("http://h/v1?monkey=1") == "http://h/v1?monkey=1"  # 'key' only as a whole name
    assert url_credentials("http://h/v1?keys=1") == [] and url_credentials(f"http://h?key={KEY}") == ["query parameter 'key'"]
    assert redact(f"fail at http://a:{KEY}@h/x", secrets=[]) == "fail at http://[redacted]@h/x"


def test_run_json_and_store_error_column_are_redacted(tmp_path):
    url = f"http://user:{KEY}@h:1/v1?token={KEY}"
    write_run_json(tmp_path, {"config": {"agent": {"params": {"model": f"openai-compatible:{url}:m"}}}, "error": url})
    assert KEY not in (tmp_path / "run.json").read_text()
    assert json.loads((tmp_path / "run.json").read_text())["error"] == "http://[redacted]@h:1/v1?token=[redacted]"
    st = Store(tmp_path / "episodes.sqlite")
    res = {"task_id": "t", "seed": 0, "agent": "a", "config_hash": "c", "trajectory": [], "actions": [],
           "protocol": "p", "family": "f", "task_hash": "h", "steps": 0, "invalid_actions": 0,
           "details": None, "stop_reason": "error", "error": f"ConnectError: {url}",
           "agent_stats": {"last_error_message": url}}
    st.add_config("c", {"agent": "a"}, "2026-01-01T00:00:00Z")
    assert st.add(res)
    st.close()
    con = sqlite3.connect(tmp_path / "episodes.sqlite")
    err, stats = con.execute("SELECT error, agent_stats FROM episodes").fetchone()
    con.close()
    assert KEY not in err and KEY not in stats and "[redacted]" in err


def test_cli_run_refuses_a_key_in_the_model_url_writes_nothing_and_prints_no_key(tmp_path):
    city_dir, task_file = make_inputs(tmp_path)
    out = tmp_path / "run"
    r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-arena",
               "--model", f"openai-compatible:http://user:{KEY}@127.0.0.1:9/v1:m", "--out", out)
    assert r.exit_code == 2, r.output
    assert KEY not in r.output and "URBANARENA_API_KEY_127_0_0_1_9" in r.output
    assert not out.exists()
