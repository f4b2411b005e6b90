"""UrbanGround behaviour-cloning baseline (issue 17, ``l2_constrained``): the map-mode reader against the
renderer's own geometry, a tiny configuration that trains in seconds, ``bc:CKPT`` dispatching to the
continuous policy by the checkpoint's metadata, the blind ablation seeing only zeros, and ``ug-straight``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from generate_util import helsinki_area, helsinki_pbf_path


@pytest.fixture(scope="module")
def cities(request, tmp_path_factory):
    pbf = str(helsinki_pbf_path(request, tmp_path_factory))
    return helsinki_area(pbf, "train"), helsinki_area(pbf, "test")


def _suite(city, n, seed, out):
    from urbanarena.cli.tasks_cmd import UrbanGroundOracleVerifier
    from urbanarena.tasks.generators.urbanground import generate_urbanground_suite, save_urbanground_suite

    return save_urbanground_suite(generate_urbanground_suite(city, per_family=n, seed=seed,
                                                             subfamilies=("l2_constrained",),
                                                             verify=UrbanGroundOracleVerifier(city)), out)


def test_ground_map_reader_matches_the_renderer(cities):
    """Agent pixel, heading, scale, goal and zone markers as the map view placed them; blank -> None."""
    from urbanarena.agents.bc.groundmap import read_ground_map
    from urbanarena.env.continuous import ContinuousEnv

    train, test = cities
    for city in (train, test):
        env = ContinuousEnv(city)
        nodes = sorted(city.graph.nodes)
        rng = np.random.default_rng(0)
        for i, heading in zip(rng.choice(len(nodes), size=3, replace=False), (20.0, 145.0, 290.0)):
            x, y = city.xy(nodes[int(i)])
            goal = (x + 70.0, y - 40.0)
            zone = (x + 30.0, y - 15.0)
            env.reset(options={"start_xy_m": (x, y), "start_yaw_deg": heading,
                               "map_markers": [{"label": "Some Cafe", "x_m": goal[0], "y_m": goal[1]},
                                               {"label": "restricted zone", "x_m": zone[0], "y_m": zone[1]}]})
            obs, *_ = env.step({"action": "open_map"})
            mv = env.map_view
            ax, ay = env.pose().x_m, env.pose().y_m
            r = read_ground_map(obs["map"])
            assert r is not None

            def px(p):
                u, v = mv.world_to_image(*p)
                return u * mv.width - 0.5, v * mv.height - 0.5

            assert math.dist(r.agent_px, px((ax, ay))) <= 1.0
            assert abs((r.heading_deg - env.pose().yaw_deg + 180.0) % 360.0 - 180.0) <= 6.0
            assert abs(r.m_per_px * mv.renderer().scale - 1.0) <= 0.02
            assert r.goal_px is not None and math.dist(r.goal_px, px(goal)) <= 1.0
            assert r.zone_px is not None and math.dist(r.zone_px, px(zone)) <= 1.0
            ge, gn = r.offset_m(r.goal_px)
            assert math.hypot(ge - (goal[0] - ax), gn - (goal[1] - ay)) <= 0.03 * math.dist(goal, (ax, ay)) + 1.5
            # the walking cost is impassable at the zone, finite at the agent and grows away from the goal
            assert math.isinf(r.cost_at(r.zone_px)) and math.isfinite(r.cost_at(r.agent_px))
            assert r.cost_at(r.goal_px) < r.cost_at(r.agent_px)
            # building pixels where the renderer filled footprints (its own fill of the same rings, on a blank
            # canvas; the scale bar, attribution and markers drawn over them are left out of the comparison)
            import cv2

            rend = mv.renderer()
            truth = np.zeros((mv.height, mv.width), np.uint8)
            polys = [rend._fixed(*rend.world_to_px(ring[:, 0], ring[:, 1])) for ring in mv._footprints]
            cv2.fillPoly(truth, polys, 1, cv2.LINE_8, shift=4)
            keep = np.ones_like(truth, bool)
            keep[-40:, :] = False
            for c in (r.agent_px, r.goal_px, r.zone_px):
                keep[max(0, int(c[1]) - 20): int(c[1]) + 20, max(0, int(c[0]) - 20): int(c[0]) + 150] = False
            core = cv2.erode(truth, np.ones((3, 3), np.uint8)).astype(bool) & keep  # away from the AA edges
            outside = ~cv2.dilate(truth, np.ones((3, 3), np.uint8)).astype(bool) & keep
            assert core.any() and r.buildings[core].mean() >= 0.97
            assert r.buildings[outside].mean() <= 0.02
            env.step({"action": "close_map"})
    assert read_ground_map(np.zeros((360, 640, 3), np.uint8)) is None


def test_tiny_ground_training_dispatch_and_run(cities, tmp_path):
    pytest.importorskip("torch", reason="the 'train' extra (PyTorch) is not installed")
    pytest.importorskip("safetensors", reason="the 'train' extra (safetensors) is not installed")
    from typer.testing import CliRunner

    from urbanarena.agents.bc.agent import BCAgent
    from urbanarena.agents.bc.ground_agent import ContinuousBCAgent
    from urbanarena.agents.bc.groundfeatures import FROM_IMAGES, N_GROUND, POLICY_MACROS, GroundNavFeaturizer
    from urbanarena.agents.bc.groundtrain import policy_index, train_ground_bc
    from urbanarena.agents.bc.train import TrainConfig, load_checkpoint
    from urbanarena.cli.main import app
    from urbanarena.gym.continuous import MACROS, ContinuousTaskEnv
    from urbanarena.tasks.resolve import resolve_tasks
    from urbanarena.world.resolve import save_named

    train, test = cities
    tf = _suite(train, 3, 0, tmp_path / "train" / "c.json")
    tasks = resolve_tasks(str(tf), train)
    ckpt = tmp_path / "ug.safetensors"
    meta = train_ground_bc(train, tasks, ckpt, TrainConfig(family="l2_constrained", epochs=2, dagger=1))
    assert meta["feature_set"] == "urbanground_map" and meta["demonstrations"]["episodes"] >= 1
    assert meta["figures"]["n_vector"] == N_GROUND and meta["figures"]["n_actions"] == len(POLICY_MACROS)
    model, meta2 = load_checkpoint(ckpt)
    assert meta2 == meta
    agent = BCAgent(str(ckpt))
    assert isinstance(agent, ContinuousBCAgent) and agent.action_style == "continuous"
    # the loop opens the map first; then the agent's action is the network's arg-max on the features
    env = ContinuousTaskEnv(city=train, split=None, family="l2_constrained", tasks=list(tasks), action="json")
    env.reset(seed=0, options={"task": tasks[0]})
    agent.reset(tasks[0], None)
    feat = GroundNavFeaturizer(env.max_steps)
    assert agent.act(env.raw_obs) == {"action": "open_map"} == feat.perception_action(env.raw_obs)
    env.step(json.dumps({"action": "open_map"}))
    map_raw = env.raw_obs
    assert agent.act(map_raw) == {"action": "close_map"} == feat.perception_action(map_raw)
    env.step(json.dumps({"action": "close_map"}))
    vec, mask = feat(env.raw_obs)
    assert vec.shape == (N_GROUND,) and vec[0] == 1.0  # the goal was read from the map
    want = MACROS[POLICY_MACROS[policy_index(model, vec, mask)]]
    assert agent.act(env.raw_obs) == want
    # blind: the same loop and features with every image zeroed, so nothing read from the map
    blind = GroundNavFeaturizer(env.max_steps, blind=True)
    env.reset(seed=0, options={"task": tasks[0]})
    assert blind.perception_action(env.raw_obs) == {"action": "open_map"}
    noisy = dict(map_raw, map=np.random.default_rng(1).integers(0, 255, map_raw["map"].shape, dtype=np.uint8))
    assert blind.perception_action(noisy) == {"action": "map_zoom", "factor": 2.0}
    assert blind.reading is None
    bv, _ = blind(env.raw_obs)
    assert not bv[list(FROM_IMAGES)].any()
    plain = GroundNavFeaturizer(env.max_steps)
    plain.perception_action(env.raw_obs)
    pv, _ = plain(env.raw_obs)
    assert np.array_equal(np.delete(bv, FROM_IMAGES), np.delete(pv, FROM_IMAGES))
    # the CLI trains the same family (train split: helsinki means helsinki-train)
    save_named(train, "helsinki-train")
    cli_ckpt = tmp_path / "cli.safetensors"
    res = CliRunner().invoke(app, ["train", "bc", "--family", "l2_constrained", "--tasks", str(tf), "--epochs", "1",
                                   "--dagger", "0", "--out", str(cli_ckpt)])
    assert res.exit_code == 0, res.output
    assert load_checkpoint(cli_ckpt)[1]["feature_set"] == "urbanground_map"
    # urbanarena run --agent bc:CKPT on tasks of the test area dispatches to the continuous policy
    save_named(test, "bc-ground-test")
    sf = _suite(test, 2, 1, tmp_path / "test" / "c.json")
    res = CliRunner().invoke(app, ["run", "--city", "bc-ground-test", "--tasks", str(sf), "--agent", f"bc:{ckpt}",
                                   "--limit", "2", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(app, ["summary", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["episodes"] == len(resolve_tasks(str(sf), test)) and out["errors"] == 0


def test_macros_keep_their_indices():
    """Sprint was appended: the first eleven macros are unchanged, the mask allows it in first person only."""
    from urbanarena.gym.continuous import MACROS, macro_mask

    assert MACROS[1] == {"action": "move", "dir": "forward", "seconds": 2.0}
    assert [m["action"] for m in MACROS[8:11]] == ["open_map", "close_map", "terminate"]
    assert MACROS[11] == {"action": "sprint", "dir": "forward", "seconds": 2.0}
    assert macro_mask("first_person")[11] == 1 and macro_mask("map")[11] == 0


def test_ug_straight_rule():
    """Hand-worked: forward 2 s; +90 degrees after a move that covered under 40 % of 2.8 m; never terminates."""
    from types import SimpleNamespace

    from urbanarena.agents.registry import resolve_alias
    from urbanarena.agents.urbanground_oracle import UrbanGroundStraight
    from urbanarena.tasks.schema import Task

    assert resolve_alias("straight", {"continuous"}) == "ug-straight"
    frame = SimpleNamespace(to_xy=lambda lat, lon: (lon * 1e5, lat * 1e5))
    a = UrbanGroundStraight()
    task = Task.model_construct(extra={"kind": "navigation"}, category="l2_constrained")
    a.reset(task, SimpleNamespace(city=SimpleNamespace(frame=frame)))

    def obs(lat):
        return {"text": {"state": {"lat": lat, "lon": 0.0, "yaw_deg": 0.0, "time_s": 0.0}}}

    walk = {"action": "move", "dir": "forward", "seconds": 2.0}
    assert a.act(obs(0.0)) == walk
    assert a.act(obs(2.8e-5)) == walk  # moved 2.8 m
    assert a.act(obs(3.0e-5)) == {"action": "look", "yaw": 90.0, "pitch": 0.0}  # moved 0.2 m: blocked
    assert a.act(obs(3.0e-5)) == walk
