"""CitySeeker's VLM protocol on graph cities with panoramas.

At each node (one env step):

1. **Stop decision** (phase 0): one request with the ``cityseeker_stop``
   text and the node's full equirectangular panorama; reply
   ``{"observation", "thoughts", "action": 1|0}`` (1 = stop here), parsed by
   :func:`~urbanarena.agents.vlm.parsing.parse_stop_reply`. Stop -> the
   agent returns :data:`~urbanarena.env.graph_env.STOP`.
2. **Choice** (phase 1): one request with the ``cityseeker_choice`` text and
   one perspective crop per offered heading (``obs["choices"]``, in order),
   each cut at the heading's compass bearing, pitch 0, ``hfov_deg`` (120),
   ``crop_size`` (1024 x 512 px: CitySeeker's ``PanoParams``), labelled
   ``Image A:``, ``Image B:`` ... and described by their direction relative to
   the travel direction (``obs["heading_deg"]``, the azimuth of the edge
   last taken; CitySeeker uses the geodesic azimuth from the previous to the
   current position, which is the same bearing). Reply ``{"thoughts",
   "observation": {...}, "action": "B", "score": 0.8}``; the agent returns
   the chosen index and records the confidence ``score`` for the step.

CitySeeker's reference (``src/mllm/agent.py``) asks the choice request at
every node even when the stop decision says stop, and discards it; we skip it
(same actions, one request less). Backtracking hints, retrieved surroundings
and history prompts of the reference are not reproduced.

Unusable replies, by protocol:

* ``cityseeker-v1`` (CitySeeker's fallback): one request per phase; an
  unusable stop reply means "continue" and an unusable choice means the first
  image (A) with score 0.5, exactly the defaults of the reference. Each
  fallback is counted (``stats["fallbacks"]["stop"|"choice"]``) and marked in
  the step's trace, never silent. Replies must carry every field the
  reference's parser requires (``thoughts``/``observation``, a numeric
  ``score``, one observation per image), else they fall back too. Directions
  are shown only after the first move (the reference has no "last position"
  before it) and with the reference's labels, which mirror left and right
  (:func:`~urbanarena.agents.vlm.parsing.relative_direction`).
* ``urbanarena-graph-v1`` (ours): up to 2 corrective re-asks per phase (the
  bad reply and a ``cityseeker_correction`` message are appended); after them
  the agent returns ``-2``, an index the env rejects and counts as an invalid
  action (the runner stores it as the unparseable action ``-2``). Only the
  ``action`` field is required; correct direction labels from the start
  heading on.

A node with no offered heading after a "continue" decision leaves STOP as the
only legal action: the agent returns STOP without a choice request and counts
it (``stats["no_choice_stops"]``).

Control modes (``control``, :mod:`urbanarena.agents.controls`): ``--blind``
replaces the panorama and the crops by a line saying no image is available,
``--oracle-perception`` by the features each shows (the panorama: all around
the node; a crop: within its field of view at its heading); ``--no-map``
changes nothing here (no map is sent). Neither needs the city's imagery.

Images: the panorama store of the city's imagery
(:class:`~urbanarena.render.panorama_store.PanoramaStore`). A city without
imagery but with OSM annotations (an OpenStreetMap import) is *rendered*: its
panoramas come from the process-wide
:class:`~urbanarena.render.scene3d.cache.RenderedPanoramaStore` of
:func:`~urbanarena.env.observers.panorama_observer_for` (rendered on first use,
cached on disk under ``<urbanarena home>/panoramas``, the files ``urbanarena
city build --prerender`` writes), at ``render_width`` pixels or, by default,
``max(2048, view_matched_width(hfov_deg, crop width))`` (2048 px for the
default 1024 px, 120 degree crops: no detail lost at a crop's centre), in the
run's render style and population (``--render-style``; handed over in
:attr:`~urbanarena.agents.base.AgentContext.render_settings`, recorded as the
config's ``extra.render_style``; without it, the renderer's flat default). Only
this agent asks for panoramas, so agents that do not look at images never
render. A graph-only city raises :class:`~urbanarena.errors.NoImageryError` at
``reset``; a rendered city where no OpenGL context exists raises
:class:`~urbanarena.render.scene3d.context.RendererUnavailableError` naming
the reason.

Extra images (map ablation, :mod:`urbanarena.agents.strategies.route_map`): a
strategy hands images for one act through :meth:`CitySeekerVLMAgent.set_strategy_images`
(``[(label, RGB array)]``); each is appended, after its label line, to both
requests of that act (stop decision and choice) as a map picture (role
:data:`~urbanarena.agents.controls.MAP`, so ``--no-map`` / ``--oracle-perception``
replace it by a line of text) and counted in ``stats["extra_images"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np

from urbanarena.agents.base import AgentContext
from urbanarena.agents.clients import Image, Message, ModelRequest, Text
from urbanarena.agents.controls import CROP, MAP, PANORAMA
from urbanarena.agents.prompts import CITYSEEKER_TEMPLATES
from urbanarena.agents.vlm.common import ModelAgent, bump, call_index
from urbanarena.agents.vlm.parsing import echo_text, parse_choice_reply, parse_stop_reply, relative_direction
from urbanarena.env.graph_env import STOP
from urbanarena.errors import ProtocolError
from urbanarena.render.overlays import letter_labels
from urbanarena.render.panorama_store import DEFAULT_BUDGET_BYTES, PanoramaStore
from urbanarena.render.views import ViewRenderer, node_view
from urbanarena.tasks.schema import Task
from urbanarena.world.imagery import imagery_of

#: the action returned when a reply stays unusable under urbanarena-graph-v1 (the env counts it invalid)
UNPARSEABLE = -2
#: CitySeeker's default confidence for its fallback choice
FALLBACK_SCORE = 0.5

#: per graph protocol: how unusable replies are handled (recorded in the agent's stats)
GRAPH_PARSE_RULES: dict[str, dict[str, Any]] = {
    "cityseeker-v1": {"parse_failure": "fallback-first", "max_reasks": 0, "strict_fields": True,
                      "directions": "reference", "directions_at_start": False},
    "urbanarena-graph-v1": {"parse_failure": "corrective-re-ask", "max_reasks": 2, "strict_fields": False,
                            "directions": "correct", "directions_at_start": True},
}

#: generation preset for the graph protocols (CitySeeker publishes none: provider defaults, 2,048 output tokens)
GRAPH_GENERATION = {"max_output_tokens": 2048}

PANORAMA_LABEL = "Panorama of the current place (360 degrees, equirectangular):"


class CitySeekerVLMAgent(ModelAgent):
    """CitySeeker's VLM protocol (module docstring).

    Args:
        model, generation, images, prompt_templates, cache, cache_path,
        max_usd, max_requests, budget_ledger, timeout_s, retry, api_key_env,
        client: see :mod:`urbanarena.agents.vlm.common`.
        hfov_deg: horizontal field of view of the crops (degrees, default 120).
        crop_size: ``(width, height)`` of the crops in pixels (default 1024 x 512).
        pano_max_width: downscale the stop-decision panorama to at most this
            width (``None``: as stored; the client still applies the image
            settings' limits).
        imagery_base_dir: folder a relative imagery root resolves against.
        cache_bytes: byte budget of the decoded-panorama cache.
        control: control mode (:mod:`urbanarena.agents.controls`): pictures withheld or replaced by text.
        render_width: rendered (OSM) cities: panorama render width in pixels (``None``: the matched
            width, module docstring; an even int >= 16 otherwise).
    """

    name = "vlm-cityseeker"
    template_names = CITYSEEKER_TEMPLATES

    def __init__(self, model: str | None = None, *, hfov_deg: float = 120.0,
                 crop_size: tuple[int, int] | list[int] = (1024, 512), pano_max_width: int | None = None,
                 imagery_base_dir: str | Path | None = None, cache_bytes: int = DEFAULT_BUDGET_BYTES,
                 render_width: int | None = None, **kwargs: Any):
        super().__init__(model, **kwargs)
        if render_width is not None and (isinstance(render_width, bool) or int(render_width) < 16):
            raise ValueError(f"render_width must be an int >= 16, got {render_width!r}")
        self.render_width = int(render_width) if render_width is not None else None
        if not 0.0 < float(hfov_deg) < 180.0:
            raise ValueError(f"hfov_deg must be in (0, 180), got {hfov_deg}")
        w, h = (int(v) for v in crop_size)
        if w < 1 or h < 1:
            raise ValueError(f"crop_size must be positive, got {crop_size}")
        self.hfov_deg = float(hfov_deg)
        self.crop_size = (w, h)
        self.pano_max_width = int(pano_max_width) if pano_max_width is not None else None
        self.imagery_base_dir = imagery_base_dir
        self.cache_bytes = int(cache_bytes)
        self._store: PanoramaStore | None = None
        self._store_city: Any = None
        #: render settings of the rendered panoramas (the runner's ``--render-style``, via the context)
        self._render_settings: Any = None
        self._renderer = ViewRenderer(max_grids=8)
        self._extra_images: list[tuple[str, np.ndarray]] = []
        self.panorama_source: str | None = None

    def options(self) -> dict[str, Any]:
        out = {"hfov_deg": self.hfov_deg, "crop_size": list(self.crop_size), "pano_max_width": self.pano_max_width,
               "parse_rules": GRAPH_PARSE_RULES}
        if self.render_width is not None:  # only when set: configs without it keep their hashes
            out["render_width"] = self.render_width
        return out

    def protocol_generation(self, protocol_id: str) -> dict[str, Any]:
        return dict(GRAPH_GENERATION)

    @staticmethod
    def max_requests_per_step(protocol_id: str) -> int:
        """Upper bound of model requests per env step: two phases x (1 + re-asks), for ``--dry-run``.

        Raises:
            ProtocolError: not ``cityseeker-v1`` / ``urbanarena-graph-v1``.
        """
        if protocol_id not in GRAPH_PARSE_RULES:
            raise ProtocolError(f"no CitySeeker VLM rules for protocol {protocol_id!r}")
        return 2 * (1 + int(GRAPH_PARSE_RULES[protocol_id]["max_reasks"]))

    # ------------------------------------------------------------ episode
    def reset(self, task: Task, context: AgentContext) -> None:
        """Start an episode.

        Raises:
            ProtocolError: protocol other than ``cityseeker-v1`` / ``urbanarena-graph-v1``.
            NoImageryError: graph-only city.
        """
        if context.protocol_id not in GRAPH_PARSE_RULES:
            raise ProtocolError(f"agent {self.name!r} runs heading-choice protocols "
                                f"({', '.join(GRAPH_PARSE_RULES)}), not {context.protocol_id!r}")
        city = context.city
        settings = getattr(context, "render_settings", None)
        if self.control.shows_view and (self._store is None or self._store_city is not city
                                        or settings != self._render_settings):
            self._render_settings = settings
            self._store = self._panorama_store(city)
            self._store_city = city
        self.city = city
        self.rules = GRAPH_PARSE_RULES[context.protocol_id]
        self.question = task.instruction
        self.start_node = task.start.node
        self.moved = False
        self.reset_common(context)
        self._extra_images = []
        self.stats.update({"parse_failure_rule": self.rules["parse_failure"], "max_reasks": self.rules["max_reasks"],
                           "fallbacks": {"stop": 0, "choice": 0}, "unparseable_steps": 0, "invalid_actions": 0,
                           "stops": 0, "no_choice_stops": 0, "scores": [], "extra_images": 0,
                           "panorama_source": self.panorama_source if self.control.shows_view else None})

    # ------------------------------------------------------------ images
    def _panorama_store(self, city: Any):
        """The store the panoramas come from (module docstring: imagery, or rendered for an OSM city).

        Raises:
            NoImageryError: graph-only city. RendererUnavailableError: rendered city, no OpenGL context.
        """
        from urbanarena.env.observers import MATCH_VIEW, observation_source, panorama_observer_for

        self.panorama_source = observation_source(city)
        if self.panorama_source == "rendered":
            w, h = self.crop_size
            observer = panorama_observer_for(city, budget_bytes=self.cache_bytes,
                                             max_width=self.render_width if self.render_width else MATCH_VIEW,
                                             render_settings=self._render_settings,
                                             hfov_deg=self.hfov_deg, width=w, height=h)
            return observer.store  # type: ignore[union-attr]
        imagery_of(city, need=f"the {self.name} agent (CitySeeker's VLM protocol: panorama and perspective crops)")
        return PanoramaStore(city, budget_bytes=self.cache_bytes, base_dir=self.imagery_base_dir)

    def set_strategy_images(self, images: list[tuple[str, np.ndarray]]) -> None:
        """Images for the next act only (module docstring, map ablation): ``[(label, RGB uint8 (H, W, 3))]``."""
        self._extra_images = [(str(label), img) for label, img in images]

    def _extra_parts(self) -> list[Text | Image]:
        parts: list[Text | Image] = []
        for label, img in self._extra_images:
            parts += [Text(label), *self.control.parts(MAP, img)]
        return parts

    def panorama(self, node: str) -> np.ndarray:
        """The node's panorama as sent for the stop decision (RGB uint8)."""
        assert self._store is not None
        pano = self._store.get(node)
        if self.pano_max_width is not None and pano.shape[1] > self.pano_max_width:
            w = self.pano_max_width - self.pano_max_width % 2
            pano = cv2.resize(pano, (w, w // 2), interpolation=cv2.INTER_AREA)
        return pano

    def _features(self, node: str, yaw_deg: float, hfov_deg: float) -> list[dict[str, Any]] | None:
        """Oracle-perception features seen from ``node`` (``None`` in other control modes)."""
        if not self.control.oracle_perception:
            return None
        from urbanarena.env.perception import features_in_view

        x, y = self.city.xy(node)
        return [f.to_dict() for f in features_in_view(self.city, (float(x), float(y), float(yaw_deg)), hfov_deg,
                                                         self.control.perception_range_m)]

    def _centre_deg(self, node: str) -> float:
        if self._store is not None and self._store_city is self.city:
            return float(self._store.centre_bearing_deg(node))
        return float(self.city.node(node).get("heading_deg") or 0.0)

    def crops(self, node: str, headings_deg: list[float]) -> list[np.ndarray]:
        """Perspective crops at the compass bearings ``headings_deg`` (pitch 0, ``hfov_deg``, ``crop_size``)."""
        w, h = self.crop_size
        return [node_view(self._store, node, float(b), 0.0, self.hfov_deg, w, h, renderer=self._renderer)
                for b in headings_deg]

    # ------------------------------------------------------------ requests
    def _ask(self, phase: int, step: int, first: Message, parse, rec: dict[str, Any]):
        """Send phase ``phase`` with re-asks per the protocol; returns the accepted parse or ``None``."""
        name = "stop" if phase == 0 else "choice"
        messages = [first]
        for attempt in range(1 + self.rules["max_reasks"]):
            reply = self._complete(ModelRequest(list(messages), sample_index=call_index(self.seed, step, attempt, phase)))
            rec["requests"] += 1
            parsed = parse(reply)
            self._note(parsed.repairs, parsed.notes)
            if parsed.ok:
                return parsed
            self._failure(parsed.failure or "unknown", parsed.detail)
            rec["failures"].append(f"{name}:{parsed.failure}")
            if attempt < self.rules["max_reasks"]:
                self.stats["reasks"] += 1
                said = echo_text(reply.text, reply.refusal, reply.flags)
                messages = messages + [Message("assistant", said), Message(
                    "user", self.templates["cityseeker_correction"].render(error=parsed.detail))]
        return None

    def directions_text(self, forward_deg: float | None, headings_deg: list[float], labels: list[str]) -> str:
        """One line per image: ``Image B is on your RIGHT.`` (empty when no travel direction is known)."""
        if forward_deg is None:
            return ""
        ref = self.rules["directions"] == "reference"
        return "\n".join(f"Image {lab} is on your {relative_direction(forward_deg, h, reference=ref)}."
                         for lab, h in zip(labels, headings_deg))

    def act(self, observation: dict[str, Any]) -> int:
        """Stop decision, then choice (module docstring). Returns an index, STOP (-1) or -2 (unparseable).
        Images given by :meth:`set_strategy_images` are sent with this act's requests, then dropped.

        Raises:
            ImageFormatError: the node's panorama is missing or invalid.
            ModelTransportError / ModelRequestError / BudgetExceeded /
            CacheMissError: from the client (counted in ``stats`` first).
        """
        try:
            return self._act(observation)
        finally:
            self._extra_images = []

    def _act(self, observation: dict[str, Any]) -> int:
        extra = self._extra_parts()
        if extra:
            self.stats["extra_images"] += len(self._extra_images)
        node = str(observation["node"])
        step = int(observation.get("step", self.stats["steps"])) + 1
        self.stats["steps"] += 1
        if node != self.start_node:
            self.moved = True
        rec: dict[str, Any] = {"step": step, "node": node, "requests": 0, "failures": [], "fallback": None,
                               "stop": None, "choice": None, "score": None}
        strict = self.rules["strict_fields"]
        fallback = self.rules["parse_failure"] == "fallback-first"
        if self._extra_images:
            rec["extra_images"] = [label for label, _ in self._extra_images]
        self.stats["trace"].append(rec)

        c = self.control  # pictures as the control mode shows them (urbanarena.agents.controls)
        pano = self.panorama(node) if c.shows_view else None
        stop_msg = Message("user", [Text(self.templates["cityseeker_stop"].render(question=self.question)),
                                    Text(PANORAMA_LABEL),
                                    *c.parts(PANORAMA, pano, self._features(node, self._centre_deg(node), 360.0)),
                                    *extra])
        sp = self._ask(0, step, stop_msg, lambda r: parse_stop_reply(r.text, r.flags, strict_fields=strict), rec)
        if sp is None:
            if not fallback:
                return self._unparseable(rec)
            bump(self.stats["fallbacks"], "stop")
            rec["fallback"] = "stop"
            stop = False
        else:
            stop = sp.stop
        rec["stop"] = int(stop)
        if stop:
            self.stats["stops"] += 1
            rec["action"] = STOP
            return STOP

        choices = list(observation.get("choices") or [])
        if not choices:
            self.stats["no_choice_stops"] += 1
            rec["action"] = STOP
            return STOP
        if len(choices) > 26:
            raise ValueError(f"node {node!r} offers {len(choices)} headings; the A..Z labels allow 26")
        headings = [float(c["heading_deg"]) for c in choices]
        labels = letter_labels(len(headings))
        show_dir = self.moved or self.rules["directions_at_start"]
        forward = float(observation["heading_deg"]) if show_dir and observation.get("heading_deg") is not None else None
        text = self.templates["cityseeker_choice"].render(
            question=self.question, count=len(headings), labels=", ".join(labels),
            directions=self.directions_text(forward, headings, labels))
        parts: list[Text | Image] = [Text(text)]
        crops = self.crops(node, headings) if c.shows_view else [None] * len(headings)
        for lab, crop, h in zip(labels, crops, headings):
            parts += [Text(f"Image {lab}:"), *c.parts(CROP, crop, self._features(node, h, self.hfov_deg))]
        parts += extra
        cp = self._ask(1, step, Message("user", parts),
                       lambda r: parse_choice_reply(r.text, len(headings), r.flags, strict_fields=strict), rec)
        if cp is None:
            if not fallback:
                return self._unparseable(rec)
            bump(self.stats["fallbacks"], "choice")
            rec["fallback"] = "choice" if rec["fallback"] is None else "stop+choice"
            index, score = 0, FALLBACK_SCORE
        else:
            index, score = cp.index, cp.score
        rec.update(choice=labels[index], score=score, action=index)
        self.stats["scores"].append(score)
        return index

    def _unparseable(self, rec: dict[str, Any]) -> int:
        self.stats["unparseable_steps"] += 1
        self.stats["invalid_actions"] += 1
        rec["action"] = UNPARSEABLE
        return UNPARSEABLE


__all__ = ["CitySeekerVLMAgent", "FALLBACK_SCORE", "GRAPH_PARSE_RULES", "UNPARSEABLE"]
