"""Harness-neutral episode running: a suite, the VLM agent of each family, one scored episode.

:class:`Suite` resolves a CITY and TASKS argument exactly as ``urbanarena run`` does
(:func:`~urbanarena.world.resolve.resolve_city_source`, :func:`~urbanarena.tasks.resolve.resolve_task_set`)
and runs one (task, seed) episode with a harness model client through the runner's
:class:`~urbanarena.runner.dispatch.EpisodeDispatcher` (graph, arena and continuous loops alike). The
returned row is the runner's own result: trajectory, stop reason, error, the family scorer's metrics
(:mod:`urbanarena.tasks.families`), agent counters; an episode whose agent raised ends with stop
reason ``error`` and is scored as the failure it is.

Headline score per family (:data:`HEADLINE_METRIC`; ours, the key each family's paper reports first):
``cityseeker`` TC-P at 50 m (CitySeeker's success), ``map2seq`` TC, ``cityarena`` ``evaluation_score``
(``None`` = an answer the validator could not score, counted 0 as ``summary`` does), ``urbanground`` SR.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urbanarena.agents.clients import GenerationSettings
from urbanarena.agents.registry import FAMILY_VLM_AGENTS, make_agent
from urbanarena.runner.dispatch import EpisodeDispatcher
from urbanarena.tasks.families import get_family
from urbanarena.tasks.resolve import resolve_task_set
from urbanarena.tasks.schema import Task
from urbanarena.errors import UrbanArenaError
from urbanarena.world.city import City
from urbanarena.world.resolve import resolve_city_source

#: VLM agent used for each task family (registry names, :mod:`urbanarena.agents.registry`)
FAMILY_AGENT = FAMILY_VLM_AGENTS

#: the per-episode metric each family's headline score is (module docstring)
HEADLINE_METRIC: dict[str, str] = {
    "cityseeker": "tc_proximity_50m",
    "map2seq": "tc",
    "cityarena": "evaluation_score",
    "urbanground": "sr",
}


def headline_score(row: dict[str, Any]) -> float:
    """The family's headline score of a result row (:data:`HEADLINE_METRIC`), in [0, 1]; a missing
    value (an unscorable answer, an errored episode) counts 0."""
    key = HEADLINE_METRIC.get(str(row.get("family")), "")
    value = (row.get("metrics") or {}).get(key)
    return float(value) if value is not None else 0.0


def numeric_metrics(row: dict[str, Any]) -> dict[str, float]:
    """The row's metrics that are numbers (``None`` and non-numeric values left out)."""
    out: dict[str, float] = {}
    for k, v in (row.get("metrics") or {}).items():
        if isinstance(v, bool):
            out[k] = float(v)
        elif isinstance(v, (int, float)):
            out[k] = float(v)
    return out


@dataclass
class Suite:
    """A resolved city and task list (module docstring).

    Attributes:
        city: the loaded city. city_dir: its saved directory (imagery root).
        tasks: the tasks (in source order, cut to ``limit``). task_dir: folder of the task file
            (reference images), ``None`` for tasks not read from a file.
        city_spec / tasks_spec: the arguments they came from.
    """

    city: City
    city_dir: Path | None
    tasks: list[Task]
    task_dir: Path | None
    city_spec: str
    tasks_spec: str

    @classmethod
    def load(cls, city: str, tasks: str, limit: int | None = None, family: str | None = None) -> Suite:
        """Resolve ``city`` and ``tasks`` as ``urbanarena run --city --tasks`` does.

        Args:
            family: keep only tasks of this family.
            limit: keep the first ``limit`` tasks (after the family filter).
        Raises:
            UnknownCityError, CityFormatError, TaskFormatError, UrbanArenaError: as ``urbanarena run``.
        """
        c, source = resolve_city_source(city)
        ts = resolve_task_set(tasks, c, source.directory)
        items = [t for t in ts.tasks if family is None or t.family == family]
        if family is not None and not items:
            raise UrbanArenaError(f"tasks {tasks!r} hold no task of family {family!r}")
        if limit is not None:
            items = items[: int(limit)]
        task_file = ts.source_files[0] if ts.source_files else None
        return cls(city=c, city_dir=Path(source.directory) if source.directory else None, tasks=items,
                   task_dir=Path(task_file).absolute().parent if task_file is not None else None,
                   city_spec=city, tasks_spec=tasks)

    def protocol(self, task: Task, protocol: str | None = None) -> str:
        """The protocol id a task runs under (``protocol`` or its family's default)."""
        return protocol or get_family(task.family).default_protocol

    def max_steps(self, task: Task, max_steps: int | None = None) -> int:
        """The step limit of a task (``max_steps`` or its family's default)."""
        return int(max_steps if max_steps is not None else get_family(task.family).default_max_steps)

    def run_episode(self, task: Task, seed: int, client: Any, *, agent: str | None = None,
                    agent_params: dict[str, Any] | None = None, protocol: str | None = None,
                    max_steps: int | None = None) -> dict[str, Any]:
        """Run one episode of ``task`` with a VLM agent whose model client is ``client``.

        Args:
            client: a model client (:class:`~urbanarena.harness.bridge.HarnessClient`, one per episode:
                its ``generation`` is set to the protocol's preset and the agent's ``generation`` overrides).
            agent: registry name of the agent (default: :data:`FAMILY_AGENT` of the task's family).
            agent_params: further agent parameters (``-p`` of ``urbanarena run``).
        Returns: the runner's result row (:meth:`urbanarena.runner.dispatch.EpisodeDispatcher.run`).
        Raises:
            RunStopped: a run-level stop. KeyError: unknown family or agent.
        """
        name = agent or FAMILY_AGENT[task.family]
        params = dict(agent_params or {})
        protocol_id = self.protocol(task, protocol)
        probe = make_agent(name, client=client, **params)
        # an injected client keeps its own settings: give it the protocol's generation preset
        client.generation = GenerationSettings(**{**probe.protocol_generation(protocol_id),
                                                  **probe.generation_overrides})
        dispatcher = EpisodeDispatcher(self.city, lambda: make_agent(name, client=client, **params), name,
                                       city_dir=self.city_dir, task_dir=self.task_dir,
                                       model_under_test=f"{client.spec.provider}:{client.spec.model}")
        return dispatcher.run(task, int(seed), protocol_id, self.max_steps(task, max_steps))


__all__ = ["FAMILY_AGENT", "HEADLINE_METRIC", "Suite", "headline_score", "numeric_metrics"]
