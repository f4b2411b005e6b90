"""Registered Gymnasium envs (issue 17): ``check_env`` passes for each, and the oracle's actions of an
``urbanarena run`` episode replayed through the env give the same final score (and a reward sum equal to
it under the sparse reward; under the shaped reward the telescoped progress terms, computed here from
the env's own distance reports)."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import urbanarena  # noqa: F401  (registers the envs)
from generate_util import helsinki_area, helsinki_pbf_path


@pytest.fixture(scope="module")
def pbf(request, tmp_path_factory):
    return str(helsinki_pbf_path(request, tmp_path_factory))


@pytest.fixture(scope="module")
def train_city(pbf):
    return helsinki_area(pbf, "train")


@pytest.fixture(scope="module")
def arena_tasks(train_city, tmp_path_factory):
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators import generate_suite, save_suite

    out = tmp_path_factory.mktemp("gym-arena") / "mn.json"
    save_suite(generate_suite(train_city, per_family=4, seed=3, kinds=("map_navigation",), split="train",
                              solver=ArenaOracleSolver(train_city)), out)
    return out


def test_registered_ids():
    for env_id in ("urbanarena/Graph-v1", "urbanarena/Arena-v1", "urbanarena/Continuous-v1"):
        assert env_id in gym.registry, env_id


@pytest.mark.parametrize("env_id,kwargs", [
    ("urbanarena/Graph-v1", {}),
    ("urbanarena/Arena-v1", {"observation": "map"}),
    ("urbanarena/Continuous-v1", {"action": "json"}),
    ("urbanarena/Continuous-v1", {"action": "discrete", "reward": "shaped"}),
])
def test_check_env_defaults(env_id, kwargs, pbf):
    """The defaults build the train area and generate tasks there (tests' own URBANARENA_HOME)."""
    env = gym.make(env_id, **kwargs)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=5)
    assert env.observation_space.contains(obs)
    t1 = env.unwrapped.task.task_id
    env.reset(seed=5)
    assert env.unwrapped.task.task_id == t1  # same seed, same task
    assert "train" in env.unwrapped.city.name or env.unwrapped.city.name.endswith("-train")
    env.close()


def test_split_refused_on_other_area(pbf):
    from urbanarena.tasks.generators.splits import SplitError
    from urbanarena.gym.arena import ArenaTaskEnv

    with pytest.raises(SplitError):
        ArenaTaskEnv(city=helsinki_area(pbf, "test"), split="train")
    from urbanarena.gym.common import GymConfigError

    with pytest.raises(GymConfigError, match="test-split only"):
        ArenaTaskEnv(city=helsinki_area(pbf, "val"), split="val", tasks="mini")


def test_arena_oracle_replay_matches_runner(train_city, arena_tasks):
    from urbanarena.agents.arena_oracle import ArenaOracleAgent
    from urbanarena.gym.arena import ArenaTaskEnv, action_index
    from urbanarena.runner.arena import ArenaEpisodeRunner
    from urbanarena.tasks.resolve import resolve_tasks

    tasks = resolve_tasks(str(arena_tasks), train_city)
    runner = ArenaEpisodeRunner(train_city, ArenaOracleAgent, "arena-oracle", task_dir=arena_tasks.parent)
    for reward in ("sparse", "shaped"):
        env = ArenaTaskEnv(city=train_city, split="train", tasks=str(arena_tasks), observation="map", reward=reward)
        check_env(env, skip_render_check=True)
        for task in tasks[:3]:
            row = runner.run(task, 7, "cityarena-v1", 50)
            obs, info = env.reset(seed=7, options={"task_id": task.task_id})
            d0 = info["goal_distance_m"]["graph"]
            total, n, done = 0.0, 0, False
            for label in row["actions"]:
                assert not done
                a = action_index(label)
                assert obs["action_mask"][a] == 1
                obs, r, term, trunc, info = env.step(a)
                total += r
                n += 1
                done = term or trunc
            assert done and n == row["steps"]
            assert env.score["evaluation_score"] == row["metrics"]["evaluation_score"] == 1.0
            assert info["score"]["evaluation_score"] == 1.0
            for k in ("status", "is_correct", "distance_to_goal", "validation"):
                assert env.score[k] == row["metrics"][k], k
            assert [list(p) for p in env.arena.positions] == row["details"]["positions"]
            if reward == "sparse":
                assert total == row["metrics"]["evaluation_score"]
            else:
                d1 = info["goal_distance_m"]["graph"]
                assert total == pytest.approx((d0 - d1) / 10.0 - 0.01 * n + 1.0, abs=1e-9)


def test_graph_oracle_replay_matches_runner(train_city):
    from urbanarena.agents.oracle import OracleAgent
    from urbanarena.gym.graph import GraphTaskEnv, gym_graph_action
    from urbanarena.runner.episode import EpisodeRunner

    env = GraphTaskEnv(city=train_city, split="train", n_tasks=1)
    runner = EpisodeRunner(train_city, OracleAgent, "oracle")
    for task in env.source.tasks[:4]:
        row = runner.run(task, 3, env.protocol_id, env.max_steps)
        obs, _ = env.reset(seed=3, options={"task": task})
        total, info = 0.0, {}
        for a in row["actions"]:
            obs, r, term, trunc, info = env.step(gym_graph_action(a))
            total += r
        assert term or trunc
        assert list(env.base.path) == row["trajectory"]
        assert env.score == row["metrics"]
        assert info["score"] == {k: v for k, v in row["metrics"].items() if v is not None}
        assert total == row["metrics"]["tc_proximity_50m"]


def test_continuous_oracle_replay_matches_runner(train_city):
    from urbanarena.agents.urbanground_oracle import UrbanGroundOracle
    from urbanarena.gym.continuous import ContinuousTaskEnv
    from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner

    env = ContinuousTaskEnv(city=train_city, split="train", family="l2_short_range", n_tasks=3, reward="shaped")
    runner = ContinuousEpisodeRunner(train_city, UrbanGroundOracle, "ug-oracle")
    for task in env.source.tasks[:3]:
        row = runner.run(task, 11, "urbanground-v1", env.max_steps)
        obs, info = env.reset(seed=11, options={"task": task})
        d0 = info["goal_distance_m"]
        total, n, blocked = 0.0, 0, 0
        for a in row["actions"]:
            obs, r, term, trunc, info = env.step(json.dumps(a))
            total += r
            n += 1
            blocked += bool(info.get("blocked"))
        assert term or trunc
        assert env.score == row["metrics"]
        d1 = info["goal_distance_m"]
        expect = (d0 - d1) / 10.0 - 0.01 * n - 0.05 * blocked + row["metrics"]["sr"]
        assert total == pytest.approx(expect, abs=1e-9)


def test_continuous_garbage_action_is_counted(train_city):
    from urbanarena.gym.continuous import ContinuousTaskEnv

    env = ContinuousTaskEnv(city=train_city, split="train", family="l2_short_range", n_tasks=3)
    env.reset(seed=0)
    _, r, term, trunc, info = env.step("walk north please")
    assert (r, term, trunc) == (0.0, False, False)
    assert info["counters"]["parse_errors"] == 1 and not info["executed"]


def _arena_fn():
    import gymnasium

    import urbanarena  # noqa: F401

    return gymnasium.make("urbanarena/Arena-v1", observation="map", n_tasks=5)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs(kind, pbf):
    """SyncVectorEnv and AsyncVectorEnv (spawn) step two Arena-v1 envs with masked actions; each env's
    first task is the one its own seed draws."""
    from urbanarena.gym.arena import ArenaTaskEnv

    fns = [_arena_fn, _arena_fn]
    venv = (gym.vector.SyncVectorEnv(fns) if kind == "sync"
            else gym.vector.AsyncVectorEnv(fns, context="spawn", shared_memory=False))
    try:
        obs, info = venv.reset(seed=[3, 4])
        assert obs["map"].shape == (2, 96, 96, 3) and obs["map"].dtype == np.uint8
        single = ArenaTaskEnv(observation="map", n_tasks=5)
        for i, s in enumerate((3, 4)):
            single.reset(seed=s)
            assert info["task_id"][i] == single.task.task_id
        rng = np.random.default_rng(0)
        for _ in range(4):
            acts = np.array([int(rng.choice(np.flatnonzero(m))) for m in obs["action_mask"]])
            obs, rew, term, trunc, info = venv.step(acts)
            assert rew.shape == (2,) and venv.observation_space.contains(obs)
    finally:
        venv.close()


def test_helsinki_splits_are_their_cropped_cities():
    """``split=`` on ``city="helsinki"`` (the whole extract) means the split's area cropped as a city of its own."""
    from urbanarena.gym.common import split_city_name
    from urbanarena.tasks.generators.splits import HELSINKI_AREAS, helsinki_cities

    assert [split_city_name("helsinki", s) for s in ("train", "val", "test", None)] == [
        "helsinki-train", "helsinki-val", "helsinki-test", "helsinki"]
    cities = helsinki_cities()
    assert all(cities[f"helsinki-{s}"] == HELSINKI_AREAS[s] for s in HELSINKI_AREAS)


def test_arena_location_map_follows_the_protocol(train_city, tmp_path_factory):
    """Arena-v1 sends the current-location map by the protocol's rule, as ``urbanarena run`` does: under
    ``cityarena-v1`` every kind but localization gets it (360CityArena's task loader), under ``urbanarena-v1``
    only tasks flagged ``requires_current_location`` (a landmark_language task is not)."""
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.gym.arena import ArenaTaskEnv
    from urbanarena.tasks.generators import generate_suite, save_suite

    out = tmp_path_factory.mktemp("gym-arena-ll") / "ll.json"
    save_suite(generate_suite(train_city, per_family=1, seed=3, kinds=("landmark_language",), split="train",
                              solver=ArenaOracleSolver(train_city)), out)
    task = json.loads(out.read_text())["tasks"][0]
    assert task["extra"]["requires_current_location"] is False
    maps = {}
    for protocol in ("cityarena-v1", "urbanarena-v1"):
        env = ArenaTaskEnv(city=train_city, split="train", tasks=str(out), observation="map", protocol=protocol,
                           family="landmark_language")
        obs, _ = env.reset(seed=1, options={"task_id": task["task_id"]})
        maps[protocol] = obs["map"]
    assert maps["cityarena-v1"].any(), "cityarena-v1 sends the location map to a landmark_language task"
    assert not maps["urbanarena-v1"].any(), "urbanarena-v1 sends it only to flagged tasks"
