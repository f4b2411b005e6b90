"""``bc:CHECKPOINT``: the behaviour-cloning policy as an agent of ``urbanarena run`` (docs/gym.md).

It reads the runner's arena observation through the ``Arena-v1`` encoder
(:func:`urbanarena.gym.arena.encode_arena_observation`: current-location map and reference map resized
to the checkpoint's map size) and takes the masked arg-max action (deterministic: the seed does not
change it). It never looks at the camera view (``uses_images = False``: the runner renders none).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.tasks.schema import Task


class BCAgent(Agent):
    """Args: ``checkpoint``, a safetensors file written by ``urbanarena train bc``.
    Raises: UrbanArenaError (missing or foreign file), ImportError (no ``train`` extra)."""

    name = "bc"
    action_style = "arena"
    uses_images = False

    def __init__(self, checkpoint: str):
        super().__init__(checkpoint=str(checkpoint))
        from urbanarena.agents.bc.train import load_checkpoint

        self.model, self.meta = load_checkpoint(checkpoint)
        self.map_px = int(self.meta["config"]["map_px"])
        self.step_limit = int(self.meta["step_limit"])

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "checkpoint": self.params["checkpoint"], "meta": self.meta}

    def reset(self, task: Task, context: AgentContext) -> None:
        pass

    def act(self, observation: dict[str, Any]):
        import torch

        from urbanarena.agents.bc.features import featurize
        from urbanarena.gym.arena import ACTIONS, encode_arena_observation

        enc = encode_arena_observation(observation, "map", (self.map_px, self.map_px), (self.map_px, self.map_px),
                                       self.step_limit)
        img, vec, mask = featurize("map_navigation", enc, self.step_limit, raw=observation)
        with torch.no_grad():
            logits = self.model(torch.from_numpy(img[None]), torch.from_numpy(vec[None]),
                                torch.from_numpy(mask[None].astype(np.float32)))
        return ACTIONS[int(logits.argmax(1)[0])]


__all__ = ["BCAgent"]
