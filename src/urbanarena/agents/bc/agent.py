"""``bc:CHECKPOINT``: the behaviour-cloning policy as an agent of ``urbanarena run`` (docs/gym.md).

It reads the runner's arena observation with the checkpoint's featurizer
(:class:`urbanarena.agents.bc.features.MapNavFeaturizer`: the current-location map and the reference
map at the runner's full resolution, read for the goal's distance and bearing; the arrows, the recent
actions and the step) and takes the masked arg-max action (deterministic: the seed does not change it).
A blind checkpoint's featurizer replaces the maps by zeros. It never looks at the camera view
(``uses_images = False``: the runner renders none).

A checkpoint whose metadata names ``feature_set: "urbanground_map"`` (``train bc --family
l2_constrained``) builds a :class:`urbanarena.agents.bc.ground_agent.ContinuousBCAgent` instead (the
continuous policy, UrbanGround action JSON): ``bc:CKPT`` dispatches on the checkpoint, through
:data:`CHECKPOINT_CLASSES`, where that module registers its class (the package ``urbanarena.agents.bc`` imports it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from urbanarena.agents.base import Agent, AgentContext
from urbanarena.tasks.schema import Task


def checkpoint_feature_set(path: str) -> str | None:
    """The ``feature_set`` of a bc checkpoint's metadata, or ``None`` when it cannot be read (the loader then
    reports why)."""
    import json

    try:
        from safetensors import safe_open

        from urbanarena.agents.bc.train import META_KEY

        with safe_open(str(path), framework="pt") as f:
            return json.loads((f.metadata() or {})[META_KEY]).get("feature_set")
    except Exception:  # noqa: BLE001 - missing/foreign files are reported by load_checkpoint
        return None


CHECKPOINT_CLASSES: dict[str, type] = {}
"""``feature_set`` -> the :class:`BCAgent` subclass ``BCAgent(checkpoint)`` builds for such a checkpoint (filled by
:func:`register_checkpoint_class`; a feature set not in it builds a plain :class:`BCAgent`)."""


def register_checkpoint_class(feature_set: str, cls: type) -> type:
    """Make ``BCAgent(checkpoint)`` build ``cls`` for checkpoints whose metadata names ``feature_set``; returns
    ``cls``."""
    CHECKPOINT_CLASSES[feature_set] = cls
    return cls


class BCAgent(Agent):
    """Args: ``checkpoint``, a safetensors file written by ``urbanarena train bc``.
    Raises: UrbanArenaError (missing or foreign file), ImportError (no ``train`` extra)."""

    name = "bc"
    action_style = "arena"
    uses_images = False

    def __new__(cls, checkpoint: str = "", **_: Any):
        if cls is BCAgent:
            sub = CHECKPOINT_CLASSES.get(checkpoint_feature_set(checkpoint))
            if sub is not None:
                return super().__new__(sub)
        return super().__new__(cls)

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


__all__ = ["BCAgent", "CHECKPOINT_CLASSES", "checkpoint_feature_set", "register_checkpoint_class"]
