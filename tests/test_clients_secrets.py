"""Secret scan: with fake API keys in the environment, no file written by the clients holds a key."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from fakes import FakeAnthropicServer, FakeOpenAIServer
from urbanarena.agents.clients import (
    BudgetGuard,
    GenerationSettings,
    Image,
    Message,
    ModelRequest,
    ResponseCache,
    RetryPolicy,
    Text,
    UsageCounters,
    make_client,
)
from urbanarena.agents.clients.errors import ModelClientError

OPENAI_KEY = "sk-proj-FAKEKEY-4f1c2d9e8b7a6c5d"
ANTHROPIC_KEY = "sk-ant-api03-FAKEKEY-9a8b7c6d5e4f3a2b"
LOCAL_KEY = "local-FAKEKEY-0f0e0d0c0b0a"


def test_no_key_in_any_written_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    out = tmp_path / "run"
    out.mkdir()
    # everything logged at DEBUG, SDKs and HTTP libraries included, goes to a file we scan
    handler = logging.FileHandler(out / "debug.log")
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        cache = ResponseCache(out / "responses.sqlite", "read-write")
        ledger = out / "budget.sqlite"
        retry = RetryPolicy(max_retries=2, backoff_initial_s=0.01, jitter_frac=0.0)
        img = np.full((64, 96, 3), 128, np.uint8)
        records = []
        with FakeOpenAIServer(["o1", "o2"], api_key=OPENAI_KEY, fault_plan=[None, "http_503"]) as so, \
                FakeAnthropicServer(["a1"], api_key=ANTHROPIC_KEY, fault_plan=["http_429"], retry_after="0") as sa, \
                FakeOpenAIServer(["l1"], api_key=LOCAL_KEY) as sl:
            monkeypatch.setenv(f"URBANARENA_API_KEY_127_0_0_1_{sl.port}", LOCAL_KEY)
            clients = [
                make_client(f"openai:{so.base_url}:gpt-4o", cache=cache, retry=retry, timeout_s=5,
                            budget=BudgetGuard(max_usd=10.0, ledger_path=ledger), generation=GenerationSettings(seed=1)),
                make_client(f"anthropic:{sa.base_url}:claude-haiku-4-5", cache=cache, retry=retry, timeout_s=5),
                make_client(f"openai-compatible:{sl.base_url}:qwen2.5-vl", cache=cache, retry=retry, timeout_s=5),
            ]
            for i, c in enumerate(clients):
                counters = UsageCounters()
                for j in range(2 if i == 0 else 1):
                    r = c.complete(ModelRequest([Message("user", [Image(img), Text(f"client {i} call {j}")])], system="s"), counters)
                    records.append({"reply": r.model_dump(mode="json")})
                records.append({"config": c.config(), "runtime": c.runtime_config(), "counters": counters.as_dict(),
                                "repr": repr(c), "vars": repr(vars(c))})
            # a rejected request (wrong key presented) produces an error message that a run would store
            monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY + "-wrong")
            bad = make_client(f"openai:{so.base_url}:gpt-4o", retry=retry, timeout_s=5)
            with pytest.raises(ModelClientError) as e:
                bad.complete(ModelRequest([Message("user", "x")]))
            records.append({"error": str(e.value), "repr": repr(e.value)})
            logging.getLogger("test").error("stored error: %s", e.value)
            for c in clients + [bad]:
                c.close()
        # the keys were really used (otherwise the scan proves nothing)
        assert all(r.auth_ok for r in so.log[:3]) and all(r.auth_ok for r in sa.log) and all(r.auth_ok for r in sl.log)
        assert not so.log[-1].auth_ok
        (out / "store.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        cache.export_bundle(out / "bundle")
        cache.close()
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    files = [p for p in out.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"responses.sqlite", "budget.sqlite", "debug.log", "store.jsonl", "responses.jsonl", "manifest.json"} <= names
    assert (out / "debug.log").stat().st_size > 0 and len(list((out / "bundle" / "images").iterdir())) == 1
    for p in files:
        data = p.read_bytes()
        for key in (OPENAI_KEY, ANTHROPIC_KEY, LOCAL_KEY, OPENAI_KEY + "-wrong"):
            assert key.encode() not in data, f"{key[:12]}... found in {p.relative_to(out)}"
            assert key[-12:].encode() not in data, f"tail of {key[:12]}... found in {p.relative_to(out)}"
