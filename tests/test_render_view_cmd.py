"""The standalone ``view`` command (registered by the lead as ``app.command("view")(view)``)."""

from __future__ import annotations

import numpy as np
import typer
from PIL import Image
from typer.testing import CliRunner

from urbanarena.cli.view_cmd import view
from urbanarena.render.encode import decode_image
from urbanarena.render.views import perspective_view

app = typer.Typer()
app.command("view")(view)
app.command("noop")(lambda: None)  # two commands so typer keeps the sub-command name


def _pano(path):
    rng = np.random.default_rng(3)
    arr = rng.integers(0, 256, (128, 256, 3), dtype=np.uint8)
    Image.fromarray(arr).save(path)
    return arr


def test_view_writes_the_cut(tmp_path):
    arr = _pano(tmp_path / "p.png")
    out = tmp_path / "out" / "v.png"
    r = CliRunner().invoke(app, ["view", str(tmp_path / "p.png"), "--yaw", "-30", "--pitch", "10",
                                 "--hfov", "70", "--size", "120x80", "--out", str(out)])
    assert r.exit_code == 0, r.output
    got = decode_image(out.read_bytes())
    assert got.shape == (80, 120, 3)
    assert np.array_equal(got, perspective_view(arr, -30.0, 10.0, 70.0, 120, 80))


def test_view_jpeg_and_errors(tmp_path):
    _pano(tmp_path / "p.png")
    r = CliRunner().invoke(app, ["view", str(tmp_path / "p.png"), "--out", str(tmp_path / "v.jpg")])
    assert r.exit_code == 0 and (tmp_path / "v.jpg").read_bytes()[:2] == b"\xff\xd8"
    Image.fromarray(np.zeros((100, 150, 3), np.uint8)).save(tmp_path / "wide.png")
    r = CliRunner().invoke(app, ["view", str(tmp_path / "wide.png"), "--out", str(tmp_path / "x.png")])
    assert r.exit_code == 2 and "wide.png" in r.output and "2:1" in r.output
    r = CliRunner().invoke(app, ["view", str(tmp_path / "p.png"), "--size", "big", "--out", str(tmp_path / "x.png")])
    assert r.exit_code == 2 and "WIDTHxHEIGHT" in r.output
    r = CliRunner().invoke(app, ["view", str(tmp_path / "p.png"), "--out", str(tmp_path / "x.gif")])
    assert r.exit_code == 2 and "unsupported image type" in r.output
