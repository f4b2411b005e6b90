"""Fake model servers for tests: OpenAI Chat Completions and Anthropic Messages.

Each server is a real HTTP/1.1 server (``http.server.ThreadingHTTPServer``)
bound to ``127.0.0.1`` on a free port, so the real ``openai`` / ``anthropic``
SDKs talk to it over TCP. It

* answers from a *script*: a list of replies consumed in order, or a function
  ``(request_json, reply_index) -> reply``; a reply is a string or a
  :class:`ScriptedReply` (finish reason, reported model, refusal, token counts);
* records every request (:attr:`FakeModelServer.log`): arrival index, path,
  parsed JSON body, its content hash and attempt number, whether the API key
  matched, the fault injected, and the images it decoded (format, size,
  base64 length, mean RGB);
* decodes every image it receives with Pillow and enforces limits like the real
  APIs (``max_image_b64_bytes``, ``max_image_side_px`` -> HTTP 400);
* injects faults, either from an explicit plan (``fault_plan[i]`` applies to
  the i-th arriving request, ``None`` = serve normally) or, for arrivals
  beyond the plan, from a seeded :class:`FaultSchedule` at a chosen rate.

Fault kinds (:data:`TRANSPORT_FAULTS`, :data:`CONTENT_FAULTS`):

* transport — the request gets no usable reply:

  - ``timeout`` — read the request, send nothing for ``timeout_sleep_s``, close;
  - ``connection`` — read the request, close the socket without a reply;
  - ``http_429`` — 429 with ``Retry-After`` (and ``retry-after-ms`` if set);
  - ``http_<status>`` — that status (500, 503, 529 ...) with an error body;

* content — a 200 reply arrives but is unusable (the protocol decides about
  re-asking; the agents count them by parse-failure type, see
  :data:`CONTENT_FAULT_COUNTER`):

  - ``truncated`` — the scripted text cut before its first ``}`` (at most
    half of it), finish ``length`` / ``max_tokens``, output tokens = the
    request's cap;
  - ``malformed`` — :data:`MALFORMED_TEXT`, an object with a missing comma;
  - ``empty`` — no text;
  - ``refusal`` — OpenAI: ``message.refusal`` set, content null, finish
    ``content_filter``; Anthropic: no content, ``stop_reason`` ``refusal``;
  - ``oversized`` — the scripted text followed by filler, in all
    ``OVERSIZE_FACTOR`` x the request's output-token cap x 4 characters, with
    the output tokens that length implies (more than the cap allows).

Faulted requests never consume a list script's reply (content faults read the
reply they mangle without consuming it; a callable script is called as for a
normal reply, so scripts used with content faults should be functions of the
request content), and :attr:`FakeModelServer.injected` counts faults per kind.

**Seeded schedule and concurrency.** :meth:`FaultSchedule.decide` is a pure
function of ``(seed, key, attempt)``. With ``key="content"`` (default) the key
is the sha256 of the request body (canonical JSON) and ``attempt`` counts the
earlier arrivals of that same body; so a retry of a call, or a
``cityarena-v1`` re-request of the same prompt, draws again, and the same
logical call meets the same faults however concurrent episodes interleave
(arrival order never enters). Episodes that send byte-identical bodies (the
same task under another seed, when no seed reaches the prompt) share one
attempt counter: the faults drawn for that body are the same sequence in
every run, but which of those episodes meets which of them follows arrival
order. ``key="arrival"`` uses the global arrival index instead (reproducible
only for sequential clients). ``max_per_request`` caps the faults drawn for
one key (later attempts are served), so a client whose retry limit exceeds it
never gives up.

The server never writes anything to disk, and it stores only whether the
presented key matched, never the key.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import io
import itertools
import json
import socket
import struct
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np
from PIL import Image as PILImage


#: transport fault kinds a :class:`FaultSchedule` draws by default (``http_<status>`` of any status also works)
TRANSPORT_FAULTS: tuple[str, ...] = ("timeout", "connection", "http_429", "http_500", "http_503")
#: hostile 200 replies, transport faults of their own kind at the client (``trickle`` -> ``timeout`` once the
#: attempt deadline passes, ``html`` -> ``not_json``, ``huge`` -> ``reply_too_large``)
HOSTILE_FAULTS: tuple[str, ...] = ("trickle", "html", "huge", "cut", "reset", "badchunk")
#: broken 200 replies and the fault type the client counts each under: ``cut`` (a Content-Length body cut
#: short, then the connection closed), ``reset`` (headers and half the body, then a TCP reset), ``badchunk``
#: (chunked encoding whose chunk-size line is not hex)
BROKEN_REPLY_COUNTER: dict[str, str] = {"cut": "reply_truncated", "reset": "reply_reset", "badchunk": "reply_malformed"}
#: the body of an ``html`` fault (a proxy's error page with status 200)
HTML_BODY = b"<!DOCTYPE html><html><head><title>Gateway</title></head><body><h1>Upstream busy</h1></body></html>"
#: content fault kinds (a 200 reply that is unusable)
CONTENT_FAULTS: tuple[str, ...] = ("truncated", "malformed", "empty", "refusal", "oversized")
#: content fault kind -> the parse-failure type under which the agents count it
#: (:data:`urbanarena.agents.vlm.parsing.FAILURE_TYPES`)
CONTENT_FAULT_COUNTER: dict[str, str] = {
    "truncated": "truncated", "malformed": "json_invalid", "empty": "empty", "refusal": "refusal",
    "oversized": "oversized",
}
#: the text of a ``malformed`` reply: an object with a missing comma (no lenient reading repairs it)
MALFORMED_TEXT = '{"thought": "injected malformed reply", "action": "W" "answer": "SMALL", "memory": ""}'
#: the text of a ``refusal`` reply (OpenAI ``message.refusal``)
REFUSAL_TEXT = "I can't help with that request."
#: an ``oversized`` reply has ``OVERSIZE_FACTOR * cap * 4`` characters for an output-token cap ``cap``
OVERSIZE_FACTOR = 2
#: output-token cap assumed when a request names none
DEFAULT_CAP_TOKENS = 1024


def _unit(digest: bytes, offset: int) -> float:
    """A uniform number in [0, 1) from 8 bytes of ``digest`` at ``offset``."""
    return int.from_bytes(digest[offset:offset + 8], "big") / 2.0**64


@dataclass(frozen=True)
class FaultSchedule:
    """Seeded fault schedule (see the module docstring for keys and concurrency).

    Attributes:
        rate: probability in [0, 1] that an arrival is faulted.
        kinds: the kinds drawn from: a sequence (uniform) or ``{kind: weight}``.
        seed: schedule seed.
        key: ``content`` (body hash + attempt of that body) or ``arrival`` (arrival index).
        max_per_request: most faults drawn for one key (``None``: no cap).

    The draw for ``(seed, key, attempt)`` is ``d = sha256(f"{seed}:{key}:{attempt}")``:
    faulted iff ``u0 < rate`` and kind chosen by ``u1`` over the cumulative
    weights, where ``u0`` / ``u1`` are ``d``'s first / second 8 bytes as
    big-endian integers divided by 2**64.
    """

    rate: float
    kinds: Sequence[str] | Mapping[str, float] = TRANSPORT_FAULTS
    seed: int = 0
    key: Literal["content", "arrival"] = "content"
    max_per_request: int | None = 3

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {self.rate}")
        if not self.weights():
            raise ValueError("a fault schedule needs at least one kind with a positive weight")
        if self.key not in ("content", "arrival"):
            raise ValueError(f"schedule key must be 'content' or 'arrival', got {self.key!r}")

    def weights(self) -> list[tuple[str, float]]:
        """``[(kind, weight)]`` with positive weights, in the given order."""
        items = self.kinds.items() if isinstance(self.kinds, Mapping) else ((k, 1.0) for k in self.kinds)
        return [(str(k), float(w)) for k, w in items if float(w) > 0]

    def draw(self, key: str, attempt: int) -> str | None:
        """The fault kind for attempt ``attempt`` (0-based) of ``key``, or ``None``; ignores the cap."""
        d = hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).digest()
        if _unit(d, 0) >= self.rate:
            return None
        w = self.weights()
        x = _unit(d, 8) * sum(v for _, v in w)
        for kind, v in w:
            x -= v
            if x < 0:
                return kind
        return w[-1][0]

    def decide(self, key: str, attempt: int) -> str | None:
        """:meth:`draw` with ``max_per_request`` applied: ``None`` once the earlier attempts of ``key``
        drew that many faults."""
        if self.max_per_request is not None:
            earlier = sum(1 for a in range(attempt) if self.draw(key, a) is not None)
            if earlier >= self.max_per_request:
                return None
        return self.draw(key, attempt)


def body_sha256(body: dict[str, Any] | None, raw: bytes) -> str:
    """Content key of a request: sha256 of the canonical JSON body (sorted keys), else of the raw bytes."""
    data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode() if body is not None else raw
    return hashlib.sha256(data).hexdigest()


@dataclass
class ScriptedReply:
    """One scripted model reply.

    Attributes:
        text: reply text.
        finish: provider-native finish reason (OpenAI ``stop``/``length``/
            ``content_filter``; Anthropic ``end_turn``/``max_tokens``/``refusal``);
            ``None`` = the provider's normal stop.
        model: model name to report (default: the requested one).
        refusal: OpenAI ``message.refusal`` text.
        input_tokens / output_tokens: usage to report (default: computed,
            see :meth:`FakeModelServer.default_usage`).
    """

    text: str
    finish: str | None = None
    model: str | None = None
    refusal: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class ReceivedImage:
    """An image the server decoded from a request."""

    format: str
    width: int
    height: int
    b64_len: int
    mean_rgb: tuple[float, float, float]


@dataclass
class RecordedRequest:
    """One arrival at the server (``attempt``: earlier arrivals of the same ``body_sha256``)."""

    index: int
    path: str
    body: dict[str, Any] | None
    auth_ok: bool
    fault: str | None
    images: list[ReceivedImage] = field(default_factory=list)
    status: int | None = None
    reply_index: int | None = None
    body_sha256: str = ""
    attempt: int = 0

    def texts(self) -> list[str]:
        """All text parts of the request (system prompt included), in order."""
        out: list[str] = []
        b = self.body or {}
        sys_ = b.get("system")
        if isinstance(sys_, str):
            out.append(sys_)
        for m in b.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, list):
                out += [p["text"] for p in c if p.get("type") == "text"]
        return out


Script = list[ScriptedReply | str] | Callable[[dict[str, Any], int], ScriptedReply | str]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeModelServer(ABC):
    """Base of the two fakes (see module docstring).

    Args:
        script: replies (list, consumed in order) or a function of (body, reply index).
        fault_plan: fault kind (or ``None``) per arrival index (transport or content kinds).
        fault_schedule: seeded schedule for arrivals beyond ``fault_plan`` (``None``: none).
        api_key: the key the client must present (``None``: accept any).
        timeout_sleep_s: how long a ``timeout`` fault stays silent.
        retry_after: ``Retry-After`` header value sent with 429.
        retry_after_ms: ``retry-after-ms`` header value sent with 429 (``None``: not sent).
        max_image_b64_bytes / max_image_side_px: image limits (HTTP 400 beyond).
        trickle_bytes_per_s: how fast a ``trickle`` fault sends its (valid) reply, a few bytes at a time.
        huge_reply_bytes: text length of a ``huge`` fault's (valid) reply.
        declare_length: whether a ``huge`` reply carries ``Content-Length`` (else it is sent until the
            connection closes, so the client can only count it while it streams).
    """

    path = ""
    key_header = ""  # header holding the key besides "Authorization: Bearer"

    def __init__(
        self,
        script: Script,
        *,
        fault_plan: list[str | None] | None = None,
        fault_schedule: FaultSchedule | None = None,
        api_key: str | None = None,
        timeout_sleep_s: float = 1.0,
        retry_after: str = "1",
        retry_after_ms: str | None = None,
        max_image_b64_bytes: int | None = None,
        max_image_side_px: int | None = None,
        trickle_bytes_per_s: float = 16.0,
        huge_reply_bytes: int = 3_000_000,
        declare_length: bool = True,
    ):
        self.trickle_bytes_per_s = trickle_bytes_per_s
        self.huge_reply_bytes = huge_reply_bytes
        self.declare_length = declare_length
        self.script = script
        self.fault_plan = list(fault_plan or [])
        self.fault_schedule = fault_schedule
        self.api_key = api_key
        self.timeout_sleep_s = timeout_sleep_s
        self.retry_after = retry_after
        self.retry_after_ms = retry_after_ms
        self.max_image_b64_bytes = max_image_b64_bytes
        self.max_image_side_px = max_image_side_px
        self.log: list[RecordedRequest] = []
        self.injected: collections.Counter[str] = collections.Counter()
        self.replies_served = 0
        self._lock = threading.Lock()
        self._arrivals = itertools.count()
        self._seen: collections.Counter[str] = collections.Counter()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in separate writes: avoid 40 ms delayed-ACK stalls

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                owner._handle(self)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def served(self) -> list[RecordedRequest]:
        """Requests answered with a scripted reply (status 200, no content fault)."""
        return [r for r in self.log if r.status == 200 and r.fault is None]

    def injected_of(self, kinds: Sequence[str]) -> dict[str, int]:
        """:attr:`injected` restricted to ``kinds`` (e.g. :data:`CONTENT_FAULTS`), zero counts left out."""
        return {k: v for k, v in self.injected.items() if k in kinds and v}

    # ------------------------------------------------------------------ handling
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        sha = body_sha256(body, raw)
        with self._lock:
            index = next(self._arrivals)
            attempt = self._seen[sha]
            self._seen[sha] += 1
        if index < len(self.fault_plan):
            fault = self.fault_plan[index]
        elif self.fault_schedule is not None:
            sch = self.fault_schedule
            fault = sch.decide(sha, attempt) if sch.key == "content" else sch.decide("arrival", index)
        else:
            fault = None
        presented = {(h.headers.get("Authorization") or "").removeprefix("Bearer ").strip()}
        if self.key_header:
            presented.add((h.headers.get(self.key_header) or "").strip())
        auth_ok = self.api_key is None or self.api_key in presented
        rec = RecordedRequest(index=index, path=h.path, body=body, auth_ok=auth_ok, fault=fault, body_sha256=sha,
                              attempt=attempt)
        content = fault if fault in CONTENT_FAULTS else None
        with self._lock:
            self.log.append(rec)
            if fault is not None and content is None:
                self.injected[fault] += 1
        if content is not None:
            rec.fault = None  # set again below once the fault is applied (a rejected request carries none)
        if fault == "connection":
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault == "timeout":
            time.sleep(self.timeout_sleep_s)
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if fault in HOSTILE_FAULTS:
            self._send_hostile(h, rec, fault, body or {})
            return
        if fault is not None and content is None:
            status = int(fault.removeprefix("http_"))
            headers = {}
            if status == 429:
                headers["Retry-After"] = self.retry_after
                if self.retry_after_ms is not None:
                    headers["retry-after-ms"] = self.retry_after_ms
            self._send_json(h, rec, status, self.error_body(status, f"injected {fault}"), headers)
            return
        if h.path != self.path:
            self._send_json(h, rec, 404, self.error_body(404, f"unknown path {h.path}"))
            return
        if not auth_ok:
            self._send_json(h, rec, 401, self.error_body(401, "invalid api key"))
            return
        if body is None:
            self._send_json(h, rec, 400, self.error_body(400, "body is not JSON"))
            return
        problem = self._check_request(body, rec)
        if problem:
            self._send_json(h, rec, 400, self.error_body(400, problem))
            return
        with self._lock:
            reply_index = self.replies_served
            try:
                item = self.script(body, reply_index) if callable(self.script) else self.script[reply_index]
            except IndexError:
                item = None
            if item is not None and content is None:
                self.replies_served += 1
        if item is None:
            self._send_json(h, rec, 400, self.error_body(400, f"script exhausted after {reply_index} replies"))
            return
        reply = ScriptedReply(item) if isinstance(item, str) else item
        if content is not None:
            reply = self.content_fault(content, reply, body)
            with self._lock:
                rec.fault = content
                self.injected[content] += 1
        else:
            rec.reply_index = reply_index
        payload, headers = self.reply_body(body, reply, reply_index)
        self._send_json(h, rec, 200, payload, headers)

    @staticmethod
    def output_cap(body: dict[str, Any]) -> int:
        """The request's output-token cap (``max_completion_tokens`` / ``max_tokens``; else :data:`DEFAULT_CAP_TOKENS`)."""
        for name in ("max_completion_tokens", "max_tokens"):
            if isinstance(body.get(name), int):
                return int(body[name])
        return DEFAULT_CAP_TOKENS

    def content_fault(self, kind: str, reply: ScriptedReply, body: dict[str, Any]) -> ScriptedReply:
        """The reply that content fault ``kind`` sends instead of ``reply`` (see the module docstring)."""
        cap = self.output_cap(body)
        if kind == "truncated":
            text = reply.text
            cut = len(text) // 2
            if "}" in text:
                cut = min(cut, text.index("}"))
            return ScriptedReply(text[:cut] or '{"thought": "', finish=self.length_finish, output_tokens=cap)
        if kind == "malformed":
            return ScriptedReply(MALFORMED_TEXT)
        if kind == "empty":
            return ScriptedReply("")
        if kind == "refusal":
            return self.refusal_reply()
        if kind == "oversized":
            n = OVERSIZE_FACTOR * cap * 4
            filler = ("and so on " * (n // 10 + 1))
            return ScriptedReply((reply.text + "\n" + filler)[:max(n, len(reply.text) + 1)])
        raise ValueError(f"unknown content fault {kind!r}")

    length_finish = "length"

    def refusal_reply(self) -> ScriptedReply:
        """A refusal in the provider's form."""
        return ScriptedReply("", refusal=REFUSAL_TEXT)

    def _send_json(self, h: BaseHTTPRequestHandler, rec: RecordedRequest, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        rec.status = status
        data = json.dumps(payload).encode()
        try:
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_hostile(self, h: BaseHTTPRequestHandler, rec: RecordedRequest, fault: str, body: dict[str, Any]) -> None:
        """Status 200 and a body no client should use: an HTML page, a valid reply sent a few bytes at a time,
        or a valid reply of ``huge_reply_bytes`` characters (no script reply is consumed)."""
        rec.status = 200
        ctype = "application/json"
        length = True
        if fault == "html":
            data, ctype = HTML_BODY, "text/html; charset=utf-8"
        else:
            text = "x" * self.huge_reply_bytes if fault == "huge" else "trickled reply"
            payload, _ = self.reply_body(body, ScriptedReply(text), 0)
            data = json.dumps(payload).encode()
            length = fault != "huge" or self.declare_length
        if fault in BROKEN_REPLY_COUNTER:
            self._send_broken(h, fault, data)
            return
        try:
            h.send_response(200)
            h.send_header("Content-Type", ctype)
            if length:
                h.send_header("Content-Length", str(len(data)))
            else:
                h.send_header("Connection", "close")
                h.close_connection = True
            h.end_headers()
            if fault != "trickle":
                h.wfile.write(data)
                return
            step = 4
            t_end = time.monotonic() + 120.0  # never trickles forever
            for i in range(0, len(data), step):
                h.wfile.write(data[i:i + step])
                h.wfile.flush()
                if time.monotonic() > t_end:
                    break
                time.sleep(step / self.trickle_bytes_per_s)
        except (BrokenPipeError, ConnectionResetError):
            pass

    @staticmethod
    def _send_broken(h: BaseHTTPRequestHandler, fault: str, data: bytes) -> None:
        """A status-200 reply broken at the transport level (see :data:`BROKEN_REPLY_COUNTER`)."""
        h.close_connection = True
        try:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            if fault == "badchunk":
                h.send_header("Transfer-Encoding", "chunked")
                h.end_headers()
                h.wfile.write(b"zz\r\n" + data[:8] + b"\r\n0\r\n\r\n")
                h.wfile.flush()
                return
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[:len(data) // 2])
            h.wfile.flush()
            if fault == "reset":  # SO_LINGER 0: close sends RST instead of FIN
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                h.connection.close()
            else:
                h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _decode_image(self, b64: str, rec: RecordedRequest) -> str | None:
        if self.max_image_b64_bytes is not None and len(b64) > self.max_image_b64_bytes:
            return f"image exceeds {self.max_image_b64_bytes} bytes (base64 length {len(b64)})"
        try:
            data = base64.b64decode(b64, validate=True)
            pil = PILImage.open(io.BytesIO(data))
            pil.load()
        except Exception as e:  # noqa: BLE001 - any decode failure is a 400
            return f"could not decode image: {e}"
        if self.max_image_side_px is not None and max(pil.size) > self.max_image_side_px:
            return f"image side {max(pil.size)} px exceeds {self.max_image_side_px}"
        arr = np.asarray(pil.convert("RGB"), dtype=np.float64)
        mean = tuple(float(x) for x in arr.reshape(-1, 3).mean(axis=0))
        rec.images.append(ReceivedImage(pil.format or "?", pil.size[0], pil.size[1], len(b64), mean))  # type: ignore[arg-type]
        return None

    @staticmethod
    def default_usage(body: dict[str, Any], text: str) -> tuple[int, int]:
        """Deterministic usage: input = ceil(text chars / 4) + 100 per image; output = ceil(len(text) / 4) + 1."""
        chars, images = 0, 0
        if isinstance(body.get("system"), str):
            chars += len(body["system"])
        for m in body.get("messages", []):
            c = m.get("content")
            if isinstance(c, str):
                chars += len(c)
                continue
            for p in c or []:
                if p.get("type") == "text":
                    chars += len(p["text"])
                elif p.get("type") in ("image", "image_url"):
                    images += 1
        return -(-chars // 4) + 100 * images, -(-len(text) // 4) + 1

    # ------------------------------------------------------------------ provider specifics
    @abstractmethod
    def _check_request(self, body: dict[str, Any], rec: RecordedRequest) -> str | None:
        """Validate a request (decoding its images); return a 400 message or ``None``."""

    @abstractmethod
    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The provider's error JSON."""

    @abstractmethod
    def reply_body(self, body: dict[str, Any], reply: ScriptedReply, n: int) -> tuple[dict[str, Any], dict[str, str]]:
        """The provider's reply JSON and response headers for scripted reply number ``n``."""


class FakeOpenAIServer(FakeModelServer):
    """Fake ``POST /v1/chat/completions``; :attr:`base_url` is ``http://127.0.0.1:PORT/v1``."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def _check_request(self, body: dict[str, Any], rec: RecordedRequest) -> str | None:
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return "model and messages are required"
        for m in body["messages"]:
            c = m.get("content")
            if isinstance(c, list):
                for p in c:
                    if p.get("type") == "image_url":
                        url = p["image_url"]["url"]
                        if not url.startswith("data:image/") or ";base64," not in url:
                            return "image_url must be a base64 data URL"
                        err = self._decode_image(url.split(";base64,", 1)[1], rec)
                        if err:
                            return err
        return None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "fake_error", "code": status}}

    def reply_body(self, body: dict[str, Any], reply: ScriptedReply, n: int) -> tuple[dict[str, Any], dict[str, str]]:
        tin, tout = self.default_usage(body, reply.text)
        tin = reply.input_tokens if reply.input_tokens is not None else tin
        tout = reply.output_tokens if reply.output_tokens is not None else tout
        finish = reply.finish or ("content_filter" if reply.refusal else "stop")
        payload = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": 1700000000 + n,
            "model": reply.model or body["model"],
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": None if reply.refusal else reply.text, "refusal": reply.refusal},
                "finish_reason": finish,
                "logprobs": None,
            }],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
        }
        return payload, {"x-request-id": f"req_fake_{n}"}


class FakeAnthropicServer(FakeModelServer):
    """Fake ``POST /v1/messages``; :attr:`base_url` is ``http://127.0.0.1:PORT`` (the SDK adds ``/v1``).

    Rejects requests without ``anthropic-version`` or ``max_tokens`` (400), like
    the real API. The key is accepted from ``x-api-key`` or ``Authorization:
    Bearer`` (recent SDKs send the latter).
    """

    path = "/v1/messages"
    key_header = "x-api-key"
    length_finish = "max_tokens"

    def refusal_reply(self) -> ScriptedReply:
        return ScriptedReply("", finish="refusal")

    def __init__(self, script: Script, **kw: Any):
        kw.setdefault("max_image_b64_bytes", 5 * 1024 * 1024)
        kw.setdefault("max_image_side_px", 8000)
        super().__init__(script, **kw)
        self.versions_seen: set[str] = set()

    @property
    def base_url(self) -> str:
        return self.root_url

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        v = h.headers.get("anthropic-version")
        if v:
            self.versions_seen.add(v)
        super()._handle(h)

    def _check_request(self, body: dict[str, Any], rec: RecordedRequest) -> str | None:
        if not self.versions_seen:
            return "anthropic-version header required"
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: field required"
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return "messages: field required"
        for m in body["messages"]:
            c = m.get("content")
            if isinstance(c, list):
                for p in c:
                    if p.get("type") == "image":
                        src = p["source"]
                        if src.get("type") != "base64" or src.get("media_type") not in ("image/jpeg", "image/png", "image/gif", "image/webp"):
                            return "image source must be base64 jpeg/png/gif/webp"
                        err = self._decode_image(src["data"], rec)
                        if err:
                            return err
        return None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def reply_body(self, body: dict[str, Any], reply: ScriptedReply, n: int) -> tuple[dict[str, Any], dict[str, str]]:
        tin, tout = self.default_usage(body, reply.text)
        tin = reply.input_tokens if reply.input_tokens is not None else tin
        tout = reply.output_tokens if reply.output_tokens is not None else tout
        payload = {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or body["model"],
            "content": [{"type": "text", "text": reply.text}] if reply.text else [],
            "stop_reason": reply.finish or "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tin, "output_tokens": tout},
        }
        return payload, {"request-id": f"req_fake_{n}"}
