"""A fake OpenAI-compatible model server for the concurrency sweep (``urbanarena bench sweep``).

A real HTTP/1.1 server (``http.server.ThreadingHTTPServer``, one thread per
connection, listen backlog 1024 so hundreds of simultaneous clients connect at
once) bound to ``127.0.0.1`` on a free port, answering ``POST
/v1/chat/completions`` like the OpenAI Chat Completions API after a fixed
``latency_s`` (default 0.2 s: the model is the bottleneck the sweep measures).

Replies follow a fixed scripted policy for the arena agent (``vlm-arena``):
the step number is read from the request text (``This is step N.``, the
arena prompt's wording); steps before ``answer_step`` are answered with
``{"action": "W", "answer": "LARGE"}`` (walk 7 m), step ``answer_step`` and
later (or a request without a step number) with ``ANSWER``. The reply is a
function of the request only, so concurrent episodes get the same replies as
sequential ones.

Each request's images (``image_url`` data URLs) are checked: base64 decoded,
the header read with Pillow (format and size, no pixel decode); a request
without a decodable image of the expected kind still gets its reply, and
:meth:`BenchModelServer.stats` counts requests, images by ``WxH`` and format,
and bad images. ``GET /stats`` returns the same as JSON. Nothing is written to
disk and no key is checked or stored.

Run standalone (the sweep runs it as a separate process, as a remote model
server would be): ``python -m urbanarena.bench.fake_server --latency-ms 200
--answer-step 10``; it prints ``{"port": N}`` on its first stdout line and
serves until its standard input closes or it is terminated.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import collections
import io
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image as PILImage

STEP_RE = re.compile(r"This is step (\d+)\.")
CHAT_PATH = "/v1/chat/completions"


def arena_walk_reply(step: int | None, answer_step: int, answer: str = "x:1 y:2") -> str:
    """The scripted arena reply for ``step`` (see the module docstring): a JSON object as text."""
    if step is not None and step < answer_step:
        return json.dumps({"thought": "walk on", "action": "W", "memory": f"walked {step}", "answer": "LARGE"})
    return json.dumps({"thought": "done", "action": "ANSWER", "memory": "", "answer": answer})


def request_step(body: dict[str, Any]) -> int | None:
    """The arena step number in a chat request's text parts (``This is step N.``), or ``None``."""
    for m in body.get("messages") or []:
        c = m.get("content")
        texts = [c] if isinstance(c, str) else [p.get("text", "") for p in c or [] if isinstance(p, dict)]
        for t in texts:
            hit = STEP_RE.search(t or "")
            if hit:
                return int(hit.group(1))
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 1024  # listen backlog: the default 5 drops SYNs when hundreds connect at once


class BenchModelServer:
    """The fake server (module docstring).

    Args:
        latency_s: seconds each reply waits before it is sent (>= 0).
        answer_step: first step answered with ``ANSWER``.
        answer: the answer text.
    Raises:
        ValueError: negative latency or ``answer_step < 1``.
    """

    def __init__(self, latency_s: float = 0.2, answer_step: int = 10, answer: str = "x:1 y:2"):
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        if answer_step < 1:
            raise ValueError(f"answer_step must be >= 1, got {answer_step}")
        self.latency_s = float(latency_s)
        self.answer_step = int(answer_step)
        self.answer = answer
        self._lock = threading.Lock()
        self._requests = 0
        self._bad_images = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._images: collections.Counter[str] = collections.Counter()
        self._httpd: _Server | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "BenchModelServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                owner._post(self)

            def do_GET(self) -> None:  # noqa: N802
                owner._send(self, 200 if self.path == "/stats" else 404,
                            owner.stats() if self.path == "/stats" else {"error": {"message": "not found"}})

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "BenchModelServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (what an OpenAI-compatible model spec names)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """``requests`` answered, ``images`` by ``"FORMAT WxH"``, ``bad_images``, ``max_in_flight`` (most
        requests inside their latency wait at once)."""
        with self._lock:
            return {"requests": self._requests, "images": dict(self._images), "bad_images": self._bad_images,
                    "max_in_flight": self._max_in_flight}

    # ------------------------------------------------------------------ handling
    def _image_key(self, url: str) -> str | None:
        if not url.startswith("data:image/") or ";base64," not in url:
            return None
        try:
            data = base64.b64decode(url.split(";base64,", 1)[1], validate=True)
            with PILImage.open(io.BytesIO(data)) as im:
                return f"{im.format} {im.size[0]}x{im.size[1]}"
        except (binascii.Error, ValueError, OSError):
            return None

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        if h.path != CHAT_PATH:
            self._send(h, 404, {"error": {"message": f"unknown path {h.path}", "type": "fake_error"}})
            return
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send(h, 400, {"error": {"message": "body must be a chat request", "type": "fake_error"}})
            return
        keys, bad = [], 0
        for m in body["messages"]:
            for p in m.get("content") if isinstance(m.get("content"), list) else []:
                if isinstance(p, dict) and p.get("type") == "image_url":
                    k = self._image_key(str((p.get("image_url") or {}).get("url", "")))
                    if k is None:
                        bad += 1
                    else:
                        keys.append(k)
        with self._lock:
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._requests += 1
                self._bad_images += bad
                self._images.update(keys)
                n = self._requests
        text = arena_walk_reply(request_step(body), self.answer_step, self.answer)
        tin = 100 * (len(keys) + bad) + sum(len(json.dumps(m.get("content"))) for m in body["messages"]) // 400
        tout = len(text) // 4 + 1
        self._send(h, 200, {
            "id": f"chatcmpl-bench-{n}", "object": "chat.completion", "created": 1700000000,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
        })

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


def main(argv: list[str] | None = None) -> None:
    """Serve until standard input closes (module docstring)."""
    ap = argparse.ArgumentParser(description="fake OpenAI-compatible server for urbanarena bench")
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--answer-step", type=int, default=10)
    args = ap.parse_args(argv)
    srv = BenchModelServer(args.latency_ms / 1000.0, args.answer_step).start()
    sys.stdout.write(json.dumps({"port": srv.port}) + "\n")
    sys.stdout.flush()
    try:
        sys.stdin.read()  # returns when the parent closes the pipe (or dies)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
