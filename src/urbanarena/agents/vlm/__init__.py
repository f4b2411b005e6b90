"""VLM agents over real model APIs.

* :class:`ArenaReActAgent` (``vlm-arena``): 360CityArena's ReAct protocol with
  reflection memory in the arena env (:mod:`.arena`); episodes are driven by
  :func:`run_arena_episode` (:mod:`.arena_loop`).
* :class:`CitySeekerVLMAgent` (``vlm-cityseeker``): CitySeeker's stop-then-choose
  protocol on graph cities with panoramas (:mod:`.cityseeker`).
* :class:`UrbanGroundVLMAgent` (``vlm-urbanground``): one UrbanGround action per
  call in the continuous env (``urbanground`` tasks; :mod:`.urbanground`); its reference inputs,
  UrbanGround's released agent's prompting, are :mod:`.urbanground_react`.

Shared parameters (model spec, settings, prompt templates, cache, caps) are
described in :mod:`.common`; reply parsing in :mod:`.parsing`; prompt
templates in :mod:`urbanarena.agents.prompts`.
"""

from urbanarena.agents.vlm.arena import ArenaReActAgent
from urbanarena.agents.vlm.arena_loop import arena_reset_options, run_arena_episode
from urbanarena.agents.vlm.cityseeker import CitySeekerVLMAgent
from urbanarena.agents.vlm.urbanground import UrbanGroundVLMAgent
from urbanarena.agents.vlm import urbanground_react  # noqa: F401  (registers the reference inputs)

__all__ = ["ArenaReActAgent", "CitySeekerVLMAgent", "UrbanGroundVLMAgent", "arena_reset_options", "run_arena_episode"]
