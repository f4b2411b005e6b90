"""Protocol ids: the action rule + scoring rule a number was produced under.

Where a benchmark's name is used its published protocol is the default; our
corrections are separate ids. Every stored episode carries its protocol id.

==========================  ==================================================
id                          meaning
==========================  ==================================================
``cityseeker-v1``           CitySeeker's client: raw walkable headings, nearest
                            edge azimuth without wrap; success on the final
                            node only (two-stop tasks included).
``touchdown-v1``            Touchdown's reference navigator: FORWARD / LEFT /
                            RIGHT / STOP; refuses to enter nodes with fewer
                            than two neighbours.
``urbanarena-graph-v1``     ours: every edge can be taken (heading-style: one
                            choice per outgoing edge; turn-style: dead ends may
                            be entered); two-stop tasks scored per stage.
``cityarena-v1``            360CityArena's arena rules (W/S/A/D/Q/E, LEFT/
                            RIGHT/UP to the nearest arrow, ANSWER); away-from-
                            goal on Euclidean distance over every request;
                            replies read as its parser reads them, an unusable
                            one re-requested up to 3 times without consuming a
                            step, then consumed as a parse error; the location
                            map for every kind but localization; temperature
                            1.0, 8,192 output tokens.
``urbanarena-v1``           ours, arena-style: away-from-goal on graph path
                            distance over moves only (a detour around a block
                            is not stopped); a branch key must point within 90
                            deg of its branch; corrective re-asks up to 2, then
                            consumed as a parse error.
``urbanground-v1``          UrbanGround's continuous actions (move/sprint/look/
                            jump, map mode, terminate) in simulated time; 100
                            steps; arrival within 15 m; zone/closure crossing
                            fails (``urbanground`` family, docs/continuous.md).
==========================  ==================================================

Arena parameters (``cityarena-v1`` / ``urbanarena-v1``; read by
:func:`urbanarena.env.stop_rules.make_arena_env` and the agent layer):
``step_limit`` (requests consumed, or parsed replies under ``stop_check``
``before-action``), ``stop_check`` (``before-action``: STEP_LIMIT and STAGNATION
are checked before a request's action runs and replace it with ANSWER, as the
360CityArena runner does; absent = ``after-action``, ours), ``stagnation_limit`` /
``stagnation_epsilon_m``, ``away_from_goal_limit`` /
``away_from_goal_epsilon_m`` / ``away_from_goal_distance`` (``euclidean`` or
``graph``) / ``away_from_goal_counts`` (``requests``: every consumed request
is compared, a non-increase resets, as the reference runner does; ``moves``:
only steps that displace the agent are compared) / ``away_from_goal_scope``
(task kinds it applies to), ``branch_rule`` (``nearest`` or ``half-plane``),
``recent_actions_window``, ``parse_failure`` (``re-request``: the same request
is sent again; ``corrective-re-ask``: a corrective message is appended),
``max_reasks`` (extra requests per step that do not consume it; after them the
step is consumed as ``PARSE_ERROR``; 360CityArena's Unity client retries a
failed reply within ``maxRetryAttempts = 3`` attempts and its Python runner
counts no step for it), ``generation`` (temperature, max output
tokens), ``coordinate_radius_m`` / ``map_navigation_radius_m`` (validators),
``location_map`` (which tasks get the current-location map: ``except-localization``, every kind but
localization, as 360CityArena's task loader sets ``requires_current_location``, ``python/src/cityarena/
tasks/loaders.py`` at commit a6ec8ed; ``task-flag``, the task's ``extra.requires_current_location``),
``reply_reading`` (``reference``: only the replies 360CityArena's parser reads are accepted, the rest
fail as ``reference_refused`` and are re-requested; absent = lenient, every repair counted),
``answer_reading`` (``reference``: grid and count answers are read as 360CityArena's validators read them
and an answer sent as a JSON number scores 0, :mod:`urbanarena.tasks.reference_answers`; absent = our
forgiving readers of :mod:`urbanarena.tasks.validators`),
``image_downscale_step`` (the linear scale per step when an image is over the provider's byte limit:
0.85, the paper's "15 % steps", A.4; without it the client's default 0.75).

UrbanGround parameters (``urbanground-v1``): ``arrival_radius_m``, ``pna_buffer_m``, ``contact_m``
(scoring, :mod:`urbanarena.tasks.metrics.urbanground`), ``agent_inputs`` (what ``vlm-urbanground``
sends unless ``-p inputs=...`` says otherwise: ``reference``, UrbanGround's released agent -- the task
text once, one screenshot per turn, the text conversation as memory, ``{observation, reason, action}``
replies, a separate final-answer request for questions --, :mod:`urbanarena.agents.vlm.urbanground_react`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from urbanarena.env.motion.base import MotionModel
from urbanarena.errors import ProtocolError
from urbanarena.world.city import City

ActionStyle = Literal["heading", "turn"]


@dataclass(frozen=True)
class Protocol:
    """A named protocol.

    Attributes:
        id: protocol id stored with every result.
        faithful_to: the published benchmark it reproduces, or ``None`` (ours).
        per_stage_scoring: multi-stop tasks must visit every stage goal in order.
        description: one line for tables and ``--help``.
    """

    id: str
    faithful_to: str | None
    per_stage_scoring: bool
    description: str
    params: dict[str, Any] = field(default_factory=dict)


PROTOCOLS: dict[str, Protocol] = {
    "cityseeker-v1": Protocol(
        "cityseeker-v1", "CitySeeker", False,
        "CitySeeker client rule: raw walkable headings, nearest edge azimuth without wrap; final node only",
        {"heading_match": "abs-no-wrap", "headings": "walkable_headings_raw"},
    ),
    "touchdown-v1": Protocol(
        "touchdown-v1", "Touchdown", False,
        "Touchdown reference navigator: FORWARD/LEFT/RIGHT/STOP, no entering nodes with < 2 neighbours",
        {"min_neighbours_to_enter": 2},
    ),
    "urbanarena-graph-v1": Protocol(
        "urbanarena-graph-v1", None, True,
        "urbanarena: every edge takeable (edge azimuths / dead ends enterable); multi-stop scored per stage",
        {"heading_match": "edge", "min_neighbours_to_enter": 0},
    ),
    "cityarena-v1": Protocol(
        "cityarena-v1", "360CityArena", False,
        "360CityArena rules: nearest-arrow branch keys; Euclidean away-from-goal over requests; "
        "unparsable replies re-requested up to 3 times, then a parse-error step",
        {
            "action_set": "arena",
            "step_limit": 50,
            "stagnation_limit": 20,
            "stagnation_epsilon_m": 0.05,
            "away_from_goal_limit": 5,
            "away_from_goal_epsilon_m": 0.05,
            "away_from_goal_distance": "euclidean",
            "away_from_goal_counts": "requests",
            "away_from_goal_scope": ["map_navigation"],
            "branch_rule": "nearest",
            "recent_actions_window": 5,
            "parse_failure": "re-request",
            "max_reasks": 3,
            "generation": {"temperature": 1.0, "max_output_tokens": 8192},
            "coordinate_radius_m": 10.0,
            "map_navigation_radius_m": 20.0,
            "location_map": "except-localization",
            "image_downscale_step": 0.85,
            "reply_reading": "reference",
            "answer_reading": "reference",
            "stop_check": "before-action",
        },
    ),
    "urbanarena-v1": Protocol(
        "urbanarena-v1", None, False,
        "urbanarena arena rules: half-plane branch keys; graph-distance away-from-goal over moves; "
        "up to 2 corrective re-asks, then a parse-error step",
        {
            "action_set": "arena",
            "step_limit": 50,
            "stagnation_limit": 20,
            "stagnation_epsilon_m": 0.05,
            "away_from_goal_limit": 5,
            "away_from_goal_epsilon_m": 0.05,
            "away_from_goal_distance": "graph",
            "away_from_goal_counts": "moves",
            "away_from_goal_scope": ["map_navigation"],
            "branch_rule": "half-plane",
            "recent_actions_window": 5,
            "parse_failure": "corrective-re-ask",
            "max_reasks": 2,
            "generation": {"temperature": 1.0, "max_output_tokens": 8192},
            "coordinate_radius_m": 10.0,
            "map_navigation_radius_m": 20.0,
            "location_map": "task-flag",
        },
    ),
    "urbanground-v1": Protocol(
        "urbanground-v1", "UrbanGround", False,
        "UrbanGround continuous actions in simulated time; arrival within 15 m; a zone or active closure "
        "crossed fails the episode",
        {"action_set": "urbanground", "arrival_radius_m": 15.0, "pna_buffer_m": 3.0, "contact_m": 0.5,
         "agent_inputs": "reference"},
    ),
}


def get_protocol(protocol_id: str) -> Protocol:
    """Look up a protocol by id; raises :class:`ProtocolError` for unknown ids."""
    try:
        return PROTOCOLS[protocol_id]
    except KeyError:
        raise ProtocolError(f"unknown protocol {protocol_id!r}; known: {', '.join(PROTOCOLS)}") from None


def make_motion(protocol_id: str, city: City, action_style: ActionStyle) -> MotionModel:
    """Build the motion model of ``protocol_id`` for a family's action style.

    Args:
        action_style: ``"heading"`` (choose among headings; CitySeeker-like) or
            ``"turn"`` (FORWARD/LEFT/RIGHT; Touchdown-like).
    Raises:
        ProtocolError: unknown id, or an id that has no rule for the style.
    """
    get_protocol(protocol_id)
    if action_style == "heading":
        from urbanarena.env.motion.heading_hop import CitySeekerHop, EdgeHop

        if protocol_id == "cityseeker-v1":
            return CitySeekerHop(city)
        if protocol_id == "urbanarena-graph-v1":
            return EdgeHop(city)
    elif action_style == "turn":
        from urbanarena.env.motion.turn_hop import TouchdownHop

        if protocol_id == "touchdown-v1":
            return TouchdownHop(city, enter_dead_ends=False)
        if protocol_id == "urbanarena-graph-v1":
            return TouchdownHop(city, enter_dead_ends=True)
    raise ProtocolError(f"protocol {protocol_id!r} has no {action_style!r}-style action rule")
