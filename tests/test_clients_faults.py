"""Transport faults injected by the fake servers are retried by our policy and counted by type."""

from __future__ import annotations

import email.utils
import hashlib
import random
import time

import pytest

from fakes import FakeAnthropicServer, FakeOpenAIServer
from urbanarena.agents.clients import Message, ModelRequest, RetryPolicy, UsageCounters, make_client
from urbanarena.agents.clients.errors import ModelTransportError
from urbanarena.agents.clients.retry import parse_retry_after

FAST = RetryPolicy(max_retries=4, backoff_initial_s=0.01, backoff_factor=2.0, jitter_frac=0.0)
CLIENT_TIMEOUT_S = 0.4


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-faults-0001")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-faults-0002")


def echo_script(body, n):
    """Reply determined by the request text only (so it does not depend on which attempt got through)."""
    texts = []
    for m in body["messages"]:
        c = m["content"]
        texts += [c] if isinstance(c, str) else [p["text"] for p in c if p["type"] == "text"]
    return "ACTION " + hashlib.sha256("|".join(texts).encode()).hexdigest()[:8]


PROVIDERS = {
    "openai": (FakeOpenAIServer, "openai:{url}:gpt-4o"),
    "anthropic": (FakeAnthropicServer, "anthropic:{url}:claude-haiku-4-5"),
}
# arrival index -> fault; 5 logical requests need 5 clean arrivals among these
PLAN = [None, "timeout", "http_429", None, "http_500", "connection", "http_503", None, "http_529", "timeout", None, None]


def run_episode(provider: str, fault_plan: list[str | None]):
    server_cls, spec = PROVIDERS[provider]
    srv = server_cls(echo_script, fault_plan=fault_plan, timeout_sleep_s=2 * CLIENT_TIMEOUT_S, retry_after="1", retry_after_ms="30")
    with srv:
        client = make_client(spec.format(url=srv.base_url), timeout_s=CLIENT_TIMEOUT_S, retry=FAST)
        counters = UsageCounters()
        replies = [client.complete(ModelRequest([Message("user", f"step {k}: where now?")]), counters) for k in range(5)]
        client.close()
    return replies, counters, srv


def comparable(reply):
    d = reply.content_fields()
    d.pop("latency_s")
    return d


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_injected_faults_are_retried_counted_and_do_not_change_replies(provider):
    replies, counters, srv = run_episode(provider, PLAN)
    clean_replies, clean_counters, clean_srv = run_episode(provider, [])
    # every injected fault was seen and counted under its own type
    assert dict(srv.injected) == {"timeout": 2, "http_429": 1, "http_500": 1, "connection": 1, "http_503": 1, "http_529": 1}
    assert counters.faults == dict(srv.injected)
    d = counters.as_dict()
    assert d["retries"] == sum(srv.injected.values()) == 7
    assert d["http_attempts"] == len(srv.log) == 12
    assert d["requests"] == d["api_requests"] == 5 and d["gave_up"] == 0
    # arrivals 0 | 1-3 | 4-7 | 8-10 | 11 serve requests 0..4
    assert [r.attempts for r in replies] == [1, 3, 4, 3, 1]
    # the final replies equal those of the fault-free run (all but latency)
    assert [comparable(r) for r in replies] == [comparable(r) for r in clean_replies]
    assert clean_counters.faults == {} and len(clean_srv.log) == 5
    assert d["input_tokens"] == clean_counters.input_tokens and d["output_tokens"] == clean_counters.output_tokens


def test_retry_after_header_is_honoured():
    srv = FakeOpenAIServer(echo_script, fault_plan=["http_429"], retry_after="1")  # seconds, no retry-after-ms
    with srv:
        client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST)
        t0 = time.perf_counter()
        reply = client.complete(ModelRequest([Message("user", "go")]))
        elapsed = time.perf_counter() - t0
        client.close()
    assert reply.attempts == 2
    # our own backoff would have waited 0.01 s; the server asked for 1 s
    assert 1.0 <= elapsed < 30.0  # waited at least the server's 1 s (the upper bound only catches a hang)


def test_retries_are_bounded_and_the_client_recovers():
    policy = RetryPolicy(max_retries=2, backoff_initial_s=0.01, jitter_frac=0.0)
    srv = FakeOpenAIServer(echo_script, fault_plan=["http_503"] * 3)
    with srv:
        client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=policy)
        counters = UsageCounters()
        with pytest.raises(ModelTransportError) as e:
            client.complete(ModelRequest([Message("user", "go")]), counters)
        assert e.value.fault_type == "http_503" and e.value.attempts == 3
        assert len(srv.log) == 3
        # the plan is used up: the next call goes through
        reply = client.complete(ModelRequest([Message("user", "go")]), counters)
        client.close()
    assert reply.text == echo_script({"messages": [{"content": "go"}]}, 0)
    d = counters.as_dict()
    assert (d["fault_http_503"], d["gave_up"], d["retries"], d["requests"], d["http_attempts"]) == (3, 1, 2, 1, 4)


def test_connection_refused_is_a_connection_fault():
    srv = FakeOpenAIServer(echo_script).start()
    url = srv.base_url
    srv.stop()  # nothing listens on the port any more
    client = make_client(f"openai:{url}:gpt-4o", timeout_s=2, retry=RetryPolicy(max_retries=1, backoff_initial_s=0.01, jitter_frac=0))
    counters = UsageCounters()
    with pytest.raises(ModelTransportError) as e:
        client.complete(ModelRequest([Message("user", "go")]), counters)
    client.close()
    assert e.value.fault_type == "connection"
    assert counters.faults == {"connection": 2}


def test_backoff_schedule():
    p = RetryPolicy(backoff_initial_s=0.5, backoff_factor=2.0, backoff_max_s=3.0, jitter_frac=0.0, retry_after_max_s=5.0)
    assert [p.delay_s(k) for k in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert p.delay_s(0, retry_after_s=2.5) == 2.5  # server asks for longer: honoured
    assert p.delay_s(3, retry_after_s=0.1) == 3.0  # server asks for less: our backoff stands
    assert p.delay_s(0, retry_after_s=60.0) == 5.0  # capped
    assert RetryPolicy(honour_retry_after=False, backoff_initial_s=0.5, jitter_frac=0.0).delay_s(0, 30.0) == 0.5
    j = RetryPolicy(backoff_initial_s=1.0, jitter_frac=0.1)
    rng = random.Random(0)
    delays = [j.delay_s(0, rng=rng) for _ in range(200)]
    assert all(1.0 <= d <= 1.1 for d in delays) and max(delays) - min(delays) > 0.05


def test_parse_retry_after_forms():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after": "7", "retry-after-ms": "1500"}) == 1.5
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None and parse_retry_after(None) is None
