"""The -p parameter schemas (urbanarena.agents.params): one per registered agent, matching the agent's
constructor, refusing values out of range in the preflight before RUN_DIR exists."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

from urbanarena.agents.params import AGENT_PARAMS, AgentParamError, params_table, validate_agent_params
from urbanarena.agents.registry import AGENTS
from urbanarena.agents.vlm.common import ModelAgent
from urbanarena.cli.main import app


def _constructor_params(cls) -> dict[str, object]:
    """Keyword parameters of an agent class (a VLM agent's own plus ModelAgent's), with their defaults."""
    out: dict[str, object] = {}
    chain = [cls, ModelAgent] if issubclass(cls, ModelAgent) else [cls]
    for c in chain:
        for name, p in inspect.signature(c.__init__).parameters.items():
            if name in ("self", "client") or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            out.setdefault(name, p.default)
    return out


def test_every_registered_agent_has_a_schema_matching_its_constructor():
    assert set(AGENT_PARAMS) == set(AGENTS)
    for name, cls in AGENTS.items():
        ctor = _constructor_params(cls)
        fields = AGENT_PARAMS[name].model_fields
        assert set(fields) == set(ctor), (name, set(fields) ^ set(ctor))
        for key, default in ctor.items():
            got = fields[key].default
            if default is inspect.Parameter.empty:  # required in the constructor: required in the schema
                assert fields[key].is_required(), (name, key)
            elif key == "cache":  # ModelAgent's own default is off; the run fills read-write
                assert got == default == "off"
            elif isinstance(default, tuple):
                assert tuple(got) == default, (name, key)
            else:
                assert got == default or (got is None and default is None), (name, key, got, default)


@pytest.mark.parametrize("params, key", [
    ({"timeout_s": -1}, "timeout_s"),
    ({"timeout_s": float("inf")}, "timeout_s"),  # what JSON 1e309 parses to
    ({"timeout_s": 0}, "timeout_s"),
    ({"timeout_s": float("nan")}, "timeout_s"),
    ({"retry": {"max_retries": 10**9}}, "retry.max_retries"),
    ({"retry": {"backoff_max_s": float("inf")}}, "retry.backoff_max_s"),
    ({"generation": {"temperature": 3}}, "generation.temperature"),
    ({"images": {"jpeg_quality": 0}}, "images.jpeg_quality"),
    ({"crop_size": [0, 20]}, "crop_size"),
    ({"hfov_deg": 180}, "hfov_deg"),
    ({"model": "openai-compatible:http://127.0.0.1:99999/v1:m"}, "model"),
    ({"api_key_env": "A B"}, "api_key_env"),
    ({"warp": 9}, "warp"),
])
def test_out_of_range_values_are_refused_naming_the_key(params, key):
    with pytest.raises(AgentParamError) as ei:
        validate_agent_params("vlm-cityseeker", params)
    assert f"-p {key}" in str(ei.value) and "vlm-cityseeker" in str(ei.value)


def test_values_inside_the_ranges_pass_unchanged():
    p = {"timeout_s": 0.1, "retry": {"max_retries": 20, "backoff_initial_s": 0}, "hfov_deg": 60, "crop_size": [40, 20],
         "control": "blind", "model": "openai-compatible:http://127.0.0.1:8000/v1:m"}
    assert validate_agent_params("vlm-cityseeker", p) is p
    assert validate_agent_params("random", {"stop_prob": 1.0}) == {"stop_prob": 1.0}
    assert validate_agent_params("runner_util:FailingAgent", {"anything": 1}) == {"anything": 1}  # no schema: as is
    with pytest.raises(AgentParamError):
        validate_agent_params("random", {"stop_prob": 1.5})
    with pytest.raises(AgentParamError):
        validate_agent_params("oracle", {"follow": "fastest"})


def test_params_table_flattens_nested_models_with_ranges():
    rows = {r["key"]: r for r in params_table("vlm-arena")}
    assert rows["timeout_s"]["range"] == ">= 0.1, <= 3600" and rows["timeout_s"]["default"] == "120.0"
    assert rows["retry.max_retries"]["range"] == ">= 0, <= 20"
    assert rows["generation.temperature"]["range"] == ">= 0, <= 2"
    assert "include_map" in rows and "hfov_deg" not in rows
    with pytest.raises(KeyError):
        params_table("nope")


def test_agents_command_prints_the_schema():
    r = CliRunner().invoke(app, ["agents", "random", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == [{"key": "stop_prob", "type": "float", "default": "0.0", "range": ">= 0, <= 1",
                                     "description": "probability of STOP at each step"}]
    r = CliRunner().invoke(app, ["agents"])
    assert r.exit_code == 0 and "vlm-urbanground" in r.output
    r = CliRunner().invoke(app, ["agents", "nope"])
    assert r.exit_code == 2


@pytest.mark.parametrize("params, key", [({"seed": 10**30}, "seed"), ({"max_output_tokens": 10**9}, "max_output_tokens")])
def test_judge_params_are_checked_against_the_generation_schema(tmp_path, params, key):
    from urbanarena.runner.driver import RunRequest, _prepare_judge
    from urbanarena.runner.pool import AgentSpecError

    req = RunRequest(city="x", tasks="y", agent="random", out=tmp_path / "run",
                     judge="openai-compatible:http://127.0.0.1:9/v1:judge", judge_params=params)
    with pytest.raises(AgentSpecError, match=f"--judge-param {key}: Input should be less than or equal to"):
        _prepare_judge(req, {}, "random", check_keys=False)
    ok = RunRequest(city="x", tasks="y", agent="random", out=tmp_path / "run",
                    judge="openai-compatible:http://127.0.0.1:9/v1:judge", judge_params={"seed": 7})
    assert _prepare_judge(ok, {}, "random", check_keys=False).generation == {"seed": 7}
