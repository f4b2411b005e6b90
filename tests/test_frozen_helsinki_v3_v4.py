"""The default city's frozen suites since issue 19: ``helsinki-arena7-v3`` on the whole extract (``helsinki``), its
tasks inside the test area, and ``-v4``, the default since, with the same tasks and reference photos that show their
own people (generator version 3); the core's suites v1/v2 still resolve by the core's hash under its new name."""

import gzip
import json
from types import SimpleNamespace

import pytest

from generate_util import oracle_solves_frozen_mini, saved_city_home
from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.tasks.frozen import (PACKAGE_DIR, FrozenSuiteError, default_suite_name, frozen_for_city,
                                     load_frozen)
from urbanarena.tasks.generators.splits import HELSINKI_AREAS
from urbanarena.errors import UrbanArenaError

V1, V2, V3, V4 = (PACKAGE_DIR / f"helsinki-arena7-v{i}" for i in (1, 2, 3, 4))


@pytest.fixture(scope="module")
def home(request, tmp_path_factory):
    from urbanarena.world.default_city import HELSINKI_FILE_BBOX

    return saved_city_home(request, tmp_path_factory, HELSINKI_FILE_BBOX, "helsinki")


def test_suite_names_of_the_builtin_cities():
    assert default_suite_name("helsinki", "realistic") == "helsinki-arena7-v4"
    assert default_suite_name("helsinki-core", "realistic") == "helsinki-arena7-v2"
    assert default_suite_name("helsinki-core", "flat") == "helsinki-arena7-v1"
    assert default_suite_name("mycity", "flat") == "mycity-arena7-v1"
    with pytest.raises(UrbanArenaError, match="no default suite name"):
        default_suite_name("helsinki", "flat")  # v1 belongs to the core


def test_v3_is_the_whole_city_and_v1_v2_the_core(home, monkeypatch):
    monkeypatch.setenv("URBANARENA_HOME", str(home))
    from urbanarena.world.resolve import resolve_city

    v1, v2, v3 = load_frozen(V1), load_frozen(V2), load_frozen(V3)
    city = resolve_city("helsinki")
    assert v3.city_hash == city.content_hash, "the importer changed: re-freeze v3 with `urbanarena tasks freeze`"
    assert v3.manifest["city"]["name"] == "helsinki" and v3.render_style == "realistic"
    assert v3.manifest["split"] == "test" and v3.city_hash != v1.city_hash == v2.city_hash
    assert v3.manifest["sizes"]["mini"]["tasks"] == 175 and set(v3.manifest["sizes"]["mini"]["by_family"].values()) == {25}
    assert frozen_for_city(city).name == "helsinki-arena7-v4"  # the newest of the city's realistic suites
    assert frozen_for_city(city, name="helsinki-arena7-v3").name == "helsinki-arena7-v3"
    core = SimpleNamespace(name="helsinki-core", content_hash=v1.city_hash)
    assert frozen_for_city(core, "realistic").name == "helsinki-arena7-v2"
    assert frozen_for_city(core, "flat").name == "helsinki-arena7-v1"
    with pytest.raises(FrozenSuiteError, match="a different build"):
        frozen_for_city(SimpleNamespace(name="helsinki", content_hash="0" * 64))
    # every frozen task starts, and every goal lies, in the test area
    w, s, e, n = HELSINKI_AREAS["test"]
    tasks = json.loads(gzip.decompress((V3 / "mini.json.gz").read_bytes()))["tasks"]
    for t in tasks:
        lat, lon = city.latlon(t["start"]["node"])
        assert w <= lon <= e and s <= lat <= n, t["task_id"]
        for g in t.get("goals") or []:
            assert w <= g["position"]["lon"] <= e and s <= g["position"]["lat"] <= n, t["task_id"]
        assert t["provenance"]["area"] == list(HELSINKI_AREAS["test"])


@pytest.mark.skipif(gl_unavailable_reason() is not None, reason=f"no OpenGL: {gl_unavailable_reason()}")
def test_v4_holds_v3s_tasks_with_people_in_the_references():
    """v4 = v3's tasks (same starts, goals, instructions, answers and ids but the suite name) with generator
    version 3's reference photos: the same cameras, each with its own ``population_key``."""
    for size in ("mini", "standard"):
        t3 = json.loads(gzip.decompress((V3 / f"{size}.json.gz").read_bytes()))["tasks"]
        t4 = json.loads(gzip.decompress((V4 / f"{size}.json.gz").read_bytes()))["tasks"]
        assert len(t3) == len(t4) == load_frozen(V4).manifest["sizes"][size]["tasks"]
        for a, b in zip(t3, t4):
            assert a["task_id"].replace("-v3-", "-v4-") == b["task_id"]
            for k in ("start", "goals", "instruction", "answer", "difficulty", "reference_path"):
                assert a[k] == b[k], (b["task_id"], k)
            assert b["provenance"]["generator_version"] == 3 and a["provenance"]["generator_version"] == 2
            if b["extra"]["task_kind"] == "landmark_image":
                va, vb = a["extra"]["reference_view"], b["extra"]["reference_view"]
                assert vb["population_key"] == f"reference/{b['extra']['poi_id']}" and "population_key" not in va
                assert vb["scheme"] == 3 and va["scheme"] == 2


@pytest.mark.acceptance
def test_oracle_solves_every_v4_mini_task(home, monkeypatch, tmp_path):
    """The default ``mini`` (v4) through ``urbanarena run``: the oracle solves all, every image verified."""
    monkeypatch.setenv("URBANARENA_HOME", str(home))
    monkeypatch.setenv("URBANARENA_NO_ASSET_FETCH", "1")    # the default photo style draws realistic: v4
    check = oracle_solves_frozen_mini(tmp_path / "oracle-v4")["tasks"]["suite_check"]
    want_assets = len(load_frozen(V4).manifest["sizes"]["mini"]["assets"])
    assert check["frozen_suite"] == "helsinki-arena7-v4" and check["assets_checked"] == want_assets > 0
    print(f"v4 mini: render check matches the frozen hashes: {check['matches']} "
          f"(differ: {len(check['assets_differ'])} images, {len(check['panoramas_differ'])} panoramas)")
