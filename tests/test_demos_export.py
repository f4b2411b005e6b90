"""``urbanarena demos export`` (issue 17): the HF folder loads with ``datasets.load_dataset`` offline, every
reply parses (with the VLM agent's own parser) to the action executed, and the rows' actions replayed
through the registered env reproduce the oracle's trajectory of ``urbanarena run`` exactly."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generate_util import helsinki_area, helsinki_pbf_path

datasets = pytest.importorskip("datasets", reason="the 'train' extra (datasets) is not installed")


@pytest.fixture(scope="module")
def train_city(request, tmp_path_factory):
    return helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "train")


def test_arena_demos_hf_load_and_replay(train_city, tmp_path, monkeypatch):
    from urbanarena.agents.arena_oracle import ArenaOracleAgent, ArenaOracleSolver
    from urbanarena.agents.vlm.parsing import parse_arena_reply
    from urbanarena.cli.main import app
    from urbanarena.gym.arena import ACTIONS, ArenaTaskEnv
    from urbanarena.runner.arena import ArenaEpisodeRunner
    from urbanarena.tasks.generators import generate_suite, save_suite
    from urbanarena.tasks.resolve import resolve_tasks
    from urbanarena.world.resolve import save_named

    save_named(train_city, "helsinki-train")
    tf = tmp_path / "tasks" / "mn.json"
    save_suite(generate_suite(train_city, per_family=3, seed=5, kinds=("map_navigation",), split="train",
                              solver=ArenaOracleSolver(train_city)), tf)
    tasks = resolve_tasks(str(tf), train_city)
    out = tmp_path / "demos"
    res = CliRunner().invoke(app, ["demos", "export", "--city", "helsinki-train", "--tasks", str(tf), "--format",
                                   "hf", "--out", str(out), "--limit", "1"])
    assert res.exit_code == 0, res.output
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    ds = datasets.load_dataset(str(out))
    assert list(ds) == ["train"]
    rows = ds["train"]
    first = tasks[0]
    assert set(rows["task_id"]) == {first.task_id} and set(rows["split"]) == {"train"}
    assert rows["step"] == list(range(1, len(rows) + 1))
    for r in rows:
        parsed = parse_arena_reply(r["reply"], ())
        assert parsed.ok and parsed.action.label() == r["action"]
        assert r["prompt"].count("<image>") == len(r["images"]) == len(r["image_labels"]) == 3
        assert r["images"][0].size == (640, 360) and r["images"][2].size == (640, 640)
    assert rows[-1]["done"] and rows[-1]["score"] == 1.0
    # the oracle's own episode through the runner, and the rows replayed through the env
    row = ArenaEpisodeRunner(train_city, ArenaOracleAgent, "arena-oracle", task_dir=tf.parent).run(
        first, 0, "cityarena-v1", 50)
    assert [r["action"] for r in rows] == row["actions"]
    env = ArenaTaskEnv(city=train_city, split="train", tasks=str(tf), observation="text")
    env.reset(seed=0, options={"task_id": first.task_id})
    for r in rows:
        assert ACTIONS[int(r["gym_action"])].label().split(":")[0] == r["action"].split(":")[0]
        env.step(int(r["gym_action"]))
    assert [list(p) for p in env.arena.positions] == row["details"]["positions"]
    assert env.score["evaluation_score"] == row["metrics"]["evaluation_score"] == rows[-1]["score"]


def test_urbanground_demos_jsonl_replay(train_city, tmp_path):
    from urbanarena.agents.urbanground_oracle import UrbanGroundOracle
    from urbanarena.agents.vlm.urbanground import parse_urbanground_reply
    from urbanarena.gym.continuous import ContinuousTaskEnv
    from urbanarena.runner.continuous_episode import ContinuousEpisodeRunner
    from urbanarena.runner.demos import export_demos

    env = ContinuousTaskEnv(city=train_city, split="train", family="l2_short_range", n_tasks=3)
    task = env.source.tasks[0]
    res = export_demos(train_city, [task], tmp_path / "ug", "jsonl", seeds=[2])
    rows = [json.loads(line) for line in (tmp_path / "ug" / "train.jsonl").read_text().splitlines()]
    assert res["rows"] == len(rows) > 0
    for r in rows:
        assert (tmp_path / "ug" / r["images"][0]).is_file()
        p = parse_urbanground_reply(r["reply"], (), mode="first_person")
        assert p.ok and {k: v for k, v in p.action.items() if k != "memory"} == json.loads(r["action"])
    row = ContinuousEpisodeRunner(train_city, UrbanGroundOracle, "ug-oracle").run(task, 2, "urbanground-v1", 600)
    assert [json.loads(r["action"]) for r in rows] == row["actions"]
    env.reset(seed=2, options={"task": task})
    for r in rows:
        env.step(r["gym_action"])
    samples = [[s.t_s, s.x_m, s.y_m, s.yaw_deg, s.pitch_deg, s.step, s.checkpoint] for s in env.env.samples]
    assert samples == row["details"]["samples"]
    assert env.score == row["metrics"]
    assert rows[-1]["score"] == row["metrics"]["sr"]
