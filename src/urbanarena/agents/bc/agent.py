"""``bc:CHECKPOINT``: the behaviour-cloning policy as an agent of ``urbanarena run`` (docs/gym.md).

It reads the runner's arena observation with the checkpoint's featurizer
(:class:`urbanarena.agents.bc.features.MapNavFeaturizer`: the current-location map and the reference
map at the runner's full resolution, read for the goal's distance and bearing; the arrows, the recent
actions and the step) and takes the masked arg-max action (deterministic: the seed does not change it).
A blind checkpoint's featurizer replaces the maps by zeros. It never looks at the camera view
(``uses_images = False``: the runner renders none).
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
        self.step_limit = int(self.meta["step_limit"])
        from urbanarena.agents.bc.features import make_featurizer

        self.featurizer = make_featurizer(self.meta["feature_set"], self.step_limit,
                                          bool(self.meta["config"]["blind"]))

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "checkpoint": self.params["checkpoint"], "meta": self.meta}

    def reset(self, task: Task, context: AgentContext) -> None:
        self.featurizer.reset()

    def act(self, observation: dict[str, Any]):
        import torch

        from urbanarena.gym.arena import ACTIONS

        vec, mask = self.featurizer(observation)
        with torch.no_grad():
            logits = self.model(torch.from_numpy(vec[None]), torch.from_numpy(mask[None].astype(np.float32)))
        return ACTIONS[int(logits.argmax(1)[0])]


__all__ = ["BCAgent"]
