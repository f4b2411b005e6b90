"""Continuous movement on rendered cities (UrbanGround semantics): pose anywhere on walkable space.

* :mod:`.actions` -- UrbanGround's action schema, clamping (:class:`ContinuousAction`);
* :mod:`.collision` -- walkable space, swept collisions (:class:`WalkableSpace`);
* :mod:`.kinematics` -- move/sprint with turning in simulated time;
* :mod:`.walk_network` -- the pedestrian network as a graph for analysis (:class:`WalkNetwork`);
* :mod:`.map_view` -- map mode (pan, zoom, select);
* :mod:`.observer` -- first-person renders (:class:`SceneViewObserver`);
* :mod:`.dynamics`, :mod:`.closures`, :mod:`.pedestrians` -- the dynamic city (road closures, pedestrians):
  a task's JSON spec (:class:`DynamicsSpec`) and its world in simulated time (:class:`DynamicWorld`);
* :mod:`.state` -- pose and trajectory records;
* :mod:`.env` -- the Gymnasium environment (:class:`ContinuousEnv`);
* :mod:`.ending` -- when an episode ends (:class:`EpisodeEnd`: terminate, closure, time window, step limit).

See ``docs/continuous.md``.
"""

from urbanarena.env.continuous.actions import ActionFormatError, ActionKind, Clamp, ContinuousAction, Direction
from urbanarena.env.continuous.closures import ClosureSpec
from urbanarena.env.continuous.collision import WalkableSpace
from urbanarena.env.continuous.dynamics import DynamicsSpec, DynamicWorld, EpisodeDynamics, PedestrianSpec
from urbanarena.env.continuous.ending import EpisodeEnd
from urbanarena.env.continuous.env import ContinuousConfig, ContinuousEnv
from urbanarena.env.continuous.map_view import MapMarker, MapView
from urbanarena.env.continuous.observer import SceneViewObserver
from urbanarena.env.continuous.state import ContinuousPose, Sample
from urbanarena.env.continuous.pedestrians import PedestrianSet
from urbanarena.env.continuous.walk_network import WalkNetwork

__all__ = [
    "ActionFormatError", "ActionKind", "Clamp", "ContinuousAction", "Direction", "WalkableSpace", "ContinuousConfig",
    "ContinuousEnv", "MapMarker", "MapView", "SceneViewObserver", "ContinuousPose", "Sample", "WalkNetwork",
    "ClosureSpec", "DynamicsSpec", "EpisodeEnd", "DynamicWorld", "EpisodeDynamics", "PedestrianSpec", "PedestrianSet",
]
