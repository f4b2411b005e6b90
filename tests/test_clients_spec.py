"""Model spec strings and API-key lookup (keys only from the environment)."""

from __future__ import annotations

import pytest

from urbanarena.agents.clients import GenerationSettings, ModelSpec, make_client, parse_model_spec
from urbanarena.agents.clients.errors import MissingAPIKeyError, ModelSpecError
from urbanarena.agents.clients.spec import NO_KEY_PLACEHOLDER, endpoint_key_variable, resolve_api_key

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_API_KEY", "URBANARENA_API_KEY_127_0_0_1_8000", "MY_KEY")


@pytest.fixture(autouse=True)
def _clean_keys(monkeypatch):
    for k in KEY_VARS:
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize(
    "spec, provider, base_url, model",
    [
        ("openai:gpt-4o", "openai", None, "gpt-4o"),
        ("openai:gpt-4o-2024-08-06", "openai", None, "gpt-4o-2024-08-06"),
        ("anthropic:claude-sonnet-4-5-20250929", "anthropic", None, "claude-sonnet-4-5-20250929"),
        ("openai-compatible:http://127.0.0.1:8000/v1:qwen2.5-vl", "openai-compatible", "http://127.0.0.1:8000/v1", "qwen2.5-vl"),
        # model names with colons (Ollama tags) and a URL with a port
        ("openai-compatible:http://localhost:11434/v1:llava:13b", "openai-compatible", "http://localhost:11434/v1", "llava:13b"),
        # no path, no port
        ("openai-compatible:https://example.org:my/model:v2", "openai-compatible", "https://example.org", "my/model:v2"),
        # IPv6 host with port
        ("openai-compatible:http://[::1]:8000/v1:qwen", "openai-compatible", "http://[::1]:8000/v1", "qwen"),
        # trailing slash on the URL is dropped
        ("openai-compatible:https://generativelanguage.googleapis.com/v1beta/openai/:gemini-2.0-flash",
         "openai-compatible", "https://generativelanguage.googleapis.com/v1beta/openai", "gemini-2.0-flash"),
        ("anthropic:http://127.0.0.1:9000:claude-x", "anthropic", "http://127.0.0.1:9000", "claude-x"),
        ("OpenAI:gpt-4o", "openai", None, "gpt-4o"),
    ],
)
def test_parse_model_spec(spec, provider, base_url, model):
    s = parse_model_spec(spec)
    assert (s.provider, s.base_url, s.model) == (provider, base_url, model)
    # the printed form parses back to the same spec
    assert parse_model_spec(str(s)) == s


@pytest.mark.parametrize(
    "bad",
    ["gpt-4o", "mistral:large", "openai:", "openai-compatible:qwen", "openai-compatible:http://127.0.0.1:8000/v1",
     "openai-compatible:http://127.0.0.1:8000/v1:", "openai-compatible:http://:8000/v1:qwen", ""],
)
def test_bad_specs_raise(bad):
    with pytest.raises(ModelSpecError):
        parse_model_spec(bad)


def test_default_endpoints():
    assert parse_model_spec("openai:gpt-4o").endpoint == "https://api.openai.com/v1"
    assert parse_model_spec("anthropic:claude-x").endpoint == "https://api.anthropic.com"


def test_endpoint_key_variable_names():
    assert endpoint_key_variable("http://127.0.0.1:8000/v1") == "URBANARENA_API_KEY_127_0_0_1_8000"
    assert endpoint_key_variable("https://generativelanguage.googleapis.com/v1beta/openai") == (
        "URBANARENA_API_KEY_GENERATIVELANGUAGE_GOOGLEAPIS_COM"
    )


def test_keys_come_from_the_environment(monkeypatch):
    openai = parse_model_spec("openai:gpt-4o")
    with pytest.raises(MissingAPIKeyError) as e:
        resolve_api_key(openai)
    assert "OPENAI_API_KEY" in str(e.value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-value")
    assert resolve_api_key(openai) == "sk-openai-value"

    anth = parse_model_spec("anthropic:claude-x")
    with pytest.raises(MissingAPIKeyError):
        resolve_api_key(anth)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-value")
    assert resolve_api_key(anth) == "sk-ant-value"

    # an explicit variable name wins
    monkeypatch.setenv("MY_KEY", "mine")
    assert resolve_api_key(openai, api_key_env="MY_KEY") == "mine"


def test_openai_compatible_key_order_and_no_leak_of_openai_key(monkeypatch):
    local = parse_model_spec("openai-compatible:http://127.0.0.1:8000/v1:qwen")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-travel")
    # OPENAI_API_KEY is never sent to an arbitrary endpoint
    assert resolve_api_key(local) == NO_KEY_PLACEHOLDER
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "generic")
    assert resolve_api_key(local) == "generic"
    monkeypatch.setenv("URBANARENA_API_KEY_127_0_0_1_8000", "per-endpoint")
    assert resolve_api_key(local) == "per-endpoint"
    # an explicit variable that is unset is an error, not a silent fallback
    with pytest.raises(MissingAPIKeyError):
        resolve_api_key(local, api_key_env="MY_KEY")


def test_client_config_holds_no_key_and_lists_unsupported_settings(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-0123456789")
    gen = GenerationSettings(temperature=1.0, max_output_tokens=8192, seed=7, reasoning_effort="high")
    c = make_client("anthropic:http://127.0.0.1:9:claude-haiku-4-5", generation=gen)
    cfg = c.config()
    assert "sk-ant-secret" not in repr(cfg) + repr(c.runtime_config()) + repr(vars(c))
    assert cfg["unsupported_settings"] == ["seed"]
    assert cfg["generation"]["seed"] is None and cfg["generation"]["temperature"] == 1.0
    assert (cfg["provider"], cfg["model"]) == ("anthropic", "claude-haiku-4-5")
    assert c.runtime_config()["endpoint"] == ModelSpec("anthropic", "claude-haiku-4-5", "http://127.0.0.1:9").endpoint
    # the endpoint is not part of the hashed config (a server that moved keeps its runs and cache)
    moved = make_client("anthropic:http://10.1.2.3:8080:claude-haiku-4-5", generation=gen)
    assert moved.config() == cfg
    moved.close()
    c.close()


def test_generation_settings_validation():
    with pytest.raises(ValueError):
        GenerationSettings(max_output_tokens=2000, thinking_budget_tokens=2000)
    with pytest.raises(ValueError):
        GenerationSettings(temperature=-0.1)
    with pytest.raises(ValueError):
        GenerationSettings(bogus=1)
    g = GenerationSettings(temperature=0.0, max_output_tokens=64, thinking_budget_tokens=32)
    assert g.unsupported_for("openai") == ["thinking_budget_tokens"]
    assert g.unsupported_for("anthropic") == []


@pytest.mark.parametrize(
    "requested, reported, mismatch",
    [
        ("gpt-4o", "gpt-4o", False),
        ("gpt-4o", "gpt-4o-2024-08-06", False),  # alias resolved to a snapshot
        ("gpt-4o", "gpt-4o-mini", True),
        ("gpt-4o-2024-08-06", "gpt-4o-2024-05-13", True),
        ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", False),
        ("claude-sonnet-4", "claude-sonnet-4-5-20250929", True),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022", False),
        ("gemini-1.5-pro", "gemini-1.5-pro-002", False),
        ("qwen2.5-vl", None, False),
        ("qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct", True),
    ],
)
def test_model_mismatch_rule(requested, reported, mismatch):
    from urbanarena.agents.clients.types import model_mismatch

    assert model_mismatch(requested, reported) is mismatch
