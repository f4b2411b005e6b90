"""One HTTP attempt of a model call under a total deadline and a reply-size limit.

Both provider clients post their JSON body through their SDK's transport (base URL, auth
headers, connection pool, typed status and connection errors; the SDK's retries are off) with
``stream=True``, so the reply body is read here, chunk by chunk:

* **attempt deadline** (``RetryPolicy.attempt_deadline_s``): connect, send and the whole reply
  must finish within it. Each socket operation's timeout is the smaller of ``timeout_s`` and
  the time left, and the clock is checked at every chunk received, so a server that trickles
  its reply a few bytes at a time is cut off at the deadline (within one chunk's wait). A
  missed deadline raises :class:`ReplyFault` ``timeout``: counted and retried like any timeout.
* **reply-size limit** (``RetryPolicy.max_reply_bytes``): a ``Content-Length`` above it is
  refused before the body is read; otherwise the decoded body is counted while it streams and
  the read stops as soon as it passes the limit. Raises :class:`ReplyFault` ``reply_too_large``
  (retryable; the reply is never parsed, returned or cached).
* **a body that breaks off**: the connection closes before the declared ``Content-Length`` (or before
  the last chunk) arrives, is reset while the body streams, or sends a body the HTTP parser refuses
  (an illegal chunk header, a broken content encoding): :class:`ReplyFault` ``truncated_reply``,
  ``connection`` or ``protocol_error``, retried like any transport fault (a partial body is never parsed);
* **not a JSON completion**: a 200 whose body is not a JSON object raises :class:`ReplyFault`
  ``not_json`` (retryable, like a 5xx in its place); the provider client raises the same kind
  for a JSON object that is not a completion of its API.

Imports ``httpx2``, the HTTP library the current ``openai`` and ``anthropic`` SDKs are built on
(declared in the ``vlm`` extra).
"""

from __future__ import annotations

import json
import time
from typing import Any, Mapping

import httpx2

from urbanarena.agents.clients.errors import ReplyFault

def post_json(sdk: Any, path: str, body: dict[str, Any] | bytes, *, timeout_s: float, deadline: float,
              max_reply_bytes: int, label: str) -> tuple[Any, Mapping[str, str]]:
    """POST ``body`` to ``path`` through ``sdk`` and return ``(parsed JSON, response headers)``.

    Args:
        sdk: an ``openai.OpenAI`` or ``anthropic.Anthropic`` client (``max_retries=0``).
        path: request path below the SDK's base URL (``/chat/completions``, ``/v1/messages``).
        body: the JSON body, or its serialized UTF-8 bytes (sent as they are).
        timeout_s: per socket operation (connect, write, each read), seconds.
        deadline: ``time.monotonic()`` value by which the whole attempt must be done.
        max_reply_bytes: largest decoded reply body accepted, bytes.
        label: ``provider:model`` for messages.
    Raises:
        ReplyFault: ``timeout`` (deadline passed), ``reply_too_large``, ``not_json``, ``truncated_reply``,
            ``connection``, ``protocol_error`` (the body broke off: module docstring).
        openai/anthropic APIStatusError, APIConnectionError, APITimeoutError: from the SDK.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise ReplyFault("timeout", f"{label}: no time left in the attempt deadline")
    per_op = max(0.001, min(timeout_s, left))
    sent = {"content": body} if isinstance(body, bytes) else {"body": body}
    raw = sdk.post(path, **sent, cast_to=httpx2.Response, stream=True, options={"timeout": per_op})
    try:
        data = _read_limited(raw, deadline=deadline, max_bytes=max_reply_bytes, label=label)
    finally:
        raw.close()
    try:
        parsed = json.loads(data)
    except ValueError as e:
        ctype = raw.headers.get("content-type", "?")
        raise ReplyFault("not_json", f"{label}: HTTP {raw.status_code} reply is not JSON ({ctype}, "
                                     f"{len(data)} bytes): {e}") from None
    if not isinstance(parsed, dict):
        raise ReplyFault("not_json", f"{label}: HTTP {raw.status_code} reply is JSON {type(parsed).__name__}, "
                                     "not an object")
    return parsed, raw.headers


def _read_limited(raw: httpx2.Response, *, deadline: float, max_bytes: int, label: str) -> bytes:
    declared = raw.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ReplyFault("reply_too_large", f"{label}: reply of {int(declared)} bytes (Content-Length) exceeds "
                                            f"max_reply_bytes={max_bytes}")
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in raw.iter_bytes():  # no chunk size: each chunk as soon as the socket has it
            size += len(chunk)
            if size > max_bytes:
                raise ReplyFault("reply_too_large", f"{label}: reply passed max_reply_bytes={max_bytes} while "
                                                    "streaming; read stopped")
            if time.monotonic() > deadline:
                raise ReplyFault("timeout", f"{label}: attempt deadline passed while the reply was arriving "
                                            f"({size} bytes read)")
            chunks.append(chunk)
    except httpx2.HTTPError as e:
        raise _body_fault(e, label, size) from None
    return b"".join(chunks)


def _body_fault(e: Exception, label: str, size: int) -> ReplyFault:
    """The :class:`ReplyFault` of a transport error raised while a reply body streamed (module docstring)."""
    what = f"{label}: HTTP {type(e).__name__} after {size} bytes of the reply body: {e}"
    if isinstance(e, httpx2.TimeoutException):
        return ReplyFault("timeout", what)
    if isinstance(e, httpx2.RemoteProtocolError):
        text = str(e).lower()
        if "incomplete" in text or "peer closed" in text or "without sending complete" in text:
            return ReplyFault("truncated_reply", what)
        return ReplyFault("protocol_error", what)
    if isinstance(e, (httpx2.DecodingError, httpx2.ProtocolError)):
        return ReplyFault("protocol_error", what)
    return ReplyFault("connection", what)  # reset, dropped: any other transport error


__all__ = ["post_json"]
