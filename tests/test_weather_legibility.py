"""Issue 6 acceptance: OCR legibility of storefront names degrades from the clear day to night and to fog.

Method of ``tests/test_legibility.py`` (:mod:`urbanarena.render.scene3d.legibility`): the first
``SAMPLE`` POIs of that test's sample (SHA-256-of-id order, cameras outside buildings), each sign
viewed 10 m square-on (640x360, 90 degrees, eye 1.7 m) and read by rapidocr around the sign.

Measured (2026-11, llvmpipe) on these 20 POIs: clear 20/20, night 16/20, fog 17/20 (and on 100
POIs, ``benchmarks/bench_weather_legibility.py``: see docs/renderer.md). The margin, 10 percentage
points = 2 of 20 signs, is half the smaller measured drop (3 signs) rounded down: renders are
deterministic, so the margin only absorbs another GL driver's last-bit differences flipping a
borderline sign or two, and it still fails if night or fog stops costing legibility. Runtime: about
a minute (60 renders and OCR crops).
"""

from __future__ import annotations

import pytest

from generate_util import helsinki_area, helsinki_pbf_path
from urbanarena.render.scene3d.context import gl_unavailable_reason

SAMPLE = 20
MARGIN = 0.10


@pytest.fixture(scope="module")
def setup(request, tmp_path_factory):
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")
    pytest.importorskip("rapidocr", reason="rapidocr (the `ocr` extra) not installed: pip install 'urbanarena[ocr]'")
    pytest.importorskip("onnxruntime", reason="onnxruntime (the `ocr` extra) not installed")
    from urbanarena.render.scene3d.city_scene import scene_from_city
    from urbanarena.render.scene3d.legibility import legibility_sample, rapidocr_reader
    from urbanarena.render.scene3d.visibility import VisibilityPass

    city = helsinki_area(str(helsinki_pbf_path(request, tmp_path_factory)), "test")
    scene = scene_from_city(city)
    vis = VisibilityPass(scene)
    return scene, vis, legibility_sample(scene, vis.renderer.meshes.placements, SAMPLE), rapidocr_reader()


def test_legibility_degrades_at_night_and_in_fog(setup, record_property):
    from urbanarena.render.scene3d.legibility import read_signs
    from urbanarena.render.scene3d.renderer import RenderSettings, SceneRenderer

    scene, vis, sample, ocr = setup
    assert len(sample) == SAMPLE
    rate = {}
    for cond in ("clear", "night", "fog"):
        r = vis.renderer if cond == "clear" else SceneRenderer(scene, RenderSettings.for_condition(cond),
                                                               meshes=vis.renderer.meshes)
        res = read_signs(r, vis, ocr, sample)
        rate[cond] = sum(x[1] for x in res) / len(res)
        if r is not vis.renderer:
            r.release()
    record_property("weather_legibility", rate)
    print(f"\nlegibility at 10 m on {SAMPLE} POIs: " + ", ".join(f"{k} {v:.0%}" for k, v in rate.items()))
    assert rate["clear"] >= 0.8, rate  # the issue-4 level holds on this sample
    assert rate["clear"] - rate["night"] >= MARGIN, rate
    assert rate["clear"] - rate["fog"] >= MARGIN, rate
