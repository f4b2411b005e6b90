"""``photo`` as the default style (issue 24): the commands fetch its pinned assets first, and without them the
run is ``realistic`` from the start (settings, suite and camera), after one line, never a half-textured city.

The pinned package list is replaced by one hand-made ``.deb`` served from 127.0.0.1 (``tests/assets_util.py``):
the real fetch code downloads it, checks its sha256 and extracts it; nothing leaves the machine.
"""

from __future__ import annotations

import pytest

import assets_util as A
from urbanarena.render.assets import registry
from urbanarena.render.scene3d import population_photo, styles
from urbanarena.render.scene3d.styles import NO_FETCH_ENV, usable_style


@pytest.fixture
def fake_pins(tmp_path, monkeypatch):
    """The pinned packages are one fake .deb served from 127.0.0.1 (fetched by URL: no apt-get); yields the
    server."""
    from urbanarena.render.assets import fetch as F

    monkeypatch.setattr(F, "_download_client", lambda *a, **k: None)
    deb = A.build_deb(tmp_path)
    with A.Server({"/fake.deb": deb.read_bytes()}) as srv:
        pkg = A.deb_package(srv.url("/fake.deb"), deb)
        monkeypatch.setattr(registry, "PACKAGES", (pkg,))
        monkeypatch.setattr(population_photo, "_LOADED", {})
        yield srv


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_default_without_assets_is_realistic_and_quiet_when_the_fetch_is_forbidden(monkeypatch, capsys):
    from urbanarena.runner.arena import ArenaViewSettings

    monkeypatch.setenv(NO_FETCH_ENV, "1")
    assert styles.DEFAULT_RENDER_STYLE == "photo"
    assert usable_style(None) == "realistic" and capsys.readouterr().err == ""   # forbidden, not asked: quiet
    view = ArenaViewSettings()
    assert (view.render_style, view.camera) == ("realistic", "clean")  # the camera follows the style really drawn
    assert ArenaViewSettings(render_style="photo").render_style == "realistic"
    line = _one_line(capsys)                                              # asked for photo: told why not
    assert "photo assets unavailable" in line and "'realistic'" in line and "urbanarena assets fetch" in line
    assert usable_style("photo") == "realistic" and capsys.readouterr().err == ""   # once per process and root
    assert usable_style("flat") == "flat" and usable_style("realistic") == "realistic"
    with pytest.raises(ValueError, match="render style"):
        usable_style("photograph")


def test_a_failed_fetch_is_one_line_and_realistic(monkeypatch, capsys):
    from urbanarena.errors import AssetFetchError
    from urbanarena.render.assets import fetch as F

    monkeypatch.delenv(NO_FETCH_ENV, raising=False)
    calls = []

    def offline(pkg, **kw):
        calls.append(pkg.name)
        raise AssetFetchError(f"{pkg.name}: network unreachable")

    monkeypatch.setattr(F, "fetch_package", offline)
    assert usable_style(None) == "realistic"                      # not fetching: the default says why, once
    assert "not fetched" in _one_line(capsys) and calls == []
    assert usable_style(None, fetch=True) == "realistic"
    said, line = capsys.readouterr().err.strip().splitlines()       # what is fetched, then why it failed
    assert said.startswith("photo assets: fetching 4 pinned packages (184.4 MB")   # 184,361,041 bytes
    assert calls and "network unreachable" in line and "'realistic'" in line


def test_the_fetch_makes_photo_usable(fake_pins, monkeypatch, capsys):
    from urbanarena.render.assets.fetch import read_manifest

    monkeypatch.setenv(NO_FETCH_ENV, "1")
    assert usable_style("photo", fetch=True) == "realistic"       # forbidden: nothing downloaded
    assert "not fetched: fake-assets" in _one_line(capsys) and fake_pins.requests == 0
    monkeypatch.delenv(NO_FETCH_ENV)
    monkeypatch.setattr(population_photo, "photo_models", lambda quiet=False: object())  # the fake .deb has no kit
    assert usable_style("photo", fetch=True) == "photo"
    assert "photo assets: fetching 1 pinned packages" in _one_line(capsys)   # before the download, bar or not
    assert usable_style("photo", fetch=True) == "photo" and capsys.readouterr().err == ""   # installed: silent
    assert fake_pins.requests == 1 and len(read_manifest(registry.PACKAGES[0])["files"]) == len(A.expected_files())
    from urbanarena.runner.arena import ArenaViewSettings

    view = ArenaViewSettings()
    assert (view.render_style, view.camera) == ("photo", "consumer360")


def test_the_run_names_the_style_it_draws(monkeypatch, capsys):
    """driver.usable_request: a rendered city's photo request becomes realistic without the assets; a city of
    real photographs and the other styles are left alone; ``fetch`` reaches the fetcher."""
    from arena_util import t_junction
    from urbanarena.render.assets import fetch as F
    from urbanarena.runner.driver import RunRequest, usable_request

    monkeypatch.delenv(NO_FETCH_ENV, raising=False)
    asked = []
    real = F.ensure_assets
    monkeypatch.setattr(F, "ensure_assets", lambda *a, **k: (asked.append(k.get("fetch")), real(fetch=False))[1])
    import urbanarena.render.assets as assets_pkg

    monkeypatch.setattr(assets_pkg, "ensure_assets", F.ensure_assets)
    city = t_junction()
    assert city.meta.imagery is None                                  # drawn by the renderer
    req = RunRequest(city="x", tasks="t.json", agent="random", out="o")
    got = usable_request(req, city, fetch=True)
    assert got.arena_view == {"render_style": "realistic"} and asked == [True]
    assert "photo assets unavailable" in capsys.readouterr().err.strip().splitlines()[-1]
    flat = RunRequest(city="x", tasks="t.json", agent="random", out="o", arena_view={"render_style": "flat"})
    assert usable_request(flat, city) is flat
    city.meta.imagery = {"source": "panoramax", "root": "pics"}
    assert usable_request(req, city) is req and asked == [True]   # photographs: the style does not matter
