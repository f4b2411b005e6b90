"""Shared fixtures. Real data is read from ``<repo>/../shared`` and tests that
need it skip with a reason when it is absent (e.g. on a user's machine)."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import networkx as nx
import pytest

from urbanarena.world.city import City, CityMeta

try:  # the test extra has hypothesis; the lmms-eval venv (.ci/lmms-step.sh) runs one test file without it
    from hypothesis import settings
except ImportError:
    settings = None
if settings is not None:
    # Property-based tests: "ci" (the default) derandomizes (the same cases on every run, no example database),
    # so CI is reproducible; HYPOTHESIS_PROFILE=dev draws fresh cases (e.g. for a longer local search).
    settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
    settings.register_profile("dev", derandomize=False)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# No command fetches the photo assets on its own during the tests, from the first fixture of the session on
# (module fixtures run before the per-test ones): the default photo style renders realistic, as offline, and
# quietly (render/scene3d/styles.py usable_style). The tests of the fetch call it explicitly, and the acceptance
# run of the photo suite takes this variable out of its subprocess's environment.
os.environ["URBANARENA_NO_ASSET_FETCH"] = "1"
# Module and session fixtures run before the per-test home below: they get a home of this session, never the
# user's cache (which may hold fetched photo assets that would change the default style under them).
os.environ["URBANARENA_HOME"] = tempfile.mkdtemp(prefix="urbanarena-test-home-")
atexit.register(shutil.rmtree, os.environ["URBANARENA_HOME"], True)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (real third-party data); skips when absent."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared not found: real data absent")
    return SHARED


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own URBANARENA_HOME so no test touches the user's cache."""
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path_factory.mktemp("uahome")))


@pytest.fixture(autouse=True, scope="module")
def _release_process_renderers():
    """After each test module, release the process-wide renderers (rendered panorama stores, reference
    renderers: GL buffers and scenes of whole cities) and collect: without it they pile up across the modules of
    one pytest process (peak RSS 8.2 GB over the suite), as did the GL objects of renderers dropped without
    ``release()`` until they were freed when collected (7.2 GB)."""
    yield
    import gc
    import sys

    observers = sys.modules.get("urbanarena.env.observers")  # only what a test module has loaded
    if observers is not None:
        observers.release_rendered_stores()
    reference = sys.modules.get("urbanarena.render.scene3d.reference")
    if reference is not None:
        reference.release_reference_renderers()
    gc.collect()
    context = sys.modules.get("urbanarena.render.scene3d.context")
    if context is not None:  # GL objects of renderers the module dropped without release(): free them now
        context.release_collected()
    try:  # glibc keeps freed heap pages; hand them back so the next module starts from what is really in use
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        pass


def make_city(nodes: dict[str, tuple[float, float]], edges: list[tuple[str, str, float, float]], name: str = "toy", **node_attrs) -> City:
    """Tiny city for tests: nodes ``{id: (lat, lon)}``, edges ``(u, v, azimuth_deg, length_m)``.

    ``node_attrs`` maps attribute name -> {node: value} (e.g. walkable_headings_raw).
    """
    g = nx.DiGraph()
    for n, (lat, lon) in nodes.items():
        attrs = {"lat": lat, "lon": lon, "heading_deg": 0.0, "walkable_headings_raw": None, "walkable_headings_deg": None}
        for k, per in node_attrs.items():
            if n in per:
                attrs[k] = per[n]
        g.add_node(n, **attrs)
    for u, v, az, length in edges:
        g.add_edge(u, v, azimuth_deg=az, length_m=length)
    return City(g, CityMeta(name=name))


@pytest.fixture(scope="session")
def touchdown_city(shared_dir):
    """The real Touchdown/StreetLearn graph from ``../shared/data/touchdown``,
    imported once per test session (skips when absent)."""
    d = shared_dir / "data" / "touchdown"
    if not (d / "nodes.txt.gz").is_file():
        pytest.skip("../shared/data/touchdown not found: real data absent")
    from urbanarena.world.importers.touchdown import import_city

    return import_city(d)
