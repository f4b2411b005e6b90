"""The coarse fingerprint of frozen images (tasks/frozen_tolerance.py): its values by hand, what passes within the
tolerance (a few edge pixels) and what fails (a moved object, +2 grey levels over a block, another size), and the
fields a materialize check gains (frozen.py) -- only for manifests that carry fingerprints."""

import base64
import json
import shutil

import numpy as np
import pytest

from urbanarena.tasks.frozen_tolerance import (
    GRID, SCALE, TOLERANCE_GREY, apply_tolerance, block_means, coarse_fingerprint, decode, describe_tolerance,
    max_block_diff, scheme, split_differ, within_tolerance,
)


def _flat(h=480, w=640, rgb=(30, 60, 90)):
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = rgb
    return img


def test_fingerprint_of_a_hand_made_image():
    # 32 x 18 pixels on the 16 x 9 grid: every block is 2 x 2 pixels; grey (30 + 60 + 90) / 3 = 60 everywhere but
    # one white pixel in the top-left block: (3 * 60 + 255) / 4 = 108.75 -> 108.75 * 64 = 6960 = 0x1B30
    img = _flat(18, 32)
    img[0, 0] = 255
    fp = coarse_fingerprint(img)
    assert fp.startswith("32x18:")
    raw = base64.b64decode(fp.split(":", 1)[1])
    assert len(raw) == 2 * 16 * 9 and raw[:2] == bytes([0x30, 0x1B]) and raw[2:4] == (60 * 64).to_bytes(2, "little")
    size, means = decode(fp)
    assert size == (32, 18) and means.shape == (9, 16)
    assert means[0, 0] == 108.75 and means[0, 1] == 60.0 and means[8, 15] == 60.0
    assert GRID == (16, 9) and SCALE == 64 and scheme()["grid"] == [16, 9]


def test_block_edges_of_an_uneven_size():
    # 20 x 9 pixels: column edges round(i * 20 / 16) = 0, 1, 2, 4, 5, 6, 8, ... (numpy rounds halves to even),
    # one row per block; a column ramp (grey = column index) averages each block's columns
    img = np.tile(np.arange(20, dtype=np.uint8)[None, :, None], (9, 1, 3))
    m = block_means(img)
    assert m.shape == (9, 16)
    assert m[0, :4].tolist() == [0.0, 1.0, 2.5, 4.0]  # columns {0}, {1}, {2, 3}, {4}
    assert np.all(m == m[0])
    with pytest.raises(ValueError, match="smaller than"):
        block_means(np.zeros((8, 20, 3)))


def test_a_few_changed_edge_pixels_pass():
    # the first block of a 640 x 480 image is 40 x 53 = 2120 pixels (rows round(480 / 9) = 53); 10 pixels along an
    # edge 60 grey levels brighter move its mean by 10 * 60 / 2120 = 0.283 grey levels
    a = _flat()
    b = a.copy()
    b[5:15, 20] += 60
    d = max_block_diff(coarse_fingerprint(a), coarse_fingerprint(b))
    assert d == pytest.approx(10 * 60 / 2120, abs=1 / SCALE)
    assert d <= TOLERANCE_GREY and within_tolerance(coarse_fingerprint(a), b)


def test_a_moved_object_and_a_brightness_change_fail():
    a = _flat()
    a[100:130, 100:130] = 200  # a 30 x 30 bright object
    moved = _flat()
    moved[100:130, 108:138] = 200  # 8 px to the right
    fa = coarse_fingerprint(a)
    assert not within_tolerance(fa, moved)
    # by hand: block (2, 2) (rows 107..159, columns 80..119) loses the object's rows 107..129 (23) in columns
    # 100..107 (8) of 200 - 60 = 140 grey levels, over its 53 x 40 pixels
    d = decode(coarse_fingerprint(moved))[1] - decode(fa)[1]
    assert d[2, 2] == pytest.approx(-23 * 8 * 140 / (53 * 40), abs=1 / SCALE)
    brighter = _flat()
    brighter[53:107, 40:80] += 2  # one block (1, 1), 2 grey levels brighter
    assert max_block_diff(coarse_fingerprint(_flat()), coarse_fingerprint(brighter)) == pytest.approx(2.0)
    assert not within_tolerance(coarse_fingerprint(_flat()), brighter)


def test_another_size_or_no_fingerprint_never_passes():
    a = _flat()
    assert max_block_diff(coarse_fingerprint(a), coarse_fingerprint(_flat(480, 641))) == float("inf")
    assert not within_tolerance(None, a) and not within_tolerance("", a) and not within_tolerance("garbage", a)
    with pytest.raises(ValueError, match="not a coarse fingerprint"):
        decode("nope")


def test_split_and_check_fields():
    fa, fb = coarse_fingerprint(_flat()), coarse_fingerprint(_flat(rgb=(33, 60, 90)))  # grey + 1: out
    near = _flat()
    near[0, 0] = 0
    fn = coarse_fingerprint(near)  # 60 / 2120 = 0.028 grey levels
    assert split_differ(["x", "y", "z"], {"x": fa, "y": fa, "z": None}, {"x": fn, "y": fb, "z": fn}) == (
        ["y", "z"], ["x"])
    check = {"suite": "s-mini", "assets_checked": 4, "assets_differ": ["x", "y"], "panoramas_checked": 8,
             "panoramas_differ": ["n1"]}
    apply_tolerance(check, {"x": fa, "y": fa}, {"x": fn, "y": fb}, {"n1": fa}, {"n1": fn})
    assert check["assets_differ"] == ["y"] and check["assets_within_tolerance"] == ["x"]
    assert check["panoramas_differ"] == [] and check["panoramas_within_tolerance"] == ["n1"]
    assert check["tolerance"]["max_block_diff_grey"] == TOLERANCE_GREY
    assert check["tolerance"]["largest_within_grey"] == pytest.approx(60 / 2120, abs=1 / SCALE)
    line = describe_tolerance(check)
    assert "1 of 4 reference images and 1 of 8 fingerprint panoramas drawn here within tolerance" in line
    assert describe_tolerance({"assets_within_tolerance": [], "panoramas_within_tolerance": []}) is None


# ---------------------------------------------------------------- on a frozen suite (GL: the fixture city)
gl = pytest.importorskip("urbanarena.render.scene3d.context")
needs_gl = pytest.mark.skipif(gl.gl_unavailable_reason() is not None, reason="no OpenGL")


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    from generate_util import fixture_city
    from urbanarena.agents.arena_oracle import ArenaOracleSolver
    from urbanarena.tasks.frozen import freeze
    from urbanarena.world.city_io import load_city, save_city

    city = load_city(save_city(fixture_city(), tmp_path_factory.mktemp("tol_city") / "c"))
    fs = freeze(city, tmp_path_factory.mktemp("tol") / "suite", sizes=("mini",), split=None,
                solver=ArenaOracleSolver(city))
    return city, fs


def _copy(fs, d, edit):
    from urbanarena.tasks.frozen import load_frozen

    shutil.copytree(fs.directory, d)
    m = json.loads((d / "manifest.json").read_text())
    edit(m)
    (d / "manifest.json").write_text(json.dumps(m))
    return load_frozen(d)


@needs_gl
def test_freeze_stores_fingerprints(frozen):
    city, fs = frozen
    m = fs.manifest
    assert m["coarse_fingerprint"] == scheme()
    assert set(m["panorama_coarse"]) == set(m["panorama_fingerprint"])
    for a in m["sizes"]["mini"]["assets"].values():
        size, _ = decode(a["pixel_coarse"])
        assert size[0] > 0


@needs_gl
def test_materialize_within_tolerance_and_exact_without_fingerprints(frozen, tmp_path):
    """A drawing whose sha256 differs from the manifest's but whose fingerprint agrees (the sha256 edited in a copy
    of the manifest stands for another CPU's rounding) is listed within tolerance and the suite matches; a moved
    image (another image's fingerprint) still differs; a v4-style manifest without fingerprints stays exact, its
    check without the new fields."""
    from urbanarena.tasks.frozen_materialize import describe_check, materialize

    city, fs = frozen
    assets = sorted(fs.manifest["sizes"]["mini"]["assets"])
    rel, other = assets[0], assets[1]
    node = sorted(fs.manifest["panorama_fingerprint"])[0]

    def rounding(m):
        m["sizes"]["mini"]["assets"][rel]["pixel_sha256"] = "0" * 64
        m["panorama_fingerprint"][node] = "1" * 64

    _, check = materialize(_copy(fs, tmp_path / "a", rounding), "mini", city, dest_root=tmp_path / "ma")
    assert check["assets_differ"] == [] and check["assets_within_tolerance"] == [rel]
    assert check["panoramas_differ"] == [] and check["panoramas_within_tolerance"] == [node]
    assert check["matches"] is True and check["tolerance"]["max_block_diff_grey"] == TOLERANCE_GREY
    assert check["tolerance"]["largest_within_grey"] == 0.0  # the same pixels: only the sha256 was edited
    assert "1 of" in describe_check(check) and "within tolerance" in describe_check(check)

    def real_change(m):
        a = m["sizes"]["mini"]["assets"]
        a[rel]["pixel_sha256"] = "0" * 64
        a[rel]["pixel_coarse"] = a[other]["pixel_coarse"]  # another picture's blocks (or size)

    _, check = materialize(_copy(fs, tmp_path / "b", real_change), "mini", city, dest_root=tmp_path / "mb",
                           check_panoramas=False)
    assert check["assets_differ"] == [rel] and check["assets_within_tolerance"] == [] and not check["matches"]

    def v4_style(m):
        rounding(m)
        for k in ("coarse_fingerprint", "panorama_coarse"):
            m.pop(k)
        for a in m["sizes"]["mini"]["assets"].values():
            a.pop("pixel_coarse")

    _, check = materialize(_copy(fs, tmp_path / "c", v4_style), "mini", city, dest_root=tmp_path / "mc")
    assert check["assets_differ"] == [rel] and check["panoramas_differ"] == [node] and not check["matches"]
    assert not {"assets_within_tolerance", "panoramas_within_tolerance", "tolerance"} & set(check)


@needs_gl
def test_run_prints_a_notice_and_records_both_lists(frozen, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from urbanarena.cli.main import app
    from urbanarena.tasks.frozen import user_dir
    from urbanarena.world.city_io import save_city

    city, fs = frozen
    monkeypatch.setenv("URBANARENA_HOME", str(tmp_path / "home"))
    rel = sorted(fs.manifest["sizes"]["mini"]["assets"])[0]

    def rounding(m):
        m["sizes"]["mini"]["assets"][rel]["pixel_sha256"] = "0" * 64

    _copy(fs, user_dir() / fs.name, rounding)
    city_dir = save_city(city, tmp_path / "city")
    r = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", "mini", "--agent", "oracle",
                                 "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())  # the console wraps long lines
    assert "note: suite" in out and "1 of" in out and "within tolerance" in out and "warning" not in out
    chk = json.loads((tmp_path / "run" / "run.json").read_text())["tasks"]["suite_check"]
    assert chk["matches"] is True and chk["assets_within_tolerance"] == [rel] and chk["assets_differ"] == []
    assert chk["panoramas_within_tolerance"] == [] and chk["tolerance"]["grid"] == [16, 9]


def test_report_line_counts_the_images_within_tolerance():
    from urbanarena.report.arena_report import render_markdown, report_data

    chk = {"suite": "s-mini", "matches": True, "assets_checked": 50, "panoramas_checked": 8,
           "assets_differ": [], "panoramas_differ": [], "assets_within_tolerance": ["a.png"] * 6,
           "panoramas_within_tolerance": ["n0", "n1"], "tolerance": {"max_block_diff_grey": TOLERANCE_GREY}}
    md = " ".join(render_markdown(report_data({}, suite="s-mini", suite_check=chk)).split())
    assert (f"match the frozen suite (50 images, 8 panoramas; 6 images and 2 panoramas of them drawn within "
            f"tolerance, not bit-identical: every block mean within {TOLERANCE_GREY} grey levels)") in md
    exact = {k: v for k, v in chk.items() if "tolerance" not in k}
    md = render_markdown(report_data({}, suite="s-mini", suite_check=exact))
    assert "(50 images, 8 panoramas)." in md
