"""UrbanGround's action schema for the continuous environment.

One action is a flat JSON object ``{"action": NAME, ...fields}``, as
UrbanGround's HTTP interface and released Python client use it
(UrbanGround repository, ``docs/CONTROLS_AND_API.md``, "Actions"; value
ranges from its client's ``validate_action`` in
``AgentEvaluation/tasks/base.py``):

==============  =======================================  ==========================
action          fields                                   range (clamped)
==============  =======================================  ==========================
``move``        ``dir`` forward|backward|left|right,     ``seconds`` 0.05 .. 2.0
``sprint``      ``seconds`` (default 0.5), optional      (simulated seconds);
                ``yaw_rate``, ``pitch_rate`` (deg/s),    rates -180 .. 180 deg/s;
                ``jump`` (boolean), ``jump_at`` (s)      ``jump_at`` 0 .. ``seconds``
``look``        ``yaw``, ``pitch`` (relative turn,       yaw -180 .. 180,
                degrees; positive yaw turns right,       pitch -90 .. 90
                positive pitch looks up; default 0)
``jump``        none (first-person mode only)
``open_map``    none (first-person mode only)
``map_select``  ``x``, ``y`` normalised image            0 .. 1 (default 0.5)
                coordinates, ``y = 0`` at the top
``map_pan``     ``east``, ``north`` metres               -2000 .. 2000 (default 0)
``map_zoom``    ``factor`` (< 1 closer, > 1 farther)     0.25 .. 4 (default 1)
``map_orbit``   ``yaw``, ``pitch`` degrees               yaw -180 .. 180, pitch -90 .. 90
``close_map``   none (map mode only)
``terminate``   none (either mode; ends the episode)
==============  =======================================  ==========================

The schema is the UrbanGround paper's (appendix B, action-space prompt). ``jump``, the
``jump``/``jump_at`` fields of a move and ``map_orbit`` are accepted and recorded; their effect
in our environment is ours (the paper gives none): our ground is flat and nothing is low enough to
jump over, so a jump takes ``jump_seconds`` of simulated time in place and a move's jump changes
nothing; our map is a north-up 2D raster, so ``map_orbit`` takes a map action's time and leaves
the map as it is (:mod:`urbanarena.env.continuous.env`).

Out-of-range numbers are clamped to the range and every clamp is recorded
(:class:`Clamp`: field, value given, value used), as is every field that was
missing and took its default. Unparseable input (unknown action name, a
``dir`` that is not one of the four, a non-numeric or non-finite number) raises
:class:`ActionFormatError`; the environment turns that into an invalid action
(recorded, nothing executed).

``PARSE_ERROR`` is not UrbanGround's: the agent layer sends it when it could not
parse the model's reply; it consumes a step and executes nothing (as in
:mod:`urbanarena.env.arena_env`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Mapping

import gymnasium as gym

from urbanarena.errors import UrbanArenaError


class ActionFormatError(UrbanArenaError, ValueError):
    """An action that cannot be read (unknown name, bad ``dir``, non-numeric or non-finite value)."""


class ActionKind(str, Enum):
    """Action names (UrbanGround's, plus ``parse_error``)."""

    MOVE = "move"
    SPRINT = "sprint"
    LOOK = "look"
    JUMP = "jump"
    OPEN_MAP = "open_map"
    MAP_SELECT = "map_select"
    MAP_PAN = "map_pan"
    MAP_ZOOM = "map_zoom"
    MAP_ORBIT = "map_orbit"
    CLOSE_MAP = "close_map"
    TERMINATE = "terminate"
    PARSE_ERROR = "parse_error"


class Direction(str, Enum):
    """Direction of a move relative to the camera yaw: forward 0, right +90, backward 180, left -90 degrees."""

    FORWARD = "forward"
    BACKWARD = "backward"
    LEFT = "left"
    RIGHT = "right"

    @property
    def offset_deg(self) -> float:
        return {"forward": 0.0, "right": 90.0, "backward": 180.0, "left": -90.0}[self.value]


#: actions allowed in first-person mode / in map mode (the paper's action schema, appendix B)
FIRST_PERSON_KINDS = frozenset({ActionKind.MOVE, ActionKind.SPRINT, ActionKind.LOOK, ActionKind.JUMP,
                                ActionKind.OPEN_MAP, ActionKind.TERMINATE})
MAP_KINDS = frozenset({ActionKind.MAP_SELECT, ActionKind.MAP_PAN, ActionKind.MAP_ZOOM, ActionKind.MAP_ORBIT,
                       ActionKind.CLOSE_MAP, ActionKind.TERMINATE})
MOTION_KINDS = frozenset({ActionKind.MOVE, ActionKind.SPRINT})

#: (low, high) of every numeric field, per action kind
LIMITS: dict[ActionKind, dict[str, tuple[float, float]]] = {
    ActionKind.MOVE: {"seconds": (0.05, 2.0), "yaw_rate": (-180.0, 180.0), "pitch_rate": (-180.0, 180.0),
                      "jump_at": (0.0, 2.0)},
    ActionKind.SPRINT: {"seconds": (0.05, 2.0), "yaw_rate": (-180.0, 180.0), "pitch_rate": (-180.0, 180.0),
                        "jump_at": (0.0, 2.0)},
    ActionKind.LOOK: {"yaw": (-180.0, 180.0), "pitch": (-90.0, 90.0)},
    ActionKind.MAP_SELECT: {"x": (0.0, 1.0), "y": (0.0, 1.0)},
    ActionKind.MAP_PAN: {"east": (-2000.0, 2000.0), "north": (-2000.0, 2000.0)},
    ActionKind.MAP_ZOOM: {"factor": (0.25, 4.0)},
    ActionKind.MAP_ORBIT: {"yaw": (-180.0, 180.0), "pitch": (-90.0, 90.0)},
}
#: defaults of missing fields (UrbanGround's client uses the same); optional rates default to 0 without a record
DEFAULTS: dict[ActionKind, dict[str, float]] = {
    ActionKind.MOVE: {"seconds": 0.5},
    ActionKind.SPRINT: {"seconds": 0.5},
    ActionKind.LOOK: {"yaw": 0.0, "pitch": 0.0},
    ActionKind.MAP_SELECT: {"x": 0.5, "y": 0.5},
    ActionKind.MAP_PAN: {"east": 0.0, "north": 0.0},
    ActionKind.MAP_ZOOM: {"factor": 1.0},
    ActionKind.MAP_ORBIT: {"yaw": 0.0, "pitch": 0.0},
}
_OPTIONAL = frozenset({"yaw_rate", "pitch_rate", "jump_at"})


@dataclass(frozen=True)
class Clamp:
    """A value that was out of range: ``field`` of the action, ``given`` and the ``used`` (clamped) value."""

    field: str
    given: float
    used: float

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "given": self.given, "used": self.used}


@dataclass(frozen=True)
class ContinuousAction:
    """One action (see the module docstring). Numeric fields hold the values as given; the
    environment clamps them (:func:`clamp_action`) and records the clamps.

    Attributes:
        kind: :class:`ActionKind` (a plain name such as ``"move"`` is accepted).
        dir: :class:`Direction` for move/sprint.
        values: numeric fields by name (``seconds``, ``yaw_rate``, ``pitch_rate``, ``yaw``,
            ``pitch``, ``x``, ``y``, ``east``, ``north``, ``factor``).
        defaulted: fields that were missing and took :data:`DEFAULTS`.
        memory: the agent's memory text, echoed in the next observation (``None``: unchanged).
        error: the parse error text (``parse_error`` only).
    """

    kind: ActionKind
    dir: Direction | None = None
    values: Mapping[str, float] = field(default_factory=dict)
    defaulted: tuple[str, ...] = ()
    memory: str | None = None
    error: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "kind", ActionKind(self.kind))
        if self.dir is not None:
            object.__setattr__(self, "dir", Direction(self.dir))
        object.__setattr__(self, "values", dict(self.values))
        if self.kind in MOTION_KINDS and self.dir is None:
            raise ActionFormatError(f"{self.kind.value} needs dir forward|backward|left|right")

    def get(self, name: str) -> float:
        """A numeric field (its default, or 0 for an absent optional rate)."""
        if name in self.values:
            return float(self.values[name])
        return float(DEFAULTS.get(self.kind, {}).get(name, 0.0))

    @classmethod
    def move(cls, dir: str, seconds: float, yaw_rate: float | None = None, pitch_rate: float | None = None,
             sprint: bool = False) -> "ContinuousAction":
        vals = {"seconds": float(seconds)}
        if yaw_rate is not None:
            vals["yaw_rate"] = float(yaw_rate)
        if pitch_rate is not None:
            vals["pitch_rate"] = float(pitch_rate)
        return cls(ActionKind.SPRINT if sprint else ActionKind.MOVE, Direction(dir), vals)

    @classmethod
    def look(cls, yaw: float = 0.0, pitch: float = 0.0) -> "ContinuousAction":
        return cls(ActionKind.LOOK, None, {"yaw": float(yaw), "pitch": float(pitch)})

    @classmethod
    def simple(cls, kind: str, **values: float) -> "ContinuousAction":
        """Any other kind with its numeric fields, e.g. ``simple("map_pan", east=50)``."""
        return cls(ActionKind(kind), None, {k: float(v) for k, v in values.items()})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ContinuousAction":
        """Read UrbanGround's flat JSON form ``{"action": "move", "dir": "forward", "seconds": 0.8}``.

        ``{"type": ...}`` is accepted for ``action``; unknown extra keys are ignored
        (``memory`` is kept). Missing numeric fields take :data:`DEFAULTS` and are listed in
        ``defaulted``.

        Raises:
            ActionFormatError: not a mapping, unknown or missing action name, bad ``dir``, a
                numeric field that is not a finite number.
        """
        if not isinstance(d, Mapping):
            raise ActionFormatError(f"an action must be a JSON object, got {type(d).__name__}")
        name = d.get("action", d.get("type"))
        try:
            kind = ActionKind(str(name).strip().lower())
        except ValueError:
            raise ActionFormatError(f"unknown action {name!r}") from None
        direction = None
        if kind in MOTION_KINDS:
            raw = d.get("dir")
            try:
                direction = Direction(str(raw).strip().lower())
            except ValueError:
                raise ActionFormatError(
                    f"{kind.value}: dir must be forward, backward, left or right, got {raw!r}") from None
        values: dict[str, float] = {}
        defaulted: list[str] = []
        names = list(LIMITS.get(kind, {}))
        for fname in names:
            if fname not in d or d[fname] is None:
                if fname not in _OPTIONAL:
                    defaulted.append(fname)
                continue
            v = d[fname]
            if isinstance(v, bool):
                raise ActionFormatError(f"{kind.value}: {fname} must be a number, got {v!r}")
            try:
                f = float(v)
            except (TypeError, ValueError):
                raise ActionFormatError(f"{kind.value}: {fname} must be a number, got {v!r}") from None
            if not math.isfinite(f):
                raise ActionFormatError(f"{kind.value}: {fname} must be finite, got {v!r}")
            values[fname] = f
        if kind in MOTION_KINDS and d.get("jump") is not None:  # optional boolean of a move (appendix B)
            if not isinstance(d["jump"], bool):
                raise ActionFormatError(f"{kind.value}: jump must be true or false, got {d['jump']!r}")
            values["jump"] = 1.0 if d["jump"] else 0.0
        memory = d.get("memory")
        return cls(kind, direction, values, tuple(defaulted), str(memory) if memory is not None else None,
                   str(d.get("error")) if kind == ActionKind.PARSE_ERROR and d.get("error") is not None else None)

    def to_dict(self) -> dict[str, Any]:
        """UrbanGround's flat JSON form (numbers as held)."""
        out: dict[str, Any] = {"action": self.kind.value}
        if self.dir is not None:
            out["dir"] = self.dir.value
        out.update(self.values)
        if "jump" in out:
            out["jump"] = bool(out["jump"])
        if self.error is not None:
            out["error"] = self.error
        return out

    def label(self) -> str:
        """Short text such as ``move forward 0.80s yaw_rate=30`` or ``look yaw=-20 pitch=0``."""
        k = self.kind.value
        if self.kind in MOTION_KINDS:
            s = f"{k} {self.dir.value} {self.get('seconds'):.2f}s"
            for r in ("yaw_rate", "pitch_rate", "jump_at"):
                if r in self.values:
                    s += f" {r}={self.values[r]:g}"
            if self.values.get("jump"):
                s += " jump"
            return s
        fields = LIMITS.get(self.kind)
        if fields:
            return k + " " + " ".join(f"{f}={self.get(f):g}" for f in fields)
        return k


def clamp_action(action: ContinuousAction) -> tuple[ContinuousAction, list[Clamp]]:
    """Clamp every numeric field into :data:`LIMITS`; returns the clamped action and the clamps made.

    Raises:
        ActionFormatError: a non-finite value (a directly built action; :meth:`ContinuousAction.from_dict`
            already rejects them).
    """
    limits = LIMITS.get(action.kind, {})
    clamps: list[Clamp] = []
    new: dict[str, float] = {}
    for name, v in action.values.items():
        v = float(v)
        if not math.isfinite(v):
            raise ActionFormatError(f"{action.kind.value}: {name} must be finite, got {v!r}")
        if name in limits:
            lo, hi = limits[name]
            if name == "jump_at":  # within the move: [0, seconds] (appendix B), seconds as clamped
                s_lo, s_hi = limits["seconds"]
                hi = min(max(float(action.values.get("seconds", DEFAULTS[action.kind]["seconds"])), s_lo), s_hi)
            used = min(max(v, lo), hi)
            if used != v:
                clamps.append(Clamp(name, v, used))
            v = used
        new[name] = v
    return (replace(action, values=new) if clamps else action), clamps


class ContinuousActionSpace(gym.Space):
    """Gymnasium space of :class:`ContinuousAction` values (or their dict form).

    ``sample`` draws a first-person action (move/sprint/look, uniformly within the limits) with the
    space's RNG; map actions and terminate are never sampled.
    """

    def __init__(self, seed: int | None = None):
        super().__init__(shape=None, dtype=None, seed=seed)

    def contains(self, x: Any) -> bool:
        if isinstance(x, ContinuousAction):
            return True
        if isinstance(x, Mapping):
            try:
                ContinuousAction.from_dict(x)
            except ActionFormatError:
                return False
            return True
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> ContinuousAction:
        r = self.np_random
        k = int(r.integers(3))
        if k == 2:
            return ContinuousAction.look(float(r.uniform(-180, 180)), float(r.uniform(-30, 30)))
        d = list(Direction)[int(r.integers(4))]
        return ContinuousAction.move(d.value, float(r.uniform(0.05, 2.0)), sprint=(k == 1))

    @property
    def is_np_flattenable(self) -> bool:
        return False


__all__ = [
    "ActionFormatError", "ActionKind", "Direction", "FIRST_PERSON_KINDS", "MAP_KINDS", "MOTION_KINDS", "LIMITS",
    "DEFAULTS", "Clamp", "ContinuousAction", "clamp_action", "ContinuousActionSpace",
]
