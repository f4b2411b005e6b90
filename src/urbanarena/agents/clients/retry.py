"""Our one retry policy for transport faults (the SDKs' own retries are off).

A *transport fault* is a request that got no usable HTTP reply or a status
that says "try again":

=================  ==========================================================
counter key        cause
=================  ==========================================================
``timeout``        no reply within the per-request timeout, or the attempt's
                   total deadline (``attempt_deadline_s``: connect, send and
                   the whole reply) passed
``connection``     connection refused, reset or dropped before a reply
``reply_too_large`` the reply body passed ``max_reply_bytes`` (refused while
                   streaming; never parsed or cached)
``not_json``       HTTP 200 whose body is not a JSON completion of the API
``truncated_reply`` the reply body ended before its declared length or last
                   chunk (a reset while it streamed counts as ``connection``)
``protocol_error`` the reply body broke the HTTP rules (illegal chunk header,
                   broken content encoding)
``http_429``       rate limited (``Retry-After`` / ``retry-after-ms`` honoured)
``http_408``       request timeout reported by the server
``http_409``       conflict (the providers document it as retryable)
``http_5xx``       any server error, counted per status (``http_500``,
                   ``http_503``, Anthropic's ``http_529`` overloaded ...)
=================  ==========================================================

These are retried with exponential backoff, ``delay_k = min(backoff_max_s,
backoff_initial_s * backoff_factor**k)`` for retry ``k = 0, 1, ...``, raised to
the server's ``Retry-After`` when that is longer (capped at
``retry_after_max_s``), plus uniform jitter of up to ``jitter_frac * delay``.
Other 4xx statuses (400, 401, 403, 404, 413, 422 ...) are not retried: they are
counted as ``http_<status>`` and raised as
:class:`~urbanarena.agents.clients.errors.ModelRequestError`.

A reply that *arrives* but is empty, truncated or a refusal is not a transport
fault: it is returned, flagged, and the protocol decides about re-asking.

Per call (one :meth:`~urbanarena.agents.clients.base.ModelClient.complete` that
goes to the network) the attempts and the waits between them share an overall
budget ``call_budget_s``: no retry is started that would begin after it, and
each attempt's deadline is cut to what is left of it. A call that runs out
raises :class:`~urbanarena.agents.clients.errors.ModelTransportError` with the
last fault's kind.
"""

from __future__ import annotations

import email.utils
import random
import sys
import time
from dataclasses import dataclass
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from urbanarena.agents.clients.errors import ReplyFault

RETRYABLE_STATUS = frozenset({408, 409, 429})
#: default ``max_reply_bytes``: 1 MiB, some 250 times a 1024-token completion's JSON
DEFAULT_MAX_REPLY_BYTES = 1 << 20


class RetryPolicy(BaseModel):
    """Retry limits and backoff (seconds).

    Attributes:
        max_retries: retries after the first attempt (so at most
            ``max_retries + 1`` requests per call).
        backoff_initial_s / backoff_factor / backoff_max_s: exponential backoff.
        jitter_frac: uniform jitter fraction added to each delay (0 disables).
        honour_retry_after: wait at least the server's ``Retry-After``.
        retry_after_max_s: cap on a server-requested wait.
        attempt_deadline_s: total time of one attempt (connect, send, whole reply); ``None`` =
            twice the client's per-operation ``timeout_s``.
        call_budget_s: total time of one call across its attempts and waits.
        max_reply_bytes: largest reply body accepted (decoded bytes); the request's
            ``max_output_tokens`` remains the way to bound generation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_retries: int = Field(default=6, ge=0)
    backoff_initial_s: float = Field(default=1.0, ge=0.0)
    backoff_factor: float = Field(default=2.0, ge=1.0)
    backoff_max_s: float = Field(default=60.0, ge=0.0)
    jitter_frac: float = Field(default=0.1, ge=0.0, le=1.0)
    honour_retry_after: bool = True
    retry_after_max_s: float = Field(default=300.0, ge=0.0)
    attempt_deadline_s: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    call_budget_s: float = Field(default=900.0, gt=0.0, allow_inf_nan=False)
    max_reply_bytes: int = Field(default=DEFAULT_MAX_REPLY_BYTES, ge=1024)

    def attempt_deadline_for(self, timeout_s: float) -> float:
        """Seconds one attempt may take with per-operation timeout ``timeout_s``."""
        return self.attempt_deadline_s if self.attempt_deadline_s is not None else 2.0 * float(timeout_s)

    def delay_s(self, retry_index: int, retry_after_s: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry_index`` (0 = first retry)."""
        delay = min(self.backoff_max_s, self.backoff_initial_s * self.backoff_factor**retry_index)
        if self.honour_retry_after and retry_after_s is not None and retry_after_s > delay:
            delay = min(retry_after_s, self.retry_after_max_s)
        if self.jitter_frac > 0 and delay > 0:
            delay += (rng or random).uniform(0.0, self.jitter_frac * delay)
        return delay


@dataclass(frozen=True)
class Fault:
    """A classified failure of one attempt.

    Attributes:
        kind: counter key (see module docstring).
        retryable: whether our policy retries it.
        status: HTTP status, if any.
        retry_after_s: server-requested wait, if any.
        message: short description (never contains headers or keys).
    """

    kind: str
    retryable: bool
    status: int | None = None
    retry_after_s: float | None = None
    message: str = ""


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Server-requested wait in seconds from ``retry-after-ms`` or ``Retry-After``.

    ``retry-after-ms`` (milliseconds; OpenAI and Anthropic send it) wins;
    ``Retry-After`` is seconds (fractions accepted) or an HTTP date (RFC 9110
    section 10.2.3). Returns ``None`` when absent or unparsable; negative
    waits become 0.
    """
    if not headers:
        return None
    get = headers.get
    ms = get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    ra = get("retry-after")
    if ra is None:
        return None
    try:
        return max(0.0, float(ra))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(ra)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def classify_exception(exc: BaseException) -> Fault | None:
    """Classify an exception raised by the ``openai`` or ``anthropic`` SDK.

    Both SDKs raise ``APITimeoutError`` (a subclass of ``APIConnectionError``),
    ``APIConnectionError`` and ``APIStatusError`` (with ``status_code`` and
    ``response``); they are recognised by class (only SDKs already imported
    are consulted: an exception of an SDK implies it is loaded).

    Returns: a :class:`Fault`, or ``None`` for exceptions that are not
        transport or HTTP-status errors (they propagate unchanged).
    """
    if isinstance(exc, ReplyFault):
        return Fault(exc.kind, True, message=str(exc))
    sdks = [m for m in (sys.modules.get("openai"), sys.modules.get("anthropic")) if m is not None]
    if not sdks:
        return None

    def classes(name: str) -> tuple[type, ...]:
        return tuple(getattr(m, name) for m in sdks)

    if isinstance(exc, classes("APITimeoutError")):
        return Fault("timeout", True, message="request timed out")
    if isinstance(exc, classes("APIConnectionError")):
        cause = exc.__cause__ or exc.__context__
        return Fault("connection", True, message=f"connection error ({type(cause).__name__ if cause else 'no cause'})")
    if isinstance(exc, classes("APIStatusError")):
        status = int(exc.status_code)
        headers: Any = getattr(getattr(exc, "response", None), "headers", None)
        retry_after = parse_retry_after(headers)
        retryable = status in RETRYABLE_STATUS or status >= 500
        return Fault(f"http_{status}", retryable, status=status, retry_after_s=retry_after, message=_status_message(exc))
    return None


def _status_message(exc: Any) -> str:
    """``HTTP <status>: <error message from the body>`` (bodies never hold our key)."""
    body = getattr(exc, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message")
    return f"HTTP {exc.status_code}: {msg or type(exc).__name__}"
