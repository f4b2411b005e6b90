"""Per-provider rate limits (urbanarena.agents.clients.rate_limit) on a fake clock: hand-worked
admission times, the window bound checked by brute force over a seeded arrival pattern, token
reservations corrected by the reported usage, a 429's Retry-After pausing the shared limiter, and
the runner's flags. No wall-clock assertion anywhere."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeOpenAIServer, ScriptedReply
from urbanarena.agents.clients import GenerationSettings, Message, ModelRequest, RetryPolicy, make_client
from urbanarena.agents.clients import rate_limit
from urbanarena.agents.clients.rate_limit import RateLimiter, RateLimits


class FakeClock:
    """A clock that moves only when something sleeps on it."""

    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def limiter(clock: FakeClock, **kw) -> RateLimiter:
    return RateLimiter(RateLimits(**kw), clock=clock, sleep=clock.sleep)


def test_requests_per_min_hand_worked():
    # 120 requests/min = 2 per second, capacity one second's worth = 2: two pass at once, then one
    # every 0.5 s, in reservation order (FIFO)
    clk = FakeClock()
    lim = limiter(clk, requests_per_min=120)
    assert [lim.reserve() for _ in range(5)] == [0.0, 0.0, 0.5, 1.0, 1.5]
    clk.t = 10.0  # idle for a while: the bucket is full again (2), not more
    assert [lim.reserve() for _ in range(3)] == [0.0, 0.0, 0.5]


def test_window_bound_over_a_seeded_arrival_pattern():
    """Any window of T seconds admits at most burst + rate * T requests (module docstring)."""
    rng = np.random.default_rng(3)
    clk = FakeClock()
    rpm, burst_s = 90.0, 2.0  # 1.5/s, capacity 3
    lim = limiter(clk, requests_per_min=rpm, burst_s=burst_s)
    admitted = []
    arrivals = np.cumsum(rng.exponential(0.25, size=400))  # 4/s offered: far above the limit
    for a in arrivals:
        clk.t = max(clk.t, float(a))
        admitted.append(clk.t + lim.reserve())
    admitted = np.array(admitted)
    assert np.all(np.diff(admitted) >= -1e-12)  # FIFO
    rate = rpm / 60.0
    for T in (0.5, 1.0, 5.0, 60.0):
        # brute force: the most admissions in any closed window [t, t + T] starting at an admission
        most = max(int(np.searchsorted(admitted, t + T + 1e-9, side="right") - i) for i, t in enumerate(admitted))
        assert most <= burst_s * rate + rate * T + 1e-9
    # and it wastes nothing: while requests queue (admitted after they arrived), one is admitted every 1/rate s
    queued = admitted > arrivals + 1e-9
    both = queued[1:] & queued[:-1]
    assert both.sum() > 300
    assert np.allclose(np.diff(admitted)[both], 1.0 / rate)


def test_token_reservation_is_corrected_by_the_reported_usage():
    # 60 tokens/min = 1/s, burst 60 s = capacity 60. Each request reserves 50 and reports 10 used.
    clk = FakeClock()
    lim = limiter(clk, tokens_per_min=60, burst_s=60)
    waits = []
    for _ in range(3):
        waits.append(lim.acquire(50))
        lim.settle(50, 10)
    # 60 -> 10 (+40) = 50 -> 0 (+40) = 40 -> wait (50 - 40) / 1 = 10 s
    assert waits == [0.0, 0.0, 10.0] and clk.sleeps == [10.0]
    assert lim.tokens.level == pytest.approx(40.0)  # after the third: -10 + 10 s refill = 0, + 40 credit


def test_a_request_larger_than_the_bucket_waits_for_its_tokens():
    clk = FakeClock()
    lim = limiter(clk, tokens_per_min=600)  # 10/s, capacity 10
    assert lim.reserve(35) == pytest.approx(2.5)  # (35 - 10) / 10
    assert lim.reserve(5) == pytest.approx(3.0)  # behind it: level -25, needs 5 -> (5 + 25) / 10


def test_pause_holds_every_later_request():
    clk = FakeClock()
    lim = limiter(clk, requests_per_min=6000)
    lim.pause(4.0)
    clk.t = 1.0
    assert lim.reserve() == pytest.approx(3.0)
    with pytest.raises(ValueError):
        RateLimits(requests_per_min=0)
    with pytest.raises(ValueError):
        RateLimits(tokens_per_min=10, share=1.5)


def test_clients_of_one_endpoint_share_the_configured_limiter():
    rate_limit.clear()
    try:
        rate_limit.configure("openai-compatible", "http://127.0.0.1:9/v1", RateLimits(requests_per_min=60))
        a = make_client("openai-compatible:http://127.0.0.1:9/v1:m1")
        b = make_client("openai-compatible:http://127.0.0.1:9/v1:m2")
        c = make_client("openai-compatible:http://127.0.0.1:10/v1:m1")
        assert a.rate_limiter is not None and a.rate_limiter is b.rate_limiter
        assert c.rate_limiter is None  # another endpoint: not limited
        for x in (a, b, c):
            x.close()
        rate_limit.configure("openai-compatible", "http://127.0.0.1:9/v1", None)
        assert make_client("openai-compatible:http://127.0.0.1:9/v1:m1").rate_limiter is None
    finally:
        rate_limit.clear()


def _request(text: str = "abcdefgh") -> ModelRequest:
    return ModelRequest([Message("user", text)])


def test_client_reserves_estimated_tokens_and_settles_reported_usage():
    """Reservation = estimated input tokens (ceil(8 chars / 4) + 4 per message + 3 = 9) + max_output_tokens
    (41) = 50; the server reports 7 + 3 = 10 used."""
    clk = FakeClock()
    lim = limiter(clk, tokens_per_min=60, burst_s=60)
    with FakeOpenAIServer([ScriptedReply("ok", input_tokens=7, output_tokens=3)] * 3) as srv:
        client = make_client(f"openai-compatible:{srv.base_url}:m", rate_limiter=lim,
                             generation=GenerationSettings(max_output_tokens=41))
        for _ in range(3):
            client.complete(_request())
        client.close()
    assert clk.sleeps == [10.0]  # as in the hand-worked bucket test above
    assert lim.admitted == 3


def test_a_429_retry_after_pauses_the_shared_limiter():
    clk = FakeClock()
    lim = limiter(clk, requests_per_min=6000)  # never the bottleneck here
    retry_sleeps: list[float] = []
    with FakeOpenAIServer(["ok"], fault_plan=["http_429"], retry_after="3") as srv:
        client = make_client(f"openai-compatible:{srv.base_url}:m", rate_limiter=lim,
                             retry=RetryPolicy(max_retries=2, backoff_initial_s=0.0, jitter_frac=0.0))
        client.sleep = retry_sleeps.append  # the retry policy's own wait: recorded, the fake clock stays
        reply = client.complete(_request())
        client.close()
    assert reply.text == "ok" and reply.attempts == 2
    assert retry_sleeps == [3.0]  # the retry policy honoured Retry-After
    assert clk.sleeps == [3.0]  # and so did the limiter: the retry (and any other episode) waited for it
    assert lim.admitted == 2  # both HTTP attempts went through the limiter


def test_cli_rate_limit_flags(tmp_path):
    from typer.testing import CliRunner

    from runner_util import write_inputs
    from test_run_vlm_arena import make_inputs, run_args, script
    from urbanarena.cli.main import app

    runner = CliRunner()
    city_dir, task_path, _, _ = write_inputs(tmp_path / "g", n=3, n_tasks=1)
    r = runner.invoke(app, ["run", "--city", str(city_dir), "--tasks", str(task_path), "--agent", "random",
                            "--out", str(tmp_path / "r0"), "--requests-per-min", "60"])
    assert r.exit_code == 2 and "calls no model API: --requests-per-min" in r.output
    assert not (tmp_path / "r0").exists()
    root = tmp_path / "a"
    root.mkdir()
    city_dir, task_file = make_inputs(root)
    with FakeOpenAIServer(script) as srv:
        bad = runner.invoke(app, [str(a) for a in run_args(city_dir, task_file, tmp_path / "r1", srv.base_url,
                                                           "--tokens-per-min", "-5")])
        assert bad.exit_code == 2 and "tokens-per-min" in bad.output and not (tmp_path / "r1").exists()
        ok = runner.invoke(app, [str(a) for a in run_args(city_dir, task_file, tmp_path / "r2", srv.base_url,
                                                          "--requests-per-min", "6000", "-p", "tokens_per_min=1e6",
                                                          "--concurrency", "2")])
        url = srv.base_url
    assert ok.exit_code == 0, ok.output
    meta = json.loads((tmp_path / "r2" / "run.json").read_text())
    rl = meta["model_runtime"]["rate_limits"]
    assert rl == {"provider": "openai-compatible", "endpoint": url, "requests_per_min": 6000.0,
                  "tokens_per_min": 1e6, "burst_s": 1.0, "share": 1.0}
    assert meta["concurrency"] == 2 and meta["backend"] == "threads"
    assert "--requests-per-min 6000.0" in meta["command"] and "--concurrency 2" in meta["command"]
    # limits do not change replies: the agent's config (and so the config hash) carries no trace of them
    assert "per_min" not in json.dumps(meta["configs"])
    assert rate_limit.configured("openai-compatible", url) is None  # uninstalled after the run
