"""``--concurrency``: many episodes of a VLM agent in flight at once, and the same store as one at a
time.

The fake server holds the first arriving requests at a gate until ``target`` of them are inside the
server at the same moment (or 30 s pass), then releases them all. The peak number of simultaneous
requests it saw is the proof that nothing in the run serialises the model calls (no global lock,
no connection pool smaller than the concurrency, no serial store writes in the way): with
``--concurrency 8`` the peak is 8, and with ``--backend processes --workers 2 --concurrency 4`` (two
processes of four threads) it is 8 too. No wall-clock assertion: a serialising run does not fail by being slow, it fails by never
having 8 requests in the server at once.

Inputs: the T-junction city and the two cityarena tasks of ``test_run_vlm_arena`` (the reply is a
function of the request, so concurrent episodes get the replies sequential ones get).
"""

from __future__ import annotations

import threading

import pytest

from fakes import FakeOpenAIServer
from test_run_vlm_arena import db_rows, invoke, make_inputs, run_args, script, stable


class GatedServer(FakeOpenAIServer):
    """FakeOpenAIServer that holds replies until ``target`` requests are in the server at once."""

    def __init__(self, *a, target: int, **kw):
        super().__init__(*a, **kw)
        self.target = target
        self.inside = 0
        self.peak = 0
        self.released = False
        self.cond = threading.Condition()

    def reply_body(self, body, reply, n):
        with self.cond:
            self.inside += 1
            self.peak = max(self.peak, self.inside)
            if self.inside >= self.target:
                self.released = True
                self.cond.notify_all()
            if not self.released:
                self.cond.wait_for(lambda: self.released, timeout=30.0)
                self.released = True  # a timed-out gate opens for good (the test then fails on the peak)
        try:
            return super().reply_body(body, reply, n)
        finally:
            with self.cond:
                self.inside -= 1


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for k in ("OPENAI_COMPATIBLE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("conc")
    city_dir, task_file = make_inputs(root)
    return root, city_dir, task_file


@pytest.fixture(scope="module")
def sequential(inputs):
    root, city_dir, task_file = inputs
    out = root / "seq"
    with FakeOpenAIServer(script) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 4, "--cache", "off"))
    assert r.exit_code == 0, r.output
    return [stable(x) for x in db_rows(out)]


@pytest.mark.parametrize("flags, target, backend", [
    (("--concurrency", 8), 8, "threads"),
    (("--backend", "processes", "--workers", 2, "--concurrency", 4), 8, "process-pool"),
])
def test_episodes_in_flight_reach_the_concurrency_and_store_the_same_rows(inputs, sequential, flags, target,
                                                                          backend):
    import json

    root, city_dir, task_file = inputs
    out = root / f"run-{backend}"
    with GatedServer(script, target=target) as srv:
        r = invoke(*run_args(city_dir, task_file, out, srv.base_url, "--seeds", 4, "--cache", "off", *flags))
        peak = srv.peak
    assert r.exit_code == 0, r.output
    assert peak == target  # 2 tasks x 4 seeds = 8 episodes: all of them asked the model at once
    rows = [stable(x) for x in db_rows(out)]
    assert len(rows) == 8 and rows == sequential
    meta = json.loads((out / "run.json").read_text())
    assert meta["backend"] == backend and meta["concurrency"] == flags[-1]


def test_concurrency_flag_checks(inputs, tmp_path):
    _, city_dir, task_file = inputs
    for extra, msg in [(("--concurrency", 0), "--concurrency must be >= 1"),
                       (("--backend", "in-process", "--concurrency", 2), "runs one episode at a time"),
                       (("--ray-address", "auto"), "--ray-address needs --backend ray")]:
        r = invoke(*run_args(city_dir, task_file, tmp_path / "x", "http://127.0.0.1:9/v1", *extra))
        assert r.exit_code == 2 and msg in r.output, r.output
        assert not (tmp_path / "x").exists()
