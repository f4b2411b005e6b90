"""Break test round 3 (issue 29), items 5 and 13: inputs that gave a traceback (exit 1) or slipped
through now exit 2 with ``error: ...`` naming the file or the option, and write nothing.

* ``view`` on an image whose header claims 60000x30000 (PNG) or 65500x32750 (JPEG) pixels (PIL's
  ``DecompressionBombError``), and ``view --yaw nan`` (drew "yaw nan deg");
* ``run -p KEY='[[[...5000 deep...'`` (``RecursionError``): refused before parsing by a bracket scan, which the
  property test compares with the depth of the parsed value (an independent walk);
* ``--agent bc:X`` without the train extra (``ModuleNotFoundError: safetensors``): the message names the extra;
* ``train bc --threads 0`` (ran).
"""

from __future__ import annotations

import json
import struct
import sys
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.cli.common import MAX_PARAM_JSON_DEPTH, json_depth
from urbanarena.cli.main import app

runner = CliRunner()


def _png_header(w: int, h: int) -> bytes:
    """A PNG whose IHDR says ``w x h`` (RGB) with a few bytes of pixel data: the header alone is the bomb."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def _jpeg_header(w: int, h: int) -> bytes:
    """A baseline JPEG whose SOF0 says ``w x h`` (three components), then a scan of 32 zero bytes."""
    def seg(marker: int, data: bytes) -> bytes:
        return b"\xff" + bytes([marker]) + struct.pack(">H", len(data) + 2) + data

    sof = struct.pack(">BHHB", 8, h, w, 3) + b"".join(bytes([i, 0x11, 0]) for i in (1, 2, 3))
    sos = b"\x03" + b"".join(bytes([i, 0]) for i in (1, 2, 3)) + b"\x00\x3f\x00"
    return (b"\xff\xd8" + seg(0xDB, b"\x00" + bytes(range(1, 65))) + seg(0xC0, sof) + seg(0xDA, sos)
            + b"\x00" * 32 + b"\xff\xd9")


@pytest.mark.parametrize("name,data", [("bomb.png", _png_header(60000, 30000)),
                                       ("bomb.jpg", _jpeg_header(65500, 32750))], ids=["png", "jpeg"])
def test_view_decompression_bomb(tmp_path, name, data):
    (tmp_path / name).write_bytes(data)
    out = tmp_path / "out" / "v.png"
    r = runner.invoke(app, ["view", str(tmp_path / name), "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error:") and name in r.output and "too large" in r.output
    assert not out.exists() and not out.parent.exists()


@pytest.mark.parametrize("opt,value", [("--yaw", "nan"), ("--yaw", "inf"), ("--pitch", "nan"), ("--hfov", "nan")])
def test_view_non_finite_angles(tmp_path, opt, value):
    Image.fromarray(np.zeros((64, 128, 3), np.uint8)).save(tmp_path / "p.png")
    out = tmp_path / "v.png"
    r = runner.invoke(app, ["view", str(tmp_path / "p.png"), opt, value, "--out", str(out)])
    assert r.exit_code == 2 and opt in r.output and "finite" in r.output, r.output
    assert not out.exists()


def test_perspective_view_refuses_nan_yaw():
    from urbanarena.render.views import perspective_view

    with pytest.raises(ValueError, match="yaw_deg"):
        perspective_view(np.zeros((64, 128, 3), np.uint8), float("nan"))


_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(alphabet='[]{}"\\ab:,', max_size=6)),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=4), inner,
                                                             max_size=3)),
                     max_leaves=40)


def _walk_depth(v) -> int:
    if isinstance(v, list):
        return 1 + max((_walk_depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((_walk_depth(x) for x in v.values()), default=0)
    return 0


@settings(max_examples=400, deadline=None)
@given(_json)
def test_json_depth_matches_parsed_depth(value):
    assert json_depth(json.dumps(value)) == _walk_depth(value)


@pytest.mark.parametrize("value", ["[" * 5000, "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000,
                                   "[" * (MAX_PARAM_JSON_DEPTH + 1)])
def test_run_param_too_deep(tmp_path, value):
    city_dir, tasks, _, _ = write_inputs(tmp_path)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent", "random",
                            "--out", str(out), "-p", f"retry={value}"])
    assert r.exit_code == 2 and r.output.startswith("error:") and "--param retry" in r.output, r.output
    assert "Traceback" not in r.output and not out.exists()


def test_run_param_at_the_depth_bound_parses():
    from urbanarena.cli.main import _parse_params

    v = "[" * MAX_PARAM_JSON_DEPTH + "]" * MAX_PARAM_JSON_DEPTH
    assert _walk_depth(_parse_params([f"x={v}"])["x"]) == MAX_PARAM_JSON_DEPTH


def test_bc_agent_without_train_extra(tmp_path, monkeypatch):
    city_dir, tasks, _, _ = write_inputs(tmp_path)
    ckpt = tmp_path / "x.safetensors"
    ckpt.write_bytes(b"\0" * 16)
    monkeypatch.setitem(sys.modules, "safetensors", None)  # as if the train extra were not installed
    monkeypatch.setitem(sys.modules, "safetensors.torch", None)
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks), "--agent", f"bc:{ckpt}",
                            "--out", str(out)])
    assert r.exit_code == 2 and r.output.startswith("error:"), r.output
    assert "'train' extra" in r.output and '".[train]"' in r.output and "safetensors" in r.output
    assert not out.exists()


@pytest.mark.parametrize("threads", ["0", "-3", "100000"])
def test_train_bc_threads_refused(tmp_path, threads):
    out = tmp_path / "c.safetensors"
    r = runner.invoke(app, ["train", "bc", "--out", str(out), "--threads", threads])
    assert r.exit_code == 2 and "--threads" in r.output, r.output
    assert not out.exists()
