"""Response cache: replay without network, resume without duplicate requests, key contents, audit bundle."""

from __future__ import annotations

import hashlib
import io
import json
import threading

import numpy as np
import pytest
from PIL import Image as PILImage

from fakes import FakeAnthropicServer, FakeOpenAIServer
from urbanarena.agents.clients import (
    GenerationSettings,
    Image,
    ImageSettings,
    Message,
    ModelRequest,
    ResponseCache,
    RetryPolicy,
    Text,
    UsageCounters,
    make_client,
)
from urbanarena.agents.clients.errors import CacheMissError, ModelClientError

FAST = RetryPolicy(max_retries=2, backoff_initial_s=0.01, jitter_frac=0.0)
GEN = GenerationSettings(temperature=1.0, max_output_tokens=512, seed=1)


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache-0003")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-cache-0004")


def echo_script(body, n):
    texts = []
    for m in body["messages"]:
        c = m["content"]
        texts += [c] if isinstance(c, str) else [p["text"] for p in c if p["type"] == "text"]
    return "reply-" + hashlib.sha256("|".join(texts).encode()).hexdigest()[:10]


def view(k: int) -> np.ndarray:
    """A deterministic 'camera view' for step k."""
    rng = np.random.default_rng(k)
    return rng.integers(0, 256, (72, 128, 3), dtype=np.uint8)


def episode(client, steps: range, counters: UsageCounters):
    """An agent-like loop: each request carries the previous reply (memory) and a new view."""
    replies, memory = [], "start"
    for k in steps:
        req = ModelRequest([Message("user", [Image(view(k)), Text(f"step {k}; memory: {memory}")])], system="navigate")
        r = client.complete(req, counters)
        memory = r.text
        replies.append(r)
    return replies


def make(spec_fmt, srv_url, cache, **kw):
    return make_client(spec_fmt.format(url=srv_url), generation=GEN, timeout_s=5, retry=FAST, cache=cache, **kw)


SPECS = {"openai": (FakeOpenAIServer, "openai:{url}:gpt-4o"), "anthropic": (FakeAnthropicServer, "anthropic:{url}:claude-haiku-4-5")}


@pytest.mark.parametrize("provider", sorted(SPECS))
def test_read_only_replay_after_server_stopped_is_identical(tmp_path, provider):
    server_cls, spec = SPECS[provider]
    path = tmp_path / "responses.sqlite"
    with server_cls(echo_script) as srv:
        cache = ResponseCache(path, "read-write")
        live = episode(make(spec, srv.base_url, cache), range(4), UsageCounters())
        cache.close()
        url = srv.base_url
    assert len(srv.log) == 4
    # server gone; replay from the cache only
    ro = ResponseCache(path, "read-only")
    counters = UsageCounters()
    replayed = episode(make(spec, url, ro), range(4), counters)
    assert [r.content_fields() for r in replayed] == [r.content_fields() for r in live]
    assert all(r.from_cache and r.attempts == 0 for r in replayed)
    d = counters.as_dict()
    assert (d["cache_hits"], d["api_requests"], d["http_attempts"], d["requests"]) == (4, 0, 0, 4)
    # replayed usage is reported separately and costs nothing now
    assert d["cached_input_tokens"] == sum(r.input_tokens for r in live) and d["input_tokens"] == 0 and d["cost_usd"] == 0
    # a request the cache does not hold: an error, and still no network attempt
    with pytest.raises(CacheMissError):
        episode(make(spec, url, ro), range(5, 6), counters)
    assert counters.http_attempts == 0
    ro.close()


def test_read_only_miss_never_reaches_a_live_server(tmp_path):
    ResponseCache(tmp_path / "c.sqlite", "read-write").close()
    with FakeOpenAIServer(echo_script) as srv:
        c = make("openai:{url}:gpt-4o", srv.base_url, ResponseCache(tmp_path / "c.sqlite", "read-only"))
        with pytest.raises(CacheMissError):
            c.complete(ModelRequest([Message("user", "hello")]))
    assert srv.log == []
    with pytest.raises(ModelClientError, match="does not exist"):
        ResponseCache(tmp_path / "missing.sqlite", "read-only")


def test_resumed_run_makes_no_request_the_cache_holds(tmp_path):
    path = tmp_path / "responses.sqlite"
    with FakeOpenAIServer(echo_script) as srv:
        # first run "crashes" after 3 of 6 steps
        first = episode(make("openai:{url}:gpt-4o", srv.base_url, ResponseCache(path, "read-write")), range(3), UsageCounters())
        assert len(srv.log) == 3
        # resume: the whole episode again, same cache
        counters = UsageCounters()
        resumed = episode(make("openai:{url}:gpt-4o", srv.base_url, ResponseCache(path, "read-write")), range(6), counters)
    # the server saw each step exactly once: steps 0-2 in the first run, 3-5 after resuming
    steps_seen = [rec.texts()[1].split(";")[0] for rec in srv.log]
    assert steps_seen == [f"step {k}" for k in range(6)]
    assert (counters.cache_hits, counters.cache_misses, counters.api_requests) == (3, 3, 3)
    assert [r.content_fields() for r in resumed[:3]] == [r.content_fields() for r in first]
    assert [r.from_cache for r in resumed] == [True, True, True, False, False, False]


def test_off_mode_stores_nothing(tmp_path):
    with FakeOpenAIServer(echo_script) as srv:
        cache = ResponseCache(tmp_path / "never.sqlite", "off")
        c = make("openai:{url}:gpt-4o", srv.base_url, cache)
        for _ in range(2):
            c.complete(ModelRequest([Message("user", "same")]))
    assert len(srv.log) == 2 and not (tmp_path / "never.sqlite").exists() and len(cache) == 0


def test_sample_index_gets_its_own_entry(tmp_path):
    path = tmp_path / "c.sqlite"
    with FakeOpenAIServer(lambda body, n: f"sample reply {n}") as srv:
        c = make("openai:{url}:gpt-4o", srv.base_url, ResponseCache(path, "read-write"))
        a = [c.complete(ModelRequest([Message("user", "same prompt")], sample_index=i)).text for i in range(3)]
        b = [c.complete(ModelRequest([Message("user", "same prompt")], sample_index=i)).text for i in range(3)]
    assert a == b == ["sample reply 0", "sample reply 1", "sample reply 2"]
    assert len(srv.log) == 3


def test_cache_key_covers_what_changes_a_reply_and_nothing_else(tmp_path):
    url = "http://127.0.0.1:9/v1"
    base = make("openai:{url}:gpt-4o", url, None)
    img = view(0)
    req = ModelRequest([Message("user", [Image(img), Text("t")])], system="s")
    k = base.key_for(req)
    # same pixels in another array, another endpoint, other timeout/retry settings: same key
    assert make("openai:{url}:gpt-4o", "http://10.0.0.1:8000/v1", None, ).key_for(
        ModelRequest([Message("user", [Image(img.copy()), Text("t")])], system="s")) == k
    assert make_client(f"openai:{url}:gpt-4o", generation=GEN, timeout_s=99, retry=RetryPolicy(max_retries=0)).key_for(req) == k
    # anything that can change the reply changes the key
    other = img.copy()
    other[0, 0, 0] ^= 1
    variants = [
        base.key_for(ModelRequest([Message("user", [Image(other), Text("t")])], system="s")),
        base.key_for(ModelRequest([Message("user", [Image(img), Text("t!")])], system="s")),
        base.key_for(ModelRequest([Message("user", [Image(img), Text("t")])], system="s2")),
        base.key_for(ModelRequest([Message("user", [Image(img), Text("t")])], system="s", sample_index=1)),
        make_client(f"openai:{url}:gpt-4o", generation=GEN.model_copy(update={"temperature": 0.0})).key_for(req),
        make_client(f"openai:{url}:gpt-4o", generation=GEN.model_copy(update={"max_output_tokens": 513})).key_for(req),
        make_client(f"openai:{url}:gpt-4o-mini", generation=GEN).key_for(req),
        make_client(f"openai:{url}:gpt-4o", generation=GEN, images=ImageSettings(jpeg_quality=80)).key_for(req),
        make_client(f"openai-compatible:{url}:gpt-4o", generation=GEN).key_for(req),
    ]
    assert k not in variants and len(set(variants)) == len(variants)


def test_export_bundle(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, "read-write")
    with FakeOpenAIServer(echo_script) as srv:
        replies = episode(make("openai:{url}:gpt-4o", srv.base_url, cache), range(3), UsageCounters())
    out = cache.export_bundle(tmp_path / "bundle")
    lines = [json.loads(x) for x in (out / "responses.jsonl").read_text().splitlines()]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["entries"] == len(lines) == 3 and manifest["images"] == 3
    assert [e["reply"]["text"] for e in lines] == [r.text for r in replies]
    assert [e["key"] for e in lines] == [r.cache_key for r in replies]
    assert lines[1]["request"]["messages"][0]["content"][1]["text"] == f"step 1; memory: {replies[0].text}"
    for e in lines:
        [enc] = e["encoded_images"]
        f = out / "images" / f"{enc['sha256']}.jpg"
        data = f.read_bytes()
        assert hashlib.sha256(data).hexdigest() == enc["sha256"]
        assert PILImage.open(io.BytesIO(data)).size == (enc["width"], enc["height"]) == (128, 72)
        assert enc["source_sha256"] == e["request"]["messages"][0]["content"][0]["sha256"]
    cache.close()


def test_concurrent_calls_share_one_cache(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", "read-write")
    with FakeOpenAIServer(echo_script) as srv:
        c = make("openai:{url}:gpt-4o", srv.base_url, cache)
        counters = UsageCounters()
        errors: list[BaseException] = []

        def worker(i):
            try:
                for j in range(3):
                    c.complete(ModelRequest([Message("user", f"worker {i} call {j}")]), counters)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(cache) == 12 == len(srv.log) and counters.requests == 12 and counters.http_attempts == 12


def test_cache_export_command(tmp_path):
    import typer
    from typer.testing import CliRunner

    from urbanarena.cli.cache_cmd import cache_export

    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, "read-write")
    with FakeOpenAIServer(echo_script) as srv:
        episode(make("openai:{url}:gpt-4o", srv.base_url, cache), range(2), UsageCounters())
    cache.close()
    app = typer.Typer()
    app.command()(cache_export)
    res = CliRunner().invoke(app, [str(path), "--out", str(tmp_path / "bundle")])
    assert res.exit_code == 0, res.output
    assert "exported 2 responses" in res.output
    assert len((tmp_path / "bundle" / "responses.jsonl").read_text().splitlines()) == 2
    res = CliRunner().invoke(app, [str(tmp_path / "missing.sqlite"), "--out", str(tmp_path / "b2")])
    assert res.exit_code == 2 and "does not exist" in res.output
