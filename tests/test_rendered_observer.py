"""Camera views of an OSM city without imagery: panoramas rendered on demand by the 3D renderer.

On the hand-written generator fixture (``tests/data/osm_generate_fixture.osm``): an arena episode
gets real views (shape, not blank, equal to a direct render of the scene at the panorama's node),
two observers rendering into separate caches give identical views, the panorama files carry the
OpenStreetMap attribution (read back by OCR), agents that do not look at images run without any
rendering, and a missing GL context is a typed error naming the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from generate_util import fixture_city
from urbanarena.env.arena_env import ArenaAction, ArenaEnv
from urbanarena.env.observers import observation_source, panorama_observer_for, view_matched_width
from urbanarena.render.scene3d.context import RendererUnavailableError, gl_unavailable_reason

ACTIONS = [ArenaAction("W", "LARGE"), ArenaAction("D", "LARGE"), ArenaAction("W", "LARGE"), ArenaAction("A", "MEDIUM")]


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


@pytest.fixture(scope="module")
def city():
    return fixture_city()


def start_node(city) -> str:
    return sorted(city.graph.nodes)[40]


def episode_views(city, observer):
    env = ArenaEnv(city, observer=observer)
    obs, info = env.reset(options={"start_node": start_node(city), "start_heading_deg": 90.0})
    views, poses = [obs["view"]], [env.pose()]
    for a in ACTIONS:
        obs, *_ = env.step(a)
        views.append(obs["view"])
        poses.append(env.pose())
    return views, poses


def test_episode_views_are_rendered_deterministic_and_match_the_scene(gl, city, tmp_path):
    assert observation_source(city) == "rendered"
    a = panorama_observer_for(city, render_root=tmp_path / "a")
    b = panorama_observer_for(city, render_root=tmp_path / "b")
    assert a.store.dir != b.store.dir
    # the 640 px, 90 degree view: rendered at the default 2048 px (>= the matched width 2012)
    assert a.store.width == 2048 >= view_matched_width(90.0, 640)
    va, poses = episode_views(city, a)
    vb, _ = episode_views(city, b)
    assert b.store.rendered >= 1  # b rendered its own panoramas, it did not read a's files
    assert len({p.nearest_node for p in poses}) >= 2
    for x, y in zip(va, vb):
        assert x is not None and x.shape == (360, 640, 3) and x.dtype == np.uint8
        assert int(np.ptp(x)) > 60  # a scene, not a blank frame
        assert np.array_equal(x, y)
    # the view at the first pose equals the scene rendered directly at the nearest node (up to resampling);
    # a view turned by 10 degrees does not
    p = poses[0]
    nx, ny, _ = a.store.poses[p.nearest_node]
    r = a.store.renderer
    direct = r.render_view(nx, ny, p.yaw_deg, p.pitch_deg, 90.0, 640, 360, eye_height_m=a.store.eye_height_m)
    turned = r.render_view(nx, ny, p.yaw_deg + 10.0, p.pitch_deg, 90.0, 640, 360, eye_height_m=a.store.eye_height_m)
    err = np.abs(va[0].astype(int) - direct.astype(int)).mean()
    err_turned = np.abs(va[0].astype(int) - turned.astype(int)).mean()
    assert err < 2.0 and err_turned > 3 * err, (err, err_turned)


def test_panoramas_carry_the_attribution(gl, city, tmp_path):
    rapidocr = pytest.importorskip("rapidocr")
    import cv2

    from urbanarena.render.scene3d.attribution import nadir_band_rows
    from urbanarena.render.scene3d.cache import read_png

    obs = panorama_observer_for(city, render_root=tmp_path)
    node = start_node(city)
    obs.store.get(node)
    pano = read_png(obs.store.path(node))  # the file on disk
    band = pano[-nadir_band_rows(pano.shape[0]):]
    crop = cv2.resize(band[:, 700:1350], None, fx=3, fy=3, interpolation=cv2.INTER_CUBIC)
    crop = np.pad(crop, ((20, 20), (20, 20), (0, 0)))
    text = " ".join(rapidocr.RapidOCR(params={"Global.log_level": "warning"})(crop).txts or ())
    assert "OpenStreetMap" in text and "contributors" in text, text
    assert city.meta.attribution == "© OpenStreetMap contributors"


def test_no_gl_is_a_typed_error_naming_the_reason(city, tmp_path, monkeypatch):
    import urbanarena.render.scene3d.context as ctx

    monkeypatch.setattr(ctx, "gl_unavailable_reason", lambda: "libEGL.so.1: cannot open shared object file")
    with pytest.raises(RendererUnavailableError, match=r"osm_generate_fixture.*libEGL\.so\.1"):
        panorama_observer_for(city, render_root=tmp_path / "none")


class LookingAgent:
    """Answers at once; records the camera view it was shown."""

    name = "looking"
    uses_images = True
    stats: dict = {}

    def __init__(self):
        self.views = []

    def reset(self, task, context):
        pass

    def act(self, observation):
        self.views.append(observation["view"])
        return ArenaAction("ANSWER", answer="here")

    def config(self):
        return {"name": self.name}


def test_graph_only_agents_never_render(city, tmp_path, monkeypatch):
    from urbanarena.agents.arena_oracle import ArenaOracleAgent, ArenaOracleSolver
    from urbanarena.runner.arena import ArenaEpisodeRunner, agent_uses_images
    from urbanarena.tasks.generators import generate_suite
    import urbanarena.env.observers as observers
    import urbanarena.render.scene3d.context as ctx

    suite = generate_suite(city, per_family=1, seed=3, kinds=("landmark_language",), solver=ArenaOracleSolver(city))
    task = suite.task_file.tasks[0]
    assert not agent_uses_images(ArenaOracleAgent()) and agent_uses_images(LookingAgent())
    # no GL here at all: the oracle still solves the task through the env, and nothing is rendered
    monkeypatch.setattr(ctx, "gl_unavailable_reason", lambda: "no EGL display (test)")
    monkeypatch.setattr(observers, "_RENDERED_STORES", {})  # no store left over from other tests
    runner = ArenaEpisodeRunner(city, ArenaOracleAgent, "arena-oracle")
    row = runner.run(task, 0, "cityarena-v1", 50)
    assert row["stop_reason"] == "ANSWER" and row["metrics"]["evaluation_score"] == 1.0
    assert runner._observer_built is False
    # an agent that looks: without GL its episode cannot get views (typed error naming the reason)
    looking = ArenaEpisodeRunner(city, LookingAgent, "looking")
    with pytest.raises(RendererUnavailableError, match="no EGL display"):
        looking.run(task, 0, "cityarena-v1", 50)


def test_looking_agent_gets_rendered_views(gl, city, tmp_path):
    from urbanarena.runner.arena import ArenaEpisodeRunner
    from urbanarena.tasks.generators import generate_suite

    task = generate_suite(city, per_family=1, seed=3, kinds=("landmark_language",)).task_file.tasks[0]
    agent = LookingAgent()
    runner = ArenaEpisodeRunner(city, lambda: agent, "looking")
    row = runner.run(task, 0, "cityarena-v1", 50)
    assert row["stop_reason"] == "ANSWER"
    assert len(agent.views) == 1 and agent.views[0].shape == (360, 640, 3) and int(np.ptp(agent.views[0])) > 60


def test_vlm_agent_is_accepted_on_a_rendered_city(gl, city, tmp_path):
    """``urbanarena run --agent vlm-arena`` on an OSM city: no longer refused as graph-only; the dry run
    builds the first step's request with a rendered view in it."""
    import re

    from typer.testing import CliRunner

    from urbanarena.cli.main import app
    from urbanarena.tasks.generators import generate_suite, save_suite
    from urbanarena.world.city_io import save_city

    city_dir = save_city(city, tmp_path / "city")
    tasks = save_suite(generate_suite(city, per_family=1, seed=3, kinds=("landmark_language",)),
                       tmp_path / "t.json")
    r = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent", "vlm-arena",
                                 "--model", "openai-compatible:http://127.0.0.1:9/v1:fake", "--out",
                                 str(tmp_path / "run"), "--dry-run"])
    assert r.exit_code == 0, r.output
    images = int(re.search(r"images\s+([\d,]+)", r.stdout).group(1).replace(",", ""))
    assert images > 0 and not (tmp_path / "run").exists()
