"""Per-provider rate limits: requests per minute and tokens per minute, shared by every model
client of a process that talks to the same provider endpoint.

A :class:`RateLimiter` holds two token buckets (Turner 1986, "New directions in communications";
the generic cell rate algorithm of ITU-T I.371 in its "virtual scheduling" form):

* a **request bucket** of ``requests_per_min`` (one unit per HTTP attempt, retries included, as the
  providers count them);
* a **token bucket** of ``tokens_per_min``: a request reserves its upper-bound tokens (estimated
  input tokens + ``max_output_tokens``, the amount OpenAI's limiter also charges up front) and,
  when the reply arrives, :meth:`RateLimiter.settle` credits back what the reported usage did not
  use (or charges the excess).

Each bucket refills continuously at ``limit / 60`` units per second up to its capacity ``burst``
(default: one second's worth, at least one request / the largest request seen is admitted when the
bucket is full and leaves it in debt). So in any window of ``T`` seconds at most
``burst + limit * T / 60`` units are admitted, and the long-run rate never exceeds ``limit`` per
minute. Reservations are FIFO: :meth:`RateLimiter.acquire` reserves under a lock, computes the wait
and sleeps *outside* the lock, so waiting clients never block each other's bookkeeping.

A 429 reply with ``Retry-After`` (retried by :class:`~urbanarena.agents.clients.retry.RetryPolicy`)
also pauses the whole limiter (:meth:`RateLimiter.pause`) until then: every episode of the provider
backs off, not only the one that was told to.

Process-wide configuration: :func:`configure` installs :class:`RateLimits` for a provider endpoint
(the runner does this from ``--requests-per-min`` / ``--tokens-per-min``); every
:class:`~urbanarena.agents.clients.base.ModelClient` built afterwards for that endpoint
(:func:`limiter_for`) shares the one limiter. Nothing is configured by default (no limit).

The clock and the sleep function are injectable (:class:`RateLimiter` ``clock`` / ``sleep``), so
tests run on a fake clock.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

#: seconds per minute (the limits are per minute)
_MINUTE_S = 60.0


@dataclass(frozen=True)
class RateLimits:
    """Limits of one provider endpoint (``None`` = unlimited).

    Attributes:
        requests_per_min: HTTP requests per minute (retries count).
        tokens_per_min: input + output tokens per minute.
        burst_s: bucket capacity in seconds of the rate (default 1 s; the capacity is at least one request).
        share: fraction of the limits this process may use (the runner sets ``1 / processes`` when the
            episodes run in several processes that cannot share one bucket).
    Raises:
        ValueError: a limit that is not positive and finite, a ``burst_s`` that is not positive, ``share`` outside (0, 1].
    """

    requests_per_min: float | None = None
    tokens_per_min: float | None = None
    burst_s: float = 1.0
    share: float = 1.0

    def __post_init__(self) -> None:
        for name in ("requests_per_min", "tokens_per_min"):
            v = getattr(self, name)
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise ValueError(f"{name} must be > 0 and finite (got {v})")
        if not self.burst_s > 0:
            raise ValueError(f"burst_s must be > 0 (got {self.burst_s})")
        if not 0 < self.share <= 1:
            raise ValueError(f"share must be in (0, 1] (got {self.share})")

    @property
    def active(self) -> bool:
        return self.requests_per_min is not None or self.tokens_per_min is not None

    def scaled(self, share: float) -> "RateLimits":
        """The same limits with ``share`` multiplied in (each of ``n`` processes gets ``share = 1/n``)."""
        return RateLimits(self.requests_per_min, self.tokens_per_min, self.burst_s, self.share * float(share))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "RateLimits":
        return cls(**(d or {}))


class TokenBucket:
    """One bucket (module docstring): ``rate_per_s`` refill, ``capacity`` units, starts full.

    Not thread-safe on its own; :class:`RateLimiter` serialises access.
    """

    def __init__(self, rate_per_s: float, capacity: float, now: float):
        if not rate_per_s > 0 or not capacity > 0:
            raise ValueError("rate_per_s and capacity must be > 0")
        self.rate_per_s = float(rate_per_s)
        self.capacity = float(capacity)
        self.level = float(capacity)
        self.t = float(now)

    def _refill(self, now: float) -> None:
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate_per_s)
            self.t = now

    def reserve(self, cost: float, now: float) -> float:
        """Reserve ``cost`` units at time ``now``; returns the wait (seconds) until they are available.

        The level drops by ``cost`` at once (possibly below 0): the reservation is the caller's, and
        later callers wait behind it (FIFO). A cost above the capacity is admitted once the bucket
        would have refilled to ``cost`` from its current level.
        """
        self._refill(now)
        wait = max(0.0, (cost - self.level) / self.rate_per_s) if cost > self.level else 0.0
        self.level -= cost
        return wait

    def credit(self, amount: float, now: float) -> None:
        """Give back ``amount`` units (negative: charge more), capped at the capacity."""
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)


class RateLimiter:
    """Requests/min and tokens/min buckets of one provider endpoint (module docstring).

    Args:
        limits: the :class:`RateLimits` (their ``share`` scales both rates and capacities).
        clock: monotonic clock in seconds (default ``time.monotonic``).
        sleep: sleep function (default ``time.sleep``).
    """

    def __init__(self, limits: RateLimits, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.limits = limits
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        now = clock()
        s = limits.share
        self.requests: TokenBucket | None = None
        self.tokens: TokenBucket | None = None
        if limits.requests_per_min is not None:
            rate = limits.requests_per_min * s / _MINUTE_S
            self.requests = TokenBucket(rate, max(1.0, rate * limits.burst_s), now)
        if limits.tokens_per_min is not None:
            rate = limits.tokens_per_min * s / _MINUTE_S
            self.tokens = TokenBucket(rate, max(1.0, rate * limits.burst_s), now)
        self._paused_until = now
        self.waited_s = 0.0
        self.admitted = 0

    def reserve(self, tokens: float = 0.0) -> float:
        """Reserve one request and ``tokens`` tokens now; returns the wait in seconds (no sleep)."""
        with self._lock:
            now = self.clock()
            wait = max(0.0, self._paused_until - now)
            if self.requests is not None:
                wait = max(wait, self.requests.reserve(1.0, now))
            if self.tokens is not None and tokens > 0:
                wait = max(wait, self.tokens.reserve(float(tokens), now))
            self.admitted += 1
            self.waited_s += wait
            return wait

    def acquire(self, tokens: float = 0.0) -> float:
        """Reserve (:meth:`reserve`) and sleep until admitted; returns the time waited (seconds)."""
        wait = self.reserve(tokens)
        if wait > 0:
            self.sleep(wait)
        return wait

    def settle(self, reserved_tokens: float, used_tokens: float) -> None:
        """Correct a reservation by the tokens the reply reported (credit unused, charge excess)."""
        if self.tokens is None:
            return
        with self._lock:
            self.tokens.credit(float(reserved_tokens) - float(used_tokens), self.clock())

    def pause(self, seconds: float) -> None:
        """Admit nothing for ``seconds`` from now (a 429's ``Retry-After``)."""
        if seconds <= 0:
            return
        with self._lock:
            self._paused_until = max(self._paused_until, self.clock() + float(seconds))


# ------------------------------------------------------------------ process-wide registry
_REGISTRY_LOCK = threading.Lock()
_CONFIG: dict[tuple[str, str], RateLimits] = {}
_LIMITERS: dict[tuple[str, str], RateLimiter] = {}


def _key(provider: str, endpoint: str) -> tuple[str, str]:
    return (str(provider), str(endpoint).rstrip("/"))


def configure(provider: str, endpoint: str, limits: RateLimits | None) -> None:
    """Install (``limits``) or remove (``None`` or inactive limits) the limits of a provider endpoint
    in this process. A changed configuration replaces the shared limiter (clients built before keep
    the old one)."""
    k = _key(provider, endpoint)
    with _REGISTRY_LOCK:
        if limits is None or not limits.active:
            _CONFIG.pop(k, None)
            _LIMITERS.pop(k, None)
            return
        if _CONFIG.get(k) != limits:
            _CONFIG[k] = limits
            _LIMITERS.pop(k, None)


def configured(provider: str, endpoint: str) -> RateLimits | None:
    """The limits installed for a provider endpoint, or ``None``."""
    with _REGISTRY_LOCK:
        return _CONFIG.get(_key(provider, endpoint))


def limiter_for(provider: str, endpoint: str) -> RateLimiter | None:
    """The process's shared :class:`RateLimiter` of a provider endpoint (``None`` when no limits are
    configured). Clients of ``openai-compatible`` and ``openai`` share a limiter only when they have
    the same provider id and endpoint URL."""
    k = _key(provider, endpoint)
    with _REGISTRY_LOCK:
        limits = _CONFIG.get(k)
        if limits is None:
            return None
        lim = _LIMITERS.get(k)
        if lim is None:
            lim = _LIMITERS[k] = RateLimiter(limits)
        return lim


def clear() -> None:
    """Remove every configured limit of this process."""
    with _REGISTRY_LOCK:
        _CONFIG.clear()
        _LIMITERS.clear()


__all__ = ["RateLimiter", "RateLimits", "TokenBucket", "clear", "configure", "configured", "limiter_for"]
