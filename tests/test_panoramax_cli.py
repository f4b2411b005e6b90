"""``urbanarena city from-panoramax`` and ``urbanarena city licences`` against the fake server (synthetic
pictures only: two sequences crossing at the grid's centre (0, 25), one more under another licence).

Expected, from the scene: Rue du Centre (x -50, -47 ... 49, 50: 35 pictures) and Allée de la Gare without
its hole (y -25 ... 74, 75: 35 pictures); thinning to 3 m keeps the last picture and drops the one 1 m
before it (49, resp. 74): 34 each. They cross at (0, 25): Rue du Centre's picture at (1, 25) and the
Allée's at (0, 26) are 1.41 m apart (< 1.5 m): the Allée's is merged into the other (equal distance to
the vertex, lower id wins): 67 nodes, 34 CC-BY-SA-4.0 + 33 CC0-1.0; the grid's other four streets carry no imagery and are reported as gaps; the licences
are the two served ones with their authors.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")

import typer  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

import panoramax_util as U  # noqa: E402
from panoramax_fake import FakePanoramax  # noqa: E402
from urbanarena.cli.panoramax_cmd import from_panoramax, licences  # noqa: E402


def app() -> typer.Typer:
    """The ``city`` group as cli/main.py registers these commands."""
    root = typer.Typer()
    city_app = typer.Typer()
    city_app.command("from-panoramax")(from_panoramax)
    city_app.command("licences")(licences)
    root.add_typer(city_app, name="city")
    return root


def scene():
    pics = [p for p in U.synthetic_sequences(skip_gare=(100.0, 100.0)) if p.collection in ("seq-centre", "seq-gare")]
    for p in pics:
        if p.collection == "seq-gare":
            p.licence, p.author = "CC0-1.0", "Camille"
    return pics


def test_from_panoramax_then_licences(tmp_path):
    bbox = ",".join(f"{v:.7f}" for v in U.bbox())
    runner = CliRunner()
    with FakePanoramax(scene()) as srv:
        r = runner.invoke(app(), ["city", "from-panoramax", "--bbox", bbox, "--osm", str(U.GRID_OSM), "--name", "pmxcli",
                                  "--instance", srv.url, "--spacing-m", "3", "--cache-dir", str(tmp_path / "c"),
                                  "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["nodes"] == 67 and out["name"] == "pmxcli"
    rep = out["report"]
    no_imagery = sorted(g["name"] for g in rep["gaps"] if g["kind"] == "no_imagery")
    # streets between the grid's vertices without pictures: Rue du Sud x2, Rue du Nord x2, Allée Ouest x2, Est x2
    assert no_imagery == ["Allée Est"] * 2 + ["Allée Ouest"] * 2 + ["Rue du Nord"] * 2 + ["Rue du Sud"] * 2
    r = runner.invoke(app(), ["city", "licences", "pmxcli"])
    assert r.exit_code == 0, r.output
    assert "CC-BY-SA-4.0: 34 picture(s) by Test Contributor" in r.stdout
    assert "CC0-1.0: 33 picture(s) by Camille" in r.stdout
    assert "© OpenStreetMap contributors" in r.stdout
    r = runner.invoke(app(), ["city", "licences", "pmxcli", "--json"])
    rows = {x["licence"]: x for x in json.loads(r.stdout)["licences"]}
    assert rows["CC0-1.0"]["pictures"] + rows["CC-BY-SA-4.0"]["pictures"] == 67
    assert "seq-gare-017" not in rows["CC0-1.0"]["picture_ids"] and "seq-centre-017" in rows["CC-BY-SA-4.0"]["picture_ids"]
    assert all(u.startswith("http://127.0.0.1:") for x in rows.values() for u in x["source_urls"])


def test_bad_arguments_exit_2(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app(), ["city", "from-panoramax", "--bbox", "1,2,3", "--osm", str(U.GRID_OSM), "--name", "x"])
    assert r.exit_code == 2 and "error: --bbox" in r.output
    r = runner.invoke(app(), ["city", "from-panoramax", "--bbox", "1,2,3,4", "--osm", str(U.GRID_OSM), "--name", "x",
                              "--instance", "ftp://nowhere"])
    assert r.exit_code == 2 and "error: instance 'ftp://nowhere'" in r.output
    r = runner.invoke(app(), ["city", "licences", "no-such-city"])
    assert r.exit_code == 2 and r.output.startswith("error:")
