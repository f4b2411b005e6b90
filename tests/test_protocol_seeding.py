"""Issue 15, defect 1: every (task, seed) draws its own random stream in graph runs.

Two tasks that start on the same node and run with the same seed must not walk the same
action sequence: the agent's context is seeded by ``(seed, crc32(task_id))`` in every path
(plain episodes, rounds of a strategy job, the dry run's first step)."""

from __future__ import annotations

import zlib
import numpy as np

from runner_util import grid_city
from urbanarena.agents.base import Agent
from urbanarena.agents.baselines import RandomAgent
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.schema import CityRef, Goal, Start, Task


def _tasks(city, n=6):
    ref = CityRef(name=city.name, content_hash=city.content_hash)
    base = Task(task_id="t/0", family="cityseeker", city=ref, start=Start(node="r2c2", heading_deg=0.0),
                goals=[Goal(node="r0c0")], success_radius_m=1.0, reference_path=city.shortest_path("r2c2", "r0c0"),
                category="basic_poi", difficulty="easy")
    return [base.model_copy(update={"task_id": f"t/{i}"}) for i in range(n)]


class ContextProbe(Agent):
    """Records the context's task id and the first draw of its stream, then stops."""

    name = "probe"
    seen: list = []

    def reset(self, task, context):
        ContextProbe.seen.append((task.task_id, context.task_id, int(context.rng.integers(1 << 62))))

    def act(self, observation):
        return -1


def test_random_walks_differ_across_tasks_with_one_seed():
    city = grid_city(5)
    runner = EpisodeRunner(city, lambda: RandomAgent(), "random")
    rows = [runner.run(t, 0, "cityseeker-v1", 12) for t in _tasks(city)]
    walks = {tuple(r["actions"]) for r in rows}
    assert len(walks) == len(rows), "tasks with the same seed walked the same action sequence"
    # and each walk is the one the documented stream gives: default_rng([seed, crc32(task_id)])
    for r in rows:
        rng = np.random.default_rng([0, zlib.crc32(r["task_id"].encode())])
        assert r["actions"][0] == int(rng.integers(len(city.graph.nodes["r2c2"]["walkable_headings_raw"])))


def test_every_runner_path_hands_the_task_id_to_the_context():
    city = grid_city(3)
    tasks = _tasks(city, 2)
    ContextProbe.seen = []
    EpisodeRunner(city, ContextProbe, "probe").run(tasks[0], 3, "cityseeker-v1", 5)
    EpisodeRunner(city, ContextProbe, "probe", rounds=2).run(tasks[1], 3, "cityseeker-v1", 5)
    assert [(a, b) for a, b, _ in ContextProbe.seen] == [("t/0", "t/0"), ("t/1", "t/1"), ("t/1", "t/1")]
    draws = [d for *_, d in ContextProbe.seen]
    assert len(set(draws)) == 3  # round 2 of a job has its own stream too
    assert draws[0] == int(np.random.default_rng([3, zlib.crc32(b"t/0")]).integers(1 << 62))


def test_dry_run_first_step_gets_the_task_id():
    from types import SimpleNamespace

    from urbanarena.runner.preflight import _first_step_requests

    city = grid_city(3)
    ContextProbe.seen = []
    p = SimpleNamespace(city=city, seeds=[4])
    for t in _tasks(city, 2):
        _first_step_requests(p, t, "cityseeker-v1", 5, lambda: (ContextProbe(), SimpleNamespace(requests=[])))
    assert [(a, b) for a, b, _ in ContextProbe.seen] == [("t/0", "t/0"), ("t/1", "t/1")]
    assert ContextProbe.seen[0][2] != ContextProbe.seen[1][2]
