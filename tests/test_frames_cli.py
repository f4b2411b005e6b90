"""``urbanarena city from-frames`` and ``city info`` on the saved result; ``frames:PATH`` through resolve."""

from __future__ import annotations

import json

import networkx as nx
import typer
from frames_util import write_csv, write_line
from typer.testing import CliRunner

from urbanarena.cli.frames_cmd import from_frames
from urbanarena.cli.main import app as main_app
from urbanarena.world.city_io import load_city
from urbanarena.world.importers.frames import DEFAULT_LICENCE
from urbanarena.world.resolve import locate_city, resolve_city_source

runner = CliRunner()
# the command as the lead registers it: city_app.command("from-frames")(from_frames)
frames_app = typer.Typer()
frames_app.command("from-frames")(from_frames)
frames_app.command("unused")(lambda: None)  # two commands, so typer keeps the sub-command name


def _scene(root):
    """A cross: 'we' west->east and 'sn' south->north, middle frames 0.8 m apart."""
    write_line(root / "we", [(x, 0.0) for x in (-20, -10, 0, 10, 20)], headings=[90.0] * 5)
    write_line(root / "sn", [(0.0, y) for y in (-20, -10, 0.8, 10, 20)])
    return root


def test_from_frames_then_city_info(tmp_path):
    scene = _scene(tmp_path / "scene")
    out = tmp_path / "city"
    r = runner.invoke(frames_app, ["from-frames", str(scene), "--out", str(out), "--name", "cross"])
    assert r.exit_code == 0, r.output
    assert "cross: 9 nodes, 16 edges" in r.stdout
    assert "join (merge): sn/f02.jpg [scene/sn] ~ we/f02.jpg [scene/we], 0.80 m apart (paths cross)" in r.stdout
    info = runner.invoke(main_app, ["city", "info", str(out), "--json"])
    assert info.exit_code == 0, info.output
    facts = json.loads(info.stdout)
    assert (facts["name"], facts["nodes"], facts["edges"], facts["components"]) == ("cross", 9, 16, 1)
    assert facts["out_degree_histogram"] == {"1": 4, "2": 4, "4": 1}
    assert facts["licence"] == DEFAULT_LICENCE and facts["source"]["kind"] == "frames"
    assert [j["action"] for j in facts["import_report"]["joins"]] == ["merge"]
    city = load_city(out)
    assert city.meta.imagery["root"] == str(scene.resolve()) and city.meta.imagery["source"] == "frames"
    assert (scene / "we" / "f01.jpg").is_file() and city.node("we/f01.jpg")["image"] == "we/f01.jpg"


def test_from_frames_options_and_json(tmp_path):
    ws = write_line(tmp_path / "line", [(float(x), 0.0) for x in range(7)])
    m = write_csv(tmp_path / "m.csv", [[str(w.path), "", "", ""] for w in ws])
    out = tmp_path / "c"
    r = runner.invoke(frames_app, ["from-frames", "--csv", str(m), "--out", str(out), "--spacing-m", "2.5",
                                   "--licence", "CC-BY-4.0", "--attribution", "me", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["nodes"] == 3 and rep["import_report"]["spacing_m"] == 2.5  # frames 0, 3, 6
    city = load_city(out)
    assert list(city.graph.nodes) == ["f00.jpg", "f03.jpg", "f06.jpg"]
    assert city.meta.licence == "CC-BY-4.0" and city.meta.imagery["redistributable"] is True
    assert city.meta.imagery["attribution"] == "me"


def test_from_frames_bad_input_exit_2(tmp_path):
    d = tmp_path / "one"
    write_line(d, [(0, 0)])
    r = runner.invoke(frames_app, ["from-frames", str(d), "--out", str(tmp_path / "c")])
    assert r.exit_code == 2
    assert r.stderr.startswith(f"error: {d / 'f00.jpg'}: ") and "at least 2 frames" in r.stderr
    assert not (tmp_path / "c").exists()


def test_frames_kind_resolves_and_caches(tmp_path):
    scene = _scene(tmp_path / "scene")
    city, src = resolve_city_source(f"frames:{scene}")
    assert src.kind == "import" and src.importer == "frames"
    assert city.graph.number_of_nodes() == 9 and nx.is_strongly_connected(city.graph)
    # second resolution: same cache directory, loaded without importing again
    (src.directory / "marker").write_text("x")
    again, src2 = resolve_city_source(f"frames:{scene}")
    assert src2.directory == src.directory and (src2.directory / "marker").is_file()
    assert again.content_hash == city.content_hash
    # a changed frame changes the cache key
    write_line(scene / "we", [(x, 0.0) for x in (-20, -10, 0, 10, 21)], headings=[90.0] * 5)
    assert locate_city(f"frames:{scene}").directory != src.directory
