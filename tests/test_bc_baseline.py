"""Behaviour-cloning baseline (issue 17): a tiny configuration trains in seconds, its checkpoint is a
safetensors file (no pickle) that round-trips, and ``urbanarena run --agent bc:CKPT`` runs it; the blind
ablation gets the same input without images (its image branch sees only zeros)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from generate_util import helsinki_area, helsinki_pbf_path

torch = pytest.importorskip("torch", reason="the 'train' extra (PyTorch CPU) is not installed")
pytest.importorskip("safetensors", reason="the 'train' extra (safetensors) is not installed")


@pytest.fixture(scope="module")
def cities(request, tmp_path_factory):
    pbf = str(helsinki_pbf_path(request, tmp_path_factory))
    return helsinki_area(pbf, "train"), helsinki_area(pbf, "test")


def _suite(city, split, n, seed, out):
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.generators import generate_suite, save_suite

    return save_suite(generate_suite(city, per_family=n, seed=seed, kinds=("map_navigation",), split=split,
                                     solver=ArenaOracleSolver(city)), out)


def test_map_reading_recovers_positions_and_scale(cities):
    """The map reader against the renderer's own geometry (world_to_px, scale) on drawn maps."""
    import math

    from urbanarena.agents.bc.mapread import GoalTracker, agent_marker, read_reference, scale_bar_m_per_px
    from urbanarena.render.maps import map_renderer_for
    from urbanarena.tasks.generators.suite import draw_asset

    train, test = cities
    for city in (train, test):
        loc = map_renderer_for(city, 640, 640)
        nodes = sorted(city.graph.nodes)
        rng = np.random.default_rng(0)
        picks = [nodes[int(i)] for i in rng.choice(len(nodes), size=6, replace=False)]
        for a, b, heading in zip(picks[::2], picks[1::2], (10.0, 135.0, 260.0)):
            (ax, ay), (bx, by) = city.xy(a), city.xy(b)
            img = loc.location_map(ax, ay, heading)
            u, v, h = agent_marker(img)
            tu, tv = loc.world_to_px(ax, ay)
            assert math.hypot(u - tu, v - tv) <= 1.0
            assert abs((h - heading + 180.0) % 360.0 - 180.0) <= 6.0
            assert abs(scale_bar_m_per_px(img) * loc.scale - 1.0) <= 0.02
            ref_img = draw_asset(city, "start_goal_map", {"start_xy": [ax, ay], "goal_xy": [bx, by]})
            ref = read_reference(ref_img)
            east, north = ref.goal_offset_m()
            d = math.hypot(bx - ax, by - ay)
            assert math.hypot(east - (bx - ax), north - (by - ay)) <= 0.03 * d + 3.0
            tracker = GoalTracker()
            tracker.update(img, ref_img)
            # half-way along a straight line to b, the goal is the other half away
            mx, my = (ax + bx) / 2, (ay + by) / 2
            ge, gn, _ = tracker.update(loc.location_map(mx, my, heading), ref_img)
            assert math.hypot(ge - (bx - mx), gn - (by - my)) <= 0.03 * d + 4.0
    blank = np.zeros((640, 640, 3), np.uint8)
    assert agent_marker(blank) is None and read_reference(blank) is None and scale_bar_m_per_px(blank) is None
    assert GoalTracker().update(blank, blank) is None


def test_tiny_training_checkpoint_and_run(cities, tmp_path):
    from typer.testing import CliRunner

    from urbanarena.agents.bc.agent import BCAgent
    from urbanarena.agents.bc.features import N_MAP_NAV, make_featurizer
    from urbanarena.agents.bc.train import META_KEY, TrainConfig, load_checkpoint, load_dataset, train_bc
    from urbanarena.cli.main import app
    from urbanarena.gym.arena import ACTIONS, ArenaTaskEnv
    from urbanarena.tasks.resolve import resolve_tasks
    from urbanarena.world.resolve import save_named

    train, test = cities
    tf = _suite(train, "train", 3, 0, tmp_path / "train" / "mn.json")
    tasks = resolve_tasks(str(tf), train)
    ckpt = tmp_path / "bc.safetensors"
    meta = train_bc(train, tasks, ckpt, TrainConfig(epochs=2, threads=1, dagger=1), task_dir=tf.parent,
                    dataset_out=tmp_path / "demos.npz")
    assert meta["demonstrations"]["episodes"] == len(tasks) and meta["demonstrations"]["oracle_failures"] == 0
    assert meta["figures"]["n_vector"] == N_MAP_NAV and meta["figures"]["n_actions"] == len(ACTIONS)
    ds = load_dataset(tmp_path / "demos.npz")
    assert len(ds) == meta["figures"]["samples"] == meta["demonstrations"]["samples"] + meta["dagger"][0]["samples"]
    raw = ckpt.read_bytes()
    header_len = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + header_len])  # safetensors: 8-byte length + JSON header, then raw tensors
    assert META_KEY in header["__metadata__"] and b"\x80\x04" not in raw[:2]  # no pickle stream
    model, meta2 = load_checkpoint(ckpt)
    assert meta2 == meta
    # same logits from the loaded model as from features computed by hand on an env observation
    env = ArenaTaskEnv(city=train, split="train", tasks=str(tf), observation="map")
    obs, _ = env.reset(seed=0, options={"task": tasks[0]})
    feat = make_featurizer("map_navigation", env.max_steps)
    vec, mask = feat(env.raw_obs)
    assert vec.shape == (N_MAP_NAV,) and vec[0] == 1.0  # the maps were read
    assert mask.sum() == len(ACTIONS) - 3 + obs["action_mask"][-4:-1].sum()
    agent = BCAgent(str(ckpt))
    agent.reset(tasks[0], None)
    with torch.no_grad():
        want = int(model(torch.from_numpy(vec[None]), torch.from_numpy(mask[None].astype(np.float32))).argmax(1)[0])
    assert agent.act(env.raw_obs) == ACTIONS[want]
    # the blind ablation: the same features whatever the images, and no goal in them
    blind = make_featurizer("map_navigation", env.max_steps, blind=True)
    bv, bm = blind(env.raw_obs)
    noisy = dict(env.raw_obs, map=np.random.default_rng(1).integers(0, 255, env.raw_obs["map"].shape, dtype=np.uint8))
    blind.reset()
    assert np.array_equal(blind(noisy)[0], bv) and np.array_equal(bm, mask)
    from_images = [0, 1, 2, 3, 4, 5, 6, 7, 13, 14, 20, 21]  # goal, and branch bearings relative to it
    assert not bv[from_images].any()
    assert np.array_equal(np.delete(bv, from_images), np.delete(vec, from_images))
    # urbanarena run --agent bc:CKPT on test-split tasks
    save_named(test, "helsinki")
    sf = _suite(test, "test", 2, 1, tmp_path / "test" / "mn.json")
    n_test = min(2, len(resolve_tasks(str(sf), test)))
    res = CliRunner().invoke(app, ["run", "--city", "helsinki", "--tasks", str(sf), "--agent", f"bc:{ckpt}",
                                   "--limit", "2", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["summary", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["episodes"] == n_test


def test_bad_checkpoint_is_refused(tmp_path):
    from urbanarena.agents.bc.train import load_checkpoint
    from urbanarena.errors import UrbanArenaError

    p = tmp_path / "x.safetensors"
    p.write_bytes(b"not a checkpoint")
    with pytest.raises(UrbanArenaError, match="not a urbanarena bc checkpoint"):
        load_checkpoint(p)
    with pytest.raises(UrbanArenaError, match="not found"):
        load_checkpoint(tmp_path / "missing.safetensors")


def test_train_bc_refuses_bad_options(tmp_path):
    """``train bc`` trains on the train split only and takes no negative DAgger rounds (exit 2, no checkpoint)."""
    from typer.testing import CliRunner

    from urbanarena.cli.main import app

    out = tmp_path / "x.safetensors"
    res = CliRunner().invoke(app, ["train", "bc", "--out", str(out), "--split", "test"])
    assert res.exit_code == 2 and "train split only" in res.output
    res = CliRunner().invoke(app, ["train", "bc", "--out", str(out), "--dagger", "-1"])
    assert res.exit_code == 2 and "--dagger at least 0" in res.output
    assert not out.exists()


def test_arena_straight_rule():
    """Hand-worked: W LARGE without arrows, the smallest turn where arrows show, ANSWER on the last step."""
    from urbanarena.agents.arena_random import ArenaStraightAgent
    from urbanarena.agents.registry import resolve_alias
    from urbanarena.env.arena_env import ActionKind

    a = ArenaStraightAgent()
    assert resolve_alias("straight", {"arena"}) == "arena-straight"
    assert a.act({"step": 0, "arrows": []}).label() == "W LARGE"
    arrows = [{"keys": ["LEFT"], "turn_deg": -80.0}, {"keys": ["RIGHT"], "turn_deg": 20.0},
              {"keys": ["UP"], "turn_deg": -35.0}]
    assert a.act({"step": 3, "arrows": arrows}).kind == ActionKind.RIGHT
    last = a.act({"step": 49, "arrows": arrows})
    assert last.kind == ActionKind.ANSWER and last.magnitude is None
    assert ArenaStraightAgent(answer_at_step=10).act({"step": 9, "arrows": []}).kind == ActionKind.ANSWER
