"""Agents by name, for the CLI and the runner."""

from __future__ import annotations

from typing import Any

from urbanarena.agents.base import Agent
from urbanarena.agents.baselines import ForwardAgent, RandomAgent, StraightAgent
from urbanarena.agents.arena_oracle import ArenaOracleAgent
from urbanarena.agents.arena_random import ArenaRandomAgent, ArenaStraightAgent
from urbanarena.agents.bc.agent import BCAgent
from urbanarena.agents.ocr_agent import OcrAgent
from urbanarena.agents.oracle import OracleAgent
from urbanarena.agents.urbanground_oracle import UrbanGroundOracle, UrbanGroundRandom, UrbanGroundStraight
from urbanarena.agents.vlm import ArenaReActAgent, CitySeekerVLMAgent, UrbanGroundVLMAgent

AGENTS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "forward": ForwardAgent,
    "straight": StraightAgent,
    "oracle": OracleAgent,
    "arena-oracle": ArenaOracleAgent,  # cityarena tasks: acts in ArenaEnv (returns ArenaAction)
    "arena-random": ArenaRandomAgent,
    "arena-straight": ArenaStraightAgent,
    # behaviour cloning (`--agent bc:CHECKPOINT`, the `train` extra): urbanarena.agents.bc
    "bc": BCAgent,
    "ug-oracle": UrbanGroundOracle,  # urbanground tasks: acts in ContinuousEnv (UrbanGround action JSON)
    "ug-random": UrbanGroundRandom,
    "ug-straight": UrbanGroundStraight,  # forward 2 s, +90 degrees after a blocked move, never terminates
    "ocr": OcrAgent,  # cityarena tasks: reads signs with rapidocr (the 'ocr' extra), walks to the named landmark
    # VLM agents; parameters in urbanarena.agents.vlm.common (model spec, generation, images,
    # prompt_templates, cache, cache_path, max_usd, max_requests, budget_ledger ...)
    "vlm-arena": ArenaReActAgent,
    "vlm-cityseeker": CitySeekerVLMAgent,
    "vlm-urbanground": UrbanGroundVLMAgent,  # urbanground tasks: acts in ContinuousEnv (UrbanGround action JSON)
}


#: the VLM agent of each task family (harness adapters and exported dataset cards name these)
FAMILY_VLM_AGENTS: dict[str, str] = {
    "cityseeker": "vlm-cityseeker",
    "map2seq": "vlm-cityseeker",
    "cityarena": "vlm-arena",
    "urbanground": "vlm-urbanground",
}

#: baseline names that mean another agent when every task runs in the arena (``action_style == "arena"``)
ARENA_ALIASES: dict[str, str] = {"oracle": "arena-oracle", "random": "arena-random", "straight": "arena-straight"}
#: the same for continuous-only task sets (``urbanground``)
CONTINUOUS_ALIASES: dict[str, str] = {"oracle": "ug-oracle", "random": "ug-random", "straight": "ug-straight"}


def resolve_alias(name: str, action_styles: set[str]) -> str:
    """The agent a baseline name means for tasks of these action styles: ``oracle``/``random`` on arena-only
    task sets are ``arena-oracle``/``arena-random`` (:data:`ARENA_ALIASES`); any other name is itself."""
    if action_styles == {"arena"}:
        return ARENA_ALIASES.get(name, name)
    if action_styles == {"continuous"}:
        return CONTINUOUS_ALIASES.get(name, name)
    return name


def split_spec(name: str) -> tuple[str, dict[str, Any]]:
    """``bc:CHECKPOINT`` -> ``("bc", {"checkpoint": CHECKPOINT})``; any other name -> ``(name, {})``."""
    if name.startswith("bc:") and len(name) > 3:
        return "bc", {"checkpoint": name[3:]}
    return name, {}


def make_agent(name: str, **params: Any) -> Agent:
    """Instantiate an agent by name with keyword parameters.

    Raises:
        KeyError: unknown name (message lists the known agents).
    """
    name, extra = split_spec(name)
    params = {**extra, **params}
    try:
        cls = AGENTS[name]
    except KeyError:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}") from None
    return cls(**params)
