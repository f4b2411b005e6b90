"""Agents (policies): baselines now, VLM agents later. All share :class:`Agent`."""

from urbanarena.agents.base import Agent, AgentContext

__all__ = ["Agent", "AgentContext"]
