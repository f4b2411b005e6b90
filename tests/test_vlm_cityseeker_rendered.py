"""CitySeeker's two-call VLM protocol on a *rendered* OSM city (no imagery: panoramas from the 3D renderer).

City: the hand-written generator fixture (``tests/data/osm_generate_fixture.osm``, 117 pose nodes),
rendered at small sizes (panoramas 64-128 px wide, crops 48 x 24 px) so the tests stay fast.
The fake OpenAI server receives every request through the real ``openai`` SDK and decodes the
images it gets; the tests compare them with what the renderer draws (rendered independently into a
second cache folder) and, for the colour-order check, with pure-red panoramas placed in the
rendered cache (a channel swap anywhere between the cache and the model would turn them blue).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from generate_util import fixture_city
from urbanarena.agents.baselines import RandomAgent
from urbanarena.agents.vlm import CitySeekerVLMAgent
from urbanarena.env.motion.base import NavState
from urbanarena.env.observers import rendered_store_for
from urbanarena.env.protocols import make_motion
from urbanarena.paths import home
from urbanarena.render.scene3d.cache import RenderedPanoramaStore, write_png
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.views import node_view
from urbanarena.runner.episode import EpisodeRunner
from urbanarena.tasks.schema import CityRef, Goal, Start, Task
from vlm_util import FAST_RETRY, OPENAI_KEY, phase_script, server, spec

CROP = (48, 24)
HFOV = 120.0


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


@pytest.fixture(scope="module")
def city():
    return fixture_city()


def start_and_first_hop(city):
    """A start node with at least two offered headings, and the node choice A (index 0) leads to."""
    motion = make_motion("cityseeker-v1", city, "heading")
    for n in sorted(city.graph.nodes):
        st = NavState(n, 0.0)
        if len(motion.choices(st)) >= 2:
            return n, motion.transition(st, 0).node, len(motion.choices(st))
    raise AssertionError("no junction in the fixture")


def task_on(city, start: str, goal: str) -> Task:
    return Task(task_id="rendered/1", family="cityseeker", city=CityRef(name=city.name, content_hash=city.content_hash),
                start=Start(node=start, heading_deg=0.0), goals=[Goal(node=goal, label="cafe")],
                success_radius_m=50.0, instruction="I'm thirsty.", reference_path=city.shortest_path(start, goal),
                category="implicit_need", difficulty="easy")


def stop(v: int) -> str:
    return json.dumps({"observation": "a street", "thoughts": "deciding", "action": v})


def choice(label: str, n: int, score: float = 0.8) -> str:
    return json.dumps({"thoughts": "t", "observation": {chr(65 + i): "view" for i in range(n)}, "action": label,
                       "score": score})


def run_two_steps(city, render_width: int, **kw):
    """Script: at the start continue and take A; at the next node stop. Returns (row, server log)."""
    start, hop, n = start_and_first_hop(city)
    script = phase_script([stop(0), stop(1)], [choice("A", n)])
    with server("openai", script) as srv:
        factory = lambda: CitySeekerVLMAgent(spec("openai", srv), hfov_deg=HFOV, crop_size=CROP,  # noqa: E731
                                             render_width=render_width, retry=FAST_RETRY, timeout_s=5, **kw)
        row = EpisodeRunner(city, factory, "vlm-cityseeker").run(task_on(city, start, hop), 0, "cityseeker-v1", 5)
        log = list(srv.log)
    return row, log, start, hop, n


def test_pure_red_rendered_panoramas_reach_the_model_as_red(gl, city):
    # the agent's store: the process-wide rendered store at 64 px under <urbanarena home>/panoramas
    store = rendered_store_for(city, 64)
    assert store.dir.parent == home() / "panoramas"
    red = np.zeros((32, 64, 3), np.uint8)
    red[..., 0] = 255
    store.dir.mkdir(parents=True, exist_ok=True)
    for n in city.graph.nodes:
        write_png(store.path(n), red)
    before = store.rendered
    row, log, start, hop, n = run_two_steps(city, 64)
    assert row["error"] is None and row["trajectory"] == [start, hop] and row["actions"] == [0, -1]
    assert row["agent_stats"]["panorama_source"] == "rendered"
    assert store.rendered == before  # served from the cache files, nothing rendered
    assert len(log) == 3
    stop_reqs = [r for r in log if "Panorama of the current place" in json.dumps(r.body)]
    assert len(stop_reqs) == 2
    for r in stop_reqs:
        [img] = r.images
        assert (img.width, img.height) == (64, 32)
        assert img.mean_rgb == pytest.approx((255.0, 0.0, 0.0), abs=2.0)
    [choice_req] = [r for r in log if r not in stop_reqs]
    assert [(i.width, i.height) for i in choice_req.images] == [CROP] * n
    for img in choice_req.images:
        assert img.mean_rgb == pytest.approx((255.0, 0.0, 0.0), abs=2.0)


def test_rendered_scene_reaches_the_model_as_rendered(gl, city, tmp_path):
    row, log, start, hop, n = run_two_steps(city, 128)
    assert row["error"] is None and row["trajectory"] == [start, hop] and row["metrics"]["tc_exact"] == 1.0
    # an independent render of the same scene into another cache folder
    ref = RenderedPanoramaStore(city, root=tmp_path / "ref", width=128)
    stop_reqs = [r for r in log if "Panorama of the current place" in json.dumps(r.body)]
    for r, node in zip(stop_reqs, (start, hop)):
        [img] = r.images
        want = ref.get(node).reshape(-1, 3).mean(axis=0)
        assert (img.width, img.height) == (128, 64)
        assert img.mean_rgb == pytest.approx(tuple(want), abs=1.5)
    assert ref.get(start).std() > 5.0  # a real scene, not a blank image
    [choice_req] = [r for r in log if r not in stop_reqs]
    motion = make_motion("cityseeker-v1", city, "heading")
    headings = [c.heading_deg for c in motion.choices(NavState(start, 0.0))]
    assert len(choice_req.images) == len(headings) == n
    for img, h in zip(choice_req.images, headings):
        want = node_view(ref, start, h, 0.0, HFOV, *CROP).reshape(-1, 3).mean(axis=0)
        assert img.mean_rgb == pytest.approx(tuple(want), abs=2.0)
    # crops at different headings differ (each is cut at its own bearing)
    means = [img.mean_rgb for img in choice_req.images]
    assert max(np.abs(np.subtract(means[0], m)).max() for m in means[1:]) > 1.0


def test_agents_that_do_not_look_never_render(city):
    """Random, and the VLM agent under --blind, run on the rendered city without creating any panorama."""
    start, hop, _ = start_and_first_hop(city)
    task = task_on(city, start, hop)
    row = EpisodeRunner(city, RandomAgent, "random").run(task, 0, "cityseeker-v1", 6)
    assert row["error"] is None and row["steps"] == 6
    script = phase_script([stop(0), stop(1)], [choice("A", 4)])
    with server("openai", script) as srv:
        factory = lambda: CitySeekerVLMAgent(spec("openai", srv), crop_size=CROP, render_width=96,  # noqa: E731
                                             control="blind", retry=FAST_RETRY, timeout_s=5)
        row = EpisodeRunner(city, factory, "vlm-cityseeker").run(task, 0, "cityseeker-v1", 5)
        log = list(srv.log)
    assert row["error"] is None and row["trajectory"] == [start, hop]
    assert all(r.images == [] for r in log) and len(log) == 3
    assert not (home() / "panoramas").exists()


def test_run_command_accepts_the_vlm_agent_on_a_saved_osm_city(gl, city, tmp_path, monkeypatch):
    """``urbanarena run --agent vlm-cityseeker`` on a saved OSM city (no imagery): rendered, not refused."""
    from fakes import FakeOpenAIServer
    from test_run_vlm_arena import db_rows, invoke
    from urbanarena.tasks.schema import TaskFile
    from urbanarena.world.city_io import save_city

    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    start, hop, n = start_and_first_hop(city)
    city_dir = save_city(city, tmp_path / "city")
    task_file = TaskFile(city=CityRef(name=city.name, content_hash=city.content_hash),
                         tasks=[task_on(city, start, hop)]).save(tmp_path / "tasks.json")
    with FakeOpenAIServer(phase_script([stop(0), stop(1)], [choice("A", n)])) as srv:
        r = invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-cityseeker",
                   "--model", f"openai-compatible:{srv.base_url}:fake", "--out", tmp_path / "run",
                   "-p", "render_width=64", "-p", "crop_size=[48, 24]")
        log = list(srv.log)
    assert r.exit_code == 0, r.output
    [row] = db_rows(tmp_path / "run")
    assert json.loads(row["trajectory"]) == [start, hop] and row["tc_exact"] == 1.0
    assert len(log) == 3 and [len(q.images) for q in log] == [1, n, 1]
    assert json.loads(row["agent_stats"])["panorama_source"] == "rendered"


def test_the_runs_render_style_reaches_the_agents_own_views(gl, city, tmp_path):
    """The runner hands its render settings (``--render-style``) to the agent, whose panoramas are then drawn in
    that style, not the renderer's flat default (compared with independent renders in both styles)."""
    from urbanarena.render.scene3d.styles import settings_for_style

    realistic = settings_for_style("realistic", population="none")
    start, hop, n = start_and_first_hop(city)
    script = phase_script([stop(0), stop(1)], [choice("A", n)])
    with server("openai", script) as srv:
        factory = lambda: CitySeekerVLMAgent(spec("openai", srv), hfov_deg=HFOV, crop_size=CROP,  # noqa: E731
                                             render_width=128, retry=FAST_RETRY, timeout_s=5)
        row = EpisodeRunner(city, factory, "vlm-cityseeker", render_settings=realistic).run(
            task_on(city, start, hop), 0, "cityseeker-v1", 5)
        log = list(srv.log)
    assert row["error"] is None and row["trajectory"] == [start, hop]
    want = RenderedPanoramaStore(city, root=tmp_path / "real", width=128, settings=realistic)
    flat = RenderedPanoramaStore(city, root=tmp_path / "flat", width=128)
    stop_reqs = [r for r in log if "Panorama of the current place" in json.dumps(r.body)]
    assert len(stop_reqs) == 2
    for r, node in zip(stop_reqs, (start, hop)):
        [img] = r.images
        m_real = tuple(want.get(node).reshape(-1, 3).mean(axis=0))
        m_flat = tuple(flat.get(node).reshape(-1, 3).mean(axis=0))
        assert max(abs(a - b) for a, b in zip(m_real, m_flat)) > 3.0  # the two styles are told apart by the mean
        assert img.mean_rgb == pytest.approx(m_real, abs=1.5)
