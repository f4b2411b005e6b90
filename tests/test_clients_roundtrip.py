"""Full request/response round trips through the real ``openai`` and ``anthropic`` SDKs to the fake servers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fakes import FakeAnthropicServer, FakeOpenAIServer, ScriptedReply
from urbanarena.agents.clients import (
    GenerationSettings,
    Image,
    ImageSettings,
    Message,
    ModelRequest,
    RetryPolicy,
    Text,
    UsageCounters,
    encode_image,
    make_client,
)
from urbanarena.agents.clients.errors import ModelRequestError

OPENAI_KEY = "sk-test-openai-roundtrip-7f3a9c"
ANTHROPIC_KEY = "sk-ant-test-roundtrip-41b2e8"
FAST = RetryPolicy(max_retries=3, backoff_initial_s=0.01, jitter_frac=0.0)


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


def solid(h: int, w: int, rgb: tuple[int, int, int]) -> np.ndarray:
    a = np.empty((h, w, 3), np.uint8)
    a[...] = rgb
    return a


def request_with_history() -> ModelRequest:
    return ModelRequest(
        [
            Message("user", [Image(solid(360, 640, (255, 0, 0))), Text("step 1: what do you see?")]),
            Message("assistant", '{"action": "W"}'),
            Message("user", [Image(solid(200, 300, (0, 0, 255))), Text("step 2")]),
        ],
        system="You are a navigator.",
    )


def test_openai_round_trip_payload_and_reply():
    gen = GenerationSettings(temperature=0.7, top_p=0.9, max_output_tokens=321, seed=11, reasoning_effort="low")
    with FakeOpenAIServer(["reply one"], api_key=OPENAI_KEY) as srv:
        c = make_client(f"openai:{srv.base_url}:gpt-4o", generation=gen, images=ImageSettings(detail="low", jpeg_quality=85),
                        timeout_s=5, retry=FAST)
        counters = UsageCounters()
        r = c.complete(request_with_history(), counters)
        c.close()
    [rec] = srv.log
    body = rec.body
    assert rec.auth_ok and rec.path == "/v1/chat/completions"
    assert body["model"] == "gpt-4o"
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["seed"] == 11 and body["reasoning_effort"] == "low"
    assert body["max_completion_tokens"] == 321 and "max_tokens" not in body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert body["messages"][0]["content"] == "You are a navigator."
    assert body["messages"][2]["content"] == '{"action": "W"}'
    img_parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"] if p["type"] == "image_url"]
    assert [p["image_url"]["detail"] for p in img_parts] == ["low", "low"]
    assert rec.texts() == ["You are a navigator.", "step 1: what do you see?", '{"action": "W"}', "step 2"]
    # the server decoded both images: JPEG, original sizes, colours in RGB order
    assert [(i.format, i.width, i.height) for i in rec.images] == [("JPEG", 640, 360), ("JPEG", 300, 200)]
    assert np.allclose(rec.images[0].mean_rgb, (255, 0, 0), atol=3)
    assert np.allclose(rec.images[1].mean_rgb, (0, 0, 255), atol=3)
    # reply fields equal what the server sent
    tin, tout = srv.default_usage(body, "reply one")
    assert (r.text, r.finish_reason, r.raw_finish_reason) == ("reply one", "stop", "stop")
    assert (r.input_tokens, r.output_tokens) == (tin, tout)
    assert (r.request_id, r.response_id, r.reported_model, r.model_mismatch) == ("req_fake_0", "chatcmpl-fake-0", "gpt-4o", False)
    assert r.flags == [] and r.attempts == 1 and not r.from_cache and r.latency_s > 0
    # cost from the shipped table: gpt-4o $2.50 / $10 per Mtok
    assert r.cost_usd == pytest.approx((tin * 2.5 + tout * 10.0) / 1e6)
    d = counters.as_dict()
    assert (d["requests"], d["api_requests"], d["http_attempts"], d["input_tokens"], d["output_tokens"]) == (1, 1, 1, tin, tout)


def test_openai_compatible_uses_max_tokens_and_no_key():
    with FakeOpenAIServer(["ok"]) as srv:
        c = make_client(f"openai-compatible:{srv.base_url}:qwen2.5-vl", generation=GenerationSettings(max_output_tokens=99),
                        timeout_s=5, retry=FAST)
        r = c.complete(ModelRequest([Message("user", "hi")]))
        c.close()
    body = srv.log[0].body
    assert body["max_tokens"] == 99 and "max_completion_tokens" not in body
    # unset settings are not sent at all
    assert not {"temperature", "top_p", "seed", "reasoning_effort"} & set(body)
    assert r.text == "ok" and r.cost_usd == 0.0


def test_openai_flags_truncated_refusal_empty_and_mismatch():
    script = [
        ScriptedReply("partial json {", finish="length"),
        ScriptedReply("", refusal="I can't help with that."),
        ScriptedReply(""),
        ScriptedReply("fine", model="gpt-4o-2024-08-06"),
        ScriptedReply("other model", model="gpt-4o-mini"),
    ]
    with FakeOpenAIServer(script) as srv:
        c = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST)
        counters = UsageCounters()
        replies = [c.complete(ModelRequest([Message("user", f"q{i}")]), counters) for i in range(5)]
        c.close()
    assert [r.flags for r in replies] == [["truncated"], ["empty", "refusal"], ["empty"], [], []]
    assert [r.finish_reason for r in replies] == ["length", "refusal", "stop", "stop", "stop"]
    assert replies[1].refusal == "I can't help with that."
    # alias -> dated snapshot is no mismatch; a different model is
    assert [r.model_mismatch for r in replies] == [False, False, False, False, True]
    assert replies[3].reported_model == "gpt-4o-2024-08-06"
    d = counters.as_dict()
    assert (d["flagged_truncated"], d["flagged_refusal"], d["flagged_empty"], d["model_mismatches"]) == (1, 1, 2, 1)
    # flagged replies are returned, never retried: exactly one HTTP request each
    assert len(srv.log) == 5 and d["http_attempts"] == 5


def test_anthropic_round_trip_payload_and_reply():
    gen = GenerationSettings(temperature=1.0, top_p=0.5, max_output_tokens=2048, thinking_budget_tokens=1024, seed=3,
                             reasoning_effort="high")
    with FakeAnthropicServer(["a", ScriptedReply("cut", finish="max_tokens"), ScriptedReply("", finish="refusal")],
                             api_key=ANTHROPIC_KEY) as srv:
        c = make_client(f"anthropic:{srv.base_url}:claude-haiku-4-5", generation=gen, images=ImageSettings(format="png"),
                        timeout_s=5, retry=FAST)
        counters = UsageCounters()
        r1 = c.complete(request_with_history(), counters)
        r2 = c.complete(ModelRequest([Message("user", "x")]), counters)
        r3 = c.complete(ModelRequest([Message("user", "y")]), counters)
        c.close()
    rec = srv.log[0]
    body = rec.body
    assert rec.auth_ok and rec.path == "/v1/messages" and srv.versions_seen
    assert body["system"] == "You are a navigator."
    assert body["max_tokens"] == 2048 and body["temperature"] == 1.0 and body["top_p"] == 0.5
    assert body["output_config"] == {"effort": "high"}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert "seed" not in body  # not supported by the Messages API: not sent
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    blocks = body["messages"][0]["content"]
    assert blocks[0]["type"] == "image" and blocks[0]["source"]["media_type"] == "image/png"
    assert [(i.format, i.width, i.height) for i in rec.images] == [("PNG", 640, 360), ("PNG", 300, 200)]
    assert rec.images[0].mean_rgb == (255.0, 0.0, 0.0) and rec.images[1].mean_rgb == (0.0, 0.0, 255.0)
    tin, tout = srv.default_usage(body, "a")
    assert (r1.text, r1.finish_reason, r1.input_tokens, r1.output_tokens) == ("a", "stop", tin, tout)
    assert (r1.request_id, r1.response_id) == ("req_fake_0", "msg_fake_0")
    assert r1.cost_usd == pytest.approx((tin * 1.0 + tout * 5.0) / 1e6)  # Haiku 4.5: $1 / $5 per Mtok
    assert (r2.finish_reason, r2.flags) == ("length", ["truncated"])
    assert (r3.finish_reason, r3.flags) == ("refusal", ["empty", "refusal"])
    assert counters.as_dict()["requests"] == 3


def test_anthropic_large_image_is_brought_under_5mb_in_steps():
    rng = np.random.default_rng(5)
    noise = rng.integers(0, 256, (1600, 1600, 3), dtype=np.uint8)  # PNG ~7.7 MB, base64 ~10 MB
    with FakeAnthropicServer(["seen"]) as srv:  # the fake enforces Anthropic's 5 MB and 8000 px limits
        c = make_client(f"anthropic:{srv.base_url}:claude-haiku-4-5", images=ImageSettings(format="png", downscale_step=0.75),
                        timeout_s=30, retry=FAST)
        r = c.complete(ModelRequest([Message("user", [Image(noise), Text("describe")])]))
        c.close()
    assert r.text == "seen"
    [img] = srv.log[0].images
    limit = 5 * 1024 * 1024
    assert img.b64_len <= limit
    # the size lies on the step chain 1600 -> 1200 -> 900 ..., at least one step down,
    # and the size one step larger would not have fitted
    chain = [math.floor(1600 * 0.75**k) for k in range(12)]
    k = chain.index(img.width)
    assert k >= 1 and img.height == img.width
    bigger = encode_image(Image(noise), ImageSettings(format="png", max_side_px=chain[k - 1], max_bytes=10**9), "anthropic")
    assert bigger.b64_len > limit


def test_rejected_requests_are_not_retried_and_are_counted():
    with FakeOpenAIServer(["never"], api_key="the-right-key") as srv:
        c = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST)
        counters = UsageCounters()
        with pytest.raises(ModelRequestError) as e:
            c.complete(ModelRequest([Message("user", "hi")]), counters)
        c.close()
    assert e.value.status_code == 401 and e.value.fault_type == "http_401"
    assert OPENAI_KEY not in str(e.value)
    assert len(srv.log) == 1 and not srv.log[0].auth_ok
    d = counters.as_dict()
    assert (d["fault_http_401"], d["rejected"], d["retries"], d["requests"]) == (1, 1, 0, 0)


def test_too_many_images_is_refused_before_sending():
    with FakeOpenAIServer(["never"]) as srv:
        c = make_client(f"openai:{srv.base_url}:gpt-4o", images=ImageSettings(max_images_per_request=1), timeout_s=5)
        with pytest.raises(ValueError, match="2 images"):
            c.complete(request_with_history())
        c.close()
    assert srv.log == []
