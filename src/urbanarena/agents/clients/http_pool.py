"""One HTTP connection pool per process and provider endpoint, shared by every model client.

The runner builds a fresh agent, hence a fresh model client, for every episode. Building an SDK
client with its own ``httpx2.Client`` (the HTTP library of the current SDKs) costs tens of milliseconds of CPU (an SSL context is created
and the CA bundle loaded each time) and opens new connections; with hundreds of episodes in flight
on a few cores that alone serialises a run. So the clients share one ``httpx2.Client`` per
``(sdk, endpoint)`` in the process (thread-safe; the SDK passes its own per-request timeout and
headers, API key included, on every request, so the pool holds no key).

Pool size: connections are opened on demand and never capped (``max_connections=None``): the
number of requests in flight is bounded by the runner's concurrency, and a cap below it would
queue requests inside the pool. Up to :func:`keepalive_connections` idle connections are kept
(default 256; the runner raises it to its in-flight count with :func:`size_for`).

A client built with ``shared_http=False`` (or when ``URBANARENA_SHARED_HTTP=0``) gets its own
pool, closed with the client, as before.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

_LOCK = threading.Lock()
_POOLS: dict[tuple[str, str], Any] = {}
_KEEPALIVE = 256


def enabled() -> bool:
    """Whether clients share pools (``URBANARENA_SHARED_HTTP`` unset or not ``0``)."""
    return os.environ.get("URBANARENA_SHARED_HTTP", "1").strip() not in ("0", "false", "no")


def keepalive_connections() -> int:
    """Idle connections kept per pool."""
    return _KEEPALIVE


def size_for(in_flight: int) -> None:
    """Keep at least ``in_flight`` idle connections in pools created from now on."""
    global _KEEPALIVE
    with _LOCK:
        _KEEPALIVE = max(_KEEPALIVE, int(in_flight))


def shared_client(sdk: str, endpoint: str, factory: Callable[..., Any]) -> Any:
    """The process's shared ``httpx2.Client`` for ``(sdk, endpoint)``, built on first use with
    ``factory(limits=httpx2.Limits(...))`` (the SDK's ``DefaultHttpxClient``, an ``httpx2.Client``)."""
    import httpx2

    key = (sdk, endpoint.rstrip("/"))
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool.is_closed:
            pool = factory(limits=httpx2.Limits(max_connections=None, max_keepalive_connections=_KEEPALIVE))
            _POOLS[key] = pool
        return pool


def close_all() -> None:
    """Close every shared pool of this process (later clients open new ones)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for p in pools:
        try:
            p.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass


__all__ = ["close_all", "enabled", "keepalive_connections", "shared_client", "size_for"]
