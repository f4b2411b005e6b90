"""Regression tests for bugs found by a fresh-eyes pass over issues 8 (runs, bench, Ray) and 9 (Panoramax).

Each case once ended in a traceback, a hang or a silently accepted bad value; each must now be one
``error: ...`` line and exit status 2, with nothing written:

* ``bench --out`` naming a directory or a path whose folder cannot be created (was a traceback after
  the measurements);
* ``run --requests-per-min inf`` (was accepted and wrote ``Infinity``, invalid JSON, into run.json);
* ``run --max-usd nan|inf`` and ``-p max_usd=-1`` / ``-p max_requests=0`` (the ``-p`` forms skipped the
  checks and stopped at the cap with exit 3 after creating RUN_DIR);
* ``run --backend ray --ray-address HOST:PORT`` with nothing listening (``ray.init`` waited > 5 min);
* ``city from-panoramax --max-items 0`` (pystac-client's bare ``Exception`` escaped as a traceback);
* ``run --help`` lost ``[ray]`` of ``pip install 'urbanarena[ray]'`` to rich markup.
"""

from __future__ import annotations

import math
import socket
import time

import pytest
from typer.testing import CliRunner

from urbanarena.agents.clients.rate_limit import RateLimits
from urbanarena.cli.main import app


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def invoke(*args, **kw):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False, **kw)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from test_run_vlm_arena import make_inputs

    root = tmp_path_factory.mktemp("breaker")
    city_dir, task_file = make_inputs(root)
    return city_dir, task_file


def vlm_run(city_dir, task_file, out, *extra):
    # the endpoint is never contacted: every case fails before the run starts
    return invoke("run", "--city", city_dir, "--tasks", task_file, "--agent", "vlm-arena",
                  "--model", f"openai-compatible:http://127.0.0.1:{closed_port()}/v1:fake", "--out", out, *extra)


def test_bench_out_refused_before_measuring(tmp_path):
    t0 = time.monotonic()
    r = invoke("bench", "cut", "--quick", "--out", tmp_path)
    assert r.exit_code == 2 and "error: --out" in r.output and "is a directory" in r.output, r.output
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    r = invoke("bench", "cut", "--quick", "--out", blocker / "sub" / "b.json")
    assert r.exit_code == 2 and "error: --out" in r.output and "cannot create its folder" in r.output, r.output
    assert time.monotonic() - t0 < 20  # refused up front, not after the measurement


def test_rate_limits_must_be_finite():
    for bad in (math.inf, math.nan, 0.0, -1.0):
        with pytest.raises(ValueError, match="requests_per_min must be > 0 and finite"):
            RateLimits(requests_per_min=bad)
        with pytest.raises(ValueError, match="tokens_per_min must be > 0 and finite"):
            RateLimits(tokens_per_min=bad)
    assert RateLimits(requests_per_min=60.0).requests_per_min == 60.0


@pytest.mark.parametrize("extra, msg", [
    (("--requests-per-min", "inf"), "--requests-per-min: requests_per_min must be > 0 and finite (got inf)"),
    (("--max-usd", "nan"), "--max-usd must be > 0 and finite (got nan)"),
    (("--max-usd", "inf"), "--max-usd must be > 0 and finite (got inf)"),
    (("-p", "max_usd=-1"), "--max-usd must be > 0 and finite (got -1.0)"),
    (("-p", 'max_usd="x"'), "--max-usd 'x': expected a number"),
    (("-p", "max_requests=0"), "--max-requests must be >= 1 (got 0)"),
    (("-p", "max_requests=2.5"), "--max-requests 2.5: expected a whole number"),
])
def test_bad_limits_exit_2_before_run_dir(inputs, tmp_path, extra, msg):
    city_dir, task_file = inputs
    out = tmp_path / "run"
    r = vlm_run(city_dir, task_file, out, *extra)
    assert r.exit_code == 2 and f"error: {msg}" in r.output, r.output
    assert not out.exists()


def test_ray_address_with_nothing_listening_fails_fast(inputs, tmp_path):
    from urbanarena.runner.ray_backend import RayUnavailableError, probe_gcs_address

    port = closed_port()
    with pytest.raises(RayUnavailableError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        probe_gcs_address(f"127.0.0.1:{port}", timeout_s=5)
    for left_to_ray in (None, "auto", "local", "ray://127.0.0.1:1"):
        probe_gcs_address(left_to_ray)  # no probe: ray.init answers these quickly itself
    pytest.importorskip("ray", reason="the CLI path needs Ray (extra 'ray')")
    city_dir, task_file = inputs
    t0 = time.monotonic()
    r = vlm_run(city_dir, task_file, tmp_path / "run", "--backend", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert r.exit_code == 2 and f"error: cannot reach the Ray cluster at 127.0.0.1:{port}" in r.output, r.output
    assert time.monotonic() - t0 < 60


def test_from_panoramax_max_items_below_one(tmp_path):
    pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")
    import panoramax_util as U

    bbox = ",".join(f"{v:.7f}" for v in U.bbox())
    for n in ("0", "-4"):
        r = invoke("city", "from-panoramax", "--bbox", bbox, "--osm", U.GRID_OSM, "--name", "pmxbrk",
                   "--instance", f"http://127.0.0.1:{closed_port()}", "--max-items", n,
                   "--cache-dir", tmp_path / "c", env={"URBANARENA_HOME": str(tmp_path / "home")})
        assert r.exit_code == 2 and f"error: max_items must be >= 1 (or None for all), got {n}" in r.output, r.output
    assert not (tmp_path / "home" / "cities" / "pmxbrk").exists()


def test_run_help_keeps_the_ray_extra():
    r = invoke("run", "--help", env={"COLUMNS": "400"})
    assert r.exit_code == 0
    assert "pip install 'urbanarena[ray]'" in r.output, r.output


def test_from_panoramax_silent_server_gives_up_after_retries(tmp_path):
    """A server that accepts connections and never answers: --timeout-s / --retries bound the attempts;
    the build ends with exit 2 naming the instance, after exactly 1 + retries connections."""
    pytest.importorskip("pystac_client", reason="the Panoramax client needs pystac-client (extra 'panoramax')")
    import threading

    import panoramax_util as U

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            accepted.append(conn)  # kept open, never answered

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        bbox = ",".join(f"{v:.7f}" for v in U.bbox())
        r = invoke("city", "from-panoramax", "--bbox", bbox, "--osm", U.GRID_OSM, "--name", "pmxsilent",
                   "--instance", f"http://127.0.0.1:{port}", "--timeout-s", "0.3", "--retries", "1",
                   "--cache-dir", tmp_path / "c", env={"URBANARENA_HOME": str(tmp_path / "home")})
    finally:
        stop.set()
        t.join(timeout=5)
        for c in accepted:
            c.close()
        srv.close()
    assert r.exit_code == 2 and "error:" in r.output and f"127.0.0.1:{port}" in r.output, r.output
    assert len(accepted) == 2  # the first try and one retry
    for bad in (("--timeout-s", "0"), ("--retries", "-1")):
        r = invoke("city", "from-panoramax", "--bbox", bbox, "--osm", U.GRID_OSM, "--name", "pmxsilent",
                   "--instance", f"http://127.0.0.1:{port}", *bad, env={"URBANARENA_HOME": str(tmp_path / "home")})
        assert r.exit_code == 2 and "error:" in r.output, r.output
