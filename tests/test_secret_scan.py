"""Secret scan, extended (issue 8): with fake API keys in the environment, no key (nor its tail) appears in
what a run, its report, the benchmarks or Ray leave behind.

The scan of issue 3 (``test_clients_secrets``, ``test_run_vlm_replay``) covers the clients' files and a
run's store, exports, traces, logs and cache. Here:

* a run with injected transport *and* content faults (retries, re-asks and parse errors are logged and
  stored), step limits reached, then ``urbanarena report`` over it with the LLM failure classifier (a
  second key, used by the report itself), ``summary --json``, the exports and the cache bundle: every
  file under the run folder and the report, and every command's output;
* ``urbanarena bench sweep --quick --out FILE`` with the key in the environment (its model client sends
  it to the bench's own fake server): the JSON it writes, its output, and whatever it leaves in its
  temporary folder;
* ``--backend ray`` on a local cluster whose session folder (raylet, GCS and worker logs) we choose:
  a run whose workers meet faults and give up on one request (the error is logged by the worker and
  stored), then the whole session folder and the run folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes import CONTENT_FAULTS, TRANSPORT_FAULTS, FakeOpenAIServer, FaultSchedule
from test_run_vlm_arena import db_rows, invoke, make_inputs, run_args, script

RUN_KEY = "sk-urbanarena-SCAN-7c1d9e2f4a6b8c0d"
CLASSIFIER_KEY = "sk-proj-SCAN-CLASSIFIER-3e5a7c9b1d2f"
BENCH_KEY = "sk-urbanarena-BENCH-5b7d9f1a3c5e7a9b"
RAY_KEY = "sk-urbanarena-RAY-2a4c6e8a0b2d4f6a"
FAST = ("-p", 'retry={"max_retries": 6, "backoff_initial_s": 0, "jitter_frac": 0}', "-p", "timeout_s=3")


def scan(roots, keys, texts=()) -> int:
    """Assert that no file under ``roots`` (and no string in ``texts``) holds a key or its last 12
    characters; returns the number of files read."""
    n = 0
    for root in roots:
        root = Path(root)
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
        for p in files:
            if p.name.endswith(".sock"):
                continue
            try:
                data = p.read_bytes()
            except OSError:
                continue
            n += 1
            for key in keys:
                assert key.encode() not in data, f"{key[:14]}... found in {p}"
                assert key[-12:].encode() not in data, f"tail of {key[:14]}... found in {p}"
    for t in texts:
        for key in keys:
            assert key not in t and key[-12:] not in t
    return n


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("secret_scan")
    return (root, *make_inputs(root))


def classifier_script(body, n):
    return json.dumps({"cause": "Planning", "why": "it ran out of steps"})


def test_run_report_exports_and_logs_hold_no_key(inputs, monkeypatch):
    root, city_dir, task_file = inputs
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", RUN_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", CLASSIFIER_KEY)
    out = root / "run"
    outputs = []
    sch = FaultSchedule(rate=0.5, kinds=TRANSPORT_FAULTS[1:] + CONTENT_FAULTS, seed=4)  # (no timeouts: fast)
    with FakeOpenAIServer(script, api_key=RUN_KEY, fault_schedule=sch, retry_after="0") as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--workers", 2, "--trace",
                             "--protocol", "urbanarena-v1", "--max-steps", 4, "--max-requests", 1000, *FAST))
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
        assert srv.log and all(x.auth_ok for x in srv.log)  # the key was really sent
        assert srv.injected_of(TRANSPORT_FAULTS) and srv.injected_of(CONTENT_FAULTS)
    log = (out / "run.log").read_text()
    assert "retry" in log  # the faults were logged
    report = root / "report" / "report.html"
    with FakeOpenAIServer(classifier_script, api_key=CLASSIFIER_KEY) as judge:
        r = invoke("report", out, "--out", report, "--maps", 1, "--resamples", 50, "--bootstrap", 100,
                   "--failure-classifier", f"openai:{judge.base_url}:gpt-4o-mini")
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
        assert judge.log and all(x.auth_ok for x in judge.log)  # the report's classifier sent its key
    html = report.read_text()
    assert "Failure causes by the LLM classifier" in html and "gpt-4o-mini" in html  # its labels are in the report
    for fmt, name in (("csv", "e.csv"), ("jsonl", "e.jsonl"), ("cityarena-csv", "results.csv")):
        r = invoke("export", out, "--format", fmt, "--out", out / "exports" / name)
        assert r.exit_code == 0, r.output
    r = invoke("summary", out, "--json", "--resamples", 20)
    assert r.exit_code == 0
    outputs.append(r.output)
    faults = json.loads(r.stdout)["faults"]
    assert faults["transport_total"] > 0 and faults["content_total"] > 0
    assert invoke("cache-export", out / "responses.sqlite", "--out", out / "bundle").exit_code == 0
    n = scan([out, report.parent], [RUN_KEY, CLASSIFIER_KEY], outputs)
    assert n > 20


def test_benchmark_outputs_hold_no_key(tmp_path, monkeypatch):
    import typer

    from urbanarena.cli.main import app as main_app

    names = {c.name or (c.callback.__name__ if c.callback else "") for c in main_app.registered_commands}
    if "bench" in names:
        app = main_app
    else:  # registered by the lead in cli/main.py; until then the command module alone
        from urbanarena.cli.bench_cmd import bench

        app = typer.Typer()
        app.command("bench")(bench)
        app.command("version")(lambda: None)  # (a second command keeps "bench" a subcommand)
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", BENCH_KEY)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the sweep's child process puts its run folders here
    out = tmp_path / "bench" / "sweep.json"
    r = CliRunner().invoke(app, ["bench", "sweep", "--quick", "--json", "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    result = json.loads(out.read_text())
    walls = [k for k in result if k.startswith("sweep_wall_s_")]
    assert walls and all(result[k] for k in walls)  # the sweep really ran its model requests
    scan([out.parent, tmp], [BENCH_KEY], [r.output])


def test_ray_session_logs_hold_no_key(inputs, tmp_path):
    ray = pytest.importorskip("ray", reason="the Ray backend needs the ray extra: pip install 'urbanarena[ray]'")
    _, city_dir, task_file = inputs
    saved = {k: os.environ.get(k) for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY")}
    os.environ["OPENAI_COMPATIBLE_API_KEY"] = RAY_KEY  # the workers inherit the driver's environment
    os.environ.pop("OPENAI_API_KEY", None)
    session = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    out = tmp_path / "ray-run"
    try:
        ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", _temp_dir=session,
                 log_to_driver=False)
        # the first request to arrive is rejected (HTTP 400: not retried), so one episode fails with an error
        # its worker reports; the others meet the schedule's faults and recover
        plan = ["http_400"]
        sch = FaultSchedule(rate=0.4, kinds=TRANSPORT_FAULTS[1:] + CONTENT_FAULTS, seed=9)
        with FakeOpenAIServer(script, api_key=RAY_KEY, fault_plan=plan, fault_schedule=sch,
                              retry_after="0") as srv:
            r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 2, "--backend", "ray",
                                 "--workers", 2, "--trace", *FAST))
            assert srv.log and all(x.auth_ok for x in srv.log)
        assert r.exit_code == 5, r.output  # some episodes errored (docs/runs.md)
        assert "1 agent errors" in r.output
        ray.shutdown()
        logs = [p for p in Path(session).rglob("*") if p.is_file() and p.suffix in (".out", ".err", ".log")]
        assert any(p.name.startswith("worker-") for p in logs)
        # the rejection travelled from the worker into the store, with the server's message
        errors = [x for x in db_rows(out) if x["stop_reason"] == "error"]
        assert len(errors) == 1 and "HTTP 400: injected http_400" in (errors[0]["error"] or "")
        n = scan([session, out], [RAY_KEY], [r.output])
        assert n > 10
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(session, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
