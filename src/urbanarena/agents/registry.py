"""Agents by name, for the CLI and the runner."""

from __future__ import annotations

from typing import Any

from urbanarena.agents.base import Agent
from urbanarena.agents.baselines import ForwardAgent, RandomAgent, StraightAgent
from urbanarena.agents.arena_oracle import ArenaOracleAgent
from urbanarena.agents.oracle import OracleAgent
from urbanarena.agents.vlm import ArenaReActAgent, CitySeekerVLMAgent

AGENTS: dict[str, type[Agent]] = {
    "random": RandomAgent,
    "forward": ForwardAgent,
    "straight": StraightAgent,
    "oracle": OracleAgent,
    "arena-oracle": ArenaOracleAgent,  # cityarena tasks: acts in ArenaEnv (returns ArenaAction)
    # VLM agents; parameters in urbanarena.agents.vlm.common (model spec, generation, images,
    # prompt_templates, cache, cache_path, max_usd, max_requests, budget_ledger ...)
    "vlm-arena": ArenaReActAgent,
    "vlm-cityseeker": CitySeekerVLMAgent,
}


def make_agent(name: str, **params: Any) -> Agent:
    """Instantiate an agent by name with keyword parameters.

    Raises:
        KeyError: unknown name (message lists the known agents).
    """
    try:
        cls = AGENTS[name]
    except KeyError:
        raise KeyError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}") from None
    return cls(**params)
