"""Rendering with moderngl on a headless EGL context (Mesa llvmpipe on the CPU).

Skipped, with the reason, where no OpenGL context can be created.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from urbanarena.render.scene3d.context import gl_unavailable_reason
from urbanarena.render.scene3d.scene import (
    OSM_ATTRIBUTION, Building, Crosswalk, Poi, Road, Scene, StreetObject,
)
from urbanarena.render.views import Camera, compass_view


@pytest.fixture(scope="module")
def gl():
    reason = gl_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no headless OpenGL context here: {reason}")


RED = (230, 20, 20)


def red_mask(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 90) & (r > 2 * g) & (r > 2 * b)


def pillar(bid: str, x: float, y: float, h: float = 6.0, half: float = 0.5) -> Building:
    """A narrow red box (too narrow for windows) centred at (x, y)."""
    return Building(bid, [(x - half, y - half), (x + half, y - half), (x + half, y + half), (x - half, y + half)],
                    h, colour=RED)


def street_scene() -> Scene:
    b = [
        Building("b1", [(-20, 10), (20, 10), (20, 25), (-20, 25)], 15.0),
        Building("b2", [(25, 10), (45, 10), (45, 28), (25, 28)], 21.0),
        Building("b3", [(-20, -25), (10, -25), (10, -10), (-20, -10)], 12.0),
        Building("b4", [(15, -30), (40, -30), (40, -10), (15, -10)], 18.0),
    ]
    pois = [
        Poi("p1", "Kahvila Sävy", "amenity", -8, 10, "b1"),
        Poi("p2", "Apteekki", "shop", 2, 10, "b1"),
        Poi("p3", "Kirjakauppa Ruusu", "shop", 12, 10, "b1"),
        Poi("p4", "R-kioski", "shop", 0, -10, "b3"),
    ]
    objs = [StreetObject("t1", "tree", -17, 7.5), StreetObject("t2", "tree", 16, 7.5),
            StreetObject("l1", "street_lamp", 0, 7.2), StreetObject("v1", "vending_machine", 22, 8.0, 180.0),
            StreetObject("bn", "bench", -15, -7.5), StreetObject("ts", "traffic_sign", 14, -7.0, label="stop"),
            StreetObject("sg", "traffic_signals", 20, 4.5), StreetObject("bs", "bus_stop", -3, -8.0, 0.0),
            StreetObject("m", "subway_entrance", 30, -7.0), StreetObject("w", "waste_basket", 5, -7.5)]
    roads = [Road("r1", [(-100, 0), (100, 0)], 8.0, 2.5), Road("r2", [(13, -100), (13, 100)], 6.0, 2.0)]
    cws = [Crosswalk("c1", 13, 8.0, 0.0, 6.0), Crosswalk("c2", 2, 0, 90.0, 8.0)]
    return Scene("street", b, pois, objs, roads, cws, attribution=OSM_ATTRIBUTION)


@pytest.fixture(scope="module")
def street(gl):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    return SceneRenderer(street_scene())


# ------------------------------------------------------------- geometry
@pytest.mark.parametrize("yaw, pos", [(0.0, (0.0, 30.0)), (90.0, (30.0, 0.0)), (225.0, (-21.2132, -21.2132))])
def test_building_in_the_view_direction_appears_at_the_centre(gl, yaw, pos):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    W, H = 321, 241
    r = SceneRenderer(Scene("p", (pillar("p", *pos),)))
    img = r.render_view(0.0, 0.0, yaw, 0.0, 60.0, W, H, eye_height_m=1.7)
    m = red_mask(img)
    row = (H - 1) // 2  # the horizon (eye height) row
    cols = np.flatnonzero(m[row])
    assert len(cols) > 3
    assert cols.mean() == pytest.approx((W - 1) / 2, abs=0.6)
    # nothing red when looking the other way
    assert not red_mask(r.render_view(0.0, 0.0, yaw + 180.0, 0.0, 60.0, W, H)).any()


def test_pixel_extent_matches_the_pinhole_projection_of_views_camera(gl):
    """Silhouette of a box seen off-centre, pitched up: compare with views.Camera.project of its corners."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    W, H, hfov, yaw, pitch, eye = 400, 300, 75.0, 10.0, 8.0, 1.7
    bx, by, half, h = 6.0, 25.0, 0.5, 6.0
    r = SceneRenderer(Scene("p", (pillar("p", bx, by, h, half),)))
    img = r.render_view(0.0, 0.0, yaw, pitch, hfov, W, H, eye_height_m=eye)
    m = red_mask(img)
    cam = Camera(yaw, pitch, hfov, W, H)
    corners = np.array([[bx + sx * half, by + sy * half, z - eye] for sx in (-1, 1) for sy in (-1, 1)
                        for z in (0.0, h)])
    uv, front = cam.project(corners)
    assert front.all()
    # rows: the box top edge (nearest top corners); pixel v is inside when its centre is
    ys, xs = np.nonzero(m)
    top_expected = uv[:, 1].min()
    assert ys.min() == pytest.approx(math.ceil(top_expected - 1e-9), abs=1)
    # columns at the row through the middle of the box's visible height
    v_mid = int(round((uv[:, 1].min() + min(uv[:, 1].max(), H - 1)) / 2))
    cols = np.flatnonzero(m[v_mid])
    # silhouette at that row: the 4 vertical edges project to lines (leaning with pitch);
    # evaluate each where it crosses row v_mid
    us = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            x, y = bx + sx * half, by + sy * half
            lo = np.array([x, y, 0.0 - eye])
            hi = np.array([x, y, h - eye])
            (u0, v0), (u1, v1) = cam.project(np.stack([lo, hi]))[0]
            t = (v_mid - v0) / (v1 - v0)
            us.append(u0 + t * (u1 - u0))
    assert cols.min() == pytest.approx(math.ceil(min(us)), abs=1)
    assert cols.max() == pytest.approx(math.floor(max(us)), abs=1)


# ---------------------------------------------------------- determinism
def test_same_input_gives_identical_bytes(gl, street):
    from urbanarena.render.scene3d.renderer import SceneRenderer

    a = street.render_view(0.0, -3.0, 20.0, 3.0, 90.0, 320, 240)
    b = street.render_view(0.0, -3.0, 20.0, 3.0, 90.0, 320, 240)
    other = SceneRenderer(street_scene())
    c = other.render_view(0.0, -3.0, 20.0, 3.0, 90.0, 320, 240)
    assert a.tobytes() == b.tobytes() == c.tobytes()
    p1 = street.render_panorama(0.0, -3.0, width=512, centre_bearing_deg=37.0)
    p2 = other.render_panorama(0.0, -3.0, width=512, centre_bearing_deg=37.0)
    assert p1.shape == (256, 512, 3) and p1.dtype == np.uint8
    assert p1.tobytes() == p2.tobytes()
    # and the content is not trivially constant: a different pose differs
    p3 = street.render_panorama(1.0, -3.0, width=512, centre_bearing_deg=37.0)
    assert p3.tobytes() != p1.tobytes()
    other.release()


def test_renders_from_other_threads_are_identical(gl, street):
    """An EGL context is current in one thread at a time; the renderer makes it current per call."""
    import threading

    want = street.render_view(0.0, -3.0, 0.0, 0.0, 90.0, 160, 120)
    got: dict[int, np.ndarray] = {}

    def work(i):
        got[i] = street.render_view(0.0, -3.0, 0.0, 0.0, 90.0, 160, 120)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert want.std() > 10  # a real picture, not a cleared buffer
    assert all(got[i].tobytes() == want.tobytes() for i in range(3))
    assert street.render_view(0.0, -3.0, 0.0, 0.0, 90.0, 160, 120).tobytes() == want.tobytes()


# ------------------------------------------------------------ panoramas
def test_panorama_column_of_a_bearing_follows_the_imagery_rule(gl):
    """A red pillar at compass bearing b appears at continuous column W/2 + W (b - centre) / 360."""
    from urbanarena.render.scene3d.renderer import SceneRenderer

    W = 1024
    for bearing, centre in ((30.0, 0.0), (200.0, 37.0), (10.0, 350.0)):
        d = 40.0
        x, y = d * math.sin(math.radians(bearing)), d * math.cos(math.radians(bearing))
        r = SceneRenderer(Scene("p", (pillar("p", x, y, 8.0, 0.4),)))
        pano = r.render_panorama(0.0, 0.0, 1.7, W, centre_bearing_deg=centre, attribution=False)
        row = W // 4 - 20  # a bit above the horizon, on the pillar
        cols = np.flatnonzero(red_mask(pano)[row])
        rel = (bearing - centre + 180.0) % 360.0 - 180.0
        expect = W / 2 + W * rel / 360.0 - 0.5  # pixel index of the continuous column
        assert cols.mean() == pytest.approx(expect, abs=0.75), (bearing, centre)
        r.release()


@pytest.mark.parametrize("yaw, pitch", [(0.0, 0.0), (95.0, 10.0), (217.0, 0.0), (300.0, -15.0), (37.0, 60.0)])
def test_view_cut_from_the_panorama_matches_a_direct_render(gl, street, yaw, pitch):
    """views.compass_view of the rendered panorama == render_view at the same pose (up to resampling).

    yaw 217 = centre bearing + 180: the view straddles the panorama's left/right seam.
    """
    centre = 37.0
    pano = street.render_panorama(0.0, -3.0, 1.7, 2048, centre_bearing_deg=centre)
    cut = compass_view(pano, yaw, pitch, 90.0, 320, 240, heading_deg=centre)
    direct = street.render_view(0.0, -3.0, yaw, pitch, 90.0, 320, 240, eye_height_m=1.7)
    err = np.abs(cut.astype(int) - direct.astype(int)).mean()
    assert err < 4.0, err
    # the comparison is sharp enough to see a 2-degree misalignment
    off = compass_view(pano, yaw + 2.0, pitch, 90.0, 320, 240, heading_deg=centre)
    err_off = np.abs(off.astype(int) - direct.astype(int)).mean()
    assert err_off > 1.5 * err + 1.0, (err, err_off)


def test_attribution_is_written_in_the_nadir_band_and_on_request_on_views(gl, street):
    from urbanarena.render.scene3d.attribution import nadir_band_rows

    pano = street.render_panorama(0.0, -3.0, 1.7, 1024, 0.0)
    plain = street.render_panorama(0.0, -3.0, 1.7, 1024, 0.0, attribution=False)
    rows = nadir_band_rows(512)
    diff = np.any(pano != plain, axis=2)
    assert diff[-rows:].any() and not diff[:-rows].any()
    # white text pixels inside the band
    assert (pano[-rows:].min(axis=2) > 200).sum() > 20
    v = street.render_view(0.0, -3.0, 0.0, 0.0, 90.0, 640, 360)
    va = street.render_view(0.0, -3.0, 0.0, 0.0, 90.0, 640, 360, attribution=True)
    changed = np.argwhere(np.any(v != va, axis=2))
    assert changed[:, 0].min() > 300 and changed[:, 1].min() > 400  # bottom-right corner only


def test_bad_arguments(gl, street):
    with pytest.raises(ValueError):
        street.render_view(0, 0, 0, 0, 180.0, 64, 64)
    with pytest.raises(ValueError):
        street.render_view(0, 0, 0, 95.0, 90.0, 64, 64)
    with pytest.raises(ValueError):
        street.render_panorama(0, 0, width=511)


# ------------------------------------------------------------ legibility
def _norm(s: str) -> str:
    import unicodedata

    s = unicodedata.normalize("NFKD", s.casefold())
    return "".join(c for c in s if not unicodedata.combining(c) and c.isalnum())


def name_read(name: str, texts: list[str]) -> float:
    """Smallest normalised edit distance between the name and any stretch of the OCR text
    (case-folded, diacritics-folded, letters and digits only)."""
    from urbanarena.tasks.metrics.dtw import edit_distance

    n = _norm(name)
    best = 1.0
    for t in [*texts, "".join(texts)]:
        c = _norm(t)
        for L in range(max(1, len(n) - 2), len(n) + 3):
            for i in range(0, max(1, len(c) - L + 1)):
                best = min(best, edit_distance(n, c[i:i + L]) / len(n))
    return best


@pytest.fixture(scope="module")
def ocr():
    rapidocr = pytest.importorskip("rapidocr", reason="rapidocr (Apache-2.0) not installed: pip install rapidocr onnxruntime")
    import logging

    logging.getLogger("RapidOCR").setLevel(logging.WARNING)
    return rapidocr.RapidOCR()


def test_rapidocr_reads_signs_rendered_squarely_at_10_m(gl, street, ocr):
    """Each storefront name is read (normalised edit distance <= 0.2) from a 640x360, 90-degree view
    taken 10 m in front of its sign, looking at it."""
    placements = {s.poi_id: s for s in street.meshes.placements}
    for pid in ("p1", "p2", "p3"):
        s = placements[pid]
        x, y, yaw = s.viewpoint(10.0)
        pitch = math.degrees(math.atan2(s.centre[2] - 1.7, 10.0))
        img = street.render_view(x, y, yaw, pitch, 90.0, 640, 360, eye_height_m=1.7)
        res = ocr(img)
        texts = list(res.txts or ())
        assert name_read(s.name, texts) <= 0.2, (s.name, texts)


def test_a_name_that_is_not_there_is_not_read(gl, street, ocr):
    """Negative control for the matcher: a view of the sky reads none of the names."""
    img = street.render_view(0.0, -3.0, 0.0, 80.0, 90.0, 640, 360)
    texts = list(ocr(img).txts or ())
    assert all(name_read(n, texts) > 0.2 for n in ("Kahvila Sävy", "Apteekki", "Kirjakauppa Ruusu"))
