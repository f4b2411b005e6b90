"""Image-token rules against the providers' worked examples, the price table, the dry-run
estimate against a hand computation, and the budget guard stopping at its caps."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeOpenAIServer, ScriptedReply
from urbanarena.agents.clients import (
    BudgetExceeded,
    BudgetGuard,
    GenerationSettings,
    Image,
    ImageSettings,
    Message,
    ModelRequest,
    PriceTable,
    RequestShape,
    ResponseCache,
    RetryPolicy,
    Text,
    UsageCounters,
    area_tokens,
    estimate_run,
    make_client,
    openai_patch_tokens,
    openai_tile_tokens,
)
from urbanarena.agents.clients.errors import ModelClientError

FAST = RetryPolicy(max_retries=1, backoff_initial_s=0.01, jitter_frac=0.0)


@pytest.fixture(autouse=True)
def _keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cost-0005")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-cost-0006")
    monkeypatch.delenv("URBANARENA_PRICES", raising=False)


# ----------------------------------------------------------------------------- image-token rules
def test_openai_tile_rule_matches_the_guides_examples():
    # OpenAI images-vision guide: 1024x1024 high -> 768x768, 4 tiles, 765; 2048x4096 high -> 768x1536, 6 tiles, 1105;
    # 4096x8192 low -> 85
    assert openai_tile_tokens(1024, 1024, "high") == 765
    assert openai_tile_tokens(2048, 4096, "high") == 1105
    assert openai_tile_tokens(4096, 8192, "low") == 85
    # by hand: 640x360 is within 2048 and its short side < 768, so no resize: 2x1 tiles -> 85 + 2*170
    assert openai_tile_tokens(640, 360, None) == 425
    # 4000x1000: fit 2048 -> 2048x512; short side 512 < 768: tiles 4x1 -> 85 + 680
    assert openai_tile_tokens(4000, 1000, "auto") == 765
    # gpt-4o-mini constants
    assert openai_tile_tokens(1024, 1024, "high", 2833, 5667) == 2833 + 4 * 5667


def test_openai_patch_rule():
    # 1024x1024: 32*32 = 1024 patches (<= 1536), x1.62 -> 1658.88 -> 1659
    assert openai_patch_tokens(1024, 1024, multiplier=1.62) == 1659
    # 1800x2400: 57*75 = 4275 patches > 1536 -> shrink to 1056x1408 (33 x 44 = 1452 patches; the guide's example)
    assert openai_patch_tokens(1800, 2400, multiplier=1.0) == 1452
    # 100x40: ceil(100/32) * ceil(40/32) = 4 * 2 = 8 patches; x2.46 = 19.68 -> 20
    assert openai_patch_tokens(100, 40, multiplier=2.46) == 20

def test_anthropic_area_rule_matches_the_docs_examples():
    # Anthropic vision docs: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590 tokens
    assert area_tokens(200, 200) == 54
    assert area_tokens(1000, 1000) == 1334
    assert area_tokens(1092, 1092) == 1590
    # by hand, 3000x2000: long edge 1568 -> 1568 x 1045.33 = 1,639,083 px > 1.2 MP
    # -> scale sqrt(1.2e6 / 1,639,083) = 0.855643 -> 1341.65 x 894.43 -> 1341 x 894 = 1,198,854 px / 750 = 1598.5 -> 1599
    assert area_tokens(3000, 2000) == 1599


# ----------------------------------------------------------------------------- price table
def test_price_lookup_longest_prefix_and_defaults():
    t = PriceTable()
    assert t.lookup("openai", "gpt-4o-mini-2024-07-18").matched == "gpt-4o-mini"
    assert t.lookup("openai", "gpt-4o-2024-08-06").matched == "gpt-4o"
    p = t.lookup("openai", "gpt-4o-mini")
    assert (p.input_per_mtok, p.output_per_mtok, p.image_params["base_tokens"]) == (0.15, 0.6, 2833)
    assert t.lookup("anthropic", "claude-sonnet-4-20250514").matched == "claude-sonnet-4"
    assert t.lookup("anthropic", "claude-sonnet-4-5-20250929").matched == "claude-sonnet-4-5"
    unknown = t.lookup("openai", "o9-preview")
    assert unknown.matched == "default" and not unknown.priced and unknown.cost_usd(10, 10) is None
    local = t.lookup("openai-compatible", "qwen2.5-vl")
    assert local.priced and local.cost_usd(10**6, 10**6) == 0.0 and local.image_rule == "area"


def test_price_override_file_and_env(tmp_path, monkeypatch):
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"providers": {
        "openai": {"models": {"gpt-4o": {"input_per_mtok": 1.0}, "o9-preview": {"input_per_mtok": 7.0, "output_per_mtok": 9.0}}},
        "openai-compatible": {"models": {"qwen2.5-vl": {"input_per_mtok": 0.2, "output_per_mtok": 0.4}}},
    }}))
    for t in (PriceTable(f), (monkeypatch.setenv("URBANARENA_PRICES", str(f)), PriceTable())[1]):
        g = t.lookup("openai", "gpt-4o")
        assert (g.input_per_mtok, g.output_per_mtok) == (1.0, 10.0)  # field-wise override
        assert t.lookup("openai", "o9-preview").cost_usd(10**6, 10**6) == 16.0
        assert t.lookup("openai-compatible", "qwen2.5-vl-7b").input_per_mtok == 0.2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ModelClientError, match="bad.json"):
        PriceTable(bad)


# ----------------------------------------------------------------------------- dry-run estimate
def test_estimate_run_against_hand_computation():
    shape = RequestShape(image_sizes=((640, 360), (1600, 1600)), text_chars=1000, messages=2)
    gen = GenerationSettings(max_output_tokens=512)
    imgs = ImageSettings(max_side_px=1024, detail="high")
    e = estimate_run("openai", "gpt-4o", shape, tasks=3, seeds=2, step_limit=10, generation=gen, images=imgs)
    # requests 3*2*10 = 60; images 2 per request = 120
    # per request: 640x360 -> 425; 1600x1600 -> our max_side 1024 -> 1024x1024 -> 765; images 1190
    #              text ceil(1000/4) = 250 + 4*2 messages + 3 = 261; input 1451
    assert (e.requests, e.images) == (60, 120)
    assert (e.per_request_image_tokens, e.per_request_input_tokens) == (1190, 1451)
    assert (e.input_tokens, e.image_tokens, e.output_tokens) == (87_060, 71_400, 30_720)
    # cost: 87,060 * $2.50/M + 30,720 * $10/M = 0.21765 + 0.3072
    assert e.cost_usd == pytest.approx(0.52485)
    text = e.format()
    assert "60" in text and "87,060" in text and "$0.52" in text

    a = estimate_run("anthropic", "claude-haiku-4-5", shape, tasks=3, seeds=2, step_limit=10, generation=gen, images=imgs)
    # 640*360/750 = 307.2 -> 308; 1024*1024/750 = 1398.1 -> 1399; + 261 text = 1968 per request
    assert (a.per_request_image_tokens, a.per_request_input_tokens, a.input_tokens) == (1707, 1968, 118_080)
    assert a.cost_usd == pytest.approx(118_080 * 1.0 / 1e6 + 30_720 * 5.0 / 1e6)

    # re-requests that do not consume a step multiply the bound; unpriced models give no cost
    r = estimate_run("openai", "o9-preview", shape, tasks=1, seeds=1, step_limit=50, generation=gen, images=imgs, requests_per_step=4)
    assert r.requests == 200 and r.cost_usd is None and "unknown" in r.format()


def test_client_upper_cost_agrees_with_the_estimate():
    gen = GenerationSettings(max_output_tokens=512)
    imgs = ImageSettings(max_side_px=1024, detail="high")
    c = make_client("openai:http://127.0.0.1:9/v1:gpt-4o", generation=gen, images=imgs)
    req = ModelRequest([Message("user", [Image(np.zeros((360, 640, 3), np.uint8)), Image(np.zeros((1600, 1600, 3), np.uint8)),
                                         Text("x" * 900)])], system="y" * 100)
    e = estimate_run("openai", "gpt-4o", RequestShape.of(req), tasks=1, seeds=1, step_limit=1, generation=gen, images=imgs)
    assert RequestShape.of(req) == RequestShape(((640, 360), (1600, 1600)), 1000, 2)
    assert c.upper_cost_usd(req) == pytest.approx(e.cost_usd)
    c.close()


# ----------------------------------------------------------------------------- budget guard
def steps(n: int) -> list[ModelRequest]:
    return [ModelRequest([Message("user", "x" * 392 + f"{k:04d}")]) for k in range(n)]


def test_max_requests_stops_at_the_cap_and_resume_without_cap_has_no_duplicate(tmp_path):
    path = tmp_path / "responses.sqlite"
    with FakeOpenAIServer(lambda body, n: f"r{n}") as srv:
        guard = BudgetGuard(max_requests=3)
        c = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST, cache=ResponseCache(path), budget=guard)
        done = []
        with pytest.raises(BudgetExceeded) as e:
            for req in steps(5):
                done.append(c.complete(req).text)
        assert (e.value.limit, e.value.cap, e.value.used) == ("max_requests", 3, 3)
        assert done == ["r0", "r1", "r2"] and len(srv.log) == 3
        # resume with the same cap: cached calls are free, the cap still holds
        c2 = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST, cache=ResponseCache(path), budget=guard)
        with pytest.raises(BudgetExceeded):
            for req in steps(5):
                c2.complete(req)
        assert len(srv.log) == 3
        # resume without the cap: finishes, and only the two missing requests reach the server
        c3 = make_client(f"openai:{srv.base_url}:gpt-4o", timeout_s=5, retry=FAST, cache=ResponseCache(path))
        counters = UsageCounters()
        final = [c3.complete(req, counters).text for req in steps(5)]
    assert final == ["r0", "r1", "r2", "r3", "r4"]
    assert len(srv.log) == 5 and (counters.cache_hits, counters.api_requests) == (3, 2)
    sent = [rec.texts()[0][-4:] for rec in srv.log]
    assert sent == ["0000", "0001", "0002", "0003", "0004"]


def test_max_usd_is_never_crossed():
    gen = GenerationSettings(max_output_tokens=100)
    # each request: 396 chars, 1 message -> 99 + 4 + 3 = 106 input tokens estimated;
    # upper bound (106 * 2.5 + 100 * 10) / 1e6 = $0.001265; actual reported usage 100 in / 50 out = $0.00075
    script = [ScriptedReply(f"r{k}", input_tokens=100, output_tokens=50) for k in range(10)]
    with FakeOpenAIServer(script) as srv:
        guard = BudgetGuard(max_usd=0.003)
        c = make_client(f"openai:{srv.base_url}:gpt-4o", generation=gen, timeout_s=5, retry=FAST, budget=guard)
        assert c.upper_cost_usd(steps(1)[0]) == pytest.approx(0.001265)
        with pytest.raises(BudgetExceeded) as e:
            for req in steps(10):
                c.complete(req)
    # admitted: 0.001265 (spent 0.00075), 0.002015 (0.0015), 0.002765 (0.00225); refused: 0.00225 + 0.001265 > 0.003
    assert len(srv.log) == 3
    assert e.value.limit == "max_usd" and e.value.used == pytest.approx(0.00225) and e.value.requested == pytest.approx(0.001265)
    u = guard.usage()
    assert u["requests"] == 3 and u["spent_usd"] == pytest.approx(0.00225) and u["reserved_usd"] == pytest.approx(0.0)


def test_budget_ledger_is_shared_and_counts_reservations(tmp_path):
    ledger = tmp_path / "budget.sqlite"
    a = BudgetGuard(max_requests=3, max_usd=1.0, ledger_path=ledger)
    b = BudgetGuard(max_requests=3, max_usd=1.0, ledger_path=ledger)  # another process / a resumed run
    r1 = a.reserve(0.4)
    r2 = b.reserve(0.4)
    # 0.8 reserved in flight: a third request with upper bound 0.3 would cross $1
    with pytest.raises(BudgetExceeded) as e:
        a.reserve(0.3)
    assert e.value.limit == "max_usd"
    a.settle(r1, 0.1)
    b.release(r2)
    assert b.usage() == {"requests": 2, "spent_usd": pytest.approx(0.1), "reserved_usd": pytest.approx(0.0)}
    b.reserve(0.3)
    with pytest.raises(BudgetExceeded) as e:
        a.reserve(0.0)
    assert e.value.limit == "max_requests"


def test_max_usd_needs_a_priced_model():
    with pytest.raises(ModelClientError, match="no price"):
        make_client("openai:http://127.0.0.1:9/v1:o9-preview", budget=BudgetGuard(max_usd=1.0))
    # a request cap alone works for unpriced models
    make_client("openai:http://127.0.0.1:9/v1:o9-preview", budget=BudgetGuard(max_requests=1)).close()
