"""``bc:CHECKPOINT`` for an UrbanGround checkpoint (``feature_set: "urbanground_map"``; docs/gym.md).

It runs the checkpoint's observation loop and featurizer
(:class:`urbanarena.agents.bc.groundfeatures.GroundNavFeaturizer`: the map-mode image read with OpenCV,
the text state's latitude, longitude and yaw) and returns UrbanGround action JSON: the loop's map
action when it has one, else the arg-max of the network over
:data:`~urbanarena.agents.bc.groundfeatures.POLICY_MACROS` (deterministic). A blind checkpoint's
featurizer replaces every image by zeros. It never looks at the first-person view (``uses_images =
False``: the runner renders none; map-mode images come with the observation whatever the flag).
"""

from __future__ import annotations

from typing import Any

from urbanarena.agents.bc.agent import BCAgent, register_checkpoint_class
from urbanarena.tasks.schema import Task


class ContinuousBCAgent(BCAgent):
    """What ``BCAgent(checkpoint)`` builds for an UrbanGround checkpoint. Args: ``checkpoint``.
    Raises: UrbanArenaError (missing or foreign file), ImportError (no ``train`` extra)."""

    action_style = "continuous"

    def __init__(self, checkpoint: str):
        super(BCAgent, self).__init__(checkpoint=str(checkpoint))
        from urbanarena.agents.bc.groundfeatures import GroundNavFeaturizer
        from urbanarena.agents.bc.train import load_checkpoint

        self.model, self.meta = load_checkpoint(checkpoint)
        self.step_limit = int(self.meta["step_limit"])
        self.featurizer = GroundNavFeaturizer(self.step_limit, bool(self.meta["config"]["blind"]))

    def reset(self, task: Task, context: Any) -> None:
        self.featurizer.reset()

    def act(self, observation: dict[str, Any]) -> dict[str, Any]:  # type: ignore[override]
        from urbanarena.agents.bc.groundfeatures import POLICY_MACROS
        from urbanarena.agents.bc.groundtrain import policy_index
        from urbanarena.gym.continuous import MACROS

        act = self.featurizer.perception_action(observation)
        if act is not None:
            return act
        vec, mask = self.featurizer(observation)
        k = policy_index(self.model, vec, mask)
        self.featurizer.record(k, observation)
        return dict(MACROS[POLICY_MACROS[k]])


register_checkpoint_class("urbanground_map", ContinuousBCAgent)

__all__ = ["ContinuousBCAgent"]
