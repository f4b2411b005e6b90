"""Helpers for the play / replay / video tests (``tests/test_web_*.py``, ``tests/test_video.py``).

The fixture city (``tests/data/osm_generate_fixture.osm``) is saved once per session and an arena
suite is generated on it with ``urbanarena tasks generate`` (one task per family, seed 0); the
arena oracle's run of that suite (``urbanarena run --agent arena-oracle --trace``) gives, for every
task, an action sequence that solves it and the row it stores: the tests replay those actions as a
human through the HTTP API or the browser and compare.
"""

from __future__ import annotations

import base64
import io
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from generate_util import fixture_city


@lru_cache(maxsize=None)
def fixture_study(root: str) -> dict:
    """``{"city_dir", "suite", "oracle_run", "oracle_rows"}`` under ``root`` (built once per root)."""
    from urbanarena.cli.main import app
    from urbanarena.runner.store import STORE_FILE, Store
    from urbanarena.world.city_io import save_city

    base = Path(root)
    city_dir = base / "city"
    save_city(fixture_city(), city_dir)
    suite = base / "tasks" / "suite.json"
    r = CliRunner().invoke(app, ["tasks", "generate", "--city", str(city_dir), "--suite", "arena", "--per-family", "1",
                                 "--seed", "0", "--out", str(suite)])
    assert r.exit_code == 0, r.output
    oracle = base / "oracle-run"
    r = CliRunner().invoke(app, ["run", "--city", str(city_dir), "--tasks", str(suite), "--agent", "arena-oracle",
                                 "--out", str(oracle), "--trace"])
    assert r.exit_code == 0, r.output
    with Store(oracle / STORE_FILE, readonly=True) as s:
        rows = {row["task_id"]: row for row in s.rows()}
    return {"city_dir": city_dir, "suite": suite, "oracle_run": oracle, "oracle_rows": rows}


def action_json(label: str) -> dict:
    """The play API's action object of a stored action label (``"W LARGE"``, ``"RIGHT"``, ``"ANSWER: x"``)."""
    if label.startswith("ANSWER"):
        return {"kind": "ANSWER", "answer": label.partition(":")[2].strip()}
    kind, _, mag = label.partition(" ")
    return {"kind": kind, **({"magnitude": mag} if mag else {})}


def decode_data_url(url: str) -> np.ndarray:
    """A ``data:image/png;base64,...`` URL as an RGB array."""
    head, _, b64 = url.partition(",")
    assert head == "data:image/png;base64", head
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB"))


def decode_png(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def suite_tasks(suite: Path) -> dict:
    """``{task_id: task JSON}`` of a suite file, read as plain JSON (independent of the task loader)."""
    return {t["task_id"]: t for t in json.loads(Path(suite).read_text())["tasks"]}
