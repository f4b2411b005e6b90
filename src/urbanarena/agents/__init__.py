"""Agents (policies), all sharing :class:`Agent`: baselines and oracles (:mod:`.baselines`, :mod:`.arena_oracle`,
:mod:`.urbanground_oracle`, :mod:`.ocr_agent`), VLM agents over model clients (:mod:`.vlm`, :mod:`.clients`,
:mod:`.prompts`, :mod:`.strategies`), the behaviour-cloning policy (:mod:`.bc`); names resolve in :mod:`.registry`."""

from urbanarena.agents.base import Agent, AgentContext

__all__ = ["Agent", "AgentContext"]
