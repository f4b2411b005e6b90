"""Imagery sources (world.imagery): orientation rules checked against the published
viewers' formulas, licence-guarded export, persistence, graph-only errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from conftest import make_city
from urbanarena.errors import CityFormatError, ImageryLicenceError, NoImageryError
from urbanarena.render.panorama_store import PanoramaStore
from urbanarena.render.views import node_view
from urbanarena.world.city_io import load_city, save_city
from urbanarena.world.imagery import (
    ImagerySource,
    attach_cityseeker_images,
    attach_panorama_folder,
    attach_streetlearn_images,
    centre_bearing_deg,
    cityseeker_yaw_offset_deg,
    export_images,
    image_path,
    imagery_of,
    missing_images,
)

PW, PH = 720, 360


def _city(name="toy", heading=None, ids=("a.jpg", "b.jpg")):
    nodes = {n: (22.28 + i * 1e-4, 114.15) for i, n in enumerate(ids)}
    edges = [(ids[0], ids[1], 0.0, 11.0), (ids[1], ids[0], 180.0, 11.0)]
    heading = heading or {n: 0.0 for n in ids}
    return make_city(nodes, edges, name=name, heading_deg=heading)


def _marker_pano(col: float) -> np.ndarray:
    """Grey panorama with a 3-pixel-wide red stripe centred on continuous column ``col``."""
    img = np.full((PH, PW, 3), 90, np.uint8)
    c = int(math.floor(col))
    for j in (c - 1, c, c + 1):
        img[:, j % PW] = (255, 0, 0)
    return img


def _is_red(px) -> bool:
    return px[0] > 200 and px[1] < 60 and px[2] < 60


def test_cityseeker_offsets():
    assert cityseeker_yaw_offset_deg("beijing1") == -90.0
    assert cityseeker_yaw_offset_deg("Shanghai_2") == -90.0
    assert cityseeker_yaw_offset_deg("shenzhen3") == -90.0
    assert cityseeker_yaw_offset_deg("chengdu4") == -90.0
    assert cityseeker_yaw_offset_deg("hongkong6") == 0.0
    assert cityseeker_yaw_offset_deg("london7") == 0.0
    assert cityseeker_yaw_offset_deg("newyork8") == 0.0


@pytest.mark.parametrize("city_name,baidu", [("beijing1", True), ("hongkong6", False)])
def test_cityseeker_orientation_matches_their_viewer(tmp_path, city_name, baidu):
    """CitySeeker's viewer (utils/panovis.py) looks at compass bearing theta by turning
    lon = theta - HEADING to the right of the image centre, HEADING = heading (Google) or
    heading - 90 (Baidu), and maps lon to image x = (lon/2pi + 0.5)(W - 1). Put a red stripe where
    their viewer looks for theta and check our compass view at theta has it in the centre."""
    heading, theta = 57.0, 131.0
    HEADING = heading - 90.0 if baidu else heading
    lon = math.radians(((theta - HEADING) + 180.0) % 360.0 - 180.0)
    col = (lon / (2 * math.pi) + 0.5) * (PW - 1) + 0.5  # their index -> our continuous column
    img_dir = tmp_path / "images"
    img_dir.mkdir()
    Image.fromarray(_marker_pano(col)).save(img_dir / "a.jpg", quality=95)
    Image.fromarray(_marker_pano(col)).save(img_dir / "b.jpg", quality=95)
    city = _city(city_name, heading={"a.jpg": heading, "b.jpg": heading})
    attach_cityseeker_images(city, tmp_path)
    src = imagery_of(city)
    assert src.source == "cityseeker" and not src.redistributable
    assert src.yaw_offset_deg == (-90.0 if baidu else 0.0)
    store = PanoramaStore(city)
    v = node_view(store, "a.jpg", theta, 0.0, 60.0, 101, 51)
    assert _is_red(v[25, 50])
    v_off = node_view(store, "a.jpg", theta + 10.0, 0.0, 60.0, 101, 51)
    assert not _is_red(v_off[25, 50])


def test_streetlearn_orientation_matches_their_renderer(tmp_path):
    """StreetLearn renders bearing b at pano yaw (b - pano_heading), longitude 0 at the centre
    column (W - 1)/2, x = lon/pi * (W-1)/2 + (W-1)/2 (pano_projection.cc)."""
    pano_yaw, b = 250.0, 20.0
    lon = math.radians(((b - pano_yaw) + 180.0) % 360.0 - 180.0)
    cx = (PW - 1) / 2.0
    col = lon / math.pi * cx + cx + 0.5
    for n in ("p1", "p2"):
        Image.fromarray(_marker_pano(col)).save(tmp_path / f"{n}.jpg", quality=95)
    city = _city("touchdown", heading={"p1": pano_yaw, "p2": pano_yaw}, ids=("p1", "p2"))
    attach_streetlearn_images(city, tmp_path)
    assert imagery_of(city).source == "streetlearn"
    store = PanoramaStore(city)
    assert store.path("p1") == tmp_path.resolve() / "p1.jpg"
    v = node_view(store, "p1", b, 0.0, 60.0, 101, 51)
    assert _is_red(v[25, 50])


def test_centre_bearing_and_paths(tmp_path):
    city = _city(heading={"a.jpg": 350.0, "b.jpg": 10.0})
    attach_panorama_folder(city, tmp_path, "{node}", yaw_offset_deg=20.0)
    assert centre_bearing_deg(city, "a.jpg") == pytest.approx(10.0)
    assert centre_bearing_deg(city, "b.jpg") == pytest.approx(30.0)
    assert image_path(city, "a.jpg") == tmp_path.resolve() / "a.jpg"
    assert missing_images(city) == ["a.jpg", "b.jpg"]
    (tmp_path / "a.jpg").write_bytes(b"x")
    assert missing_images(city) == ["b.jpg"]
    city.node("b.jpg")["heading_deg"] = None
    with pytest.raises(CityFormatError, match="heading_deg"):
        centre_bearing_deg(city, "b.jpg")


def test_files_mapping_and_relative_root(tmp_path):
    src = ImagerySource(root="imgs", pattern="{node}.png", files={"a": "sub/frame_0001.jpg"})
    assert src.path_for("a", tmp_path) == tmp_path / "imgs" / "sub" / "frame_0001.jpg"
    assert src.path_for("b", tmp_path) == tmp_path / "imgs" / "b.png"
    back = ImagerySource.from_dict(json.loads(json.dumps(src.to_dict())))
    assert back == src


@pytest.mark.parametrize("bad,field", [
    ({"kind": "scene3d", "root": "x"}, "imagery.kind"),
    ({"root": "x", "projection": "cubemap"}, "imagery.projection"),
    ({"pattern": "{node}"}, "imagery.root"),
    ({"root": "x", "pattern": "img.jpg"}, "imagery.pattern"),
    ({"root": "x", "yaw_offset_deg": "left"}, "imagery.yaw_offset_deg"),
])
def test_bad_imagery_descriptions(bad, field):
    with pytest.raises(CityFormatError) as ei:
        ImagerySource.from_dict(bad, where="city.json")
    assert ei.value.record == field and ei.value.path == "city.json"


def test_graph_only_city_errors(tmp_path):
    city = _city()
    with pytest.raises(NoImageryError, match="graph-only"):
        imagery_of(city)
    with pytest.raises(NoImageryError):
        export_images(city, tmp_path / "out", i_hold_the_rights=True)


def test_export_refused_without_rights_then_allowed(tmp_path):
    img_dir = tmp_path / "images"
    img_dir.mkdir()
    (img_dir / "a.jpg").write_bytes(b"\xff\xd8fake-a")
    city = _city("beijing1")
    attach_cityseeker_images(city, tmp_path)
    out = tmp_path / "export"
    with pytest.raises(ImageryLicenceError, match="may not be redistributed"):
        export_images(city, out)
    assert not out.exists()
    rep = export_images(city, out, i_hold_the_rights=True)
    assert [p.name for p in rep.written] == ["a.jpg"] and rep.missing == ["b.jpg"]
    assert (out / "a.jpg").read_bytes() == b"\xff\xd8fake-a"
    notice = json.loads((out / "LICENSE-IMAGERY.json").read_text())
    assert notice["redistributable"] is False and notice["exported_by_rights_holder_statement"] is True
    assert notice["yaw_offset_deg"] == -90.0


def test_redistributable_export_needs_no_statement(tmp_path):
    city = _city()
    (tmp_path / "a.jpg").write_bytes(b"A")
    (tmp_path / "b.jpg").write_bytes(b"B")
    attach_panorama_folder(city, tmp_path, licence="MIT", attribution="me", redistributable=True)
    rep = export_images(city, tmp_path / "out")
    assert sorted(p.name for p in rep.written) == ["a.jpg", "b.jpg"] and rep.missing == []


def test_imagery_survives_save_load(tmp_path):
    city = _city("shenzhen3")
    (tmp_path / "images").mkdir()
    attach_cityseeker_images(city, tmp_path)
    h = city.content_hash
    loaded = load_city(save_city(city, tmp_path / "saved"))
    assert loaded.content_hash == h
    src = imagery_of(loaded)
    assert src == imagery_of(city) and src.yaw_offset_deg == -90.0
    meta = json.loads((tmp_path / "saved" / "city.json").read_text())
    assert "centre column" in meta["imagery"]["orientation_rule"]


def test_attach_errors(tmp_path):
    city = _city()
    with pytest.raises(FileNotFoundError, match="images"):
        attach_cityseeker_images(city, tmp_path)
    with pytest.raises(FileNotFoundError):
        attach_streetlearn_images(city, tmp_path / "none")
    with pytest.raises(ValueError, match="node"):
        attach_panorama_folder(city, tmp_path, "pano.jpg")
