"""The fake servers' seeded fault schedule and content faults, seen through the real SDKs and our clients.

* :class:`fakes.FaultSchedule` draws faults at the chosen rate from a pure function of
  (seed, request content, attempt): checked against a second implementation of the documented
  formula, against the binomial spread of the rate, and for reproducibility when the same requests
  arrive in another order from several threads.
* Content faults (truncated, malformed, empty, refusal, oversized) arrive as 200 replies that the
  client flags and the parsers reject with the documented failure type.
* ``Retry-After`` is honoured through the client's injectable sleep (no real waiting).
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import random
import threading

import pytest

from fakes import (
    CONTENT_FAULT_COUNTER, CONTENT_FAULTS, TRANSPORT_FAULTS, FakeAnthropicServer, FakeOpenAIServer, FaultSchedule,
)
from fakes.servers import MALFORMED_TEXT, OVERSIZE_FACTOR, REFUSAL_TEXT
from urbanarena.agents.clients import GenerationSettings, Message, ModelRequest, RetryPolicy, UsageCounters, make_client
from urbanarena.agents.clients.base import OVERSIZED_CHARS_PER_TOKEN, ModelClient
from urbanarena.agents.vlm.parsing import ECHO_MAX_CHARS, echo_text, parse_arena_reply, parse_stop_reply

NO_WAIT = RetryPolicy(max_retries=6, backoff_initial_s=0.0, jitter_frac=0.0)
GOOD = json.dumps({"thought": "the road continues north", "action": "W", "memory": "start", "answer": "LARGE"})


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-schedule-0001")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-schedule-0002")


def echo_script(body, n):
    """Reply determined by the request text only: a well-formed arena reply naming its hash."""
    texts = []
    for m in body["messages"]:
        c = m["content"]
        texts += [c] if isinstance(c, str) else [p["text"] for p in c if p["type"] == "text"]
    tag = hashlib.sha256("|".join(texts).encode()).hexdigest()[:8]
    return json.dumps({"thought": f"tag {tag}", "action": "W", "memory": "", "answer": "SMALL"})


def reference_draw(seed, key, attempt, rate, kinds):
    """Second implementation of the documented draw (FaultSchedule docstring)."""
    d = hashlib.sha256(f"{seed}:{key}:{attempt}".encode()).digest()
    u0 = int.from_bytes(d[:8], "big") / 2**64
    u1 = int.from_bytes(d[8:16], "big") / 2**64
    if u0 >= rate:
        return None
    edges = [sum(w for _, w in kinds[:i + 1]) / sum(w for _, w in kinds) for i in range(len(kinds))]
    return next(k for (k, _), e in zip(kinds, edges) if u1 < e)


# ------------------------------------------------------------------ the schedule
def test_schedule_matches_the_documented_formula_and_rate():
    sch = FaultSchedule(rate=0.3, kinds=TRANSPORT_FAULTS, seed=11, max_per_request=None)
    uniform = [(k, 1.0) for k in TRANSPORT_FAULTS]
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(4000)]
    draws = [sch.draw(k, a) for k in keys for a in range(5)]
    assert draws == [reference_draw(11, k, a, 0.3, uniform) for k in keys for a in range(5)]
    n = len(draws)
    faulted = sum(d is not None for d in draws)
    # binomial spread: within 4 standard deviations of the chosen rate
    assert abs(faulted / n - 0.3) < 4 * math.sqrt(0.3 * 0.7 / n)
    counts = collections.Counter(d for d in draws if d is not None)
    assert set(counts) == set(TRANSPORT_FAULTS)
    p = 1 / len(TRANSPORT_FAULTS)
    for k in TRANSPORT_FAULTS:
        assert abs(counts[k] / faulted - p) < 4 * math.sqrt(p * (1 - p) / faulted)
    # pure: same inputs, same draw; another seed, another schedule
    assert [sch.draw(k, 0) for k in keys[:200]] == [sch.draw(k, 0) for k in keys[:200]]
    other = FaultSchedule(rate=0.3, kinds=TRANSPORT_FAULTS, seed=12, max_per_request=None)
    assert sum(sch.draw(k, 0) != other.draw(k, 0) for k in keys[:400]) > 100


def test_weighted_kinds_cap_and_bad_arguments():
    w = FaultSchedule(rate=1.0, kinds={"http_429": 3.0, "timeout": 1.0, "empty": 0.0}, seed=3, max_per_request=None)
    draws = collections.Counter(w.draw(str(i), 0) for i in range(8000))
    assert set(draws) == {"http_429", "timeout"}  # weight 0 never drawn, rate 1 always faults
    assert abs(draws["http_429"] / 8000 - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 8000)
    capped = FaultSchedule(rate=1.0, kinds=["http_503"], max_per_request=3)
    assert [capped.decide("body", a) for a in range(6)] == ["http_503"] * 3 + [None] * 3
    # the cap counts the faults drawn for the key, not attempts: at rate 0.5 exactly 2 faults, then none
    half = FaultSchedule(rate=0.5, kinds=["connection"], seed=5, max_per_request=2)
    for key in ("a", "b", "c"):
        seq = [half.decide(key, a) for a in range(40)]
        raw = [half.draw(key, a) for a in range(40)]
        second = [i for i, d in enumerate(raw) if d is not None][1]
        assert seq[:second + 1] == raw[:second + 1] and seq[second + 1:] == [None] * (39 - second)
    for bad in (dict(rate=1.5), dict(rate=-0.1), dict(rate=0.3, kinds=[]), dict(rate=0.3, key="order")):
        with pytest.raises(ValueError):
            FaultSchedule(**bad)


def _send_all(srv, texts, threads, order_seed):
    """Send one request per text (in a shuffled order from ``threads`` threads); replies by text."""
    client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=1.0, retry=NO_WAIT)
    order = list(texts)
    random.Random(order_seed).shuffle(order)
    out, counters, lock = {}, UsageCounters(), threading.Lock()
    queue = list(order)

    def worker():
        while True:
            with lock:
                if not queue:
                    return
                t = queue.pop()
            r = client.complete(ModelRequest([Message("user", t)]), counters)
            with lock:
                out[t] = r
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    client.close()
    return out, counters


def test_same_logical_call_meets_the_same_faults_in_any_arrival_order():
    texts = [f"request {i}: which way now?" for i in range(24)]
    kinds = ("timeout", "connection", "http_429", "http_500", "http_503", *CONTENT_FAULTS)
    runs = []
    for threads, order_seed in ((1, 0), (6, 1)):
        sch = FaultSchedule(rate=0.3, kinds=kinds, seed=7)
        with FakeOpenAIServer(echo_script, fault_schedule=sch, timeout_sleep_s=1.6, retry_after="0") as srv:
            replies, counters = _send_all(srv, texts, threads, order_seed)
        per_body = collections.defaultdict(list)
        for rec in srv.log:
            per_body[rec.body_sha256].append((rec.attempt, rec.fault))
        runs.append((srv, replies, counters, {k: sorted(v) for k, v in per_body.items()}))
    (s1, r1, c1, b1), (s2, r2, c2, b2) = runs
    # the arrival orders differed, the faults per logical call did not
    assert [x.body_sha256 for x in s1.log] != [x.body_sha256 for x in s2.log]
    assert b1 == b2 and s1.injected == s2.injected
    assert set(s1.injected_of(TRANSPORT_FAULTS)) and set(s1.injected_of(CONTENT_FAULTS))
    # every arrival met the schedule's draw for (its body, its attempt number)
    sch = FaultSchedule(rate=0.3, kinds=kinds, seed=7)
    for rec in s1.log + s2.log:
        assert rec.fault == sch.decide(rec.body_sha256, rec.attempt)
    for seq in b1.values():
        assert [a for a, _ in seq] == list(range(len(seq)))
    # transport faults: counted by the client per type exactly as injected, and retried away
    assert c1.faults == s1.injected_of(TRANSPORT_FAULTS) and c2.faults == s2.injected_of(TRANSPORT_FAULTS)
    assert c1.retries == sum(s1.injected_of(TRANSPORT_FAULTS).values()) and c1.gave_up == 0
    content = s1.injected_of(CONTENT_FAULTS)
    for t in texts:
        assert r1[t].text == r2[t].text and r1[t].flags == r2[t].flags
    clean = {t: echo_script({"messages": [{"content": t}]}, 0) for t in texts}
    # content faults are replies (no retry): exactly the faulted calls got something else than the script
    assert sum(r1[t].text != clean[t] for t in texts) == sum(content.values())
    assert sum(r1[t].text == MALFORMED_TEXT for t in texts) == content.get("malformed", 0)
    # the client flags what it can see; an OpenAI refusal has no text, so it is flagged empty too
    flagged = {k: v for k, v in c1.flagged.items() if v}
    expect = {"empty": content.get("empty", 0) + content.get("refusal", 0), "refusal": content.get("refusal", 0),
              "truncated": content.get("truncated", 0), "oversized": content.get("oversized", 0)}
    assert flagged == {k: v for k, v in expect.items() if v}


# ------------------------------------------------------------------ content faults, one of each
PROVIDERS = {
    "openai": (FakeOpenAIServer, "openai:{url}:gpt-4o"),
    "anthropic": (FakeAnthropicServer, "anthropic:{url}:claude-haiku-4-5"),
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_each_content_fault_is_flagged_and_rejected_as_documented(provider):
    server_cls, spec = PROVIDERS[provider]
    cap = 300
    plan = list(CONTENT_FAULTS) + [None]
    with server_cls([GOOD], fault_plan=plan) as srv:
        client = make_client(spec.format(url=srv.base_url), timeout_s=5, retry=NO_WAIT,
                             generation=GenerationSettings(max_output_tokens=cap))
        counters = UsageCounters()
        replies = dict(zip(plan, [client.complete(ModelRequest([Message("user", "go")]), counters) for _ in plan]))
        client.close()
    assert dict(srv.injected) == {k: 1 for k in CONTENT_FAULTS}
    assert srv.replies_served == 1 and [r.reply_index for r in srv.log] == [None] * 5 + [0]  # faults consume nothing
    assert len(srv.log) == counters.http_attempts == 6 and counters.faults == {}  # replies: never retried
    t, m, e, rf, o, ok = (replies[k] for k in plan)
    # truncated: cut before the first "}" and at most half, at the output limit
    assert t.text == GOOD[:len(GOOD) // 2] and t.finish_reason == "length" and t.flags == ["truncated"]
    assert t.output_tokens == cap
    assert m.text == MALFORMED_TEXT and m.flags == []
    assert e.text == "" and e.flags == ["empty"]
    assert rf.finish_reason == "refusal" and rf.flags == ["empty", "refusal"]
    assert rf.refusal == (REFUSAL_TEXT if provider == "openai" else None)
    # oversized: the good reply plus filler, OVERSIZE_FACTOR x cap x 4 characters, more tokens than the cap
    assert o.text.startswith(GOOD) and len(o.text) == OVERSIZE_FACTOR * cap * 4
    assert o.output_tokens == -(-len(o.text) // 4) + 1 > cap and o.flags == ["oversized"]
    assert ok.text == GOOD and ok.flags == []
    # each fault is rejected by the parsers under the type it is counted as
    for kind in CONTENT_FAULTS:
        r = replies[kind]
        assert parse_arena_reply(r.text, r.flags).failure == CONTENT_FAULT_COUNTER[kind], kind
        assert parse_stop_reply(r.text, r.flags).failure == CONTENT_FAULT_COUNTER[kind], kind
    assert parse_arena_reply(ok.text, ok.flags).ok
    # without the flag the oversized text would pass as a reply with surrounding text: the flag is what stops it
    lenient = parse_arena_reply(o.text, [])
    assert lenient.ok and lenient.repairs == ["surrounding_text"]
    # a corrective re-ask echoes only the head of an oversized reply
    said = echo_text(o.text, o.refusal, o.flags)
    assert said.startswith(o.text[:ECHO_MAX_CHARS]) and len(said) < ECHO_MAX_CHARS + 60
    assert said.endswith(f"[... {len(o.text.strip()) - ECHO_MAX_CHARS} characters left out]")
    assert echo_text(m.text, m.refusal, m.flags) == MALFORMED_TEXT
    assert echo_text("", rf.refusal, rf.flags) == (REFUSAL_TEXT if provider == "openai" else "(empty reply)")
    d = counters.as_dict()
    assert (d["flagged_truncated"], d["flagged_empty"], d["flagged_refusal"], d["flagged_oversized"]) == (1, 2, 1, 1)


def test_oversized_by_length_when_no_usage_is_reported():
    from fakes import ScriptedReply

    cap = 50
    long_text = GOOD + " " + "x" * (OVERSIZED_CHARS_PER_TOKEN * cap)  # the reported usage stays under the cap
    short_text = GOOD + " " + "x" * (OVERSIZED_CHARS_PER_TOKEN * cap - len(GOOD) - 1)  # exactly at the limit
    script = [ScriptedReply(long_text, output_tokens=cap), ScriptedReply(short_text, output_tokens=cap)]
    with FakeOpenAIServer(script) as srv:
        client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=NO_WAIT,
                             generation=GenerationSettings(max_output_tokens=cap))
        a, b = (client.complete(ModelRequest([Message("user", f"q{i}")])) for i in range(2))
        client.close()
    assert len(short_text) == OVERSIZED_CHARS_PER_TOKEN * cap
    assert a.flags == ["oversized"] and b.flags == []


def test_retry_after_is_honoured_through_the_injectable_sleep():
    waits: list[float] = []
    plan = ["http_429", "http_503", "http_429", None]
    with FakeOpenAIServer(echo_script, fault_plan=plan, retry_after="45") as srv:
        client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5,
                             retry=RetryPolicy(max_retries=5, backoff_initial_s=0.5, backoff_factor=2.0,
                                               jitter_frac=0.0))
        client.sleep = waits.append  # record instead of sleeping
        reply = client.complete(ModelRequest([Message("user", "go")]))
        client.close()
    assert reply.attempts == 4
    # 429: the server's 45 s beats our backoff; 503: our backoff for retry 1 (0.5 * 2)
    assert waits == [45.0, 1.0, 45.0]
    with FakeOpenAIServer(echo_script, fault_plan=["http_429"], retry_after="45", retry_after_ms="250") as srv:
        client = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5,
                             retry=RetryPolicy(backoff_initial_s=0.1, jitter_frac=0.0))
        client.sleep = waits.append
        client.complete(ModelRequest([Message("user", "go")]))
        client.close()
    assert waits[-1] == 0.25  # retry-after-ms wins over Retry-After
    assert ModelClient.sleep is not waits.append  # the class default is untouched
