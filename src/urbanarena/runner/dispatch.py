"""Which episode loop runs a job: the graph loop (:class:`~urbanarena.runner.episode.EpisodeRunner`)
for graph families, the arena loop (:class:`~urbanarena.runner.arena.ArenaEpisodeRunner`) for
families whose ``action_style`` is ``"arena"``, the continuous loop
(:class:`~urbanarena.runner.continuous_episode.ContinuousEpisodeRunner`) for ``"continuous"`` ones
(``urbanground``).

One :class:`EpisodeDispatcher` per worker process or thread (the loops cache
envs, observers and images; none of them is shared between threads). It also
opens the episode's trace folder when traces are on (:mod:`urbanarena.runner.trace`)
and adds the results-schema-v3 columns of graph episodes
(:func:`urbanarena.runner.results.graph_columns`).

Rounds (``--rounds n`` with n > 1, graph jobs): each round's trace goes to its own folder,
``traces/<slug>/round-<k>/`` (``steps.jsonl``, ``images/``; k = 1..n), and
``details.per_round[k-1].trace_dir`` names it. A job is rerun whole on resume, so its folder
is removed when the job starts: no folder of an earlier, interrupted attempt survives.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any, Callable

from urbanarena.agents.base import Agent
from urbanarena.runner.arena import ArenaEpisodeRunner, ArenaViewSettings
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.runner.judge import JudgeSettings
from urbanarena.runner.results import graph_columns
from urbanarena.runner.trace import TRACES_DIR, EpisodeRecorder, TraceWriter, trace_slug
from urbanarena.tasks.families import get_family
from urbanarena.tasks.schema import Task
from urbanarena.world.city import City

ARENA_STYLE = "arena"
CONTINUOUS_STYLE = "continuous"


def is_arena_family(name: str) -> bool:
    """Whether task family ``name`` runs in the arena (``action_style == "arena"``)."""
    return get_family(name).action_style == ARENA_STYLE


class EpisodeDispatcher:
    """Runs one job in the loop its family needs (module docstring).

    Args:
        city: the loaded city.
        agent_factory: zero-argument factory of fresh agents.
        agent_name: name stored with each result.
        city_dir: saved city directory (imagery root).
        task_dir: folder of the task file (reference images).
        run_dir: the RUN_DIR; with ``trace`` the traces go to ``RUN_DIR/traces``.
        trace: write per-step traces.
        arena_view: :class:`ArenaViewSettings` fields.
        cancel: event that aborts running episodes at their next step when set.
        judge: fuzzy-match judge of arena tasks (:class:`~urbanarena.runner.judge.JudgeSettings` or its fields).
        model_under_test: the agent's model (``provider:model``), which the judge must not be.
    """

    def __init__(self, city: City, agent_factory: Callable[[], Agent], agent_name: str, *,
                 city_dir: str | Path | None = None, task_dir: str | Path | None = None,
                 run_dir: str | Path | None = None, trace: bool = False, arena_view: dict[str, Any] | None = None,
                 cancel: threading.Event | None = None, judge: JudgeSettings | dict[str, Any] | None = None,
                 model_under_test: str | None = None):
        self.city = city
        self.agent_factory = agent_factory
        self.agent_name = agent_name
        self.city_dir = city_dir
        self.task_dir = task_dir
        self.trace_root = Path(run_dir) / TRACES_DIR if (trace and run_dir is not None) else None
        self.arena_view = ArenaViewSettings(**(arena_view or {}))
        self.cancel = cancel
        self.judge = JudgeSettings(**judge) if isinstance(judge, dict) else judge
        self.model_under_test = model_under_test
        # agents that draw their own views of a rendered city (vlm-cityseeker) get the run's style and population
        self.graph = EpisodeRunner(city, agent_factory, agent_name, render_settings=self.arena_view.render_settings)
        self._arena: ArenaEpisodeRunner | None = None
        self._continuous: Any = None

    @property
    def arena(self) -> ArenaEpisodeRunner:
        if self._arena is None:
            self._arena = ArenaEpisodeRunner(self.city, self.agent_factory, self.agent_name, city_dir=self.city_dir,
                                             task_dir=self.task_dir, view=self.arena_view, judge=self.judge,
                                             model_under_test=self.model_under_test)
        return self._arena

    @property
    def continuous(self):
        if self._continuous is None:
            from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner

            self._continuous = ContinuousEpisodeRunner(self.city, self.agent_factory, self.agent_name,
                                                       render_style=self.arena_view.render_style)
        return self._continuous

    def run(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str = "") -> dict[str, Any]:
        """Run one episode; returns its store row. Raises ``RunStopped`` for run-level stops."""
        slug = trace_slug(task.task_id, seed, config_hash)
        if (self.trace_root is not None and self.graph.rounds > 1
                and get_family(task.family).action_style not in (ARENA_STYLE, CONTINUOUS_STYLE)):
            return self._run_rounds_traced(task, seed, protocol_id, max_steps, config_hash, slug)
        trace = TraceWriter(self.trace_root / slug) if self.trace_root is not None else None
        try:
            if get_family(task.family).action_style == CONTINUOUS_STYLE:
                result = self.continuous.run(task, seed, protocol_id, max_steps, config_hash, trace=trace,
                                             cancel=self.cancel)
            elif is_arena_family(task.family):
                result = self.arena.run(task, seed, protocol_id, max_steps, config_hash, trace=trace, cancel=self.cancel)
            else:
                factory = self.agent_factory
                if trace is not None or self.cancel is not None:
                    cancel = self.cancel
                    self.graph.agent_factory = lambda: EpisodeRecorder(factory(), trace, cancel=cancel)
                else:
                    self.graph.agent_factory = factory
                result = self.graph.run(task, seed, protocol_id, max_steps, config_hash)
                result["v3"] = graph_columns(result)
        finally:
            if trace is not None:
                trace.close()
        if trace is not None:
            result["v3"]["artifact_dir"] = f"{TRACES_DIR}/{slug}"
        return result

    def _run_rounds_traced(self, task: Task, seed: int, protocol_id: str, max_steps: int, config_hash: str,
                           slug: str) -> dict[str, Any]:
        """A graph job of several rounds with one trace folder per round (module docstring)."""
        assert self.trace_root is not None
        job_dir = self.trace_root / slug
        if job_dir.exists():
            shutil.rmtree(job_dir)
        factory, cancel, graph = self.agent_factory, self.cancel, self.graph
        writers: list[TraceWriter] = []

        def traced() -> Agent:
            agent = factory()
            writer = TraceWriter(job_dir / f"round-{graph.current_round or 1}")
            writers.append(writer)
            return EpisodeRecorder(agent, writer, cancel=cancel)

        graph.agent_factory = traced
        try:
            result = graph.run(task, seed, protocol_id, max_steps, config_hash)
            result["v3"] = graph_columns(result)
        finally:
            for w in writers:
                w.close()
        for pr in (result.get("details") or {}).get("per_round") or []:
            if (job_dir / f"round-{pr['round']}").is_dir():  # a round that ended at reset built no agent
                pr["trace_dir"] = f"{TRACES_DIR}/{slug}/round-{pr['round']}"
        result["v3"]["artifact_dir"] = f"{TRACES_DIR}/{slug}"
        return result


__all__ = ["ARENA_STYLE", "CONTINUOUS_STYLE", "EpisodeDispatcher", "is_arena_family"]
