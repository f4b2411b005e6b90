"""Human play of continuous-mode tasks (``urbanground``, UrbanGround's motion model) in the browser.

:class:`ContinuousPlayService` is the :class:`~urbanarena.web.play_service.PlayService` of the
continuous motion model: study, tokens, consent, practice, counterbalanced order,
time limits, the run store and ``run.json`` are the arena service's own; what
differs is the motion model's part, supplied by the methods it overrides.
:func:`~urbanarena.web.play.open_play` picks it when the task family's
``action_style`` is ``"continuous"``.

Episodes run through the runner's continuous loop
(:class:`~urbanarena.runner.continuous_episode.ContinuousEpisodeRunner`, one per
participant, agent name ``human:<participant>``) with a
:class:`~urbanarena.web.human_continuous.ContinuousHumanAgent`: the same
:class:`~urbanarena.env.continuous.ContinuousEnv` (simulated time), first-person
observer (640 x 360, 90 degrees: the runner's for agents that look at images), map
mode, step limit (the family's 100, or ``--max-steps``), scorer
(``UrbanGroundFamily.score_trajectory``) and store row as an agent's episode. Each key
press is one UrbanGround action.

What the participant is sent (:meth:`ContinuousPlayService._motion_payload`, with the arena's fields): the
observation as the VLM agent gets it -- the mode, the first-person view (first-person
mode) or the map (map mode) as lossless PNG, the reference images, the task text
(with a question's options), the state text (``state_text`` of
:mod:`urbanarena.agents.vlm.urbanground`: position, camera, simulated time, street,
on the pedestrian network, the map's centre/extent/selection), the closure notices
delivered so far, the last action's result, the recent actions and the step number
-- plus the actions allowed in the mode, the options of a question (the letters and
texts the task text lists, for buttons) and the time left. Not sent: the task id,
the goal, the step limit and a scored task's score (a practice task's ``sr`` is).

The config's ``extra`` records the view (``continuous_view``: width, height,
hfov); its hash separates human continuous runs from others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from urbanarena.agents.vlm.urbanground import ALLOWED, state_text
from urbanarena.env.observers import require_renderer
from urbanarena.errors import UrbanArenaError
from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner
from urbanarena.tasks.families import get_family
from urbanarena.tasks.families.urbanground import LETTERS
from urbanarena.tasks.schema import Task
from urbanarena.web.human import EpisodeChannel
from urbanarena.web.human_continuous import (
    FIRST_PERSON, ContinuousHumanAgent, mark_time_limit, parse_continuous_action,
)
from urbanarena.web.play_service import SEED, PlayService, _Episode
from urbanarena.web.study import HUMAN_PREFIX, StudyPlan
from urbanarena.world.city import City

#: first-person view of a human continuous episode (the runner's default for image agents)
VIEW_WIDTH, VIEW_HEIGHT, VIEW_HFOV_DEG = 640, 360, 90.0


class ContinuousPlayService(PlayService):
    """Participants and episodes of a continuous-mode play server (module docstring; arguments as
    :class:`~urbanarena.web.play_service.PlayService`, whose ``view`` does not apply here).

    Raises:
        UrbanArenaError: tasks of another motion model, a city without annotations (nothing to walk in).
        TaskFormatError: a task whose dynamics spec is malformed.
        RendererUnavailableError: no OpenGL context here (the first-person view is rendered).
    """

    action_style = "continuous"
    page_template = "play_continuous.html.j2"

    def _family(self, plan: StudyPlan) -> Any:
        families = sorted({t.family for t in plan.tasks + plan.practice})
        fams = [get_family(f) for f in families]
        if len(fams) != 1 or fams[0].action_style != "continuous":
            raise UrbanArenaError(f"continuous play runs the tasks of one continuous family; this task set has "
                                  f"{', '.join(families)}")
        return fams[0]

    def _check_task(self, task: Task, base_dir: Path | None) -> None:
        from urbanarena.env.continuous.dynamics import DynamicsSpec
        from urbanarena.errors import TaskFormatError

        if task.start.position is None and task.start.node is None:
            raise ValueError("the task has no start position or node")
        if task.start.node is not None and task.start.position is None and task.start.node not in self.city:
            raise ValueError(f"start node {task.start.node!r} is not in the city")
        spec = (task.extra or {}).get("dynamics")
        if spec:
            try:
                DynamicsSpec.from_dict(spec)
            except TaskFormatError as e:
                raise ValueError(str(e)) from None

    def _check_city(self, city: City) -> None:
        if getattr(city, "annotations", None) is None:
            raise UrbanArenaError(f"{self.family.name!r} tasks need an OSM city with annotations; {city.name!r} has "
                                  "none (there is nothing to walk in or render)")
        require_renderer(city)
        # the process's GL context is current in the thread that created it (this one) until it passes through
        # ``current`` once; episodes render in their own threads, where it must be free to become current
        from urbanarena.render.scene3d.context import current, gl_context

        with current(gl_context()):
            pass

    def _config_extra(self) -> dict[str, Any]:
        extra = {"continuous_view": {"width": VIEW_WIDTH, "height": VIEW_HEIGHT, "hfov_deg": VIEW_HFOV_DEG}}
        if self.view.render_style != "flat":
            extra["render_style"] = self.view.render_style
        return extra

    def _make_agent(self, channel: EpisodeChannel) -> Any:
        return ContinuousHumanAgent(channel, self.plan.time_limit_s)

    def _make_runner(self, pid: str) -> Any:
        return ContinuousEpisodeRunner(self.city, lambda: None, f"{HUMAN_PREFIX}{pid}",  # type: ignore[arg-type,return-value]
                                       view_size=(VIEW_WIDTH, VIEW_HEIGHT), render_style=self.view.render_style)

    def _run_episode(self, runner: Any, task: Task, practice: bool) -> dict[str, Any]:
        row = runner.run(task, SEED, self.protocol_id, self.max_steps, "" if practice else self.config_hash)
        return mark_time_limit(row)

    def _parse_action(self, data: Any, ep: _Episode | None, seq: int) -> Any:
        mode = None
        if ep is not None and not ep.channel.done and ep.channel.seq == seq and ep.channel.obs is not None:
            mode = str(ep.channel.obs.get("mode") or FIRST_PERSON)
        return parse_continuous_action(data, mode)

    def _practice_score(self, metrics: dict[str, Any]) -> Any:
        return metrics.get("sr")

    def _motion_payload(self, ep: _Episode, obs: dict[str, Any], text: dict[str, Any]) -> dict[str, Any]:
        mode = str(obs.get("mode") or FIRST_PERSON)
        opts = [str(o) for o in (ep.task.extra or {}).get("options") or []]
        return {
            "mode": mode,
            "allowed": list(ALLOWED.get(mode, ())),
            "state_text": state_text(text.get("state") or {}),
            "notices": list(text.get("notices") or []),
            "last_result": text.get("last_result") or "",
            "options": [{"letter": LETTERS[i], "text": o} for i, o in enumerate(opts[: len(LETTERS)])],
        }

__all__ = ["ContinuousPlayService", "VIEW_HEIGHT", "VIEW_HFOV_DEG", "VIEW_WIDTH"]
