"""Provider-neutral request and reply types, settings and per-episode counters.

* :class:`GenerationSettings` and :class:`ImageSettings` are frozen pydantic
  models: their ``model_dump(mode="json")`` is part of a client's
  :meth:`~urbanarena.agents.clients.base.ModelClient.config` and so of the run's
  config hash, and of every response-cache key.
* :class:`Message` / :class:`Text` / :class:`Image` / :class:`ModelRequest`
  hold what an agent asks; images are RGB ``uint8`` arrays ``(H, W, 3)``,
  encoded to JPEG/PNG only inside the client.
* :class:`ModelReply` is what comes back (also what the cache stores).
* :class:`UsageCounters` counts requests, faults by type, tokens, latency,
  flagged replies and cost; one object per episode.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from urbanarena.agents.clients.errors import ImageEncodingError


class GenerationSettings(BaseModel):
    """Pinned generation settings (all explicit; ``None`` = not sent, the provider default applies).

    Attributes:
        temperature: sampling temperature.
        top_p: nucleus sampling mass.
        max_output_tokens: cap on generated tokens (OpenAI
            ``max_completion_tokens`` or ``max_tokens``, Anthropic ``max_tokens``;
            includes reasoning/thinking tokens where the provider counts them so).
        reasoning_effort: OpenAI ``reasoning_effort`` (``minimal``, ``low``,
            ``medium``, ``high`` ...); for Anthropic ``output_config.effort``
            (``low``, ``medium``, ``high``, ``xhigh``, ``max``).
        thinking_budget_tokens: Anthropic extended-thinking budget
            (``thinking={"type": "enabled", "budget_tokens": N}``); Anthropic
            requires ``1024 <= N < max_output_tokens``.
        seed: sampling seed where supported (OpenAI and most OpenAI-compatible
            servers; Anthropic has none).

    Settings a provider does not support are dropped and listed by
    :meth:`unsupported_for` (and in the client's config), never silently.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_output_tokens: int = Field(default=1024, gt=0)
    reasoning_effort: str | None = None
    thinking_budget_tokens: int | None = Field(default=None, gt=0)
    seed: int | None = None

    @model_validator(mode="after")
    def _check_budget(self) -> GenerationSettings:
        if self.thinking_budget_tokens is not None and self.thinking_budget_tokens >= self.max_output_tokens:
            raise ValueError(
                f"thinking_budget_tokens ({self.thinking_budget_tokens}) must be below max_output_tokens ({self.max_output_tokens})"
            )
        return self

    def unsupported_for(self, provider: str) -> list[str]:
        """Names of the set fields ``provider`` does not accept (they are not sent)."""
        out = []
        if provider == "anthropic":
            if self.seed is not None:
                out.append("seed")
        else:
            if self.thinking_budget_tokens is not None:
                out.append("thinking_budget_tokens")
        return out

    def effective_for(self, provider: str) -> dict[str, Any]:
        """The settings actually sent to ``provider`` (JSON dict; unsupported ones removed)."""
        d = self.model_dump(mode="json")
        for name in self.unsupported_for(provider):
            d[name] = None
        return d


class ImageSettings(BaseModel):
    """How images are encoded at the client boundary (part of the protocol and its hash).

    Attributes:
        format: ``jpeg`` or ``png``.
        jpeg_quality: JPEG quality (1..95).
        max_pixels: downscale (one step, aspect kept) so ``W*H <= max_pixels``.
        max_side_px: downscale so ``max(W, H) <= max_side_px`` (Anthropic's
            hard 8000 px applies in any case).
        max_bytes: byte limit per image (base64 text for Anthropic, file
            bytes otherwise); ``None`` = the provider's
            (:data:`urbanarena.render.encode.PROVIDER_LIMITS`: Anthropic 5 MiB,
            OpenAI 20 MiB). Reached by re-encoding from the original at a
            linear scale multiplied by ``downscale_step`` per step.
        downscale_step: scale factor per byte-limit step (0 < step < 1).
        min_side_px: an image that would go below this side length while
            still over ``max_bytes`` raises :class:`ImageEncodingError`.
        detail: OpenAI ``image_url.detail`` (``low``/``high``/``auto``);
            ``None`` = not sent. Ignored by Anthropic.
        max_images_per_request: a request with more images raises ``ValueError``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["jpeg", "png"] = "jpeg"
    jpeg_quality: int = Field(default=90, ge=1, le=95)
    max_pixels: int | None = Field(default=None, gt=0)
    max_side_px: int | None = Field(default=None, gt=0)
    max_bytes: int | None = Field(default=None, gt=0)
    downscale_step: float = Field(default=0.75, gt=0.0, lt=1.0)
    min_side_px: int = Field(default=16, gt=0)
    detail: Literal["low", "high", "auto"] | None = None
    max_images_per_request: int | None = Field(default=None, ge=0)


@dataclass(frozen=True)
class Text:
    """A text part of a message."""

    text: str


class Image:
    """An image part: an RGB ``uint8`` array ``(H, W, 3)``.

    The array is copied on construction (later edits by the caller cannot
    change what is sent or the cache key). :attr:`sha256` hashes the shape and
    the pixel bytes, so the key does not depend on the encoder.

    Raises:
        ImageEncodingError: not a ``(H, W, 3)`` ``uint8`` array.
    """

    __slots__ = ("array", "_sha256")

    def __init__(self, array: np.ndarray):
        a = np.asarray(array)
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ImageEncodingError(f"image must be an RGB uint8 array (H, W, 3); got dtype {a.dtype}, shape {a.shape}")
        self.array = np.ascontiguousarray(a).copy()
        self.array.setflags(write=False)
        self._sha256: str | None = None

    @property
    def height(self) -> int:
        return int(self.array.shape[0])

    @property
    def width(self) -> int:
        return int(self.array.shape[1])

    @property
    def sha256(self) -> str:
        """sha256 hex of ``b"rgb8:H:W:" + pixel bytes``."""
        if self._sha256 is None:
            h = hashlib.sha256(f"rgb8:{self.height}:{self.width}:".encode())
            h.update(self.array.data)  # the C-contiguous pixel buffer itself: the bytes of tobytes(), no copy
            self._sha256 = h.hexdigest()
        return self._sha256

    def __repr__(self) -> str:
        return f"Image({self.width}x{self.height}, sha256={self.sha256[:12]})"


@dataclass(frozen=True)
class Message:
    """One conversation turn.

    Attributes:
        role: ``user`` or ``assistant``.
        content: a string, or a list of :class:`Text` / :class:`Image` parts
            (images in ``user`` turns only).
    """

    role: Literal["user", "assistant"]
    content: str | tuple[Text | Image, ...] | list[Text | Image]

    def parts(self) -> list[Text | Image]:
        """Content as a list of parts."""
        if isinstance(self.content, str):
            return [Text(self.content)]
        return list(self.content)


@dataclass(frozen=True)
class ModelRequest:
    """A provider-neutral request.

    Attributes:
        messages: the conversation (first and last turn ``user``).
        system: system prompt or ``None``.
        sample_index: which sample of the same request this is (0 first); part
            of the cache key, so repeated sampling of one prompt is cached
            per sample instead of replaying the first reply.
    """

    messages: tuple[Message, ...] | list[Message]
    system: str | None = None
    sample_index: int = 0

    def images(self) -> list[Image]:
        """All image parts, in order."""
        return [p for m in self.messages for p in m.parts() if isinstance(p, Image)]

    def validate(self) -> None:
        """Raise ``ValueError`` for an empty conversation, bad roles, or images in assistant turns."""
        if not self.messages:
            raise ValueError("a request needs at least one message")
        for i, m in enumerate(self.messages):
            if m.role not in ("user", "assistant"):
                raise ValueError(f"message {i}: role must be 'user' or 'assistant', got {m.role!r}")
            for p in m.parts():
                if not isinstance(p, (Text, Image)):
                    raise ValueError(f"message {i}: content parts must be Text or Image, got {type(p).__name__}")
                if isinstance(p, Image) and m.role != "user":
                    raise ValueError(f"message {i}: images are allowed in user turns only")
        if self.messages[-1].role != "user":
            raise ValueError("the last message must be a user turn")
        if self.sample_index < 0:
            raise ValueError("sample_index must be >= 0")


FinishReason = Literal["stop", "length", "refusal", "tool_use", "other"]


class ModelReply(BaseModel):
    """A reply that arrived (possibly empty, truncated or a refusal; see :attr:`flags`).

    Attributes:
        text: the assistant text (text blocks joined; ``""`` when none).
        finish_reason: normalised: ``stop`` (OpenAI ``stop``, Anthropic
            ``end_turn``/``stop_sequence``), ``length`` (``length``/``max_tokens``),
            ``refusal`` (Anthropic ``refusal``, OpenAI ``content_filter`` or a
            ``refusal`` message), ``tool_use``, ``other``.
        raw_finish_reason: the provider's own value.
        input_tokens / output_tokens: usage the provider reported (``None``
            when it reported none).
        reasoning_tokens: reasoning tokens inside ``output_tokens`` when reported.
        latency_s: wall time of the successful attempt (seconds); for a cache
            hit, the latency recorded when the reply was first received.
        requested_model: model name sent.
        reported_model: model name the provider reported.
        model_mismatch: ``reported_model`` is neither ``requested_model`` nor a
            dated/versioned form of it (``requested_model + "-..."``).
        request_id: provider request id (``x-request-id`` / ``request-id``
            header, else the response id).
        response_id: the response object id.
        flags: subset of ``empty`` (no text), ``truncated`` (finish
            ``length``), ``refusal``, ``oversized`` (more output than
            ``max_output_tokens`` allows, see :mod:`.base`); the protocol
            decides about re-asks.
        refusal: the provider's refusal text (OpenAI ``message.refusal``), else ``None``.
        thinking: Anthropic thinking text when returned, else ``None``.
        from_cache: served by the response cache (no API call).
        cache_key: the response-cache key of the request.
        attempts: requests sent for this reply (1 + retries; 0 for a cache hit).
        cost_usd: cost from the reported usage and the price table (``None``
            when the model is not priced).
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    finish_reason: FinishReason
    raw_finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_s: float = 0.0
    requested_model: str
    reported_model: str | None = None
    model_mismatch: bool = False
    request_id: str | None = None
    response_id: str | None = None
    flags: list[str] = Field(default_factory=list)
    refusal: str | None = None
    thinking: str | None = None
    from_cache: bool = False
    cache_key: str | None = None
    attempts: int = 1
    cost_usd: float | None = None

    def content_fields(self) -> dict[str, Any]:
        """The fields that a replay must reproduce exactly (all but ``from_cache``/``attempts``)."""
        return self.model_dump(exclude={"from_cache", "attempts"})


def model_mismatch(requested: str, reported: str | None) -> bool:
    """True when ``reported`` is not ``requested`` nor a dated snapshot of it.

    A snapshot of an alias is the alias (``-latest`` removed) followed by
    ``-YYYY-MM-DD``, ``-YYYYMMDD``, a 3-4 digit version (``-001``), or
    ``@...`` (Vertex-style). So ``gpt-4o`` -> ``gpt-4o-2024-08-06`` and
    ``claude-3-5-sonnet-latest`` -> ``claude-3-5-sonnet-20241022`` are no
    mismatch (the snapshot is stored in ``reported_model``), while
    ``gpt-4o`` -> ``gpt-4o-mini`` and ``claude-sonnet-4`` ->
    ``claude-sonnet-4-5-20250929`` are. ``None`` (not reported) is no mismatch.
    """
    if not reported or reported == requested:
        return False
    base = requested.removesuffix("-latest")
    if reported.startswith(base + "@"):
        return False
    return _SNAPSHOT_SUFFIX.match(reported[len(base):]) is None if reported.startswith(base) else True


_SNAPSHOT_SUFFIX = re.compile(r"^-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{3,4})(?:$|[-.:@])")


FLAG_KINDS = ("empty", "truncated", "refusal", "oversized")


@dataclass
class UsageCounters:
    """Per-episode counters of everything a model client did (thread-safe updates).

    Attributes:
        requests: logical calls (:meth:`ModelClient.complete` invocations that
            returned a reply, cache hits included).
        api_requests: calls answered by the network (cache misses that got a reply).
        http_attempts: HTTP requests sent (retries included).
        retries: attempts after a transport fault.
        cache_hits / cache_misses: response-cache outcomes (``off`` counts neither).
        faults: transport faults by type: ``timeout``, ``connection``,
            ``http_429``, ``http_500``, ``http_503`` (any ``http_<status>``).
        gave_up: calls that raised :class:`ModelTransportError` after the retry limit.
        rejected: calls rejected with a non-retryable status (4xx).
        flagged: replies by flag (``empty``, ``truncated``, ``refusal``, ``oversized``).
        model_mismatches: replies whose reported model mismatched.
        input_tokens / output_tokens / reasoning_tokens: reported usage of
            API replies (cache hits excluded: they cost nothing now).
        cached_input_tokens / cached_output_tokens: usage of replies served from cache.
        latency_s: summed latency of API replies (seconds).
        cost_usd: summed cost of API replies (priced models only).
    """

    requests: int = 0
    api_requests: int = 0
    http_attempts: int = 0
    retries: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    faults: dict[str, int] = field(default_factory=dict)
    gave_up: int = 0
    rejected: int = 0
    flagged: dict[str, int] = field(default_factory=dict)
    model_mismatches: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_fault(self, kind: str) -> None:
        with self._lock:
            self.faults[kind] = self.faults.get(kind, 0) + 1

    def bump(self, name: str, amount: float = 1) -> None:
        """Add ``amount`` to the scalar counter ``name``."""
        with self._lock:
            setattr(self, name, getattr(self, name) + amount)

    def record_reply(self, reply: ModelReply) -> None:
        """Account a returned reply (API or cache)."""
        with self._lock:
            self.requests += 1
            if reply.from_cache:
                self.cached_input_tokens += reply.input_tokens or 0
                self.cached_output_tokens += reply.output_tokens or 0
            else:
                self.api_requests += 1
                self.input_tokens += reply.input_tokens or 0
                self.output_tokens += reply.output_tokens or 0
                self.reasoning_tokens += reply.reasoning_tokens or 0
                self.latency_s += reply.latency_s
                self.cost_usd += reply.cost_usd or 0.0
            for f in reply.flags:
                self.flagged[f] = self.flagged.get(f, 0) + 1
            if reply.model_mismatch:
                self.model_mismatches += 1

    def as_dict(self) -> dict[str, Any]:
        """Flat JSON-able dict: scalars plus ``fault_<type>`` and ``flagged_<kind>`` keys."""
        with self._lock:
            out: dict[str, Any] = {
                k: getattr(self, k)
                for k in (
                    "requests", "api_requests", "http_attempts", "retries", "cache_hits", "cache_misses",
                    "gave_up", "rejected", "model_mismatches", "input_tokens", "output_tokens",
                    "reasoning_tokens", "cached_input_tokens", "cached_output_tokens", "latency_s", "cost_usd",
                )
            }
            out["faults_total"] = sum(self.faults.values())
            for k, v in sorted(self.faults.items()):
                out[f"fault_{k}"] = v
            for k in FLAG_KINDS:
                out[f"flagged_{k}"] = self.flagged.get(k, 0)
            return out
