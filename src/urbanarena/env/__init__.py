"""The graph navigation environment (Gymnasium), motion models, protocols and stop-rule wrappers."""

from urbanarena.env.graph_env import GraphNavEnv, STOP
from urbanarena.env.protocols import PROTOCOLS, Protocol, get_protocol, make_motion
from urbanarena.env.wrappers import StepLimit

__all__ = ["GraphNavEnv", "STOP", "PROTOCOLS", "Protocol", "get_protocol", "make_motion", "StepLimit"]
