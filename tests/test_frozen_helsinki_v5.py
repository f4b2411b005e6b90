"""``helsinki-arena7-v5``, the default city's photo-style suite and the default suite since issue 24: frozen on the
same city as v4 in the ``photo`` style, with the pinned asset packages that drew it; a machine without the assets
resolves the default to v4 (realistic) instead. The acceptance test fetches the real assets (~184 MB) and runs the
oracle on v5 ``mini`` with every image and fingerprint panorama verified."""

from __future__ import annotations

import gzip
import json

import pytest

from generate_util import oracle_solves_frozen_mini, saved_city_home
from urbanarena.render.assets import PACKAGES
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import PACKAGE_DIR, default_suite_name, frozen_for_city, load_frozen
from urbanarena.tasks.generators.splits import HELSINKI_AREAS

V4, V5 = PACKAGE_DIR / "helsinki-arena7-v4", PACKAGE_DIR / "helsinki-arena7-v5"


def test_v5_is_the_photo_suite_of_v4s_city():
    v4, v5 = load_frozen(V4), load_frozen(V5)
    assert default_suite_name("helsinki", "photo") == "helsinki-arena7-v5"
    assert v5.render_style == "photo" and v4.render_style == "realistic"
    assert v5.city_hash == v4.city_hash and v5.manifest["split"] == "test"
    # pinned with the packages that drew it: every pinned package, by version and package-file sha256
    pins = {p.name: (p.version, p.sha256) for p in PACKAGES}
    got = {r["package"]: (r["version"], r["sha256"]) for r in v5.manifest["render_assets"]["packages"]}
    assert got == pins
    for size, per_family in (("mini", 25), ("standard", 100)):
        entry = v5.manifest["sizes"][size]
        tasks = json.loads(gzip.decompress((V5 / entry["file"]).read_bytes()))["tasks"]
        assert len(tasks) == entry["tasks"] and set(entry["by_family"].values()) == {per_family}
        assert all(t["task_id"].startswith(f"helsinki-arena7-v5-{size}/") for t in tasks)
        w, s, e, n = HELSINKI_AREAS["test"]
        for t in tasks:
            assert t["provenance"]["area"] == list(HELSINKI_AREAS["test"])
            for g in t.get("goals") or []:
                assert w <= g["position"]["lon"] <= e and s <= g["position"]["lat"] <= n, t["task_id"]
            if t["extra"]["task_kind"] == "landmark_image":      # scheme 4: every reference shows its goal
                view, check = t["extra"]["reference_view"], t["extra"]["reference_check"]["goal_share"]
                assert view["scheme"] == 4 and check["passed"], t["task_id"]


def test_the_default_resolves_to_v5_only_with_the_assets(monkeypatch):
    """Without the photo assets (this test run's homes have none) the default style is realistic and so is the
    suite (v4); with them (stood in for here) v5."""
    from types import SimpleNamespace

    from urbanarena.render.scene3d import styles

    city = SimpleNamespace(name="helsinki", content_hash=load_frozen(V5).city_hash)
    assert frozen_for_city(city).name == "helsinki-arena7-v4"
    assert frozen_for_city(city, "photo").name == "helsinki-arena7-v4"    # photo cannot be drawn here
    monkeypatch.setattr(styles, "usable_style", lambda style=None, **k: styles.check_style(style or "photo"))
    assert frozen_for_city(city).name == "helsinki-arena7-v5"
    assert frozen_for_city(city, "realistic").name == "helsinki-arena7-v4"


@pytest.fixture(scope="module")
def home(request, tmp_path_factory):
    from urbanarena.world.default_city import HELSINKI_FILE_BBOX

    return saved_city_home(request, tmp_path_factory, HELSINKI_FILE_BBOX, "helsinki")


@pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
@pytest.mark.acceptance
def test_oracle_solves_every_v5_mini_task_with_every_photo_image_verified(home, monkeypatch, tmp_path):
    """The default ``mini`` (v5) through ``urbanarena run`` with the real assets fetched into the home."""
    from urbanarena.render.assets import ensure_assets

    monkeypatch.setenv("URBANARENA_HOME", str(home))
    st = ensure_assets()                                   # explicit: the test run forbids implicit fetches
    assert st.available, st.message
    run = oracle_solves_frozen_mini(tmp_path / "oracle-v5")
    check = run["tasks"]["suite_check"]
    want_assets = len(load_frozen(V5).manifest["sizes"]["mini"]["assets"])
    assert check["frozen_suite"] == "helsinki-arena7-v5" and check["render_style"] == "photo"
    assert check["assets_checked"] == want_assets > 0 and check["matches"], check
    views = [c["extra"]["arena_view"] for c in run["configs"].values()]
    assert views and all(v["render_style"] == "photo" and v["camera"] == "consumer360" for v in views)
