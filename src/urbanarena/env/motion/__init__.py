"""Motion models: how an action index moves the agent on a city graph."""

from urbanarena.env.motion.base import Choice, MotionModel, NavState

__all__ = ["Choice", "MotionModel", "NavState"]
