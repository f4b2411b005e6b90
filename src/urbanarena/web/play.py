"""Opening a play study: :func:`open_play` resolves CITY and TASKS into the study plan and picks the play service of the
tasks' motion model (:func:`play_service_class`: :class:`~urbanarena.web.play_service.PlayService` for arena tasks,
:class:`~urbanarena.web.play_continuous.ContinuousPlayService` for continuous ones)."""

from __future__ import annotations

from pathlib import Path

from urbanarena.errors import UrbanArenaError
from urbanarena.runner.arena import ArenaViewSettings
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.web.auth import ParticipantTokens
# re-exported: the play service was defined here before it had a module of its own
from urbanarena.web.play_service import SEED, PlayError, PlayService, data_url  # noqa: F401
from urbanarena.web.study import StudyPlan


def open_play(city: str, tasks: str, tokens: ParticipantTokens, run_dir: str | Path, *,
              practice: str | None = None, practice_count: int = 1, time_limit_s: float | None = 600.0,
              per_participant: int | None = None, consent_text: str | None = None, protocol: str | None = None,
              max_steps: int | None = None, command: list[str] | None = None,
              render_style: str | None = None) -> PlayService:
    """Resolve ``city`` and ``tasks`` (CITY and TASKS arguments, as ``urbanarena run``), build the
    :class:`StudyPlan` and return the :class:`PlayService` (see the ``play`` command for the arguments).

    Raises:
        UnknownCityError, CityFormatError, TaskFormatError, StudyError, UrbanArenaError: bad input.
        RendererUnavailableError, StoreError: see :class:`PlayService`.
    """
    from urbanarena.tasks.resolve import resolve_task_set
    from urbanarena.web.study import DEFAULT_CONSENT, split_practice
    from urbanarena.world.resolve import resolve_city_source

    c, source = resolve_city_source(city)
    view = ArenaViewSettings(**({"render_style": render_style} if render_style else {}))
    ts = resolve_task_set(tasks, c, source.directory, render_style=view.render_style)
    prac_set = resolve_task_set(practice, c, source.directory, render_style=view.render_style) if practice else None
    scored, prac = split_practice(ts.tasks, prac_set.tasks if prac_set else None, practice_count)
    plan = StudyPlan(scored, prac, time_limit_s, per_participant, consent_text or DEFAULT_CONSENT)
    task_dir = ts.source_files[0].absolute().parent if ts.source_files else None
    practice_dir = (prac_set.source_files[0].absolute().parent if prac_set and prac_set.source_files else task_dir)
    cls = play_service_class(plan.tasks + plan.practice)
    return cls(c, ts, plan, tokens, run_dir, city_dir=source.directory, protocol=protocol,
               max_steps=max_steps, task_dir=task_dir, practice_dir=practice_dir, city_spec=city,
               command=command, view=view)


def play_service_class(tasks: list[Task]) -> type[PlayService]:
    """The play service of a task set's motion model, by the families' ``action_style``: ``"continuous"``
    (``urbanground``) -> :class:`~urbanarena.web.play_continuous.ContinuousPlayService`, else
    :class:`PlayService` (arena; it refuses graph tasks).

    Raises:
        UrbanArenaError: tasks of several motion models in one study.
    """
    styles: dict[str, set[str]] = {}
    for t in tasks:
        styles.setdefault(get_family(t.family).action_style, set()).add(t.family)
    if len(styles) > 1:
        parts = "; ".join(f"{k}: {', '.join(sorted(v))}" for k, v in sorted(styles.items()))
        raise UrbanArenaError(f"a play study plays tasks of one motion model; this task set mixes {parts}")
    if set(styles) == {"continuous"}:
        from urbanarena.web.play_continuous import ContinuousPlayService

        return ContinuousPlayService
    return PlayService


__all__ = ["PlayError", "PlayService", "SEED", "data_url", "open_play", "play_service_class"]
