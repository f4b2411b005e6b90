"""The provider-neutral model client: cache, budget, retries, counters.

:meth:`ModelClient.complete` does, in order:

1. validate the request (roles, image count against
   ``ImageSettings.max_images_per_request``);
2. compute the cache key (:mod:`~urbanarena.agents.clients.cache`); on a hit
   return the stored reply (``from_cache=True``, no API call, no budget use);
   in ``read-only`` mode a miss raises :class:`CacheMissError`;
3. encode the images (:func:`~urbanarena.agents.clients.images.encode_image`);
4. reserve budget (:class:`~urbanarena.agents.clients.cost.BudgetGuard`) with
   the request's upper-bound cost; :class:`BudgetExceeded` stops here, before
   anything is sent;
5. send through the provider SDK's transport (its own retries off, ``max_retries=0``,
   per-operation timeout, a total deadline per attempt, a reply-size limit
   enforced while the body streams, :mod:`~urbanarena.agents.clients.transport`;
   an overall time budget per call across its retries); transport faults are counted by type and retried by
   our :class:`~urbanarena.agents.clients.retry.RetryPolicy`; non-retryable
   statuses raise :class:`ModelRequestError`, exhausted retries
   :class:`ModelTransportError`; with rate limits configured every attempt
   first waits for the provider's shared limiter
   (:mod:`~urbanarena.agents.clients.rate_limit`);
6. build the :class:`ModelReply` (flags ``empty``/``truncated``/``refusal``/
   ``oversized``, model mismatch, cost), account it in the counters and the
   budget, store it in the cache, return it. Flagged replies are returned, not
   retried.

A reply is ``oversized`` when the provider reports more output tokens than
``max_output_tokens`` allows, or its text is longer than
:data:`OVERSIZED_CHARS_PER_TOKEN` characters per allowed output token (a
backstop for servers that report no usage); the parsers do not read such a
reply (the protocol re-asks as for any unusable reply).

Waits between retries go through :attr:`ModelClient.sleep` (``time.sleep``;
tests replace it to record the delays instead of sleeping).

The API key is read from the environment once (:func:`resolve_api_key`) and
handed to the SDK object; it is never an attribute of the client, never in
:meth:`config`, in a reply, a counter, the cache or an error message.
"""

from __future__ import annotations

import logging
import random
import re
import time
from abc import ABC, abstractmethod
from typing import Any, Mapping

from urbanarena.agents.clients.cache import ResponseCache, cache_key, request_summary
from urbanarena.agents.clients.cost import BudgetGuard, ModelPrice, PriceTable, RequestShape, request_input_tokens
from urbanarena.agents.clients.errors import ModelClientError, ModelRequestError, ModelTransportError
from urbanarena.agents.clients.images import EncodedImage, encode_image
from urbanarena.agents.clients import http_pool
from urbanarena.agents.clients.rate_limit import RateLimiter, limiter_for
from urbanarena.agents.clients.retry import RetryPolicy, classify_exception
from urbanarena.agents.clients.spec import ModelSpec, resolve_api_key
from urbanarena.agents.clients.types import (
    GenerationSettings,
    ImageSettings,
    ModelReply,
    ModelRequest,
    UsageCounters,
    model_mismatch,
)

log = logging.getLogger("urbanarena.agents.clients")

#: an ``oversized`` reply's text exceeds this many characters per allowed output token
OVERSIZED_CHARS_PER_TOKEN = 32

_KEYLIKE = re.compile(r"\b(?:sk|sk-ant|key|api)[-_][A-Za-z0-9*_\-]{6,}")


class ModelClient(ABC):
    """Base class of the provider clients (see the module docstring for the call flow).

    Args:
        spec: parsed model spec.
        generation: pinned generation settings.
        images: image encoding settings.
        timeout_s: per socket operation (connect, write, each read), seconds; the whole attempt is
            bounded by ``retry.attempt_deadline_s`` (default twice this) and the call by
            ``retry.call_budget_s``.
        retry: our retry policy.
        cache: response cache (``None`` = off).
        budget: budget guard (``None`` = no caps).
        prices: price table (default: shipped + ``$URBANARENA_PRICES``).
        api_key_env: name of an environment variable to read the key from
            instead of the provider default (see :mod:`.spec`).
        rng_seed: seed of the jitter RNG (delays only; never affects replies).
        rate_limiter: a :class:`~urbanarena.agents.clients.rate_limit.RateLimiter` every HTTP attempt
            goes through; ``None`` = the process's shared limiter of this provider endpoint when
            limits are configured (:func:`~urbanarena.agents.clients.rate_limit.limiter_for`), else none.
        shared_http: use the process's shared connection pool of the endpoint
            (:mod:`~urbanarena.agents.clients.http_pool`); ``None`` = yes unless
            ``URBANARENA_SHARED_HTTP=0``.

    Raises:
        MissingAPIKeyError: required key variable unset.
        ModelClientError: ``budget.max_usd`` set for a model without a price.
    """

    provider: str = ""
    #: how retry waits are taken (seconds -> None); replace on the class or an instance to record them
    sleep = staticmethod(time.sleep)

    def __init__(
        self,
        spec: ModelSpec,
        *,
        generation: GenerationSettings | None = None,
        images: ImageSettings | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        cache: ResponseCache | None = None,
        budget: BudgetGuard | None = None,
        prices: PriceTable | None = None,
        api_key_env: str | None = None,
        rng_seed: int | None = None,
        rate_limiter: RateLimiter | None = None,
        shared_http: bool | None = None,
    ):
        if spec.provider != self.provider and not (self.provider == "openai" and spec.provider == "openai-compatible"):
            raise ModelClientError(f"{type(self).__name__} cannot serve provider {spec.provider!r}")
        self.spec = spec
        self.generation = generation or GenerationSettings()
        self.images = images or ImageSettings()
        self.timeout_s = float(timeout_s)
        self.retry = retry or RetryPolicy()
        self.cache = cache
        self.budget = budget
        self.price: ModelPrice = (prices or PriceTable()).lookup(spec.provider, spec.model)
        if budget is not None and budget.max_usd is not None and not self.price.priced:
            raise ModelClientError(
                f"--max-usd is set but {spec.provider}:{spec.model} has no price in the price table "
                f"(matched entry {self.price.matched!r}); add one with a price override file"
            )
        self.counters = UsageCounters()
        self._rng = random.Random(rng_seed)
        self._unsupported = self.generation.unsupported_for(spec.provider)
        if self._unsupported:
            log.warning("%s does not support %s; not sent", spec.provider, ", ".join(self._unsupported))
        self.rate_limiter = rate_limiter if rate_limiter is not None else limiter_for(spec.provider, spec.endpoint)
        self.shared_http = http_pool.enabled() if shared_http is None else bool(shared_http)
        self._sdk = self._make_sdk(resolve_api_key(spec, api_key_env))

    # ------------------------------------------------------------------ provider hooks
    @abstractmethod
    def _make_sdk(self, api_key: str) -> Any:
        """Build the SDK client (``max_retries=0``, ``timeout=self.timeout_s``)."""

    @abstractmethod
    def _send(self, request: ModelRequest, encoded: dict[str, EncodedImage], deadline: float) -> tuple[ModelReply, Mapping[str, str]]:
        """One HTTP attempt; returns the reply (without cost/flags bookkeeping) and response headers.

        ``encoded`` maps :attr:`Image.sha256` to its encoding; ``deadline`` is the ``time.monotonic()``
        value by which the attempt must be done (:func:`~urbanarena.agents.clients.transport.post_json`).
        SDK exceptions and :class:`~urbanarena.agents.clients.errors.ReplyFault` propagate.
        """

    def _post(self, path: str, body: dict[str, Any] | bytes, deadline: float) -> tuple[Any, Mapping[str, str]]:
        """POST ``body`` under the attempt deadline and the reply-size limit (:mod:`.transport`)."""
        from urbanarena.agents.clients.transport import post_json

        return post_json(self._sdk, path, body, timeout_s=self.timeout_s, deadline=deadline,
                         max_reply_bytes=self.retry.max_reply_bytes, label=f"{self.spec.provider}:{self.spec.model}")

    # ------------------------------------------------------------------ public API
    def config(self) -> dict[str, Any]:
        """Everything about the client that can change a reply (JSON-able, no key).

        Enters the agent's ``config()`` and so the run's config hash:
        provider, model, generation settings as sent (unsupported ones
        ``None`` and listed), image settings, provider-specific request
        options. The endpoint URL is not included (as in the cache key): the
        same model served from another host or port is the same
        configuration; it is in :meth:`runtime_config`.
        """
        return {
            "provider": self.spec.provider,
            "model": self.spec.model,
            "generation": self.generation.effective_for(self.spec.provider),
            "unsupported_settings": list(self._unsupported),
            "images": self.images.model_dump(mode="json"),
            **self._request_options(),
        }

    def runtime_config(self) -> dict[str, Any]:
        """Settings that do not change replies (for run metadata, not the hash)."""
        return {
            "endpoint": self.spec.endpoint,
            "timeout_s": self.timeout_s,
            "retry": self.retry.model_dump(mode="json"),
            "cache": {"mode": self.cache.mode if self.cache else "off", "path": str(self.cache.path) if self.cache else None},
            "budget": None if self.budget is None else {"max_usd": self.budget.max_usd, "max_requests": self.budget.max_requests},
            "price": self.price.model_dump(mode="json"),
        }

    def _request_options(self) -> dict[str, Any]:
        return {}

    def new_counters(self) -> UsageCounters:
        """Replace :attr:`counters` by a fresh object and return the old one (per-episode use)."""
        old, self.counters = self.counters, UsageCounters()
        return old

    def key_for(self, request: ModelRequest) -> str:
        """The cache key ``request`` has under this client's settings."""
        return cache_key(self._summary(request))

    def _summary(self, request: ModelRequest) -> dict[str, Any]:
        return request_summary(self.spec.provider, self.spec.model, request, self.generation.effective_for(self.spec.provider), self.images)

    def upper_cost_usd(self, request: ModelRequest) -> float | None:
        """Upper-bound cost of ``request``: estimated input tokens + ``max_output_tokens`` at table prices."""
        tokens_in, _ = request_input_tokens(RequestShape.of(request), self.price, self.images, self.spec.provider)
        return self.price.cost_usd(tokens_in, self.generation.max_output_tokens)

    def complete(self, request: ModelRequest, counters: UsageCounters | None = None) -> ModelReply:
        """Send ``request`` (or serve it from the cache) and return the reply.

        Args:
            request: the provider-neutral request.
            counters: where to count (default :attr:`counters`).
        Returns: the :class:`ModelReply` (possibly flagged).
        Raises:
            ValueError: malformed request, too many images.
            ImageEncodingError: an image cannot be encoded under the limits.
            CacheMissError: ``read-only`` cache and no entry (no API call made).
            BudgetExceeded: the next API request would cross a cap (nothing sent).
            ModelRequestError: non-retryable HTTP status (4xx other than 408/409/429).
            ModelTransportError: transport faults after ``retry.max_retries`` retries.
        """
        c = counters if counters is not None else self.counters
        request.validate()
        imgs = request.images()
        if self.images.max_images_per_request is not None and len(imgs) > self.images.max_images_per_request:
            raise ValueError(f"request has {len(imgs)} images; image settings allow {self.images.max_images_per_request}")
        summary = self._summary(request)
        key = cache_key(summary)
        if self.cache is not None and self.cache.enabled:
            hit = self.cache.get(key)  # raises CacheMissError in read-only mode
            if hit is not None:
                c.bump("cache_hits")
                c.record_reply(hit)
                return hit
            c.bump("cache_misses")
        encoded: dict[str, EncodedImage] = {}
        for im in imgs:
            if im.sha256 not in encoded:
                encoded[im.sha256] = encode_image(im, self.images, self.spec.provider)
        reservation = self.budget.reserve(self.upper_cost_usd(request)) if self.budget is not None and self.budget.active else None
        try:
            reply = self._send_with_retries(request, encoded, c)
        except BaseException:
            if reservation is not None:
                self.budget.release(reservation)  # type: ignore[union-attr]
            raise
        reply.cost_usd = self.price.cost_usd(reply.input_tokens or 0, reply.output_tokens or 0)
        reply.cache_key = key
        if reservation is not None:
            self.budget.settle(reservation, reply.cost_usd)  # type: ignore[union-attr]
        c.record_reply(reply)
        if self.cache is not None and self.cache.mode == "read-write":
            self.cache.put(key, summary, [encoded[im.sha256] for im in imgs], reply)
        return reply

    def close(self) -> None:
        """Close the SDK's HTTP connections (the cache is closed by its owner; a shared pool stays open)."""
        if self.shared_http:
            return
        close = getattr(self._sdk, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> ModelClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _send_with_retries(self, request: ModelRequest, encoded: dict[str, EncodedImage], c: UsageCounters) -> ModelReply:
        attempt = 0
        limiter = self.rate_limiter
        reserved = 0
        if limiter is not None and limiter.tokens is not None:
            tokens_in, _ = request_input_tokens(RequestShape.of(request), self.price, self.images, self.spec.provider)
            reserved = int(tokens_in) + int(self.generation.max_output_tokens)
        call_end = time.monotonic() + self.retry.call_budget_s
        attempt_s = self.retry.attempt_deadline_for(self.timeout_s)
        while True:
            attempt += 1
            if limiter is not None:
                limiter.acquire(reserved)
            c.bump("http_attempts")
            t0 = time.perf_counter()
            try:
                reply, headers = self._send(request, encoded, min(time.monotonic() + attempt_s, call_end))
            except Exception as exc:  # noqa: BLE001 - classified below, unknown ones re-raised
                fault = classify_exception(exc)
                if fault is None:
                    raise
                c.add_fault(fault.kind)
                if limiter is not None:
                    if reserved:
                        limiter.settle(reserved, 0)  # a failed attempt used no tokens (it did use a request)
                    if fault.status == 429 and fault.retry_after_s:
                        limiter.pause(fault.retry_after_s)  # the whole provider backs off, not only this call
                if not fault.retryable:
                    c.bump("rejected")
                    raise ModelRequestError(
                        f"{self.spec.provider}:{self.spec.model}: request rejected: {self._redact(fault.message)}",
                        fault.status, fault.kind,
                    ) from None
                delay = self.retry.delay_s(attempt - 1, fault.retry_after_s, self._rng)
                out_of_budget = time.monotonic() + delay >= call_end
                if attempt > self.retry.max_retries or out_of_budget:
                    c.bump("gave_up")
                    why = (f"call budget of {self.retry.call_budget_s:g} s spent" if out_of_budget and
                           attempt <= self.retry.max_retries else f"after {attempt} attempts")
                    raise ModelTransportError(
                        f"{self.spec.provider}:{self.spec.model}: {fault.kind} {why}: {self._redact(fault.message)}",
                        fault.kind, attempt,
                    ) from None
                log.info("%s (%s); retry %d/%d in %.2f s", fault.kind, fault.message, attempt, self.retry.max_retries, delay)
                c.bump("retries")
                self.sleep(delay)
                continue
            reply.latency_s = time.perf_counter() - t0
            reply.attempts = attempt
            if limiter is not None and reserved:
                limiter.settle(reserved, (reply.input_tokens or 0) + (reply.output_tokens or 0))
            if reply.request_id is None:
                reply.request_id = headers.get("x-request-id") or headers.get("request-id") or reply.response_id
            if self._oversized(reply) and "oversized" not in reply.flags:
                reply.flags.append("oversized")
            reply.model_mismatch = model_mismatch(self.spec.model, reply.reported_model)
            if reply.model_mismatch:
                log.warning("requested model %r, provider reported %r", self.spec.model, reply.reported_model)
            return reply

    def _redact(self, text: str) -> str:
        key = getattr(self._sdk, "api_key", None)
        if isinstance(key, str) and len(key) >= 4:
            text = text.replace(key, "[redacted]")
        return _KEYLIKE.sub("[redacted]", text)

    def _oversized(self, reply: ModelReply) -> bool:
        """Whether ``reply`` is larger than ``max_output_tokens`` allows (module docstring)."""
        cap = self.generation.max_output_tokens
        if reply.output_tokens is not None and reply.output_tokens > cap:
            return True
        return len(reply.text) > OVERSIZED_CHARS_PER_TOKEN * cap

    @staticmethod
    def _flags(text: str, finish_reason: str, refusal: bool) -> list[str]:
        flags = []
        if not text.strip():
            flags.append("empty")
        if finish_reason == "length":
            flags.append("truncated")
        if refusal or finish_reason == "refusal":
            flags.append("refusal")
        return flags

