"""Prompt templates: packaged defaults, user overrides, hashes in the agent config, registry entries."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

import pytest

from urbanarena.agents.prompts import (
    ARENA_TEMPLATES,
    CITYSEEKER_TEMPLATES,
    PromptTemplateError,
    TEMPLATE_FIELDS,
    default_template,
    load_templates,
    templates_hash,
)
from urbanarena.agents.registry import AGENTS, make_agent
from urbanarena.agents.vlm import ArenaReActAgent, CitySeekerVLMAgent

SPEC = "openai-compatible:http://127.0.0.1:9/v1:qwen2.5-vl"


def test_packaged_templates_load_and_hash_their_text():
    for name in TEMPLATE_FIELDS:
        t = default_template(name)
        raw = resources.files("urbanarena.agents.prompts").joinpath(f"{name}.txt").read_bytes()
        assert t.text.encode("utf-8") == raw and t.source == "package"
        assert t.sha256 == hashlib.sha256(raw).hexdigest()
    assert "${task}" in default_template("arena_system").text
    assert default_template("arena_correction").render(error="E!").startswith("Your previous reply could not be used: E!")


def test_override_by_folder_and_by_mapping(tmp_path):
    (tmp_path / "arena_step.txt").write_text("MEM=${memory} RECENT=${recent_actions}", encoding="utf-8")
    got = load_templates(ARENA_TEMPLATES, tmp_path)
    assert got["arena_step"].source == str(tmp_path / "arena_step.txt")
    assert got["arena_step"].render(memory="m", recent_actions="r") == "MEM=m RECENT=r"
    assert got["arena_system"].source == "package"  # names the folder lacks keep the default
    f = tmp_path / "mine.txt"
    f.write_text("Question was: ${question}. Cost $$5.", encoding="utf-8")
    got = load_templates(CITYSEEKER_TEMPLATES, {"cityseeker_stop": f})
    assert got["cityseeker_stop"].render(question="q") == "Question was: q. Cost $5."


def test_bad_templates_name_the_file(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("hello ${memroy}", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match=r"bad\.txt.*unknown placeholder.*memroy"):
        load_templates(ARENA_TEMPLATES, {"arena_step": f})
    f.write_text("costs $5", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match=r"bad\.txt.*malformed placeholder"):
        load_templates(ARENA_TEMPLATES, {"arena_step": f})
    with pytest.raises(PromptTemplateError, match="cannot read"):
        load_templates(ARENA_TEMPLATES, {"arena_step": tmp_path / "missing.txt"})
    with pytest.raises(PromptTemplateError, match="this agent uses"):
        load_templates(ARENA_TEMPLATES, {"cityseeker_stop": f})
    with pytest.raises(PromptTemplateError, match="folder not found"):
        load_templates(ARENA_TEMPLATES, tmp_path / "nope")


def test_template_hashes_enter_the_agent_config_and_change_it(tmp_path):
    a = ArenaReActAgent(SPEC)
    cfg = a.config()
    assert cfg["prompts"] == {n: default_template(n).sha256 for n in ARENA_TEMPLATES}
    doc = json.dumps(cfg["prompts"], sort_keys=True, separators=(",", ":")).encode()
    assert cfg["prompt_hash"] == hashlib.sha256(doc).hexdigest() == templates_hash(a.templates)
    # the endpoint URL is not part of the config (same model elsewhere = same configuration)
    assert cfg["model"] == {"provider": "openai-compatible", "model": "qwen2.5-vl"}
    assert "127.0.0.1" not in json.dumps(cfg)
    f = tmp_path / "sys.txt"
    f.write_text(default_template("arena_system").text + "\nBe brief.", encoding="utf-8")
    b = ArenaReActAgent(SPEC, prompt_templates={"arena_system": str(f)})
    assert b.config()["prompts"]["arena_system"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert b.config()["prompt_hash"] != cfg["prompt_hash"]
    # same text from another path: same configuration
    g = tmp_path / "copy.txt"
    g.write_bytes(f.read_bytes())
    assert ArenaReActAgent(SPEC, prompt_templates={"arena_system": g}).config() == b.config()


def test_registry_builds_both_agents_with_their_parameters(tmp_path):
    assert AGENTS["vlm-arena"] is ArenaReActAgent and AGENTS["vlm-cityseeker"] is CitySeekerVLMAgent
    a = make_agent("vlm-arena", model=SPEC, generation={"temperature": 0.2}, images={"max_side_px": 512},
                   cache="read-write", cache_path=str(tmp_path / "c.sqlite"), max_requests=10)
    cfg = a.config()
    assert cfg["generation"] == {"temperature": 0.2} and cfg["images"]["max_side_px"] == 512
    assert "cache" not in json.dumps(cfg) and "max_requests" not in cfg  # no reply-neutral settings in the hash
    c = make_agent("vlm-cityseeker", model=SPEC, hfov_deg=90, crop_size=[320, 160])
    assert c.config()["hfov_deg"] == 90.0 and c.config()["crop_size"] == [320, 160]
    assert set(c.config()["prompts"]) == set(CITYSEEKER_TEMPLATES)
    with pytest.raises(ValueError, match="cache_path"):
        make_agent("vlm-arena", model=SPEC, cache="read-only")
    with pytest.raises(ValueError, match="needs a model: give --model SPEC"):
        make_agent("vlm-cityseeker")
    with pytest.raises(ValueError):
        make_agent("vlm-arena", model=SPEC, generation={"temperature": 9})
