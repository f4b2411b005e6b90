"""Malformed inputs found by a newcomer's break test: each gives a typed error
naming the file and the record, exits 2 through the CLI, and leaves no run."""

from __future__ import annotations

import gzip
import json
import math
import re

import pytest
from typer.testing import CliRunner

from runner_util import write_inputs
from urbanarena.cli.main import app
from urbanarena.errors import TaskFormatError
from urbanarena.tasks.resolve import resolve_task_set

runner = CliRunner()


def _mutated_task_file(tmp_path, mutate):
    city_dir, tasks_path, city, tf = write_inputs(tmp_path)
    raw = json.loads(tasks_path.read_text())
    mutate(raw["tasks"][1])
    bad = tmp_path / "bad_tasks.json"
    bad.write_text(json.dumps(raw))
    return city_dir, bad, city, raw["tasks"][1]["task_id"]


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda t: t["start"].__setitem__("heading_deg", math.nan), "heading_deg"),
        (lambda t: t["start"].__setitem__("heading_deg", 9000.0), "heading_deg"),
        (lambda t: t.__setitem__("success_radius_m", math.inf), "success_radius_m"),
        (lambda t: t.__setitem__("reference_path", ["nope"]), "reference_path node 'nope'"),
        (lambda t: t.__setitem__("reference_stages", [["nope"]]), r"reference_stages\[0\] node 'nope'"),
    ],
)
def test_task_file_values(tmp_path, mutate, match):
    city_dir, bad, city, task_id = _mutated_task_file(tmp_path, mutate)
    with pytest.raises(TaskFormatError) as e:
        resolve_task_set(str(bad), city, city_dir)
    msg = str(e.value)
    assert str(bad) in msg and "task 1" in msg and re.search(match, msg)
    if "node" in match:
        assert task_id in msg
    out = tmp_path / "run"
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(bad), "--agent", "random", "--out", str(out)])
    assert r.exit_code == 2 and r.output.startswith("error:") and "Traceback" not in r.output
    assert not out.exists()


def test_map2seq_heading_out_of_range(tmp_path, touchdown_city, shared_dir):
    src = shared_dir / "data" / "map2seq" / "map2seq_seen_dev.jsonl.gz"
    lines = gzip.open(src, "rt").read().splitlines()[:3]
    rec = json.loads(lines[2])
    rec["start_heading"] = 7200
    lines[2] = json.dumps(rec)
    bad = tmp_path / "far.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    from urbanarena.tasks.families import get_family

    with pytest.raises(TaskFormatError, match=r"far\.jsonl \[line 3\].*start_heading 7200 is outside"):
        get_family("map2seq").load_foreign(bad, touchdown_city)


def test_cli_flag_checks_before_running(tmp_path):
    city_dir, tasks_path, _, _ = write_inputs(tmp_path)
    out = tmp_path / "run"
    for args, msg in [
        (["--seed-base", "-5"], "--seed-base must be >= 0"),
        (["--seeds", "1000000000"], "--seeds must be <="),
    ]:
        r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks_path), "--agent", "random",
                                "--out", str(out), *args])
        assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output
        assert not out.exists()
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(tasks_path), "--agent", "forward",
                            "--out", str(out), "--limit", "2"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["summary", str(out), "--resamples", "0"])
    assert r.exit_code == 2 and "--resamples must be >= 1" in r.output
    d = tmp_path / "somedir"
    d.mkdir()
    r = runner.invoke(app, ["export", str(out), "--format", "csv", "--out", str(d)])
    assert r.exit_code == 2 and "is a directory" in r.output and ".tmp" not in r.output


def test_city_import_does_not_overwrite_without_force(tmp_path):
    city_dir, _, _, _ = write_inputs(tmp_path)
    assert runner.invoke(app, ["city", "import", str(city_dir), "--name", "g"]).exit_code == 0
    r = runner.invoke(app, ["city", "import", str(city_dir), "--name", "g"])
    assert r.exit_code == 2 and "already exists" in r.output and "--force" in r.output
    assert runner.invoke(app, ["city", "import", str(city_dir), "--name", "g", "--force"]).exit_code == 0


def test_stale_import_tmp_dirs_are_removed(tmp_path):
    from urbanarena import paths
    from urbanarena.world.resolve import resolve_city

    city_dir, _, _, _ = write_inputs(tmp_path)
    stale = paths.cities_dir() / ".old.tmp-999999999-deadbeef"
    stale.mkdir(parents=True)
    (stale / "junk").write_text("x")
    # any cache write sweeps dead processes' temporary directories
    from urbanarena.world.resolve import save_named

    save_named(resolve_city(str(city_dir)), "swept")
    assert not stale.exists()
