"""CLI: run / resume / summary / export / city info / protocols on a synthetic
city, and one-line errors without a partial RUN_DIR for bad input."""

from __future__ import annotations

import csv
import json
import sqlite3
import statistics
import sys

import pytest
from typer.testing import CliRunner

from runner_util import grid_city, grid_tasks, write_inputs
from urbanarena.cli.main import app
from urbanarena.env.protocols import PROTOCOLS
from urbanarena.tasks.metrics import METRIC_KEYS, PERCENT_KEYS

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def db_rows(run_dir, where="1=1"):
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute(f"SELECT * FROM episodes WHERE {where}")]
    con.close()
    return rows


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    city_dir, task_path, city, tf = write_inputs(root, n=4, n_tasks=6)
    return root, city_dir, task_path, city, tf


@pytest.fixture(scope="module")
def done_run(inputs):
    root, city_dir, task_path, city, tf = inputs
    out = root / "run"
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--seeds", 3,
               "--workers", 1, "--out", out, "--max-steps", 10)
    assert r.exit_code == 0, r.output
    assert "18 episodes run, 0 skipped, 0 agent errors (protocol cityseeker-v1; config " in r.stdout
    return out


def test_store_contents(done_run, inputs):
    _, _, _, city, tf = inputs
    rows = db_rows(done_run)
    assert len(rows) == 18
    assert {(r["task_id"], r["seed"]) for r in rows} == {(t.task_id, s) for t in tf.tasks for s in range(3)}
    assert {r["protocol"] for r in rows} == {"cityseeker-v1"}  # the family's default protocol
    for r in rows:
        traj = json.loads(r["trajectory"])
        assert len(traj) == 11 and r["steps"] == 10 and r["stop_reason"] == "max_steps"
        task = next(t for t in tf.tasks if t.task_id == r["task_id"])
        assert traj[0] == task.start.node
        assert all(b in city.graph[a] for a, b in zip(traj, traj[1:]))
        # metric column = JSON metric = independent recomputation of the final distance
        m = json.loads(r["metrics"])
        assert r["goal_dist_m"] == m["goal_dist_m"]
        assert m["goal_dist_m"] == pytest.approx(city.distance_m(traj[-1], task.goals[0].node), abs=1e-6)
        assert r["tc_exact"] == float(traj[-1] == task.goals[0].node)


def test_summary_json_matches_independent_means(done_run):
    r = invoke("summary", done_run, "--json", "--resamples", 200)
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)  # exactly one JSON object on stdout
    for k in ("protocol", "episodes", "metrics", "ci95", "by_category", "by_difficulty"):
        assert k in s
    assert s["protocol"] == "cityseeker-v1" and s["episodes"] == 18
    assert s["planned"] == 18 and s["complete"] is True and s["tasks"] == 6 and s["seeds"] == [0, 1, 2]
    assert set(s["metrics"]) == set(METRIC_KEYS) and set(s["ci95"]) == set(METRIC_KEYS)
    rows = db_rows(done_run)
    for k in ("tc_exact", "tc_proximity_50m", "spl", "ndtw", "goal_dist_m", "dtw_m", "avg_steps"):
        mean = statistics.fmean(r[k] for r in rows) * (100 if k in PERCENT_KEYS else 1)
        assert s["metrics"][k] == pytest.approx(mean, rel=1e-12, abs=1e-12), k
        lo, hi = s["ci95"][k]
        assert lo <= s["metrics"][k] + 1e-9 and s["metrics"][k] <= hi + 1e-9
    assert s["metrics"]["tc"] is None and s["ci95"]["spd_hops"] is None  # map2seq keys do not apply
    assert s["metrics"]["avg_steps"] == 10.0
    cats = {r["category"] for r in rows}
    assert set(s["by_category"]) == cats
    for c in cats:
        sub = [r for r in rows if r["category"] == c]
        g = s["by_category"][c]
        assert g["episodes"] == len(sub) and g["protocol"] == "cityseeker-v1"
        assert g["metrics"]["goal_dist_m"] == pytest.approx(statistics.fmean(r["goal_dist_m"] for r in sub), rel=1e-12)
    assert set(s["by_difficulty"]) == {"easy", "medium", "hard"}


def test_summary_table(done_run):
    r = invoke("summary", done_run)
    assert r.exit_code == 0
    assert "cityseeker-v1" in r.stdout and "tc_proximity_50m" in r.stdout and "by category" in r.stdout


def test_resume_skips_everything_and_records_history(done_run, inputs):
    root, city_dir, task_path, city, tf = inputs
    before = db_rows(done_run)
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--seeds", 3,
               "--workers", 1, "--out", done_run, "--max-steps", 10)
    assert r.exit_code == 0
    assert "0 episodes run, 18 skipped" in r.stdout
    assert db_rows(done_run) == before
    meta = json.loads((done_run / "run.json").read_text())
    assert meta["status"] == "finished" and meta["episodes"] == {"planned": 18, "skipped": 18, "run": 0, "errors": 0}
    assert len(meta["history"]) >= 1 and meta["history"][0]["episodes"]["run"] == 18
    assert meta["city"]["content_hash"] == city.content_hash and meta["city"]["name"] == city.name
    assert len(meta["tasks"]["source_hash"]) == 64 and meta["tasks"]["count"] == 6
    assert meta["seeds"] == [0, 1, 2] and meta["protocols"] == {"cityseeker": "cityseeker-v1"}
    assert meta["max_steps"] == {"cityseeker": 10} and meta["agent"]["config"]["name"] == "random"
    assert set(meta["code_version"]) == {"package_version", "git_commit", "git_dirty"}
    assert meta["started_at"] <= meta["finished_at"]
    assert meta["command"].startswith("urbanarena run --city ") and f"--out {done_run}" in meta["command"]
    (h,) = meta["configs"]
    assert {r["config_hash"] for r in before} == {h}


def test_second_config_in_same_run_dir(done_run, inputs, tmp_path):
    root, city_dir, task_path, city, tf = inputs
    out = tmp_path / "multi"
    base = ["run", "--city", city_dir, "--tasks", task_path, "--seeds", 1, "--out", out, "--limit", 2]
    assert invoke(*base, "--agent", "forward").exit_code == 0
    r = invoke(*base, "--agent", "forward", "--protocol", "urbanarena-graph-v1")
    assert r.exit_code == 0 and "2 episodes run, 0 skipped" in r.stdout
    r = invoke("summary", out, "--json")
    assert r.exit_code == 2 and r.stdout == ""
    assert "holds 2 configs" in r.stderr and "urbanarena-graph-v1" in r.stderr
    hashes = {row["protocol"]: row["config_hash"] for row in db_rows(out)}
    r = invoke("summary", out, "--json", "--config", hashes["urbanarena-graph-v1"][:10])
    assert r.exit_code == 0 and json.loads(r.stdout)["protocol"] == "urbanarena-graph-v1"
    assert json.loads(r.stdout)["episodes"] == 2


def test_changed_task_under_same_id_is_refused(inputs, tmp_path):
    root, city_dir, task_path, city, tf = inputs
    changed = tmp_path / "changed.json"
    changed.write_text(task_path.read_text())
    out = tmp_path / "run"
    args = ["run", "--city", city_dir, "--tasks", changed, "--agent", "forward", "--limit", 2, "--out", out]
    assert invoke(*args).exit_code == 0
    changed.write_text(changed.read_text().replace('"go to', '"stroll to'))
    r = invoke(*args)
    assert r.exit_code == 2 and "differs from the one stored there" in r.stderr and tf.tasks[0].task_id in r.stderr
    assert len(db_rows(out)) == 2
    # a different step limit is a different config: both live in the RUN_DIR
    changed.write_text(task_path.read_text())
    r = invoke(*args, "--max-steps", 5)
    assert r.exit_code == 0 and "2 episodes run, 0 skipped" in r.stdout
    rows = db_rows(out)
    assert len(rows) == 4 and len({x["config_hash"] for x in rows}) == 2
    assert sorted(x["steps"] for x in rows) == [5, 5, 35, 35]


def test_export_formats(done_run, tmp_path):
    rows = sorted(db_rows(done_run), key=lambda r: (r["task_id"], r["seed"]))
    r = invoke("export", done_run, "--format", "jsonl", "--out", tmp_path / "e.jsonl")
    assert r.exit_code == 0 and "18 episodes" in r.stdout
    js = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert len(js) == 18
    for a, b in zip(sorted(js, key=lambda r: (r["task_id"], r["seed"])), rows):
        assert a["trajectory"] == json.loads(b["trajectory"]) and a["protocol"] == "cityseeker-v1"
        assert a["metrics"] == json.loads(b["metrics"]) and a["tc_exact"] == b["tc_exact"]

    assert invoke("export", done_run, "--format", "csv", "--out", tmp_path / "e.csv").exit_code == 0
    with open(tmp_path / "e.csv", newline="") as f:
        cs = list(csv.DictReader(f))
    assert len(cs) == 18 and "protocol" in cs[0] and "tc_exact" in cs[0]
    assert sorted(json.loads(c["trajectory"]) for c in cs) == sorted(json.loads(b["trajectory"]) for b in rows)
    assert {c["tc"] for c in cs} == {""}  # NULL -> empty cell

    pq = pytest.importorskip("pyarrow.parquet")
    assert invoke("export", done_run, "--format", "parquet", "--out", tmp_path / "e.parquet").exit_code == 0
    t = pq.read_table(tmp_path / "e.parquet")
    pa = pytest.importorskip("pyarrow")
    assert t.num_rows == 18
    assert pa.types.is_list(t.schema.field("trajectory").type)
    assert t.schema.field("trajectory").type.value_type == pa.string()
    assert t.schema.field("actions").type.value_type == pa.int64()
    d = t.to_pylist()
    assert sorted(x["trajectory"] for x in d) == sorted(json.loads(b["trajectory"]) for b in rows)
    assert sorted(x["goal_dist_m"] for x in d) == sorted(b["goal_dist_m"] for b in rows)


def test_parquet_without_pyarrow(done_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    r = invoke("export", done_run, "--format", "parquet", "--out", tmp_path / "x.parquet")
    assert r.exit_code == 2 and "pip install 'urbanarena[export]'" in r.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_agent_errors_are_counted_and_retried(inputs, tmp_path):
    root, city_dir, task_path, city, tf = inputs
    args = ["run", "--city", city_dir, "--tasks", task_path, "--agent", "runner_util:FailingAgent", "-p", "fail_at=1",
            "--seeds", 1, "--limit", 3, "--out", tmp_path / "err"]
    r = invoke(*args)
    # the run exits with its own status (docs/runs.md) and says how many errored, the first error and the retry
    assert r.exit_code == 5 and "3 episodes run, 0 skipped, 3 agent errors" in r.stdout
    assert "errors: 3 of 3 episodes ended in an agent or environment error" in r.stdout
    assert "RuntimeError: model API failed at step 1" in r.stdout.split("first:")[1]
    assert r.stdout.rstrip().endswith("--retry-errors") and "with: urbanarena run --city" in r.stdout
    meta = json.loads((tmp_path / "err" / "run.json").read_text())
    assert meta["status"] == "finished" and meta["episodes"]["errored"] == 3
    first = {x["task_id"]: x["finished_at"] for x in db_rows(tmp_path / "err")}
    assert all(x["stop_reason"] == "error" for x in db_rows(tmp_path / "err"))
    s = json.loads(invoke("summary", tmp_path / "err", "--json").stdout)
    assert s["errors"] == 3 and s["stop_reasons"] == {"error": 3}
    r = invoke(*args, "--retry-errors")
    assert r.exit_code == 5 and "3 episodes run, 0 skipped" in r.stdout  # the agent still fails
    # a rerun without --retry-errors runs nothing, but the stored errors still make the exit status
    r = invoke(*args)
    assert r.exit_code == 5 and "0 episodes run, 3 skipped" in r.stdout and "errors: 3 of 3" in r.stdout
    again = db_rows(tmp_path / "err")
    assert len(again) == 3 and all(first[x["task_id"]] < x["finished_at"] for x in again)


def test_city_info_and_protocols(inputs):
    root, city_dir, task_path, city, tf = inputs
    r = invoke("city", "info", city_dir, "--json")
    assert r.exit_code == 0
    info = json.loads(r.stdout)
    n = 4
    lats = [d["lat"] for _, d in city.graph.nodes(data=True)]
    lons = [d["lon"] for _, d in city.graph.nodes(data=True)]
    assert info["nodes"] == n * n and info["edges"] == 4 * n * (n - 1) and info["components"] == 1
    assert info["bbox"] == [min(lons), min(lats), max(lons), max(lats)]
    assert info["directory"] == str(city_dir)
    r = invoke("city", "info", city_dir)
    assert r.exit_code == 0 and "nodes" in r.stdout
    r = invoke("protocols", "--json")
    listed = json.loads(r.stdout)
    assert set(listed) == set(PROTOCOLS) >= {"cityseeker-v1", "touchdown-v1", "urbanarena-graph-v1"}
    assert listed["cityseeker-v1"]["faithful_to"] == "CitySeeker"
    assert "cityseeker-v1" in invoke("protocols").stdout


def test_city_import_by_name(inputs):
    root, city_dir, task_path, city, tf = inputs
    r = invoke("city", "import", city_dir, "--name", "gridtown")
    assert r.exit_code == 0 and "16 nodes" in r.stdout
    assert "gridtown" in invoke("city", "list").stdout
    info = json.loads(invoke("city", "info", "gridtown", "--json").stdout)
    assert info["content_hash"] == city.content_hash


# ----------------------------------------------------------------- bad input
def _bad_inputs(root, city, tf):
    other = grid_city(3, name="elsewhere")
    wrong_city = grid_tasks(other, 2).save(root / "wrong_city.json")
    trunc = root / "truncated.json"
    trunc.write_text(tf.model_dump_json()[:200])
    return wrong_city, trunc


@pytest.mark.parametrize("case", [
    "unknown_city", "wrong_city_tasks", "truncated_tasks", "unknown_agent", "unknown_protocol",
    "protocol_for_other_style", "zero_seeds", "unknown_task_kind", "bad_param", "agent_bad_param", "zero_workers",
])
def test_bad_input_is_one_line_and_leaves_no_run_dir(case, inputs, tmp_path):
    root, city_dir, task_path, city, tf = inputs
    wrong_city, trunc = _bad_inputs(tmp_path, city, tf)
    args = {"--city": city_dir, "--tasks": task_path, "--agent": "random", "--seeds": 1}
    extra: list = []
    expect = ""
    if case == "unknown_city":
        args["--city"], expect = "atlantis", "unknown city 'atlantis'"
    elif case == "wrong_city_tasks":
        args["--tasks"], expect = wrong_city, f"{wrong_city} [city.content_hash]"
    elif case == "truncated_tasks":
        args["--tasks"], expect = trunc, f"{trunc} [line 1]: invalid JSON"
    elif case == "unknown_agent":
        args["--agent"], expect = "telepath", "unknown agent 'telepath'"
    elif case == "unknown_protocol":
        extra, expect = ["--protocol", "warp-v9"], "unknown protocol 'warp-v9'"
    elif case == "protocol_for_other_style":
        extra, expect = ["--protocol", "touchdown-v1"], "protocol 'touchdown-v1' has no 'heading'-style action rule"
    elif case == "zero_seeds":
        args["--seeds"], expect = 0, "--seeds must be >= 1"
    elif case == "unknown_task_kind":
        args["--tasks"], expect = "klingon:/x", "unknown task format 'klingon'"
    elif case == "bad_param":
        extra, expect = ["-p", "novalue"], "expected KEY=VALUE"
    elif case == "agent_bad_param":
        extra, expect = ["-p", "warp=9"], "agent 'random'"
    elif case == "zero_workers":
        extra, expect = ["--workers", "0"], "--workers must be >= 1"
    out = tmp_path / "never"
    flat = [x for kv in args.items() for x in kv]
    r = runner.invoke(app, [str(a) for a in ["run", *flat, "--out", out, *extra]])
    assert r.exit_code == 2, r.output
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], r.stderr
    assert "Traceback" not in r.output
    assert not out.exists()


def test_summary_and_export_of_a_non_run(tmp_path):
    r = invoke("summary", tmp_path)
    assert r.exit_code == 2 and r.stderr.startswith("error: ") and "no run store" in r.stderr
    r = invoke("export", tmp_path, "--format", "xml", "--out", tmp_path / "x")
    assert r.exit_code == 2 and "unknown export format 'xml'" in r.stderr


def test_concurrent_run_into_same_dir_is_refused(inputs, tmp_path):
    fcntl = pytest.importorskip("fcntl")
    root, city_dir, task_path, city, tf = inputs
    out = tmp_path / "busy"
    out.mkdir()
    with open(out / ".lock", "w") as held:  # another driver holds the RUN_DIR lock
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        held.write("4242")
        held.flush()
        r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "forward", "--limit", 1, "--out", out)
    assert r.exit_code == 2 and "another urbanarena run is writing here (pid 4242)" in r.stderr
    assert not (out / "episodes.sqlite").exists()
    r = invoke("run", "--city", city_dir, "--tasks", task_path, "--agent", "forward", "--limit", 1, "--out", out)
    assert r.exit_code == 0 and "1 episodes run" in r.stdout


def test_unwritable_out_is_a_one_line_error(inputs, tmp_path):
    root, city_dir, task_path, city, tf = inputs
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for out in (blocker, blocker / "sub"):
        r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_path), "--agent", "forward",
                                "--out", str(out)])
        assert r.exit_code == 2 and r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.output
        assert "Traceback" not in r.output
