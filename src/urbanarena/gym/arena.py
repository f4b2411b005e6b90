"""``urbanarena/Arena-v1``: 360CityArena-style navigation tasks as a Gymnasium environment.

``gymnasium.make("urbanarena/Arena-v1", city="helsinki", split="train", family="map_navigation",
protocol="cityarena-v1", observation="map", reward="sparse")`` wraps the protocol's arena env
(:func:`urbanarena.env.stop_rules.make_arena_env`: :class:`~urbanarena.env.arena_env.ArenaEnv` with
STEP_LIMIT, STAGNATION and, for map navigation, AWAY_FROM_GOAL) around tasks of one ``cityarena``
kind drawn from the split (:class:`urbanarena.gym.common.TaskSource`).

Families (``family``): the location-scored kinds ``map_navigation``, ``landmark_language``,
``landmark_image`` and ``vln`` (``coordinate_match`` on the final position; the ANSWER action carries
no text). The answer-scored kinds (``localization``, ``object_count``, ``relational``) are refused: a
fixed-size action cannot carry their free-text answer, and ``relational`` is scored by an LLM judge,
so it has no reward.

Action: ``Discrete(len(ACTIONS))``, an index into :data:`ACTIONS` (every kind and magnitude of
:class:`~urbanarena.env.arena_env.ArenaAction`, the documented default magnitude as ``None``).
``observation["action_mask"]`` (int8, one per action) is 0 for the branch keys LEFT / RIGHT / UP
that no red arrow shows at this step (the env would count them as invalid actions), 1 elsewhere.

Observation (``Dict``), exactly what ``step`` returns:

* ``text``: ``Text(4096)``, the task text;
* ``step``: ``Box(0, max_steps, (), int64)``, steps consumed;
* ``arrows_turn_deg``: ``Box(-180, 180, (3,), float32)``, per branch key LEFT / RIGHT / UP the signed
  turn of the branch it selects (0 when no arrow shows it; see ``action_mask``);
* ``arrows_bearing_deg``: ``Box(0, 360, (3,), float32)``, the same branches' compass bearings (the
  red arrows the VLM sees drawn in its view point that way);
* ``recent_actions``: ``Box(-1, len(ACTIONS) - 1, (5,), int64)``, the last five executed actions as
  indices into :data:`ACTIONS`, oldest first, ``-1`` padded (what the VLM prompt lists);
* ``action_mask``: ``Box(0, 1, (len(ACTIONS),), int8)``;
* with ``observation`` ``rgb`` or ``rgb+map``: ``view``, ``Box(0, 255, (H, W, 3), uint8)``, the camera
  view (rendered at the runner's 640 x 360, 90 degrees, then resized to ``image_size``);
* with ``map`` or ``rgb+map``: ``map`` (the current-location map with the agent's marker, all zeros
  where the protocol sends none: under ``cityarena-v1`` every kind but localization gets it, under
  ``urbanarena-v1`` tasks with ``requires_current_location``, as ``urbanarena run`` sends it:
  :meth:`~urbanarena.tasks.families.cityarena.CityArenaFamily.sends_location_map`) and ``reference`` (the task's first reference
  image, e.g. map navigation's start/goal map; zeros when none), both ``Box(0, 255, (H, W, 3),
  uint8)`` at ``map_size`` (drawn at the runner's 640 x 640 and resized).

Reward (``reward``):

* ``sparse``: 0 on every step but the last, which gets the episode's ``evaluation_score``
  (:func:`urbanarena.tasks.validators.score_episode` on the family's validator,
  :meth:`~urbanarena.tasks.families.cityarena.CityArenaFamily.make_validator`): 1 when the agent ends
  the episode by ANSWER within the task's radius of the goal (20 m for map navigation, 10 m for the
  others), else 0. ``info["score"]`` on the last step holds all of score_episode's columns, the same
  as the ``metrics`` of ``urbanarena run`` for the same task, seed and actions.
* ``shaped`` (ours): the sparse reward plus, on every step, the metres of graph distance to the goal
  gained divided by ``progress_scale_m`` (10 m) minus ``step_cost`` (0.01).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from urbanarena.env.arena_env import ActionKind, ArenaAction, Magnitude
from urbanarena.gym.common import (
    CHARSET, MAX_TEXT, OBSERVATIONS, REWARDS, GymConfigError, ImageTaskEnv, discrete_action, check_choice, encode_text, fit_image,
    init_task_source, progress_reward,
)
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

#: the location-scored kinds the env accepts (module docstring)
FAMILIES = ("map_navigation", "landmark_language", "landmark_image", "vln")
_MAGS: tuple[Magnitude | None, ...] = (None, Magnitude.SMALL, Magnitude.MEDIUM, Magnitude.LARGE)
#: the action table: index -> ArenaAction
ACTIONS: tuple[ArenaAction, ...] = (
    *(ArenaAction(ActionKind.W, m) for m in _MAGS),
    ArenaAction(ActionKind.S),
    *(ArenaAction(k, m) for k in (ActionKind.A, ActionKind.D, ActionKind.Q, ActionKind.E) for m in _MAGS),
    ArenaAction(ActionKind.LEFT), ArenaAction(ActionKind.RIGHT), ArenaAction(ActionKind.UP),
    ArenaAction(ActionKind.ANSWER, answer=""),
)
BRANCH_KEYS = ("LEFT", "RIGHT", "UP")
_INDEX = {(a.kind.value, a.magnitude.value if a.magnitude is not None else None): i for i, a in enumerate(ACTIONS)}
#: the runner's view and map sizes (``urbanarena.runner.arena.ArenaViewSettings``)
VIEW_PX = (640, 360)
MAP_PX = (640, 640)
RECENT = 5


def action_index(action: ArenaAction | str) -> int:
    """Index in :data:`ACTIONS` of an :class:`ArenaAction` or of its label (``"W LARGE"``, ``"ANSWER: ..."``;
    the answer text is dropped). Raises ``KeyError`` for PARSE_ERROR or an unknown label."""
    if isinstance(action, str):
        label = action.strip()
        if label.startswith("ANSWER"):
            return _INDEX[("ANSWER", None)]
        kind, _, mag = label.partition(" ")
        return _INDEX[(kind, mag or None)]
    return _INDEX[(action.kind.value, action.magnitude.value if action.magnitude is not None else None)]


def arrow_features(arrows: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(turn_deg, bearing_deg, shown)`` per LEFT/RIGHT/UP from ``ArenaEnv`` observation arrows."""
    turn = np.zeros(3, np.float32)
    bearing = np.zeros(3, np.float32)
    shown = np.zeros(3, np.int8)
    for a in arrows:
        for k in a.get("keys") or ():
            if k in BRANCH_KEYS:
                i = BRANCH_KEYS.index(k)
                turn[i] = float(np.clip(a.get("turn_deg", 0.0), -180.0, 180.0))
                bearing[i] = float(a.get("bearing_deg", 0.0)) % 360.0
                shown[i] = 1
    return turn, bearing, shown


def action_mask(shown: np.ndarray) -> np.ndarray:
    """Per :data:`ACTIONS` entry 1 when it may be sent (branch keys only while their arrow shows)."""
    mask = np.ones(len(ACTIONS), np.int8)
    for i, k in enumerate(BRANCH_KEYS):
        mask[_INDEX[(k, None)]] = int(shown[i])
    return mask


def recent_indices(recent: Sequence[dict[str, Any]]) -> np.ndarray:
    """The last :data:`RECENT` executed actions (``ArenaEnv`` observation ``recent_actions``) as indices."""
    out = np.full(RECENT, -1, np.int64)
    idx = [action_index(r["label"]) for r in list(recent)[-RECENT:]]
    if idx:
        out[RECENT - len(idx):] = idx
    return out


class ArenaTaskEnv(ImageTaskEnv, gym.Env):
    """Registered as ``urbanarena/Arena-v1`` (module docstring).

    Args:
        city: city name (``helsinki``: the split's area) or a :class:`City`.
        split: ``train`` / ``val`` / ``test`` (``None``: any city, no split check).
        family: one of :data:`FAMILIES`.
        protocol: ``cityarena-v1`` (default) or ``urbanarena-v1``.
        observation: ``text``, ``rgb``, ``map`` or ``rgb+map``.
        reward: ``sparse`` or ``shaped``.
        tasks: ``None`` (generate ``n_tasks`` with ``task_seed`` on the split's city), a task file, or a list.
        task_dir: folder reference images resolve against for a task list (default: the task file's).
        max_steps: step limit (default: the protocol's, 50).
        image_size, map_size: ``(W, H)`` of ``view`` and of ``map`` / ``reference``.
    Raises:
        GymConfigError: a keyword outside its values; SplitError: the city is not the split's area.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, city: str | City = "helsinki", split: str | None = "train", family: str = "map_navigation",
                 protocol: str = "cityarena-v1", observation: str = "map", reward: str = "sparse",
                 tasks: str | Sequence[Task] | None = None, n_tasks: int = 40, task_seed: int = 0,
                 task_dir: str | None = None, max_steps: int | None = None, image_size: tuple[int, int] = (160, 90),
                 map_size: tuple[int, int] = (96, 96), progress_scale_m: float = 10.0, step_cost: float = 0.01,
                 render_mode: str | None = None):
        super().__init__()
        from urbanarena.env.protocols import get_protocol
        from urbanarena.tasks.families.cityarena import CityArenaFamily

        check_choice("family", family, FAMILIES)
        check_choice("observation", observation, OBSERVATIONS)
        check_choice("reward", reward, REWARDS)
        CityArenaFamily.check_protocol(protocol)
        self.family_kind = family
        self.protocol_id = protocol
        self.observation_kind = observation
        self.reward_kind = reward
        self.render_mode = render_mode
        self.max_steps = int(max_steps if max_steps is not None else get_protocol(protocol).params["step_limit"])
        self.image_size = tuple(int(v) for v in image_size)
        self.map_size = tuple(int(v) for v in map_size)
        self.progress_scale_m = float(progress_scale_m)
        self.step_cost = float(step_cost)
        self.family = CityArenaFamily()
        init_task_source(self, city, split, tasks, lambda t: t.extra.get("task_kind") == family, mode="arena",
                         family=family, n_tasks=n_tasks, task_seed=task_seed, task_dir=task_dir)
        self.uses_view = "rgb" in observation
        self.uses_map = "map" in observation
        self._observer: Any = None
        self._map_renderer: Any = None
        obs = {
            "text": spaces.Text(MAX_TEXT, min_length=0, charset=CHARSET),
            "step": spaces.Box(0, self.max_steps, shape=(), dtype=np.int64),
            "arrows_turn_deg": spaces.Box(-180.0, 180.0, shape=(3,), dtype=np.float32),
            "arrows_bearing_deg": spaces.Box(0.0, 360.0, shape=(3,), dtype=np.float32),
            "recent_actions": spaces.Box(-1, len(ACTIONS) - 1, shape=(RECENT,), dtype=np.int64),
            "action_mask": spaces.Box(0, 1, shape=(len(ACTIONS),), dtype=np.int8),
        }
        w, h = self.image_size
        mw, mh = self.map_size
        if self.uses_view:
            obs["view"] = spaces.Box(0, 255, shape=(h, w, 3), dtype=np.uint8)
        if self.uses_map:
            obs["map"] = spaces.Box(0, 255, shape=(mh, mw, 3), dtype=np.uint8)
            obs["reference"] = spaces.Box(0, 255, shape=(mh, mw, 3), dtype=np.uint8)
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Discrete(len(ACTIONS))
        self.env: gym.Env | None = None
        self._refs: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------ tasks
    def _generate(self, city: City, out) -> None:
        from urbanarena.tasks.generators import generate_suite, save_suite

        res = generate_suite(city, per_family=self._n_gen, seed=self._seed_gen, kinds=(self.family_kind,),
                             split=self._split, max_steps=self.max_steps)
        save_suite(res, out)

    # ------------------------------------------------------------ parts
    @property
    def arena(self):
        """The :class:`~urbanarena.env.arena_env.ArenaEnv` of the current episode (``None`` before reset)."""
        return self.env.unwrapped if self.env is not None else None

    def observer(self):
        if self._observer is None:
            from urbanarena.env.observers import panorama_observer_for
            from urbanarena.render.views import ViewRenderer

            self._observer = panorama_observer_for(self.city, width=VIEW_PX[0], height=VIEW_PX[1], hfov_deg=90.0,
                                                   renderer=ViewRenderer(max_grids=16))
        return self._observer

    def map_renderer(self):
        if self._map_renderer is None:
            from urbanarena.env.observers import LocationMapObserver

            self._map_renderer = LocationMapObserver(*MAP_PX)
        return self._map_renderer

    def reference_images(self, task: Task) -> list[np.ndarray]:
        from urbanarena.render.encode import decode_image

        out = []
        for p in self.family.reference_image_paths(task, self.source.base_dir):
            key = str(p)
            if key not in self._refs:
                self._refs[key] = decode_image(p.read_bytes())
            out.append(self._refs[key])
        return out

    # ------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw a task (``options``: ``task`` or ``task_id`` picks one) and start its episode."""
        super().reset(seed=seed)
        from urbanarena.env.stop_rules import make_arena_env

        task = self.source.pick(self.np_random, options)
        self.task = task
        needs_map = self.family.sends_location_map(task, self.protocol_id)
        self.env = make_arena_env(self.city, self.protocol_id, task_kind=self.family.task_kind(task),
                                  max_steps=self.max_steps, observer=self.observer() if self.uses_view else None,
                                  map_renderer=self.map_renderer() if (self.uses_map and needs_map) else None)
        opts = self.family.env_options(task)
        opts["reference_images"] = self.reference_images(task)
        self._validator = self.family.make_validator(task, self.city, self.protocol_id)
        raw, info = self.env.reset(seed=seed, options=opts)
        self._done = False
        self.score = None
        self._dist = self.arena.graph_goal_distance_m()
        self._replaced = 0
        return self._obs(raw), self._info(info)

    def step(self, action):
        """Execute ``ACTIONS[action]``. Raises ``RuntimeError`` before reset / after the end, ``GymActionError``
        (a ``ValueError``) for an action outside ``Discrete(len(ACTIONS))``: a float, a bool, an index out of
        range (:func:`~urbanarena.gym.common.discrete_action`)."""
        if self.env is None or self._done:
            raise RuntimeError("step() called before reset() or after the episode ended")
        a = discrete_action(action, len(ACTIONS), "urbanarena/Arena-v1")
        raw, _, terminated, truncated, info = self.env.step(ACTIONS[a])
        reward = 0.0
        if self.reward_kind == "shaped":
            d = self.arena.graph_goal_distance_m()
            reward += progress_reward(self._dist, d, self.progress_scale_m) - self.step_cost
            self._dist = d
        if terminated or truncated:
            self._done = True
            self.score = self.final_score(info)
            reward += float(self.score.get("evaluation_score") or 0.0)
        out = self._info(dict(info, score=self.score) if self.score is not None else info)
        return self._obs(raw), reward, bool(terminated), bool(truncated), out

    def final_score(self, info: dict[str, Any]) -> dict[str, Any]:
        """360CityArena's episode columns for the finished episode (module docstring)."""
        from urbanarena.tasks.validators import score_episode

        status = info.get("stop_reason") or "STEP_LIMIT"
        pose = self.arena.pose()
        result = self._validator(status, self.arena.answer, (pose.x_m, pose.y_m))
        cols = score_episode(status, result)
        cols["validation"] = result.to_dict() if result is not None else None
        return cols


    def close(self):
        if self.env is not None:
            self.env.close()
        self.env = None

    # ------------------------------------------------------------ encoding



def encode_arena_observation(raw: dict[str, Any], observation: str, image_size: tuple[int, int],
                             map_size: tuple[int, int], max_steps: int) -> dict[str, Any]:
    """The ``Arena-v1`` observation (module docstring) of an ``ArenaEnv`` observation ``raw``; the same
    function turns the runner's observations into model inputs (``bc:`` agents)."""
    turn, bearing, shown = arrow_features(raw.get("arrows") or [])
    text, _ = encode_text((raw.get("text") or {}).get("task", ""))
    out: dict[str, Any] = {
        "text": text,
        "step": np.asarray(min(int(raw.get("step", 0)), int(max_steps)), dtype=np.int64),
        "arrows_turn_deg": turn,
        "arrows_bearing_deg": bearing,
        "recent_actions": recent_indices(raw.get("recent_actions") or []),
        "action_mask": action_mask(shown),
    }
    if "rgb" in observation:
        out["view"] = fit_image(raw.get("view"), image_size)
    if "map" in observation:
        refs = raw.get("reference_images") or []
        out["map"] = fit_image(raw.get("map"), map_size)
        out["reference"] = fit_image(refs[0] if refs else None, map_size)
    return out


ArenaTaskEnv.encode = staticmethod(encode_arena_observation)

__all__ = ["ACTIONS", "ArenaTaskEnv", "BRANCH_KEYS", "FAMILIES", "action_index", "action_mask", "arrow_features",
           "encode_arena_observation", "recent_indices"]
