"""``urbanarena video``: a stored episode as GIF (Pillow) and MP4 (PyAV) with one frame per state.

The expected frame count is read from the store with plain SQL (``steps`` + 1: the start and one state
per step) and the files are decoded by Pillow and PyAV themselves.
"""

from __future__ import annotations

import sqlite3

import pytest
import typer
from PIL import Image
from typer.testing import CliRunner

from urbanarena.render.scene3d.context import gl_unavailable_reason
from web_util import fixture_study

pytestmark = pytest.mark.skipif(gl_unavailable_reason() is not None,
                                reason=f"3D renderer unavailable: {gl_unavailable_reason()}")


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("videohome")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def cli():
    from urbanarena.cli.replay_cmd import video

    app = typer.Typer()
    app.command("video")(video)
    app.command("other")(lambda: None)
    return app


@pytest.fixture(scope="module")
def run(home, tmp_path_factory):
    study = fixture_study(str(tmp_path_factory.getbasetemp() / "webstudy"))
    db = sqlite3.connect(study["oracle_run"] / "episodes.sqlite")
    eid, task_id, steps = db.execute(
        "SELECT id, task_id, steps FROM episodes WHERE task_id LIKE '%/landmark_image/%'").fetchone()
    db.close()
    return {"dir": study["oracle_run"], "id": eid, "task_id": task_id, "steps": steps}


def test_gif_has_one_frame_per_state(cli, run, tmp_path):
    out = tmp_path / "ep.gif"
    r = CliRunner().invoke(cli, ["video", str(run["dir"]), "--episode", str(run["id"]), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert run["steps"] >= 2
    with Image.open(out) as im:
        assert im.n_frames == run["steps"] + 1
        assert im.size == (640, 360 + 84)
        assert im.info["duration"] == 500  # 2 fps


def test_mp4_has_one_frame_per_state(cli, run, tmp_path):
    av = pytest.importorskip("av", reason="MP4 needs the 'video' extra (PyAV)")
    out = tmp_path / "ep.mp4"
    r = CliRunner().invoke(cli, ["video", str(run["dir"]), "--episode", run["task_id"], "--out", str(out),
                                 "--fps", "4"])
    assert r.exit_code == 0, r.output
    with av.open(str(out)) as c:
        stream = c.streams.video[0]
        frames = list(c.decode(stream))
        assert float(stream.average_rate) == 4.0
    assert len(frames) == run["steps"] + 1
    assert (frames[0].width, frames[0].height) == (640, 444)


def test_video_bad_input_exits_2(cli, run, tmp_path):
    for args in [["--episode", str(run["id"]), "--out", str(tmp_path / "x.avi")],
                 ["--episode", "no-such-episode", "--out", str(tmp_path / "x.gif")],
                 ["--episode", str(run["id"]), "--out", str(tmp_path / "x.gif"), "--fps", "0"]]:
        r = CliRunner().invoke(cli, ["video", str(run["dir"]), *args])
        assert r.exit_code == 2 and r.output.startswith("error: "), r.output
    r = CliRunner().invoke(cli, ["video", str(tmp_path / "missing"), "--episode", "1", "--out", str(tmp_path / "x.gif")])
    assert r.exit_code == 2
    assert not list(tmp_path.glob("*.gif")) and not list(tmp_path.glob(".*"))


def test_caption_action_names_and_ellipsis():
    from urbanarena.report.video import _clip, action_label

    assert action_label("W LARGE") == "walk 7 m (W LARGE)"
    assert action_label("D SMALL") == "look right 30° (D SMALL)"
    assert action_label("RIGHT") == "take the right branch (RIGHT)"
    assert action_label("ANSWER: x:1 y:2") == "answer x:1 y:2"
    assert action_label("0") == "choice 0" and action_label("-1") == "stop"
    assert action_label('{"action": "move"}') == '{"action": "move"}'
    text = "Walk to the pharmacy on the corner of the second street and stop at its door, then answer"
    lines = _clip(text, 30, 2)
    assert len(lines) == 2 and lines[-1].endswith("…") and all(len(x) <= 30 for x in lines)
    assert " ".join(lines).replace("…", "") in text
    assert _clip("short", 30, 2) == ["short"]
