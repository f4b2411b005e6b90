"""The OpenAI client reads the reply from the response JSON itself (it posts the prebuilt body through the
SDK's transport): the fields it maps, a content-part list from a compatible server, and a reply body that is
not a chat completion (a typed error naming the model, never a crash or a silent empty reply)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from urbanarena.agents.clients import Message, ModelRequest, UsageCounters, make_client
from urbanarena.agents.clients.errors import ModelClientError
from urbanarena.agents.clients.retry import RetryPolicy


class _Server:
    """Answers every POST with ``self.body`` (bytes) and records the request JSON."""

    def __init__(self):
        self.body = b"{}"
        self.requests = []
        self.raw = []
        outer = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 - http.server API
                n = int(self.headers["Content-Length"])
                outer.raw.append(self.rfile.read(n))
                outer.requests.append(json.loads(outer.raw[-1]))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("x-request-id", "req-7")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *a):
                pass

        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_port}/v1"


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "sk-test-body")
    s = _Server()
    yield s
    s.srv.shutdown()


def _ask(server, body: dict | bytes):
    server.body = body if isinstance(body, bytes) else json.dumps(body).encode()
    # no waits between retries: a 200 that is no completion is a retryable fault and would back off for a minute
    client = make_client(f"openai-compatible:{server.url}:m1",
                         retry=RetryPolicy(max_retries=2, backoff_initial_s=0.0, backoff_max_s=0.0, jitter_frac=0.0))
    try:
        return client.complete(ModelRequest([Message("user", "hi")], system="sys"), UsageCounters())
    finally:
        client.close()


def test_reply_fields_and_request_body(server):
    r = _ask(server, {"id": "c1", "model": "m1-2025", "choices": [
        {"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "abc"}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3,
                  "completion_tokens_details": {"reasoning_tokens": 2}}})
    assert (r.text, r.finish_reason, r.raw_finish_reason) == ("abc", "length", "length")
    assert (r.input_tokens, r.output_tokens, r.reasoning_tokens) == (11, 3, 2)
    assert (r.reported_model, r.response_id, r.request_id) == ("m1-2025", "c1", "req-7")
    req = server.requests[-1]
    assert req["model"] == "m1" and req["messages"][0] == {"role": "system", "content": "sys"}
    assert req["messages"][1]["content"] == [{"type": "text", "text": "hi"}] and "max_tokens" in req


def test_refusal_and_content_parts(server):
    r = _ask(server, {"choices": [{"finish_reason": "stop", "message": {"content": None, "refusal": "no"}}]})
    assert r.finish_reason == "refusal" and r.refusal == "no" and r.text == ""
    r = _ask(server, {"choices": [{"finish_reason": "stop", "message": {"content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]})
    assert r.text == "ab" and r.finish_reason == "stop" and r.input_tokens is None


@pytest.mark.parametrize("body", [b"<html>oops</html>", b"[1, 2]"])
def test_a_body_that_is_no_chat_completion_is_a_typed_error(server, body):
    with pytest.raises(ModelClientError, match="m1"):
        _ask(server, body)


def test_request_bytes_are_what_the_sdk_would_serialize(server):
    # second implementation: the SDK serializing the plain payload itself (a dict body), bytes as received
    import time

    import numpy as np

    from urbanarena.agents.clients import Image, encode_image
    from urbanarena.agents.clients.transport import post_json
    from urbanarena.agents.clients.types import Text

    rng = np.random.default_rng(3)
    im1, im2 = (Image(rng.integers(0, 256, (24, 40, 3), dtype=np.uint8)) for _ in range(2))
    req = ModelRequest([Message("user", [im1, Text("Straße \u00e9 \"q\" \\ \n ok")]),
                        Message("assistant", "sure"),
                        Message("user", [Text("again"), im2, im1])], system="sys \u2192")
    server.body = json.dumps({"choices": [{"finish_reason": "stop", "message": {"content": "x"}}]}).encode()
    client = make_client(f"openai-compatible:{server.url}:m1")
    try:
        enc = {im.sha256: encode_image(im, client.images, client.spec.provider) for im in (im1, im2)}
        post_json(client._sdk, "/chat/completions", client.build_payload(req, enc), timeout_s=30.0,
                  deadline=time.monotonic() + 30.0, max_reply_bytes=1 << 20, label="t")
        by_sdk = server.raw[-1]
        assert client.payload_bytes(req, enc) == by_sdk
        client.complete(req, UsageCounters())  # what the client sends
    finally:
        client.close()
    assert server.raw[-1] == by_sdk
    url = server.requests[-1]["messages"][3]["content"][2]["image_url"]["url"]
    assert url == "data:image/jpeg;base64," + enc[im1.sha256].b64()
