"""``--backend ray``: the same run on a local Ray cluster (``ray.init(num_cpus=2)``, bound to
127.0.0.1, no dashboard) stores the same rows as the local backend, and no API key reaches Ray's
logs, the RUN_DIR or the task arguments.

Compared: every column of every store row (and the ``configs`` table), except the wall-clock ones
(``started_at``, ``finished_at``, ``duration_s``, ``timings``, ``elapsed_seconds`` — the
store's ``TIME_COLUMNS``) and, inside the JSON columns, the latencies (``latency_s``,
``total_llm_latency_seconds`` / ``avg_llm_latency_seconds``: they are measured) — what
``test_run_vlm_arena.stable`` drops. Two runs: the ``random`` baseline on graph tasks
(in-process vs Ray) and the ``vlm-arena`` agent against a fake OpenAI-compatible server that
demands an API key (threads vs Ray; the workers read the key from their environment), whose
per-step traces (written by the workers under ``RUN_DIR/traces``) are compared too: images byte for
byte, ``steps.jsonl`` records without latencies.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra: pip install 'urbanarena[ray]'")

from fakes import FakeOpenAIServer  # noqa: E402
from runner_util import write_inputs  # noqa: E402
from test_run_vlm_arena import db_rows, invoke, make_inputs, run_args, script, stable  # noqa: E402
from vlm_util import strip_volatile  # noqa: E402

KEY = "sk-test-ray-3f9a1c7e5b"
KEY_VAR = "OPENAI_COMPATIBLE_API_KEY"


@pytest.fixture(scope="module")
def ray_cluster():
    """A local 2-CPU Ray cluster whose session files (logs) live in a temp folder we can scan."""
    saved = {k: os.environ.get(k) for k in (KEY_VAR, "OPENAI_API_KEY")}
    os.environ[KEY_VAR] = KEY  # the workers inherit the driver's environment at ray.init
    os.environ.pop("OPENAI_API_KEY", None)
    tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", _temp_dir=tmp,
             log_to_driver=False)
    try:
        yield Path(tmp)
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def configs(run_dir: Path) -> dict:
    con = sqlite3.connect(run_dir / "episodes.sqlite")
    out = {h: json.loads(c) for h, c in con.execute("SELECT config_hash, config FROM configs")}
    con.close()
    return out


def test_graph_run_on_ray_equals_in_process(ray_cluster, tmp_path):
    city_dir, task_path, _, _ = write_inputs(tmp_path, n=4, n_tasks=4)
    common = ["run", "--city", city_dir, "--tasks", task_path, "--agent", "random", "--seeds", 3,
              "--protocol", "urbanarena-graph-v1", "--max-steps", 10]
    a = invoke(*common, "--out", tmp_path / "local")
    b = invoke(*common, "--out", tmp_path / "ray", "--backend", "ray", "--workers", 2)
    assert a.exit_code == 0, a.output
    assert b.exit_code == 0, b.output
    local, onray = db_rows(tmp_path / "local"), db_rows(tmp_path / "ray")
    assert len(local) == 12
    assert [stable(r) for r in onray] == [stable(r) for r in local]
    assert configs(tmp_path / "ray") == configs(tmp_path / "local")
    assert len({r["trajectory"] for r in local}) > 4  # the seeds really differ
    meta = json.loads((tmp_path / "ray" / "run.json").read_text())
    assert meta["backend"] == "ray" and meta["status"] == "finished" and "--backend ray" in meta["command"]


def test_vlm_run_on_ray_equals_threads_and_leaks_no_key(ray_cluster, tmp_path):
    city_dir, task_file = make_inputs(tmp_path)
    outs = {}
    for name, extra in (("threads", ("--workers", 2)), ("ray", ("--backend", "ray", "--workers", 2))):
        with FakeOpenAIServer(script, api_key=KEY) as srv:
            r = invoke(*run_args(city_dir, task_file, tmp_path / name, srv.base_url, "--seeds", 2, "--trace", *extra))
            log = list(srv.log)
        assert r.exit_code == 0, r.output
        assert log and all(rec.auth_ok for rec in log)  # every request carried the key from the environment
        outs[name] = db_rows(tmp_path / name)
    assert len(outs["ray"]) == 4
    assert [stable(r) for r in outs["ray"]] == [stable(r) for r in outs["threads"]]
    assert configs(tmp_path / "ray") == configs(tmp_path / "threads")
    assert {r["stop_reason"] for r in outs["ray"]} == {"ANSWER"}
    # the traces the workers wrote: the same files; steps.jsonl equal up to latencies, images byte for byte
    trees = {name: {p.relative_to(tmp_path / name / "traces"): p for p in (tmp_path / name / "traces").rglob("*")
                    if p.is_file()} for name in outs}
    assert set(trees["ray"]) == set(trees["threads"]) and len(trees["ray"]) > 4 * 2
    for rel, p in trees["ray"].items():
        q = trees["threads"][rel]
        if p.suffix == ".jsonl":
            lines = [[strip_volatile(json.loads(x)) for x in f.read_text().splitlines()] for f in (p, q)]
            assert lines[0] == lines[1] and lines[0], rel
        else:
            assert p.read_bytes() == q.read_bytes(), rel
    # secret scan: Ray's session folder (worker and raylet logs, GCS files) and the RUN_DIR
    scanned = 0
    for root in (ray_cluster, tmp_path / "ray"):
        for p in root.rglob("*"):
            if p.is_file() and not p.is_symlink() and not p.name.endswith(".sock"):
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                scanned += 1
                assert KEY.encode() not in data, f"API key found in {p}"
    assert scanned > 10
    # the worker logs (their stdout/stderr) were among the files scanned
    assert any(p.name.startswith("worker-") and p.suffix in (".out", ".err") for p in ray_cluster.rglob("*"))
