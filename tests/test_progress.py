"""Progress of long steps (urbanarena/progress.py): the ``(label, done, total)`` reports of a city build, a frozen
suite's drawing, a video and an export (counts hand-worked from the fixtures), and the command line's bar, which
draws on a terminal and prints nothing to a pipe.

Each reported step must start at 0, never go down and end at its total; the totals are the fixtures' own numbers
(4 pose nodes of ``osm_build_tiny.osm``, the frozen suite's manifest entries, 8 fingerprint panoramas ...).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from urbanarena.progress import ConsoleProgress, counted, report, scaled
from urbanarena.render.scene3d.context import gl_unavailable_reason

DATA = Path(__file__).parent / "data"
TINY = DATA / "osm_build_tiny.osm"
needs_gl = pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")


class Recorder:
    """A progress callback keeping every report in order."""

    def __init__(self):
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, label: str, done: int, total: int) -> None:
        self.calls.append((label, done, total))

    def of(self, label: str) -> list[tuple[int, int]]:
        return [(d, t) for lab, d, t in self.calls if lab == label]

    def labels(self) -> list[str]:
        return list(dict.fromkeys(lab for lab, _, _ in self.calls))


def assert_step(pairs: list[tuple[int, int]], total: int) -> None:
    """A well-formed step: starts at (0, total), ``done`` never decreases, ends at (total, total)."""
    assert pairs, "the step reported nothing"
    assert pairs[0] == (0, total) and pairs[-1] == (total, total)
    assert all(t == total for _, t in pairs)
    assert all(a <= b for (a, _), (b, _) in zip(pairs, pairs[1:]))


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


# ------------------------------------------------------------------ the helpers
def test_counted_reports_before_the_first_item_and_after_each():
    rec = Recorder()
    seen = []
    for x in counted(rec, "s", ["a", "b", "c"]):
        seen.append((x, list(rec.calls)))  # what was reported when the caller got x
    assert [x for x, _ in seen] == ["a", "b", "c"]
    # item i is reported done only once the caller asks for the next one
    assert seen[0][1] == [("s", 0, 3)]
    assert seen[2][1] == [("s", 0, 3), ("s", 1, 3), ("s", 2, 3)]
    assert rec.calls == [("s", 0, 3), ("s", 1, 3), ("s", 2, 3), ("s", 3, 3)]


def test_counted_with_fewer_items_than_announced_still_ends_at_the_total():
    rec = Recorder()
    assert list(counted(rec, "s", iter([1, 2]), total=5)) == [1, 2]
    assert rec.calls == [("s", 0, 5), ("s", 1, 5), ("s", 2, 5), ("s", 5, 5)]


def test_no_listener_is_fine_and_scaled_adapts_the_render_layer_form():
    assert list(counted(None, "s", [1, 2])) == [1, 2]
    report(None, "s", 1, 2)
    assert scaled(None, "x") is None
    rec = Recorder()
    cb = scaled(rec, "panoramas")
    cb(0, 4)
    cb(4, 4)
    assert rec.calls == [("panoramas", 0, 4), ("panoramas", 4, 4)]


# ------------------------------------------------------------------ the bar
def test_console_progress_prints_nothing_to_a_pipe():
    out = io.StringIO()  # not a terminal
    with ConsoleProgress(out) as p:
        for _ in counted(p, "drawing", range(5)):
            pass
        p("download", 0, 1)
        p("download", 1, 1)
    assert out.getvalue() == ""


def test_console_progress_draws_on_a_terminal_and_finishes_each_bar():
    out = TTY()
    with ConsoleProgress(out) as p:
        for _ in counted(p, "drawing images", range(3)):
            pass
        assert p._bar is None  # every step finished: the live display is down (another may start)
        p("check panoramas", 0, 8)
        assert p._bar is not None
    assert p._bar is None  # closed on leaving the block, although the step did not finish
    text = out.getvalue()
    assert "drawing images" in text and "3/3" in text
    assert "check panoramas" in text and "0/8" in text


def test_the_build_command_prints_no_bar_off_a_terminal():
    from urbanarena.cli.build_cmd import build

    app = typer.Typer()
    app.command()(build)
    r = CliRunner().invoke(app, ["--osm", str(TINY), "--name", "tinyq"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""  # CliRunner's stderr is not a terminal
    assert "━" not in r.stdout and "tinyq: built from osm_build_tiny.osm" in r.stdout


# ------------------------------------------------------------------ the steps
def test_build_stages_without_prerender():
    from urbanarena.build import build_city, resolve_source

    rec = Recorder()
    rep = build_city(resolve_source(osm=TINY, city_name="tiny2"), progress=rec)
    assert rep.counts["pose_nodes"] == 4
    assert rec.calls == [("build tiny2", 0, 2), ("build tiny2", 1, 2), ("build tiny2", 2, 2)]


@needs_gl
def test_build_stages_and_prerendered_panoramas():
    from urbanarena.build import build_city, resolve_source

    rec = Recorder()
    build_city(resolve_source(osm=TINY, city_name="tiny3"), prerender=True, progress=rec)
    assert rec.labels() == ["build tiny3", "panoramas"]
    assert_step(rec.of("build tiny3"), 3)
    # the tiny fixture's one 30 m street: 4 pose nodes, each rendered once
    assert rec.of("panoramas") == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
    # the stages bar is at 2 of 3 (graph, maps) while the panoramas render, and ends after them
    i_first, i_last = rec.calls.index(("panoramas", 0, 4)), rec.calls.index(("panoramas", 4, 4))
    assert rec.calls[i_first - 1] == ("build tiny3", 2, 3) and rec.calls[i_last + 1] == ("build tiny3", 3, 3)
    rec2 = Recorder()
    build_city(resolve_source(osm=TINY, city_name="tiny3"), prerender=True, progress=rec2)
    assert rec2.labels() == ["build tiny3"]  # all cached: no panorama to render, no panoramas step


@needs_gl
def test_frozen_suite_drawing_reports_images_and_check_panoramas(tmp_path):
    from generate_util import fixture_city
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.frozen import freeze
    from urbanarena.tasks.frozen_materialize import materialize
    from urbanarena.world.city_io import load_city, save_city

    city = load_city(save_city(fixture_city(), tmp_path / "c"))
    fs = freeze(city, tmp_path / "suite", sizes=("mini",), split=None, solver=ArenaOracleSolver(city))
    entry = fs.manifest["sizes"]["mini"]
    n_assets = len(entry["assets"])
    assert n_assets > 0
    rec = Recorder()
    _, check = materialize(fs, "mini", city, dest_root=tmp_path / "out", progress=rec)
    label = f"{entry['suite_name']} images"
    assert rec.labels() == [label, "check panoramas"]
    assert rec.of(label) == [(i, n_assets) for i in range(n_assets + 1)]
    assert rec.of("check panoramas") == [(i, 8) for i in range(9)] and check["panoramas_checked"] == 8
    rec2 = Recorder()
    materialize(fs, "mini", city, dest_root=tmp_path / "out", progress=rec2)
    assert rec2.calls == []  # the materialized copy is reused: nothing drawn, nothing reported


def test_video_reports_one_step_per_frame(monkeypatch, tmp_path):
    from urbanarena.report import video

    class Episode:
        n_states = 4

    monkeypatch.setattr(video, "compose_frame", lambda ep, k, inset_px=None: np.full((8, 8, 3), 40 * k, np.uint8))
    rec = Recorder()
    info = video.write_episode_video(Episode(), tmp_path / "ep.gif", progress=rec)
    assert info.frames == 4
    assert rec.calls == [("video frames", i, 4) for i in range(5)]


def test_export_reports_panoramas_and_task_rows(tmp_path):
    pytest.importorskip("pyarrow")
    from urbanarena.runner.hub_export import export_hf
    from urbanarena.tasks.schema import TaskFile
    from urbanarena.world.city_io import save_city
    from vlm_util import cross_city, graph_task

    city = cross_city(tmp_path)
    city_dir = save_city(city, tmp_path / "city")
    task = graph_task(city)  # s -> e through c: route panoramas s, c, e
    TaskFile(city=task.city, tasks=[task]).save(tmp_path / "tasks.json")
    rec = Recorder()
    res = export_hf(city, Path(city_dir), [task], tmp_path, tmp_path / "hf", panoramas="route",
                    i_hold_the_rights=True, progress=rec)
    assert res.rows["panoramas"] == 3
    assert rec.of("export panoramas") == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert rec.of("export tasks") == [(0, 1), (1, 1)]


def test_panoramax_downloads_report_each_usable_picture(monkeypatch):
    """The download loop reports only pictures worth downloading (validate_picture passes)."""
    from urbanarena.world.importers.panoramax import build as pmx

    class Pic:
        def __init__(self, pid):
            self.id = pid

    pics = [Pic("a"), Pic("bad"), Pic("b"), Pic("c")]
    fetched = []

    from dataclasses import dataclass

    @dataclass
    class Stats:  # the build reports the client's download counters (asdict)
        downloaded: int = 0

    class Client:
        api, asset, cache_dir = "https://example.invalid/api", "hd", Path(".")
        stats = Stats()

        def search(self, bb, max_items=None):
            return pics

        def fetch(self, p):
            fetched.append(p.id)

    class Stop(Exception):
        pass

    monkeypatch.setattr(pmx, "validate_picture", lambda p, check_image=True: ("bad", "x") if p.id == "bad" else None)
    monkeypatch.setattr("urbanarena.world.importers.osm.import_city", lambda *a, **k: None)

    def stop(*a, **k):
        raise Stop

    monkeypatch.setattr("urbanarena.hashing.file_sha256", stop)  # the first call after the downloads
    rec = Recorder()
    with pytest.raises(Stop):
        pmx.build_city_from_panoramax((0, 0, 1, 1), "x.osm", "n", client=Client(), progress=rec)
    assert fetched == ["a", "b", "c"]
    assert rec.calls == [("download pictures", i, 3) for i in range(4)]


def test_replay_draws_the_first_replayable_view_ahead():
    from urbanarena.cli.replay_cmd import draw_first_view

    drawn = []

    class Ep:
        def view(self, k):
            drawn.append(k)

    class RR:
        def episodes(self):
            return [{"id": 3, "replayable": False}, {"id": 5, "replayable": True}]

        def episode(self, eid):
            drawn.append(("episode", eid))
            return Ep()

    rec = Recorder()
    t = draw_first_view(RR(), rec)
    t.join(10)
    assert drawn == [("episode", 5), 0]
    assert rec.calls == [("drawing the first view (episode 5)", 0, 1), ("drawing the first view (episode 5)", 1, 1)]

    class Empty(RR):
        def episodes(self):
            return [{"id": 3, "replayable": False}]

    assert draw_first_view(Empty(), rec) is None
